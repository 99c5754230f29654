"""Message envelopes: transcript records that round-trip, and constructors fed by the injected deps."""

from __future__ import annotations

import json

import pytest

from engine.deps import QueryDeps, SeededUuids
from engine.messages import (
    AssistantMessage,
    AttachmentMessage,
    AttachmentType,
    Message,
    ProgressMessage,
    SystemLevel,
    SystemMessage,
    SystemSubtype,
    TombstoneMessage,
    UserMessage,
    message_from_record,
    tool_result_block,
    tool_use_blocks,
)

TIMESTAMP = "2026-01-01T00:00:00.000Z"
FIRST_TICK = "2026-01-01T00:00:00.001Z"  # the deterministic clock's first reading


def deps(seed: int = 0) -> QueryDeps:
    return QueryDeps.deterministic(object(), seed=seed)  # type: ignore[arg-type] - no model call is made


def through_json(message: Message) -> Message:
    """What a transcript line gives back: the record written as JSON, then rebuilt."""
    return message_from_record(json.loads(json.dumps(message.to_record())))


TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}

EVERY_KIND: list[Message] = [
    UserMessage(
        uuid="u-1",
        timestamp=TIMESTAMP,
        parent_uuid="a-0",
        message={"role": "user", "content": [tool_result_block("toolu_1", "ok")]},
        tool_use_result={"stdout": "ok"},
        source_tool_assistant_uuid="a-0",
    ),
    UserMessage(uuid="u-2", timestamp=TIMESTAMP, is_meta=True, message={"role": "user", "content": "meta"}),
    AssistantMessage(
        uuid="a-1",
        timestamp=TIMESTAMP,
        parent_uuid="u-1",
        request_id="req_1",
        message={"id": "msg_1", "role": "assistant", "content": [TOOL_USE]},
    ),
    AssistantMessage(
        uuid="a-2",
        timestamp=TIMESTAMP,
        is_api_error_message=True,
        error="overloaded",
        message={"id": "msg_2", "role": "assistant", "content": [{"type": "text", "text": "API Error"}]},
    ),
    SystemMessage(
        uuid="s-1",
        timestamp=TIMESTAMP,
        subtype=SystemSubtype.COMPACT_BOUNDARY,
        content="Conversation compacted",
        level=SystemLevel.WARNING,
        compact_metadata={"trigger": "auto", "pre_tokens": 1000},
        logical_parent_uuid="a-1",
    ),
    AttachmentMessage(
        uuid="t-1", timestamp=TIMESTAMP, attachment={"type": AttachmentType.MAX_TURNS_REACHED.value, "max_turns": 3}
    ),
    TombstoneMessage(uuid="x-1", timestamp=TIMESTAMP, target_uuid="a-1"),
    ProgressMessage(uuid="p-1", timestamp=TIMESTAMP, tool_use_id="toolu_1", data={"line": "building"}),
]


# --- records ---------------------------------------------------------------------------------


@pytest.mark.parametrize("message", EVERY_KIND, ids=lambda m: f"{m.type.value}-{m.uuid}")
def test_every_message_kind_round_trips_through_a_json_record(message: Message) -> None:
    assert through_json(message) == message


def test_a_record_names_its_message_type() -> None:
    assert [m.to_record()["type"] for m in EVERY_KIND] == [
        "user",
        "user",
        "assistant",
        "assistant",
        "system",
        "attachment",
        "tombstone",
        "progress",
    ]


def test_system_enums_are_restored_as_enums() -> None:
    restored = through_json(EVERY_KIND[4])
    assert isinstance(restored, SystemMessage)
    assert type(restored.subtype) is SystemSubtype and restored.subtype is SystemSubtype.COMPACT_BOUNDARY
    assert type(restored.level) is SystemLevel and restored.level is SystemLevel.WARNING


def test_a_record_leaves_out_absent_and_false_fields_but_always_has_is_meta() -> None:
    message = UserMessage(uuid="u", timestamp=TIMESTAMP, message={"role": "user", "content": "hi"})
    assert message.to_record() == {
        "type": "user",
        "uuid": "u",
        "timestamp": TIMESTAMP,
        "is_meta": False,
        "message": {"role": "user", "content": "hi"},
    }


def test_session_fields_in_a_record_are_ignored_when_rebuilding() -> None:
    record = EVERY_KIND[6].to_record() | {"session_id": "s", "cwd": "/work"}
    assert message_from_record(record) == EVERY_KIND[6]


def test_an_unknown_record_type_is_an_error() -> None:
    with pytest.raises(ValueError, match="'summary'"):
        message_from_record({"type": "summary", "uuid": "u", "timestamp": TIMESTAMP})


# --- constructors over the injected deps ----------------------------------------------------


def test_a_created_user_message_takes_its_uuid_and_timestamp_from_the_deps() -> None:
    message = UserMessage.create(deps(seed=7), "hello")
    assert message.uuid == SeededUuids(7)()
    assert message.timestamp == FIRST_TICK
    assert message.message == {"role": "user", "content": "hello"}
    assert message.is_meta is False


def test_created_user_messages_are_the_same_for_the_same_seed() -> None:
    first, second = deps(seed=3), deps(seed=3)
    assert [UserMessage.create(first, "a") for _ in range(3)] == [UserMessage.create(second, "a") for _ in range(3)]


def test_created_user_messages_differ_for_another_seed() -> None:
    assert UserMessage.create(deps(seed=1), "a").uuid != UserMessage.create(deps(seed=2), "a").uuid


def test_each_created_message_gets_a_new_uuid_and_a_later_timestamp() -> None:
    source = deps()
    first, second = UserMessage.create(source, "a"), UserMessage.create(source, "b")
    assert first.uuid != second.uuid
    assert first.timestamp < second.timestamp


def test_a_created_user_message_carries_meta_and_extra_fields() -> None:
    message = UserMessage.create(deps(), "note", is_meta=True, source_tool_assistant_uuid="a-1")
    assert message.is_meta is True
    assert message.source_tool_assistant_uuid == "a-1"


def test_an_api_error_message_is_a_synthetic_assistant_message_marked_as_an_error() -> None:
    message = AssistantMessage.api_error(deps(), "API Error: Overloaded", error="overloaded")
    assert message.is_api_error_message is True
    assert message.error == "overloaded"
    assert message.content == [{"type": "text", "text": "API Error: Overloaded"}]
    assert message.message["role"] == "assistant"
    assert message.message["model"] == "<synthetic>"


def test_an_api_error_message_takes_its_ids_and_timestamp_from_the_deps() -> None:
    uuids = SeededUuids(5)
    message = AssistantMessage.api_error(deps(seed=5), "API Error", error="server_error")
    envelope_uuid, id_source = uuids(), uuids()
    assert message.uuid == envelope_uuid
    assert message.message["id"] == f"msg_synthetic_{id_source[:8]}"
    assert message.timestamp == FIRST_TICK


def test_api_error_messages_are_the_same_for_the_same_seed() -> None:
    first = AssistantMessage.api_error(deps(seed=9), "API Error", error="overloaded")
    second = AssistantMessage.api_error(deps(seed=9), "API Error", error="overloaded")
    assert first == second


# --- blocks ----------------------------------------------------------------------------------


def test_tool_use_blocks_are_the_tool_uses_of_an_assistant_message_in_order() -> None:
    second = {"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {}}
    message = AssistantMessage(
        uuid="a",
        timestamp=TIMESTAMP,
        message={"id": "m", "role": "assistant", "content": [TOOL_USE, {"type": "text", "text": "and"}, second]},
    )
    assert tool_use_blocks(message) == [TOOL_USE, second]


def test_a_user_message_has_no_tool_use_blocks() -> None:
    message = UserMessage(uuid="u", timestamp=TIMESTAMP, message={"role": "user", "content": [TOOL_USE]})
    assert tool_use_blocks(message) == []


def test_a_tool_result_block_has_no_is_error_key_when_it_is_not_an_error() -> None:
    assert tool_result_block("toolu_1", "ok") == {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}


def test_a_failed_tool_result_block_says_is_error_true() -> None:
    assert tool_result_block("toolu_1", "boom", is_error=True) == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "boom",
        "is_error": True,
    }
