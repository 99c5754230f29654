"""Histories for context-shaping tests, built directly: fixed uuids, timestamps one second
apart, one assistant message per content block (as the loop yields them)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.deps import format_timestamp
from engine.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    SystemSubtype,
    UserMessage,
)

JsonDict = dict[str, Any]
START = datetime(2026, 1, 1, tzinfo=UTC)


def text(value: str) -> JsonDict:
    return {"type": "text", "text": value}


def tool_use(tool_id: str, name: str = "Bash", tool_input: JsonDict | None = None) -> JsonDict:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input or {"command": "ls"}}


def tool_result(tool_id: str, content: str | list[JsonDict] = "ok") -> JsonDict:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content}


def image() -> JsonDict:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}


def document() -> JsonDict:
    return {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}}


@dataclass
class Conversation:
    """A history under construction; ``messages`` is what the loop would hold."""

    messages: list[Message] = field(default_factory=list)
    _count: int = 0
    _responses: int = 0
    _paused: timedelta = timedelta(0)

    def _envelope(self) -> tuple[str, str]:
        self._count += 1
        return f"m{self._count:04d}", format_timestamp(self.last_time)

    @property
    def last_time(self) -> datetime:
        return START + timedelta(seconds=self._count) + self._paused

    def pause(self, minutes: float) -> None:
        """The next message comes ``minutes`` later than it otherwise would."""
        self._paused += timedelta(minutes=minutes)

    @property
    def last_response_time(self) -> datetime:
        response = next(
            m for m in reversed(self.messages) if isinstance(m, AssistantMessage) and not m.is_api_error_message
        )
        return datetime.fromisoformat(response.timestamp)

    def user(self, content: str | list[JsonDict], *, is_meta: bool = False) -> UserMessage:
        uuid, timestamp = self._envelope()
        message = UserMessage(
            uuid=uuid, timestamp=timestamp, is_meta=is_meta, message={"role": "user", "content": content}
        )
        self.messages.append(message)
        return message

    def response(self, *blocks: JsonDict, usage: JsonDict | None = None) -> list[AssistantMessage]:
        """One response: a message per block sharing its id; ``usage`` goes on the last one,
        the earlier ones carry message_start's partial usage (as the loop stores them)."""
        self._responses += 1
        response_id = f"msg_{self._responses:03d}"
        made: list[AssistantMessage] = []
        for index, block in enumerate(blocks):
            uuid, timestamp = self._envelope()
            final = index == len(blocks) - 1
            partial = None if usage is None else {**usage, "output_tokens": 1}
            made.append(
                AssistantMessage(
                    uuid=uuid,
                    timestamp=timestamp,
                    message={
                        "id": response_id,
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-sonnet-4-6",
                        "content": [block],
                        "stop_reason": ("tool_use" if block["type"] == "tool_use" else "end_turn") if final else None,
                        "usage": (usage if final else partial) or {},
                    },
                )
            )
        self.messages.extend(made)
        return made

    def api_error(self, value: str = "API Error: 500 api_error: boom") -> AssistantMessage:
        uuid, timestamp = self._envelope()
        message = AssistantMessage(
            uuid=uuid,
            timestamp=timestamp,
            is_api_error_message=True,
            error="server_error",
            message={
                "id": f"msg_synthetic_{uuid}",
                "role": "assistant",
                "content": [text(value)],
                "usage": {"input_tokens": 0, "output_tokens": 0},
            },
        )
        self.messages.append(message)
        return message

    def system(self, value: str = "note") -> SystemMessage:
        uuid, timestamp = self._envelope()
        message = SystemMessage(uuid=uuid, timestamp=timestamp, subtype=SystemSubtype.WARNING, content=value)
        self.messages.append(message)
        return message

    def tool_round(
        self,
        tool_id: str,
        name: str = "Bash",
        tool_input: JsonDict | None = None,
        result: str = "ok",
        *,
        say: str | None = None,
        usage: JsonDict | None = None,
    ) -> None:
        """A response calling one tool (optionally after some text), then the user message with its result."""
        blocks = ([text(say)] if say else []) + [tool_use(tool_id, name, tool_input)]
        self.response(*blocks, usage=usage)
        self.user([tool_result(tool_id, result)])


def frozen_copy(messages: list[Message]) -> list[Message]:
    """A deep copy to compare with afterwards: a projection must leave its input as it was."""
    return copy.deepcopy(messages)


def uuids(messages: list[Message]) -> list[str]:
    return [m.uuid for m in messages]


def result_content(messages: list[Message], tool_id: str) -> Any:
    """The content of the tool_result answering ``tool_id``."""
    for message in messages:
        if isinstance(message, UserMessage) and isinstance(message.content, list):
            for block in message.content:
                if block.get("type") == "tool_result" and block["tool_use_id"] == tool_id:
                    return block["content"]
    raise AssertionError(f"no tool_result for {tool_id}")
