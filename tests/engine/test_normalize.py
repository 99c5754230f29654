"""normalize_messages_for_api: the loop's envelopes become a request the API accepts."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.messages import (
    MISSING_TOOL_RESULT,
    AssistantMessage,
    AttachmentMessage,
    Message,
    ProgressMessage,
    SystemMessage,
    SystemSubtype,
    TombstoneMessage,
    UserMessage,
)
from engine.normalize import normalize_messages_for_api

JsonDict = dict[str, Any]
TIMESTAMP = "2026-01-01T00:00:00.000Z"
_uuids = itertools.count(1)


def _uuid() -> str:
    return f"00000000-0000-4000-8000-{next(_uuids):012d}"


def user(content: str | list[JsonDict]) -> UserMessage:
    return UserMessage(uuid=_uuid(), timestamp=TIMESTAMP, message={"role": "user", "content": content})


def assistant(*blocks: JsonDict, response: str = "msg_1", api_error: bool = False) -> AssistantMessage:
    return AssistantMessage(
        uuid=_uuid(),
        timestamp=TIMESTAMP,
        is_api_error_message=api_error,
        message={"id": response, "type": "message", "role": "assistant", "model": "m", "content": list(blocks)},
    )


def text(value: str) -> JsonDict:
    return {"type": "text", "text": value}


def thinking(value: str = "let me think") -> JsonDict:
    return {"type": "thinking", "thinking": value, "signature": "sig"}


def redacted(data: str = "opaque") -> JsonDict:
    return {"type": "redacted_thinking", "data": data}


def attachment(kind: str = "changed_file", **payload: Any) -> AttachmentMessage:
    return AttachmentMessage(uuid=_uuid(), timestamp=TIMESTAMP, attachment={"type": kind, **payload})


def render_note(payload: JsonDict) -> str | None:
    """Renders ``note`` attachments as their text and leaves every other kind out."""
    return f"<note>{payload['text']}</note>" if payload["type"] == "note" else None


def tool_use(tool_id: str) -> JsonDict:
    return {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": "ls"}}


def tool_result(tool_id: str, content: str = "ok") -> JsonDict:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content}


def missing_result(tool_id: str) -> JsonDict:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": MISSING_TOOL_RESULT, "is_error": True}


def system_message() -> SystemMessage:
    return SystemMessage(uuid=_uuid(), timestamp=TIMESTAMP, subtype=SystemSubtype.WARNING, content="careful")


def roles(api: Sequence[JsonDict]) -> list[str]:
    return [m["role"] for m in api]


# --- what never reaches the API --------------------------------------------------------------


def test_system_messages_are_dropped() -> None:
    api = normalize_messages_for_api([user("hi"), system_message()])
    assert api == [{"role": "user", "content": [text("hi")]}]


def test_progress_messages_are_dropped() -> None:
    progress = ProgressMessage(uuid=_uuid(), timestamp=TIMESTAMP, tool_use_id="toolu_1", data={"line": "x"})
    assert normalize_messages_for_api([user("hi"), progress]) == [{"role": "user", "content": [text("hi")]}]


def test_tombstone_messages_are_dropped() -> None:
    tombstone = TombstoneMessage(uuid=_uuid(), timestamp=TIMESTAMP, target_uuid="gone")
    assert normalize_messages_for_api([user("hi"), tombstone]) == [{"role": "user", "content": [text("hi")]}]


def test_attachment_messages_are_dropped() -> None:
    attachment = AttachmentMessage(uuid=_uuid(), timestamp=TIMESTAMP, attachment={"type": "max_turns_reached"})
    assert normalize_messages_for_api([user("hi"), attachment]) == [{"role": "user", "content": [text("hi")]}]


def test_api_error_assistant_messages_are_dropped() -> None:
    error = assistant(text("API Error: overloaded"), response="msg_synthetic", api_error=True)
    assert normalize_messages_for_api([user("hi"), error]) == [{"role": "user", "content": [text("hi")]}]


# --- merging ---------------------------------------------------------------------------------


def test_consecutive_user_messages_merge_with_string_content_as_text_blocks() -> None:
    api = normalize_messages_for_api([user("first"), user([text("second")]), user("third")])
    assert api == [{"role": "user", "content": [text("first"), text("second"), text("third")]}]


def test_blocks_of_one_response_merge_into_one_assistant_turn() -> None:
    messages = [
        user("hi"),
        assistant(thinking(), response="msg_1"),
        assistant(text("running it"), response="msg_1"),
        assistant(tool_use("toolu_1"), response="msg_1"),
        user([tool_result("toolu_1")]),
    ]
    api = normalize_messages_for_api(messages)
    assert api[1] == {"role": "assistant", "content": [thinking(), text("running it"), tool_use("toolu_1")]}


def test_the_output_has_no_envelope_fields() -> None:
    api = normalize_messages_for_api([user("hi"), assistant(text("hello"), response="msg_1")])
    assert api == [{"role": "user", "content": [text("hi")]}, {"role": "assistant", "content": [text("hello")]}]


def test_tool_results_come_first_in_a_merged_user_message() -> None:
    messages = [user("hi"), assistant(tool_use("toolu_1")), user("also this"), user([tool_result("toolu_1")])]
    api = normalize_messages_for_api(messages)
    assert api[2] == {"role": "user", "content": [tool_result("toolu_1"), text("also this")]}


# --- tool_use / tool_result pairing ----------------------------------------------------------


def test_a_tool_use_at_the_end_gets_a_missing_result_in_a_new_user_message() -> None:
    api = normalize_messages_for_api([user("hi"), assistant(tool_use("toolu_1"))])
    assert api[2:] == [{"role": "user", "content": [missing_result("toolu_1")]}]


def test_a_tool_use_the_next_user_message_does_not_answer_gets_a_missing_result_there() -> None:
    api = normalize_messages_for_api([user("hi"), assistant(tool_use("toolu_1")), user("go on")])
    assert api[2:] == [{"role": "user", "content": [missing_result("toolu_1"), text("go on")]}]


def test_a_partly_answered_turn_keeps_its_real_results_and_fills_in_the_missing_ones() -> None:
    messages = [user("hi"), assistant(tool_use("toolu_1"), tool_use("toolu_2")), user([tool_result("toolu_1")])]
    api = normalize_messages_for_api(messages)
    assert len(api) == 3
    assert sorted(api[2]["content"], key=lambda b: b["tool_use_id"]) == [
        tool_result("toolu_1"),
        missing_result("toolu_2"),
    ]


def test_a_tool_result_without_its_tool_use_in_the_preceding_assistant_turn_is_dropped() -> None:
    messages = [user("hi"), assistant(text("hello")), user([tool_result("toolu_elsewhere"), text("next")])]
    api = normalize_messages_for_api(messages)
    assert api[2] == {"role": "user", "content": [text("next")]}


def test_a_tool_result_answering_an_older_assistant_turn_is_dropped() -> None:
    messages = [
        user("hi"),
        assistant(tool_use("toolu_1"), response="msg_1"),
        user([tool_result("toolu_1")]),
        assistant(text("done"), response="msg_2"),
        user([tool_result("toolu_1"), text("again")]),
    ]
    api = normalize_messages_for_api(messages)
    assert api[4] == {"role": "user", "content": [text("again")]}


def test_a_user_message_left_empty_by_dropped_results_disappears() -> None:
    messages = [user("hi"), assistant(text("hello")), user([tool_result("toolu_orphan")])]
    api = normalize_messages_for_api(messages)
    assert roles(api) == ["user", "assistant"]


def test_a_user_message_left_empty_between_two_responses_leaves_them_as_one_assistant_turn() -> None:
    messages = [
        user("hi"),
        assistant(text("one"), response="msg_1"),
        user([tool_result("toolu_orphan")]),
        assistant(text("two"), response="msg_2"),
    ]
    api = normalize_messages_for_api(messages)
    assert api == [
        {"role": "user", "content": [text("hi")]},
        {"role": "assistant", "content": [text("one"), text("two")]},
    ]


# --- content the API refuses -----------------------------------------------------------------


def test_a_thinking_only_assistant_message_is_dropped() -> None:
    api = normalize_messages_for_api([user("a"), assistant(thinking(), response="msg_1"), user("b")])
    assert api == [{"role": "user", "content": [text("a"), text("b")]}]


def test_a_whitespace_only_assistant_message_is_dropped() -> None:
    api = normalize_messages_for_api([user("a"), assistant(text(" \n\t "), response="msg_1"), user("b")])
    assert api == [{"role": "user", "content": [text("a"), text("b")]}]


def test_trailing_thinking_blocks_of_the_last_assistant_turn_are_removed() -> None:
    messages = [user("a"), assistant(thinking("first"), text("answer"), thinking("second"), thinking("third"))]
    api = normalize_messages_for_api(messages)
    assert api[-1] == {"role": "assistant", "content": [thinking("first"), text("answer")]}


def test_thinking_blocks_of_an_earlier_assistant_turn_are_kept() -> None:
    messages = [user("a"), assistant(text("answer"), thinking(), response="msg_1"), user("b")]
    api = normalize_messages_for_api(messages)
    assert api[1] == {"role": "assistant", "content": [text("answer"), thinking()]}


def test_trailing_redacted_thinking_of_the_last_assistant_turn_is_removed() -> None:
    api = normalize_messages_for_api([user("a"), assistant(text("answer"), redacted())])
    assert api[-1] == {"role": "assistant", "content": [text("answer")]}


# --- thinking rules --------------------------------------------------------------------------


def test_an_assistant_turn_left_last_by_a_dropped_user_turn_loses_its_trailing_thinking() -> None:
    messages = [user("a"), assistant(text("answer"), thinking()), user([tool_result("toolu_orphan")])]
    api = normalize_messages_for_api(messages)
    assert api == [{"role": "user", "content": [text("a")]}, {"role": "assistant", "content": [text("answer")]}]


def test_thinking_before_a_tool_use_stays_with_it_while_its_results_follow() -> None:
    signed = {"type": "thinking", "thinking": "read it first", "signature": "EqQBCkgIARABGAIiQK0k"}
    messages = [
        user("what is in a?"),
        assistant(signed, response="msg_1"),
        assistant(redacted("EmwKAhgBEgy3"), response="msg_1"),
        assistant(tool_use("toolu_1"), response="msg_1"),
        user([tool_result("toolu_1")]),
    ]
    api = normalize_messages_for_api(messages)
    assert api[1:] == [
        {"role": "assistant", "content": [signed, redacted("EmwKAhgBEgy3"), tool_use("toolu_1")]},
        {"role": "user", "content": [tool_result("toolu_1")]},
    ]


def test_thinking_is_kept_by_default() -> None:
    messages = [user("a"), assistant(thinking(), text("answer"), response="msg_1"), user("b")]
    assert normalize_messages_for_api(messages) == normalize_messages_for_api(messages, thinking_enabled=True)
    assert normalize_messages_for_api(messages)[1]["content"][0] == thinking()


def test_without_thinking_enabled_every_thinking_block_is_removed() -> None:
    messages = [
        user("a"),
        assistant(thinking("first"), redacted(), tool_use("toolu_1"), response="msg_1"),
        user([tool_result("toolu_1")]),
        assistant(thinking("second"), text("done"), response="msg_2"),
        user("b"),
        assistant(redacted(), text("last"), response="msg_3"),
    ]
    api = normalize_messages_for_api(messages, thinking_enabled=False)
    assert api == [
        {"role": "user", "content": [text("a")]},
        {"role": "assistant", "content": [tool_use("toolu_1")]},
        {"role": "user", "content": [tool_result("toolu_1")]},
        {"role": "assistant", "content": [text("done")]},
        {"role": "user", "content": [text("b")]},
        {"role": "assistant", "content": [text("last")]},
    ]


def test_without_thinking_enabled_a_thinking_only_response_disappears() -> None:
    messages = [user("a"), assistant(thinking(), redacted(), response="msg_1"), user("b")]
    api = normalize_messages_for_api(messages, thinking_enabled=False)
    assert api == [{"role": "user", "content": [text("a"), text("b")]}]


# --- attachments -----------------------------------------------------------------------------


def test_a_rendered_attachment_becomes_user_text_merged_with_the_prompt_before_it() -> None:
    messages = [user("hi"), attachment("note", text="a.py changed")]
    api = normalize_messages_for_api(messages, render_attachment=render_note)
    assert api == [{"role": "user", "content": [text("hi"), text("<note>a.py changed</note>")]}]


def test_a_rendered_attachment_follows_the_tool_results_it_was_injected_after() -> None:
    messages = [
        user("hi"),
        assistant(tool_use("toolu_1")),
        user([tool_result("toolu_1")]),
        attachment("note", text="a.py changed"),
    ]
    api = normalize_messages_for_api(messages, render_attachment=render_note)
    assert api[2] == {"role": "user", "content": [tool_result("toolu_1"), text("<note>a.py changed</note>")]}


def test_tool_results_still_come_first_when_an_attachment_precedes_them() -> None:
    messages = [
        user("hi"),
        assistant(tool_use("toolu_1")),
        attachment("note", text="x"),
        user([tool_result("toolu_1")]),
    ]
    api = normalize_messages_for_api(messages, render_attachment=render_note)
    assert api[2] == {"role": "user", "content": [tool_result("toolu_1"), text("<note>x</note>")]}


def test_a_rendered_attachment_after_an_answer_starts_a_user_turn() -> None:
    messages = [user("hi"), assistant(text("hello")), attachment("note", text="later")]
    api = normalize_messages_for_api(messages, render_attachment=render_note)
    assert api[2:] == [{"role": "user", "content": [text("<note>later</note>")]}]


def test_an_attachment_rendered_as_none_or_blank_is_left_out() -> None:
    def render(payload: JsonDict) -> str | None:
        return {"note": "  \n", "memory": ""}.get(payload["type"])

    messages = [user("hi"), attachment("note"), attachment("memory"), attachment("max_turns_reached")]
    api = normalize_messages_for_api(messages, render_attachment=render)
    assert api == [{"role": "user", "content": [text("hi")]}]


def test_the_renderer_receives_the_attachment_payload() -> None:
    seen: list[JsonDict] = []

    def render(payload: JsonDict) -> str | None:
        seen.append(payload)
        return None

    normalize_messages_for_api([user("hi"), attachment("note", text="x", path="a.py")], render_attachment=render)
    assert seen == [{"type": "note", "text": "x", "path": "a.py"}]


# --- invariants ------------------------------------------------------------------------------


def test_the_input_messages_are_not_mutated() -> None:
    messages: list[Message] = [
        user("hi"),
        user([text("more")]),
        assistant(thinking(), response="msg_1"),
        assistant(text("ok"), response="msg_1"),
        assistant(tool_use("toolu_1"), tool_use("toolu_2"), response="msg_1"),
        user([text("before"), tool_result("toolu_1"), tool_result("toolu_orphan")]),
        system_message(),
        assistant(text("end"), thinking(), response="msg_2"),
    ]
    before = copy.deepcopy(messages)
    normalize_messages_for_api(messages)
    normalize_messages_for_api(messages, thinking_enabled=False)
    assert messages == before


def test_the_input_messages_are_not_mutated_by_attachments() -> None:
    messages: list[Message] = [
        user("hi"),
        assistant(tool_use("toolu_1")),
        attachment("note", text="x"),
        user([tool_result("toolu_1")]),
        attachment("note", text="y"),
    ]
    before = copy.deepcopy(messages)
    api = normalize_messages_for_api(messages, render_attachment=render_note)
    api[-1]["content"].append(text("added later"))
    assert messages == before


def test_the_output_alternates_user_and_assistant() -> None:
    messages = [
        user("a"),
        user("b"),
        assistant(text("x"), response="msg_1"),
        assistant(text("y"), response="msg_2"),
        system_message(),
        user("c"),
        assistant(thinking(), response="msg_3"),
        user("d"),
        assistant(tool_use("toolu_1"), response="msg_4"),
    ]
    assert roles(normalize_messages_for_api(messages)) == ["user", "assistant", "user", "assistant", "user"]


def test_no_messages_give_no_messages() -> None:
    assert normalize_messages_for_api([]) == []


# --- property: whatever the history, the request is well-formed ------------------------------


def _assert_well_formed(api: Sequence[JsonDict]) -> None:
    for earlier, later in itertools.pairwise(api):
        assert earlier["role"] != later["role"], f"two {later['role']} turns in a row: {api}"
    for index, entry in enumerate(api):
        assert entry["content"], f"turn {index} is empty: {api}"
        if entry["role"] == "assistant":
            uses = {b["id"] for b in entry["content"] if b["type"] == "tool_use"}
            if uses:
                assert index + 1 < len(api), f"turn {index}'s tool_use is never answered: {api}"
                answered = {b["tool_use_id"] for b in api[index + 1]["content"] if b["type"] == "tool_result"}
                assert uses <= answered, f"turn {index}'s tool_use {uses - answered} is not answered: {api}"
        else:
            results = {b["tool_use_id"] for b in entry["content"] if b["type"] == "tool_result"}
            if results:
                assert index > 0, f"turn {index} answers no tool_use: {api}"
                uses = {b["id"] for b in api[index - 1]["content"] if b["type"] == "tool_use"}
                assert results <= uses, f"turn {index}'s tool_result {results - uses} answers nothing: {api}"


_STEPS = st.lists(
    st.sampled_from(
        [
            "user_text",
            "assistant_text",
            "assistant_text_same_response",
            "assistant_tool_use",
            "assistant_tool_use_same_response",
            "tool_result",
            "tool_result_unknown",
            "thinking",
            "thinking_same_response",
            "redacted_thinking_same_response",
            "whitespace",
            "system",
            "attachment",
            "attachment_unrendered",
        ]
    ),
    max_size=25,
)


_STARTS_A_RESPONSE = frozenset({"assistant_text", "assistant_tool_use", "thinking", "whitespace"})


def _history(steps: Sequence[str], choices: st.DataObject) -> list[Message]:
    """A plausible-or-worse history: tool results may answer any earlier tool_use, or none."""
    messages: list[Message] = []
    responses = itertools.count(1)
    tool_ids = itertools.count(1)
    response = f"msg_{next(responses)}"
    unanswered: list[str] = []
    for step in steps:
        if step in _STARTS_A_RESPONSE:
            response = f"msg_{next(responses)}"
        match step.removesuffix("_same_response"):
            case "user_text":
                messages.append(user("prompt"))
            case "assistant_text":
                messages.append(assistant(text("answer"), response=response))
            case "assistant_tool_use":
                tool_id = f"toolu_{next(tool_ids)}"
                unanswered.append(tool_id)
                messages.append(assistant(tool_use(tool_id), response=response))
            case "tool_result" if unanswered:
                tool_id = choices.draw(st.sampled_from(unanswered))
                unanswered.remove(tool_id)
                messages.append(user([tool_result(tool_id)]))
            case "tool_result" | "tool_result_unknown":
                messages.append(user([tool_result("toolu_unknown")]))
            case "thinking":
                messages.append(assistant(thinking(), response=response))
            case "redacted_thinking":
                messages.append(assistant(redacted(), response=response))
            case "whitespace":
                messages.append(assistant(text("  "), response=response))
            case "system":
                messages.append(system_message())
            case "attachment":
                messages.append(attachment("note", text="context"))
            case "attachment_unrendered":
                messages.append(attachment("max_turns_reached"))
    return messages


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(steps=_STEPS, choices=st.data())
def test_any_history_normalizes_to_alternating_turns_with_every_tool_use_answered(
    steps: list[str], choices: st.DataObject
) -> None:
    _assert_well_formed(normalize_messages_for_api(_history(steps, choices)))


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(steps=_STEPS, choices=st.data(), thinking_enabled=st.booleans())
def test_any_history_with_any_options_obeys_the_thinking_rules(
    steps: list[str], choices: st.DataObject, thinking_enabled: bool
) -> None:
    api = normalize_messages_for_api(
        _history(steps, choices), thinking_enabled=thinking_enabled, render_attachment=render_note
    )
    _assert_well_formed(api)
    thinking_blocks = [b for m in api for b in m["content"] if b["type"] in ("thinking", "redacted_thinking")]
    if not thinking_enabled:
        assert thinking_blocks == [], f"thinking sent with thinking disabled: {api}"
    assert thinking_blocks == [b for b in thinking_blocks if b in (thinking(), redacted())], "thinking was altered"
    if api and api[-1]["role"] == "assistant":
        assert api[-1]["content"][-1]["type"] not in ("thinking", "redacted_thinking"), f"ends with thinking: {api}"
    for entry in api:
        if entry["role"] == "assistant":
            assert any(b["type"] not in ("thinking", "redacted_thinking") for b in entry["content"]), (
                f"a thinking-only assistant turn: {api}"
            )
