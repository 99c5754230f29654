"""Scenario scripts: the YAML shape, the dataclasses, and one clear error for every malformed script."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.fake.blocks import (
    RedactedThinkingBlock,
    ScenarioError,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Turn,
    Usage,
)
from replay.fake.faults import DropConnection, ErrorType, HttpError, StreamError
from replay.fake.scenario import Scenario, load_scenario

FULL_SCENARIO = """\
version: 1
name: read-then-answer
model: claude-sonnet-4-6
turns:
  - content:
      - thinking: I should read the file first.
        signature: sig-1
      - text: Let me read it.
      - tool_use: {name: Read, input: {file_path: src/app.py}}
  - fault: http_error
    status: 429
    error_type: rate_limit_error
    message: Number of request tokens has exceeded your rate limit.
    headers: {retry-after: 2}
  - fault: stream_error
    after_events: 3
    content: [{text: partial}]
  - fault: drop_connection
    after_events: 0
  - content:
      - redacted_thinking: opaque==
      - text: The app starts a server.
    stop_reason: max_tokens
    usage: {input_tokens: 1500, output_tokens: 20, cache_read_input_tokens: 1000}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_yaml_scenario_loads_into_dataclasses(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, FULL_SCENARIO))

    assert scenario == Scenario(
        name="read-then-answer",
        model="claude-sonnet-4-6",
        turns=(
            Turn(
                content=(
                    ThinkingBlock(thinking="I should read the file first.", signature="sig-1"),
                    TextBlock(text="Let me read it."),
                    ToolUseBlock(name="Read", input={"file_path": "src/app.py"}),
                )
            ),
            HttpError(
                status=429,
                error_type=ErrorType.RATE_LIMIT_ERROR,
                message="Number of request tokens has exceeded your rate limit.",
                headers={"retry-after": "2"},
            ),
            StreamError(content=(TextBlock(text="partial"),), after_events=3),
            DropConnection(after_events=0),
            Turn(
                content=(RedactedThinkingBlock(data="opaque=="), TextBlock(text="The app starts a server.")),
                stop_reason=StopReason.MAX_TOKENS,
                usage=Usage(input_tokens=1500, output_tokens=20, cache_read_input_tokens=1000),
            ),
        ),
    )


def test_stop_reason_defaults_to_tool_use_when_a_tool_is_called_else_end_turn() -> None:
    with_tool = Turn(content=(TextBlock(text="x"), ToolUseBlock(name="Read", input={})))
    without_tool = Turn(content=(TextBlock(text="x"),))

    assert with_tool.effective_stop_reason is StopReason.TOOL_USE
    assert without_tool.effective_stop_reason is StopReason.END_TURN
    assert Turn(content=(), stop_reason=StopReason.REFUSAL).effective_stop_reason is StopReason.REFUSAL


def test_a_stream_error_defaults_to_overloaded() -> None:
    (fault,) = Scenario.from_list([{"fault": "stream_error", "after_events": 0}]).turns

    assert fault == StreamError(after_events=0, error_type=ErrorType.OVERLOADED_ERROR, message="Overloaded")


def test_stop_reasons_are_the_apis_seven() -> None:
    assert [reason.value for reason in StopReason] == [
        "end_turn",
        "tool_use",
        "max_tokens",
        "stop_sequence",
        "pause_turn",
        "refusal",
        "model_context_window_exceeded",
    ]


def test_from_list_accepts_dataclasses_and_dicts_together() -> None:
    scenario = Scenario.from_list(
        [Turn(content=(TextBlock(text="a"),)), {"content": [{"text": "b"}]}], model="claude-sonnet-4-6", name="mixed"
    )

    assert scenario.turns == (Turn(content=(TextBlock(text="a"),)), Turn(content=(TextBlock(text="b"),)))
    assert (scenario.model, scenario.name) == ("claude-sonnet-4-6", "mixed")


def test_dataclasses_take_plain_strings_for_enums() -> None:
    turn = Turn(content=[TextBlock(text="a")], stop_reason="pause_turn")  # type: ignore[arg-type]
    error = HttpError(status=529, error_type="overloaded_error", message="Overloaded")  # type: ignore[arg-type]

    assert turn.stop_reason is StopReason.PAUSE_TURN
    assert turn.content == (TextBlock(text="a"),)
    assert error.error_type is ErrorType.OVERLOADED_ERROR


def test_from_list_errors_name_the_turn() -> None:
    with pytest.raises(ScenarioError) as caught:
        Scenario.from_list(
            [{"content": []}, {"fault": "http_error", "status": 302, "error_type": "api_error", "message": "m"}]
        )

    assert str(caught.value) == "turn 2: status 302 is not an HTTP error status; expected 400-599."


def test_a_directly_built_scenario_is_checked_too() -> None:
    with pytest.raises(ScenarioError) as caught:
        Scenario(turns=(Turn(content=()), DropConnection(after_events=5)))

    assert str(caught.value) == "turn 2: 'after_events' is 5, but the fault's content renders only 4 events."


TURNS = "version: 1\nturns:\n"

MALFORMED = {
    "unknown fault": (
        TURNS + "  - content: [{text: a}]\n  - content: [{text: b}]\n  - {fault: dropp, after_events: 1}\n",
        "turn 3: unknown fault 'dropp'; expected one of http_error, stream_error, drop_connection, "
        "malformed_event, reset_connection.",
    ),
    "unknown turn key": (
        TURNS + "  - content: [{text: a}]\n    stop_reasn: end_turn\n",
        "turn 1: unknown key 'stop_reasn' in the turn; expected keys are content, stop_reason, usage, match.",
    ),
    "unknown block key": (
        TURNS + "  - content: [{text: a, extra: 1}]\n",
        "turn 1: content block 1: unknown key 'extra' in the text block; expected keys are text.",
    ),
    "unknown block kind": (
        TURNS + "  - content: [{text: a}, {txt: b}]\n",
        "turn 1: content block 2: unknown block 'txt'; expected one of text, tool_use, thinking, redacted_thinking.",
    ),
    "unknown tool_use key": (
        TURNS + "  - content: [{tool_use: {name: Read, input: {}, ID: x}}]\n",
        "turn 1: content block 1: unknown key 'ID' under tool_use; expected keys are name, input, id.",
    ),
    "unknown fault key": (
        TURNS + "  - {fault: http_error, status: 429, error_type: rate_limit_error, message: m, retry_after: 5}\n",
        "turn 1: unknown key 'retry_after' in the http_error fault; "
        "expected keys are fault, status, error_type, message, headers, match.",
    ),
    "unknown match key": (
        TURNS + "  - content: []\n  - content: []\n    match: {purpose: compact, tool: none}\n",
        "turn 2: unknown key 'tool' under match; "
        "expected keys are purpose, last_user_contains, has_tools, model, stream, repeat.",
    ),
    "unknown purpose": (
        TURNS + "  - content: []\n    match: {purpose: title}\n",
        "turn 1: unknown purpose 'title'; expected one of main, compact, side.",
    ),
    "match wrong type": (
        TURNS + "  - content: []\n    match: {has_tools: 'no'}\n",
        "turn 1: match 'has_tools' must be true or false, not 'no'.",
    ),
    "match empty string": (
        TURNS + "  - content: []\n    match: {last_user_contains: ''}\n",
        "turn 1: match 'last_user_contains' must be a non-empty string, not ''.",
    ),
    "match not a mapping": (
        TURNS + "  - {fault: reset_connection, match: compact}\n",
        "turn 1: 'match' must be a mapping, not str.",
    ),
    "match without a predicate": (
        TURNS + "  - content: []\n    match: {repeat: true}\n",
        "turn 1: 'match' needs at least one of purpose, last_user_contains, has_tools, model, stream; "
        "a turn for any request needs no match.",
    ),
    "unknown top-level key": (
        "version: 1\nturn: []\n",
        "unknown key 'turn' in the scenario file; "
        "expected keys are version, name, model, prompts, settings, session, turns.",
    ),
    "content not a list": (
        TURNS + "  - content: hello\n",
        "turn 1: 'content' must be a list of blocks, not str.",
    ),
    "status not an integer": (
        TURNS + "  - {fault: http_error, status: '429', error_type: rate_limit_error, message: m}\n",
        "turn 1: 'status' must be an integer, not str.",
    ),
    "status a boolean": (
        TURNS + "  - {fault: http_error, status: true, error_type: rate_limit_error, message: m}\n",
        "turn 1: 'status' must be an integer, not bool.",
    ),
    "header value a list": (
        TURNS + "  - {fault: http_error, status: 429, error_type: rate_limit_error, message: m, "
        "headers: {retry-after: [1]}}\n",
        "turn 1: header 'retry-after' must map a name to a string or integer, not list.",
    ),
    "missing message": (
        TURNS + "  - {fault: http_error, status: 429, error_type: rate_limit_error}\n",
        "turn 1: missing required key 'message'.",
    ),
    "missing content": (
        TURNS + "  - stop_reason: end_turn\n",
        "turn 1: missing required key 'content'.",
    ),
    "missing signature": (
        TURNS + "  - content: [{thinking: hmm}]\n",
        "turn 1: content block 1: missing required key 'signature'.",
    ),
    "missing after_events": (
        TURNS + "  - {fault: stream_error}\n",
        "turn 1: missing required key 'after_events'.",
    ),
    "bad status": (
        TURNS + "  - {fault: http_error, status: 200, error_type: api_error, message: m}\n",
        "turn 1: status 200 is not an HTTP error status; expected 400-599.",
    ),
    "unknown stop reason": (
        TURNS + "  - content: []\n    stop_reason: done\n",
        "turn 1: unknown stop_reason 'done'; expected one of end_turn, tool_use, max_tokens, stop_sequence, "
        "pause_turn, refusal, model_context_window_exceeded.",
    ),
    "unknown error type": (
        TURNS + "  - {fault: http_error, status: 500, error_type: server_error, message: m}\n",
        "turn 1: unknown error_type 'server_error'; expected one of invalid_request_error, authentication_error, "
        "billing_error, permission_error, not_found_error, request_too_large, rate_limit_error, api_error, "
        "timeout_error, overloaded_error.",
    ),
    "tool input not a mapping": (
        TURNS + "  - content: [{tool_use: {name: Read, input: [a]}}]\n",
        "turn 1: content block 1: tool_use 'input' must be a mapping, not list.",
    ),
    "negative usage": (
        TURNS + "  - content: []\n    usage: {input_tokens: -1, output_tokens: 2}\n",
        "turn 1: usage 'input_tokens' must be a non-negative integer, not -1.",
    ),
    "after_events past the rendering": (
        TURNS + "  - {fault: drop_connection, after_events: 9, content: [{text: hi}]}\n",
        "turn 1: 'after_events' is 9, but the fault's content renders only 7 events.",
    ),
    "negative after_events": (
        TURNS + "  - {fault: stream_error, after_events: -1}\n",
        "turn 1: 'after_events' must be a non-negative integer, not -1.",
    ),
    "turn not a mapping": (
        TURNS + "  - hello\n",
        "turn 1: a turn must be a mapping, not str.",
    ),
    "turns not a list": (
        "version: 1\nturns: {a: 1}\n",
        "'turns' must be a list, not dict.",
    ),
    "name not a string": (
        "version: 1\nname: 5\nturns: []\n",
        "'name' must be a string, not int.",
    ),
    "wrong version": (
        "version: 2\nturns: []\n",
        "unsupported version 2; expected version 1.",
    ),
    "missing version": (
        "turns: []\n",
        "missing required key 'version'.",
    ),
    "empty file": (
        "",
        "the scenario file is empty; expected a mapping with version and turns.",
    ),
    "top level a list": (
        "- content: []\n",
        "the scenario file must be a mapping, not list.",
    ),
    "invalid YAML": (
        "version: 1\nturns: [\n  - a: b: c\n",
        "invalid YAML (did not find expected node content at line 3, column 3).",
    ),
}


@pytest.mark.parametrize(("text", "problem"), MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_scenario_names_the_file_turn_and_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path, text)

    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)

    assert str(caught.value) == f"{path}: {problem}"


def test_a_missing_file_is_a_scenario_error(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.yaml"

    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)

    assert str(caught.value) == f"{path} does not exist."


def test_a_file_that_is_not_utf8_is_a_scenario_error(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"\xff\xfe\x00")

    with pytest.raises(ScenarioError, match=r"binary\.yaml is not UTF-8 text \(byte 0 cannot be decoded\)"):
        load_scenario(path)


def test_yaml_is_loaded_safely(tmp_path: Path) -> None:
    path = write(tmp_path, "version: 1\nturns: !!python/object/apply:os.system ['true']\n")

    with pytest.raises(ScenarioError, match=r"scenario\.yaml: invalid YAML \(could not determine a constructor"):
        load_scenario(path)


def test_every_example_in_the_scenario_docs_loads(tmp_path: Path) -> None:
    docs = Path(__file__).resolve().parents[3] / "docs" / "scenarios.md"
    examples = docs.read_text(encoding="utf-8").split("```yaml\n")[1:]

    for number, example in enumerate(examples, start=1):
        path = tmp_path / f"example_{number}.yaml"
        path.write_text(example.split("```", 1)[0], encoding="utf-8")
        assert load_scenario(path).turns, f"example {number} has no turns"
    assert len(examples) == 9
