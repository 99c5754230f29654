"""Context collapse: a projection that folds old spans of the conversation.

Nothing is ever deleted: ``ContextCollapse`` remembers spans of old rounds by the uuids of their
messages, and ``project`` shows each committed span as one meta user message, so the history
the loop keeps stays whole and the projection is the same on every pass. Spans go through two
steps: ``stage`` marks old rounds (all but the last ``keep_rounds``, never the prompt before the
first response) when the context is over a threshold, and ``drain`` commits what is staged —
the loop drains when a request came back too long (``collapse_drain_retry``), or proactively.
A span holds whole rounds, so folding it never separates a tool_use from its tool_result.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.compact._content import JsonDict, blocks_of
from engine.compact.rounds import split_rounds
from engine.messages import AssistantMessage, Message, UserMessage

__all__ = ["CollapseSpan", "ContextCollapse", "collapsed_text"]

# Tool inputs that name what a call was about, in the order they are looked for.
_SUBJECT_KEYS = ("file_path", "path", "command", "pattern", "url", "query")
_SUBJECT_CHARS = 60


@dataclass(frozen=True)
class CollapseSpan:
    """A run of whole rounds, named by its messages' uuids in order."""

    uuids: tuple[str, ...]

    @property
    def first_uuid(self) -> str:
        return self.uuids[0]


class ContextCollapse:
    """The collapse state of a session: staged spans waiting for a drain, committed spans that
    ``project`` folds. Lives across passes and prompts."""

    def __init__(self) -> None:
        self._staged: list[CollapseSpan] = []
        self._committed: list[CollapseSpan] = []
        # Each span's fold, made once: later projections (of the history or of a projection,
        # which holds the fold itself) show the very same message.
        self._folds: dict[CollapseSpan, UserMessage] = {}

    @property
    def staged(self) -> tuple[CollapseSpan, ...]:
        return tuple(self._staged)

    @property
    def committed(self) -> tuple[CollapseSpan, ...]:
        return tuple(self._committed)

    def stage(self, messages: Sequence[Message], *, token_count: int, threshold: int, keep_rounds: int) -> int:
        """When ``token_count`` is over ``threshold``, stage every old round not yet in a span
        (contiguous rounds make one span). Returns how many spans were newly staged."""
        if keep_rounds < 1:
            raise ValueError(f"keep_rounds must be at least 1 (the round the model is answering), not {keep_rounds}.")
        if token_count <= threshold:
            return 0
        covered = self._covered()
        # Messages already in a span (or a projection's fold, which bears its span's first uuid)
        # are set aside, so stage reads the same on the full history and on a projection.
        position = {m.uuid: index for index, m in enumerate(messages)}
        rounds = split_rounds([m for m in messages if m.uuid not in covered]).rounds
        old = rounds[: max(len(rounds) - keep_rounds, 0)]
        spans: list[list[str]] = []
        previous_end = -1
        for round_ in old:
            # A span is contiguous in the history: a round that does not follow the previous
            # one directly (a span already folded lies between them) starts a new span.
            if not spans or position[round_[0].uuid] != previous_end + 1:
                spans.append([])
            spans[-1].extend(m.uuid for m in round_)
            previous_end = position[round_[-1].uuid]
        self._staged.extend(CollapseSpan(tuple(uuids)) for uuids in spans)
        return len(spans)

    def drain(self) -> int:
        """Commit every staged span; returns how many were committed (0: nothing to free)."""
        drained = len(self._staged)
        self._committed.extend(self._staged)
        self._staged.clear()
        return drained

    def project(self, messages: Sequence[Message]) -> list[Message]:
        """``messages`` with each committed span replaced, where it began, by one meta user
        message that keeps the span's first uuid. A projection projects to itself; the input
        messages are not changed."""
        if not self._committed:
            return list(messages)
        span_of = {uuid: span for span in self._committed for uuid in span.uuids}
        members: dict[CollapseSpan, list[Message]] = {}
        for message in messages:
            span = span_of.get(message.uuid)
            if span is not None:
                members.setdefault(span, []).append(message)
        out: list[Message] = []
        for message in messages:
            span = span_of.get(message.uuid)
            if span is None:
                out.append(message)
            elif members[span][0] is message:
                out.append(self._fold(span, members[span]))
        return out

    def _fold(self, span: CollapseSpan, present: Sequence[Message]) -> UserMessage:
        fold = self._folds.get(span)
        if fold is None:
            fold = self._folds[span] = _fold(span, present)
        return fold

    def _covered(self) -> set[str]:
        return {uuid for span in (*self._committed, *self._staged) for uuid in span.uuids}


def collapsed_text(messages: Sequence[Message]) -> str:
    """The deterministic one-line fold of a span, e.g.
    ``[Collapsed 6 messages: Read notes.md, Bash ls, 2 assistant replies]``."""
    parts = [_tool_label(block) for block in _assistant_blocks(messages, "tool_use")]
    replies = sum(1 for block in _assistant_blocks(messages, "text") if block.get("text", "").strip())
    prompts = sum(
        1
        for m in messages
        if isinstance(m, UserMessage) and not m.is_meta and any(b.get("type") == "text" for b in blocks_of(m.content))
    )
    if replies:
        parts.append(f"{replies} assistant {'reply' if replies == 1 else 'replies'}")
    if prompts:
        parts.append(f"{prompts} user {'message' if prompts == 1 else 'messages'}")
    noun = "message" if len(messages) == 1 else "messages"
    summary = f": {', '.join(parts)}" if parts else ""
    return f"[Collapsed {len(messages)} {noun}{summary}]"


def _fold(span: CollapseSpan, present: Sequence[Message]) -> UserMessage:
    first = present[0]
    return UserMessage(
        uuid=span.first_uuid,
        timestamp=first.timestamp,
        parent_uuid=first.parent_uuid,
        is_meta=True,
        message={"role": "user", "content": [{"type": "text", "text": collapsed_text(present)}]},
    )


def _assistant_blocks(messages: Iterable[Message], block_type: str) -> Iterable[JsonDict]:
    for message in messages:
        if isinstance(message, AssistantMessage) and not message.is_api_error_message:
            yield from (b for b in blocks_of(message.content) if b.get("type") == block_type)


def _tool_label(block: JsonDict) -> str:
    tool_input = block.get("input") if isinstance(block.get("input"), dict) else {}
    subject = next((tool_input[k] for k in _SUBJECT_KEYS if isinstance(tool_input.get(k), str)), None)
    if subject is None:
        return str(block.get("name", "tool"))
    subject = " ".join(subject.split())  # one line, whatever the command looked like
    if len(subject) > _SUBJECT_CHARS:
        subject = subject[: _SUBJECT_CHARS - 1] + "…"
    return f"{block.get('name', 'tool')} {subject}"
