"""Bad bundle files: every one is refused with one sentence that names the file and the problem,
exit code 2 and no traceback, before anything is run.

Each case starts from a good recorded bundle, breaks one file the way a stranger, a bad merge, a
full disk or a killed writer would, and runs ``replay run`` on it (``replay record`` and
``replay verify --rerecord`` for a bad scenario file).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from replay.cli.app import app
from replay.session.bundle import MAX_SESSION_BYTES, MAX_TRANSCRIPT_BYTES
from tests.replay.bundle_helpers import DONE, assert_bad_input, record_sync

runner = CliRunner()

GLOB = {"content": [{"text": "Looking."}, {"tool_use": {"name": "Glob", "input": {"pattern": "*"}}}]}
DEEP = 100_000
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One good two-request bundle, recorded once; each case breaks its own copy."""
    return record_sync(tmp_path_factory.mktemp("recorded") / "bundle", [GLOB, DONE])


@pytest.fixture
def bundle(recorded: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "bundle"
    shutil.copytree(recorded, copy, symlinks=True)
    return copy


# ---------------------------------------------------------------------------------------------
# How each file is broken


def _edit_session(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def edit(bundle: Path) -> None:
        path = bundle / "session.json"
        document = json.loads(path.read_text(encoding="utf-8"))
        change(document)
        path.write_text(json.dumps(document, indent=2), encoding="utf-8")

    return edit


def _set(*keys: str, value: Any) -> Callable[[Path], None]:
    def change(document: dict[str, Any]) -> None:
        for key in keys[:-1]:
            document = document.setdefault(key, {})
        document[keys[-1]] = value

    return _edit_session(change)


def _write(name: str, data: bytes) -> Callable[[Path], None]:
    return lambda bundle: (bundle / name).write_bytes(data)


def _oversize(name: str, size: int) -> Callable[[Path], None]:
    def grow(bundle: Path) -> None:
        with (bundle / name).open("r+b") as handle:
            handle.truncate(size)  # sparse: costs no disk, and the cap is checked before reading

    return grow


def _edit_transcript(change: Callable[[list[str]], list[str]]) -> Callable[[Path], None]:
    def edit(bundle: Path) -> None:
        path = bundle / "transcript.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        path.write_text("".join(change(lines)), encoding="utf-8")

    return edit


def _tear(line: int) -> Callable[[list[str]], list[str]]:
    def tear(lines: list[str]) -> list[str]:
        assert len(lines) >= 3
        index = line if line >= 0 else len(lines) + line
        torn = lines[index][: len(lines[index]) // 2]
        return [*lines[:index], torn + ("\n" if index < len(lines) - 1 else ""), *lines[index + 1 :]]

    return tear


def _cut_cassette(where: Callable[[str], int]) -> Callable[[Path], None]:
    def cut(bundle: Path) -> None:
        path = bundle / "cassette.yaml"
        text = path.read_text(encoding="utf-8")
        path.write_text(text[: where(text)], encoding="utf-8")

    return cut


def _last_interaction(text: str) -> int:
    # The file still parses without it: only the missing end line tells it was cut short.
    return text.rindex("\n- request:") + 1


def _edit_scenario(change: Callable[[str], str]) -> Callable[[Path], None]:
    def edit(bundle: Path) -> None:
        path = bundle / "scenario.yaml"
        path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")

    return edit


@dataclass(frozen=True)
class Case:
    """A bundle broken by ``breaks``; ``args`` run on it; the one error line holds ``names``."""

    breaks: Callable[[Path], None]
    names: tuple[str, ...]
    command: str = "run"


CASES: dict[str, Case] = {
    # session.json
    "session-nested-100000-levels": Case(
        _write("session.json", b"[" * DEEP + b"]" * DEEP), ("session.json", "nested too deeply")
    ),
    "session-object-nested-100000-levels": Case(
        _write("session.json", b'{"a":' * DEEP + b"1" + b"}" * DEEP), ("session.json", "nested too deeply")
    ),
    "session-binary": Case(_write("session.json", b"\xff\xfe\x00{\x81"), ("session.json", "is not UTF-8 text")),
    "session-not-json": Case(_write("session.json", b'{"prompts": ['), ("session.json", "is not valid JSON")),
    "session-over-the-cap": Case(
        _oversize("session.json", MAX_SESSION_BYTES + 1),
        ("session.json", f"over the {MAX_SESSION_BYTES // MIB} MiB limit"),
    ),
    "session-not-an-object": Case(_write("session.json", b"[1, 2]"), ("session.json", "JSON object")),
    "settings-model-is-a-number": Case(
        _set("settings", "model", value=5), ("session.json", "settings.model", "string", "5")
    ),
    "settings-max-turns-is-a-float": Case(
        _set("settings", "max_turns", value=2.5), ("session.json", "settings.max_turns", "integer")
    ),
    "settings-streaming-is-a-string": Case(
        _set("settings", "streaming_tool_execution", value="no"),
        ("session.json", "settings.streaming_tool_execution", "boolean"),
    ),
    "settings-memory-paths-is-a-string": Case(
        _set("settings", "memory_paths", value="CLAUDE.md"), ("session.json", "settings.memory_paths", "list")
    ),
    "settings-retry-delay-is-a-string": Case(
        _set("settings", "retry_base_delay_s", value="0.5"), ("session.json", "settings.retry_base_delay_s", "number")
    ),
    "settings-unknown": Case(
        _set("settings", "max_turn", value=3), ("session.json", "settings.max_turn", "not a known field")
    ),
    "settings-max-turns-zero": Case(
        _set("settings", "max_turns", value=0), ("session.json", "max_turns must be at least 1")
    ),
    "prompts-is-a-string": Case(_set("prompts", value="hello"), ("session.json", "prompts", "list")),
    "prompts-holds-a-number": Case(_set("prompts", value=["hi", 3]), ("session.json", "prompts[1]", "string")),
    "prompts-empty": Case(_set("prompts", value=[]), ("session.json", "no prompts")),
    "prompts-missing": Case(_edit_session(lambda d: d.pop("prompts")), ("session.json", "prompts", "missing")),
    "live-is-a-string": Case(_set("live", value="no"), ("session.json", "live", "boolean", "'no'")),
    "seed-is-a-float": Case(_set("seed", value=1.5), ("session.json", "seed", "integer", "1.5")),
    "seed-is-a-string": Case(_set("seed", value="1"), ("session.json", "seed", "integer", "'1'")),
    "seed-is-a-boolean": Case(_set("seed", value=True), ("session.json", "seed", "integer", "True")),
    "tools-is-a-string": Case(_set("tools", value="Read"), ("session.json", "tools", "list")),
    "unknown-top-level-key": Case(_set("promts", value=["hi"]), ("session.json", "promts", "not a known field")),
    "model-disagrees-with-settings": Case(
        _set("model", value="claude-other"), ("session.json", "model", "settings.model")
    ),
    "format-version-is-a-string": Case(_set("format_version", value="1"), ("session.json", "format version '1'")),
    "interrupt-count-is-a-string": Case(
        _set("session_options", "interrupt", value={"at": "tool_result", "count": "1"}),
        ("session.json", "session_options.interrupt.count", "integer"),
    ),
    "interrupt-at-unknown": Case(
        _set("session_options", "interrupt", value={"at": "later", "count": 1}),
        ("session.json", "session_options.interrupt.at", "'later'"),
    ),
    "interrupt-numbered-by-another-key": Case(
        _set("session_options", "interrupt", value={"at": "tools_running", "count": 1}),
        ("session.json", "'interrupt' at tools_running is numbered by 'batch', not 'count'"),
    ),
    "hook-timeout-is-a-string": Case(
        _set("session_options", "hooks", value={"stop": [{"command": "true", "timeout_s": "5"}]}),
        ("session.json", "session_options.hooks.stop[0].timeout_s", "number"),
    ),
    "hook-timeout-is-negative": Case(
        _set("session_options", "hooks", value={"stop": [{"command": "true", "timeout_s": -1}]}),
        ("session.json", "timeout_s must be positive"),
    ),
    "deny-is-a-string": Case(
        _set("session_options", "permissions", value={"deny": "Bash"}),
        ("session.json", "session_options.permissions.deny", "list"),
    ),
    # transcript.jsonl
    "transcript-binary": Case(
        _write("transcript.jsonl", b'{"a": 1}\n\xff\xfe\x00\x81\n'), ("transcript.jsonl", "is not UTF-8 text")
    ),
    "transcript-torn-middle-line": Case(
        _edit_transcript(_tear(1)), ("transcript.jsonl", "line 2", "not a complete JSON record")
    ),
    "transcript-torn-last-line": Case(_edit_transcript(_tear(-1)), ("transcript.jsonl", "last line", "cut off")),
    "transcript-line-not-an-object": Case(
        _edit_transcript(lambda lines: [lines[0], "[1, 2]\n", *lines[1:]]),
        ("transcript.jsonl", "line 2", "JSON object"),
    ),
    "transcript-line-nested-100000-levels": Case(
        _edit_transcript(lambda lines: [lines[0], "[" * DEEP + "]" * DEEP + "\n", *lines[1:]]),
        ("transcript.jsonl", "line 2", "nested too deeply"),
    ),
    "transcript-over-the-cap": Case(
        _oversize("transcript.jsonl", MAX_TRANSCRIPT_BYTES + 1),
        ("transcript.jsonl", f"over the {MAX_TRANSCRIPT_BYTES // MIB} MiB limit"),
    ),
    # trace.json
    "trace-nested-100000-levels": Case(
        _write("trace.json", b"[" * DEEP + b"]" * DEEP), ("trace.json", "nested too deeply")
    ),
    "trace-binary": Case(_write("trace.json", b"\xff\xfe\x00\x81"), ("trace.json", "is not UTF-8 text")),
    "trace-a-list": Case(_write("trace.json", b"[1, 2]"), ("trace.json", "it is JSON but not a behaviour trace")),
    "trace-other-version": Case(
        _write("trace.json", b'{"format_version": 7}'), ("trace.json", "trace format version 7; this replay reads 1")
    ),
    "trace-without-prompts": Case(
        _write("trace.json", b'{"format_version": 1, "session": "s"}'),
        ("trace.json", "a behaviour trace without its 'prompts' field"),
    ),
    "trace-pass-malformed": Case(
        _write(
            "trace.json",
            b'{"format_version": 1, "session": "s", '
            b'"prompts": [{"prompt": "p", "terminal": null, "passes": [{"x": 1}]}]}',
        ),
        ("trace.json", "a behaviour trace with a malformed field"),
    ),
    # cassette.yaml
    "cassette-without-its-last-interaction": Case(_cut_cassette(_last_interaction), ("cassette.yaml", "truncated")),
    "cassette-cut-in-the-middle": Case(_cut_cassette(lambda text: len(text) // 2), ("cassette.yaml", "truncated")),
    "cassette-cut-before-its-end-line": Case(
        _cut_cassette(lambda text: text.rindex("# end of cassette")), ("cassette.yaml", "truncated")
    ),
    # scenario.yaml, read when a bundle is recorded again
    "scenario-settings-model-is-a-number": Case(
        _edit_scenario(lambda text: text + "settings: {model: 5}\n"),
        ("scenario.yaml", "settings.model", "string"),
        command="rerecord",
    ),
    "scenario-prompts-is-a-string": Case(
        _edit_scenario(lambda text: text + "prompts: hello\n"), ("scenario.yaml", "prompts", "list"), command="rerecord"
    ),
    "scenario-interrupt-count-is-a-float": Case(
        _edit_scenario(lambda text: text + "session: {interrupt: {at: tool_use, count: 1.5}}\n"),
        ("scenario.yaml", "session.interrupt.count", "integer"),
        command="rerecord",
    ),
    "scenario-interrupt-request-zero": Case(
        _edit_scenario(lambda text: text + "session: {interrupt: {at: request, n: 0}}\n"),
        ("scenario.yaml", "session.interrupt.n must be at least 1"),
        command="rerecord",
    ),
    "scenario-nested-100000-levels": Case(
        _write("scenario.yaml", b"version: 1\nturns: " + b"[" * DEEP + b"]" * DEEP + b"\n"),
        ("scenario.yaml", "nesting depth"),
        command="rerecord",
    ),
    "scenario-binary": Case(
        _write("scenario.yaml", b"\xff\xfe\x00\x81"), ("scenario.yaml", "UTF-8"), command="rerecord"
    ),
}


def _invoke(command: str, bundle: Path) -> Any:
    if command == "rerecord":
        return runner.invoke(app, ["verify", "--rerecord", str(bundle)])
    return runner.invoke(app, [command, str(bundle)])


@pytest.mark.parametrize("name", list(CASES))
def test_a_bad_bundle_file_exits_2_with_one_sentence_naming_it(bundle: Path, name: str) -> None:
    case = CASES[name]
    case.breaks(bundle)
    before = {p.name: p.stat().st_size for p in bundle.iterdir() if p.is_file()}

    result = _invoke(case.command, bundle)

    assert_bad_input(result, *case.names)
    assert {p.name: p.stat().st_size for p in bundle.iterdir() if p.is_file()} == before  # nothing lost


def test_the_good_bundle_the_cases_start_from_matches(bundle: Path) -> None:
    result = runner.invoke(app, ["run", str(bundle)])

    assert result.exit_code == 0, result.output


def test_a_file_given_as_a_bundle_is_called_a_file(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Notes\n")

    result = runner.invoke(app, ["run", str(readme)])

    assert_bad_input(result, str(readme), "is a file, not a bundle folder")
    assert "does not exist" not in result.stderr


def test_a_bundle_s_session_json_given_as_the_bundle_points_at_its_folder(bundle: Path) -> None:
    result = runner.invoke(app, ["run", str(bundle / "session.json")])

    assert_bad_input(result, "is a file, not a bundle folder", f"give its folder, {bundle}.")


def test_a_missing_bundle_still_says_it_does_not_exist(tmp_path: Path) -> None:
    assert_bad_input(runner.invoke(app, ["run", str(tmp_path / "nowhere")]), "does not exist")


@pytest.mark.parametrize(
    ("addition", "names"),
    [
        ("prompts: hello\n", ("prompts", "list")),
        ("prompts: [hi]\nsettings: {model: 5}\n", ("settings.model", "string")),
        ("prompts: [hi]\nsettings: {max_turns: '3'}\n", ("settings.max_turns", "integer")),
        ("prompts: [hi]\nsettings: {bash_timeout_s: .nan}\n", ("settings.bash_timeout_s", "finite number")),
        ("prompts: [hi]\nsession: {clock_advance_minutes: '5'}\n", ("session.clock_advance_minutes", "list")),
    ],
    ids=["prompts-string", "settings-model-number", "max-turns-string", "timeout-nan", "clock-string"],
)
def test_record_refuses_a_scenario_whose_session_fields_have_the_wrong_type(
    tmp_path: Path, addition: str, names: tuple[str, ...]
) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("version: 1\nturns:\n- content: [{text: Done.}]\n" + addition, encoding="utf-8")

    result = runner.invoke(
        app, ["record", "--scenario", str(scenario), "--prompt", "hi", "--out", str(tmp_path / "out")]
    )

    assert_bad_input(result, str(scenario), *names)
    assert not (tmp_path / "out").exists()


def test_record_refuses_a_scenario_over_its_size_cap_before_reading_it(tmp_path: Path) -> None:
    from replay.storage.bundle_files import MAX_SCENARIO_BYTES

    scenario = tmp_path / "scenario.yaml"
    with scenario.open("wb") as handle:
        handle.truncate(MAX_SCENARIO_BYTES + 1)

    result = runner.invoke(
        app, ["record", "--scenario", str(scenario), "--prompt", "hi", "--out", str(tmp_path / "out")]
    )

    assert_bad_input(result, str(scenario), f"over the {MAX_SCENARIO_BYTES // MIB} MiB limit")


def test_the_caps_leave_room_for_every_bundle_in_the_library() -> None:
    library = Path(__file__).resolve().parents[3] / "cassettes"
    sessions = [p.stat().st_size for p in library.glob("*/session.json")]
    transcripts = [p.stat().st_size for p in library.glob("*/transcript.jsonl")]

    assert sessions and max(sessions) * 100 < MAX_SESSION_BYTES
    assert transcripts and max(transcripts) * 100 < MAX_TRANSCRIPT_BYTES


@pytest.mark.parametrize(
    ("name", "data", "problem"),
    [
        ("trace.json", b"[" * DEEP + b"]" * DEEP, "nested too deeply"),
        ("trace.json", b"\xff\xfe\x00\x81", "is not UTF-8 text"),
        ("transcript.jsonl", b'{"a": 1}\n\xff\xfe\x00\x81\n', "is not UTF-8 text"),
    ],
    ids=["deep-trace", "binary-trace", "binary-transcript"],
)
def test_diff_refuses_a_bad_trace_or_transcript_given_on_its_own(
    bundle: Path, tmp_path: Path, name: str, data: bytes, problem: str
) -> None:
    bad = tmp_path / "bad" / name
    bad.parent.mkdir()
    bad.write_bytes(data)

    assert_bad_input(runner.invoke(app, ["diff", str(bundle / name), str(bad)]), str(bad), problem)
