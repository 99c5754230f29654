"""`replay verify --jobs N` reports what `--jobs 1` reports: the same bundles in the same order,
with the same verdicts, counts, differences and errors (only the seconds differ)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from typer.testing import CliRunner

from replay.cli.app import app
from tests.replay.bundle_helpers import assert_bad_input

LIBRARY = Path(__file__).resolve().parents[3] / "cassettes"
# Of different sizes, so that two workers finish them in another order than they are listed.
BUNDLES = ("demo", "prompt-too-long-reactive-compact", "retry-after-rate-limit", "tool-result-budget")

runner = CliRunner()


def library_with_a_corrupt_bundle(tmp_path: Path) -> Path:
    for name in BUNDLES:
        shutil.copytree(LIBRARY / name, tmp_path / "suite" / name)
    shutil.copytree(LIBRARY / "demo", tmp_path / "suite" / "corrupt")
    (tmp_path / "suite" / "corrupt" / "cassette.yaml").write_text("not: [a cassette\n")
    return tmp_path / "suite"


def verify(suite: Path, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["verify", str(suite), *args])
    return result.exit_code, result.stdout, result.stderr


def without_seconds(table: str) -> str:
    return re.sub(r" +\d+\.\d\d$", "", table, flags=re.MULTILINE)


def test_two_jobs_print_the_same_table_and_errors_as_one(tmp_path: Path) -> None:
    suite = library_with_a_corrupt_bundle(tmp_path)

    one, two = verify(suite, "--jobs", "1"), verify(suite, "--jobs", "2")

    assert one[0] == two[0] == 2  # the corrupt bundle
    assert without_seconds(two[1]) == without_seconds(one[1])
    assert two[2] == one[2]
    assert "5 bundle(s): 4 match, 0 drift, 1 error." in one[1]


def test_two_jobs_give_the_same_json_as_one(tmp_path: Path) -> None:
    suite = library_with_a_corrupt_bundle(tmp_path)

    def summaries(*args: str) -> list[dict[str, object]]:
        documents = json.loads(verify(suite, "--json", *args)[1])
        return [{k: v for k, v in document.items() if k != "seconds"} for document in documents]

    one = summaries("--jobs", "1")
    assert summaries("--jobs", "2") == one
    assert summaries("--jobs", "3", "--timeout", "600") == one
    assert [document["bundle"] for document in one] == sorted(str(suite / name) for name in (*BUNDLES, "corrupt"))


def test_a_timeout_must_be_more_than_zero(tmp_path: Path) -> None:
    suite = library_with_a_corrupt_bundle(tmp_path)

    assert_bad_input(runner.invoke(app, ["verify", str(suite), "--timeout", "0"]), "--timeout must be more than 0")
