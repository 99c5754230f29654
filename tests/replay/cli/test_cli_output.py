"""The command line reads well in a terminal and in a CI log: every error is one line on
stderr starting with ``error: `` (usage errors too, never a box) with exit code 2, a file that
is not a trace is said in one sentence, and a table never wraps a row when stdout is a pipe."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli.app import app
from replay.cli.tables import Column, plain_table, print_table
from tests.replay.bundle_helpers import DONE, assert_bad_input, record_sync

runner = CliRunner()  # its stdout is not a terminal, as in CI
BOX = set("╭╮╰╯│─┃━┏┓┗┛╇┼")
LONG_NAME = "a-bundle-with-a-name-long-enough-to-wrap-onto-a-second-row-of-an-eighty-column-table"


def assert_one_error_line(result: object, *fragments: str) -> None:
    assert_bad_input(result, *fragments)
    assert not BOX & set(result.output), result.output  # type: ignore[attr-defined]
    assert result.stdout == ""  # type: ignore[attr-defined]


# --- usage errors ---------------------------------------------------------------------------------


USAGE_ERRORS = [
    (["run", "--bogus", "cassettes/x"], ["No such option: --bogus", "(see 'replay run --help')"]),
    (["run", "--jsn", "cassettes/x"], ["No such option: --jsn", "--json"]),
    (["--bogus"], ["No such option: --bogus", "(see 'replay --help')"]),
    (["nope"], ["No such command 'nope'", "(see 'replay --help')"]),
    (["verfy"], ["No such command 'verfy'", "Did you mean 'verify'?"]),
    (["run"], ["Missing argument 'BUNDLE...'", "(see 'replay run --help')"]),
    (["diff", "a"], ["Missing argument 'AFTER'"]),
    (["serve"], ["Missing option '--scenario'"]),
    (["record", "--out"], ["Option '--out' requires an argument"]),
    (["show", "x", "--format", "nope"], ["'nope' is not one of 'text', 'json', 'mermaid'"]),
    (["verify", "--jobs", "many"], ["Invalid value for '--jobs' / '-j'", "input should be a valid integer"]),
    (["run", "--wait", "-1", "x"], ["Invalid value for '--wait'", "greater than or equal to 0"]),
]


@pytest.mark.parametrize(
    ("args", "fragments"), [pytest.param(args, fragments, id=" ".join(args)) for args, fragments in USAGE_ERRORS]
)
def test_a_usage_error_is_one_line_with_exit_2_and_where_to_read_more(args: list[str], fragments: list[str]) -> None:
    result = runner.invoke(app, args)

    assert_one_error_line(result, *fragments)
    line = result.stderr.strip()
    assert line.endswith("--help').")
    for leak in ("Value error", "unable to parse", "Input should", "Usage:", "Try 'replay"):
        assert leak not in line


def test_a_command_error_and_a_usage_error_share_the_one_prefix(tmp_path: Path) -> None:
    usage = runner.invoke(app, ["show"])
    bad_input = runner.invoke(app, ["show", str(tmp_path / "nowhere")])

    for result in (usage, bad_input):
        assert_one_error_line(result)
    assert "Error:" not in usage.output + bad_input.output


def test_replay_alone_still_shows_the_help_and_help_still_exits_0() -> None:
    alone = runner.invoke(app, [])
    helped = runner.invoke(app, ["run", "--help"])

    assert alone.exit_code == 2 and "Usage: replay [OPTIONS] COMMAND" in alone.stdout
    assert "error:" not in alone.output
    assert helped.exit_code == 0 and helped.stderr == ""


# --- files that are not what a command reads --------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        ("some.yaml", "a: 1\n", "it is not JSON"),
        ("broken.json", '{"prompts": [', "it is not JSON"),
        ("other.json", '{"x": 1}\n', "it is JSON but not a behaviour trace"),
    ],
)
def test_show_on_a_file_that_is_not_a_trace_says_so_in_one_sentence(
    tmp_path: Path, name: str, text: str, reason: str
) -> None:
    path = tmp_path / name
    path.write_text(text)

    result = runner.invoke(app, ["show", str(path)])

    assert_one_error_line(result, f"{path} is not a bundle or a trace file: {reason}.", "trace.json")
    for leak in ("Expecting", "line 1 column", "char ", "('", "version None"):
        assert leak not in result.stderr


def test_show_on_a_trace_of_another_format_names_the_versions(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"format_version": 99, "prompts": []}))

    assert_one_error_line(runner.invoke(app, ["show", str(path)]), "is a behaviour trace this replay cannot read", "99")


def test_diff_of_a_trace_and_a_file_that_is_not_one_names_the_bad_file(tmp_path: Path) -> None:
    bundle = record_sync(tmp_path / "hello", [DONE])
    broken = tmp_path / "broken.json"
    broken.write_text("not json at all\n")

    result = runner.invoke(app, ["diff", str(bundle / "trace.json"), str(broken)])

    assert_one_error_line(result, f"{broken} is not a bundle or a trace file: it is not JSON.")
    assert "Expecting" not in result.stderr


def test_diff_of_two_traces_still_compares_them(tmp_path: Path) -> None:
    bundle = record_sync(tmp_path / "hello", [DONE])

    result = runner.invoke(app, ["diff", str(bundle / "trace.json"), str(bundle / "trace.json")])

    assert result.exit_code == 0 and "No differences" in result.stdout


# --- tables in a log --------------------------------------------------------------------------------


@pytest.mark.parametrize("columns", [None, "40"])
def test_verify_piped_prints_each_bundle_on_one_line_without_box_characters(
    tmp_path: Path, columns: str | None
) -> None:
    record_sync(tmp_path / "suite" / LONG_NAME, [DONE])
    record_sync(tmp_path / "suite" / "short", [DONE])

    result = runner.invoke(app, ["verify", str(tmp_path / "suite")], env={"COLUMNS": columns})

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["bundle", "verdict", "passes", "requests", "seconds"]
    assert set(lines[1]) <= {"-", " "}
    (long_row,) = [line for line in lines if LONG_NAME in line]
    (short_row,) = [line for line in lines if line.startswith(str(tmp_path / "suite" / "short"))]
    assert long_row.split()[1:4] == ["MATCH", "1", "1"] and short_row.split()[1:4] == ["MATCH", "1", "1"]
    assert len(long_row) == len(short_row)  # aligned: the columns are as wide as their widest cell
    assert not BOX & set(result.stdout)
    assert result.stderr == ""  # no progress bar, no blank line, in a log


@pytest.mark.parametrize("columns", [None, "40"])
def test_run_piped_prints_each_bundle_on_one_line(tmp_path: Path, columns: str | None) -> None:
    bundle = record_sync(tmp_path / LONG_NAME, [DONE])

    result = runner.invoke(app, ["run", str(bundle)], env={"COLUMNS": columns})

    assert result.exit_code == 0, result.output
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"MATCH {bundle} (1 pass, ")


def test_a_plain_table_is_as_wide_as_its_content_with_numbers_on_the_right() -> None:
    columns = [Column("bundle"), Column("passes", right=True)]

    text = plain_table(columns, [["cassettes/a-long-bundle-name", "3"], ["b", "12"]])

    assert text.splitlines() == [
        "bundle                        passes",
        "----------------------------  ------",
        "cassettes/a-long-bundle-name       3",
        "b                                 12",
    ]


def test_in_a_terminal_a_table_is_still_a_rich_table() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Terminal()
    print_table([Column("bundle"), Column("verdict")], [["cassettes/hello", "MATCH"]], file=out)

    assert "┃" in out.getvalue() and "cassettes/hello" in out.getvalue()
