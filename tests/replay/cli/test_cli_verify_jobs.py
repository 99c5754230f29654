"""`replay verify --jobs N` reports what `--jobs 1` reports: the same bundles in the same order,
with the same verdicts, counts, differences and errors (only the seconds differ); and stopping
it with SIGTERM or Ctrl-C leaves none of its workers behind."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli.app import app
from tests import forked
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


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
            found.append(int(stat.parent.name))
    return found


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_stopping_verify_leaves_no_worker_behind(stop: signal.Signals) -> None:
    # The long session replays for seconds: long enough to find both workers at it.
    bundles = [str(LIBRARY / "long-session-crosses-autocompact-twice"), str(LIBRARY / "demo")]
    env = {**os.environ, "PYTHONPATH": str(LIBRARY.parent)}
    verify = forked.Popen(
        [sys.executable, "-m", "replay.cli", "verify", *bundles, "--jobs", "2"],
        cwd=LIBRARY.parent,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    workers: list[int] = []
    while len(workers) < 2 and verify.poll() is None:
        workers = _children(verify.pid)
        time.sleep(0.05)
    assert len(workers) == 2, "verify ended before both workers were seen"

    if stop is signal.SIGINT:  # Ctrl-C: the terminal signals the whole process group
        os.killpg(verify.pid, stop)
    else:
        verify.send_signal(stop)
    verify.wait(timeout=60)

    assert verify.returncode == 128 + stop  # 143 for SIGTERM, 130 for Ctrl-C
    deadline = time.monotonic() + 30  # the kernel's and init's time, not the subject of the test
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = [pid for pid in workers if _alive(pid)]
    assert alive == [], f"workers {alive} outlived replay verify"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
