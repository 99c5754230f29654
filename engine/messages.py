"""Message envelopes and the API view of a conversation.

Content blocks are kept in the Messages API's own JSON shape, so what the loop sends is exactly
what it stored. Envelope fields (uuid, parent chain, timestamps, flags) never reach the API.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from engine.deps import QueryDeps

__all__ = [
    "INTERRUPT_MESSAGE",
    "INTERRUPT_MESSAGE_FOR_TOOL_USE",
    "MISSING_TOOL_RESULT",
    "AssistantMessage",
    "AttachmentMessage",
    "AttachmentType",
    "Message",
    "MessageType",
    "ProgressMessage",
    "SystemLevel",
    "SystemMessage",
    "SystemSubtype",
    "TombstoneMessage",
    "UserMessage",
    "message_from_record",
    "tool_result_block",
    "tool_use_blocks",
]

JsonDict = dict[str, Any]

MISSING_TOOL_RESULT = "[Tool result missing due to internal error]"
INTERRUPT_MESSAGE = "[Request interrupted by user]"
INTERRUPT_MESSAGE_FOR_TOOL_USE = "[Request interrupted by user for tool use]"


class MessageType(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    ATTACHMENT = "attachment"
    TOMBSTONE = "tombstone"
    PROGRESS = "progress"


class SystemSubtype(StrEnum):
    COMPACT_BOUNDARY = "compact_boundary"
    API_ERROR = "api_error"
    WARNING = "warning"


class SystemLevel(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class AttachmentType(StrEnum):
    MAX_TURNS_REACHED = "max_turns_reached"
    HOOK_STOPPED_CONTINUATION = "hook_stopped_continuation"
    QUEUED_COMMAND = "queued_command"
    CHANGED_FILE = "changed_file"
    MEMORY = "memory"


@dataclass(kw_only=True)
class Message:
    """The envelope every message shares."""

    type: ClassVar[MessageType]
    uuid: str
    timestamp: str
    parent_uuid: str | None = None
    is_meta: bool = False

    def to_record(self) -> JsonDict:
        """The message as a transcript record (without session fields)."""
        record: JsonDict = {"type": self.type.value}
        for name in _field_names(type(self)):
            value = getattr(self, name)
            if value is None or (value is False and name != "is_meta"):
                continue  # absent optional fields keep records short and stable
            record[name] = value.value if isinstance(value, StrEnum) else value
        return record


_FIELD_NAMES: dict[type[Message], tuple[str, ...]] = {}


def _field_names(cls: type[Message]) -> tuple[str, ...]:
    """A message class's field names in declaration order (``dataclasses.fields`` rebuilds the
    tuple on every call, once per record written)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


@dataclass(kw_only=True)
class UserMessage(Message):
    """A user turn: a prompt, tool results, or a meta message the loop adds."""

    type: ClassVar[MessageType] = MessageType.USER
    message: JsonDict
    # What observers see of a tool's output (never sent to the API).
    tool_use_result: Any = None
    # The assistant message whose tool_use this message answers; its transcript parent.
    source_tool_assistant_uuid: str | None = None
    is_compact_summary: bool = False

    @property
    def content(self) -> str | list[JsonDict]:
        return self.message["content"]

    @classmethod
    def create(
        cls, deps: QueryDeps, content: str | list[JsonDict], *, is_meta: bool = False, **extra: Any
    ) -> UserMessage:
        return cls(
            uuid=deps.uuid(),
            timestamp=deps.now(),
            is_meta=is_meta,
            message={"role": "user", "content": content},
            **extra,
        )


@dataclass(kw_only=True)
class AssistantMessage(Message):
    """One content block of a model response (the stream yields one per block, sharing the
    response's ``message.id``), or a synthetic API error message."""

    type: ClassVar[MessageType] = MessageType.ASSISTANT
    message: JsonDict
    request_id: str | None = None
    is_api_error_message: bool = False
    # The engine's error kind when this message reports an API error (a ``ModelErrorKind``).
    error: str | None = None

    @property
    def content(self) -> list[JsonDict]:
        return self.message["content"]

    @classmethod
    def api_error(cls, deps: QueryDeps, text: str, *, error: str, model: str = "<synthetic>") -> AssistantMessage:
        """A synthetic assistant message that reports an API error to the user."""
        return cls(
            uuid=deps.uuid(),
            timestamp=deps.now(),
            is_api_error_message=True,
            error=error,
            message={
                "id": f"msg_synthetic_{deps.uuid()[:8]}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "stop_sequence",
                "stop_sequence": "",
                "usage": {"input_tokens": 0, "output_tokens": 0},
            },
        )


@dataclass(kw_only=True)
class SystemMessage(Message):
    """A message for the user and the transcript, never for the API."""

    type: ClassVar[MessageType] = MessageType.SYSTEM
    subtype: SystemSubtype
    content: str = ""
    level: SystemLevel = SystemLevel.INFO
    data: JsonDict | None = None
    compact_metadata: JsonDict | None = None
    logical_parent_uuid: str | None = None

    @classmethod
    def create(
        cls,
        deps: QueryDeps,
        subtype: SystemSubtype,
        content: str,
        *,
        level: SystemLevel = SystemLevel.INFO,
        data: JsonDict | None = None,
    ) -> SystemMessage:
        return cls(uuid=deps.uuid(), timestamp=deps.now(), subtype=subtype, content=content, level=level, data=data)


@dataclass(kw_only=True)
class AttachmentMessage(Message):
    """Context the loop injects between passes."""

    type: ClassVar[MessageType] = MessageType.ATTACHMENT
    attachment: JsonDict

    @classmethod
    def create(cls, deps: QueryDeps, kind: AttachmentType, **payload: Any) -> AttachmentMessage:
        return cls(uuid=deps.uuid(), timestamp=deps.now(), attachment={"type": kind.value, **payload})


@dataclass(kw_only=True)
class TombstoneMessage(Message):
    """Withdraws a message already yielded (a partial response of a failed attempt)."""

    type: ClassVar[MessageType] = MessageType.TOMBSTONE
    target_uuid: str


@dataclass(kw_only=True)
class ProgressMessage(Message):
    """Progress of a running tool: shown to observers, never recorded or sent."""

    type: ClassVar[MessageType] = MessageType.PROGRESS
    tool_use_id: str
    data: JsonDict = field(default_factory=dict)


_BY_TYPE: dict[str, type[Message]] = {
    cls.type.value: cls
    for cls in (UserMessage, AssistantMessage, SystemMessage, AttachmentMessage, TombstoneMessage, ProgressMessage)
}
_ENUM_FIELDS: dict[str, type[StrEnum]] = {"subtype": SystemSubtype, "level": SystemLevel}


def message_from_record(record: JsonDict) -> Message:
    """Rebuild an envelope from a transcript record; unknown keys (session fields) are ignored."""
    cls = _BY_TYPE.get(record.get("type", ""))
    if cls is None:
        raise ValueError(f"unknown message type {record.get('type')!r}")
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs = {k: v for k, v in record.items() if k in names}
    for name, enum in _ENUM_FIELDS.items():
        if name in kwargs:
            kwargs[name] = enum(kwargs[name])
    return cls(**kwargs)


def tool_use_blocks(message: Message) -> list[JsonDict]:
    """The tool_use blocks of an assistant message (empty for anything else)."""
    if not isinstance(message, AssistantMessage):
        return []
    return [b for b in message.content if b.get("type") == "tool_use"]


def tool_result_block(tool_use_id: str, content: str | list[JsonDict], *, is_error: bool = False) -> JsonDict:
    """A tool_result block in the API's shape (``is_error`` only when true, as the API echoes it)."""
    block: JsonDict = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block
