"""The tool-result budget, the cheapest shaping step.

Per API user turn (consecutive user messages, as ``normalize_messages_for_api`` merges them),
when the tool results add up to more than the limit, the largest results seen for the first
time are saved to ``<session>/tool-results/<id>.txt`` and replaced by a preview naming the
file, largest first, until the turn fits. Every result is decided once — replaced or kept —
and the decision is frozen in ``ContentReplacementState``: a kept result stays kept when
later results push the total up, and a replaced one is replaced by the very same text on
every later request, so requests stay byte-stable and the prompt cache stays warm.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.compact._content import JsonDict, blocks_of, tool_result_text, with_content
from engine.messages import AssistantMessage, Message, UserMessage
from engine.tools.base import ToolError, ToolUseContext
from engine.tools.result_storage import PREVIEW_CHARS, RESULTS_DIRNAME, persist_result

__all__ = [
    "DEFAULT_TOOL_RESULT_BUDGET_CHARS",
    "MIN_REPLACEABLE_CHARS",
    "BudgetResult",
    "ContentReplacementState",
    "apply_tool_result_budget",
]

DEFAULT_TOOL_RESULT_BUDGET_CHARS = 200_000
# A preview holds up to PREVIEW_CHARS of the result plus two lines naming the file: a result not
# longer than this would not shrink, so it is never replaced.
MIN_REPLACEABLE_CHARS = PREVIEW_CHARS + 500


@dataclass
class ContentReplacementState:
    """Which tool results were replaced by a preview and which were kept, by tool_use id.

    Lives as long as the session (across passes and prompts). A decision, once made, is never
    changed; a replaced result's preview text is kept so later requests repeat it byte for byte.
    """

    decisions: dict[str, bool] = field(default_factory=dict)
    replacements: dict[str, str] = field(default_factory=dict)
    # User messages whose every result is decided: skipped on later passes, so a pass costs
    # what is new since the last one, not the whole history again.
    settled: set[str] = field(default_factory=set)
    # The messages the last call returned, the very objects: each is settled or not a user
    # message (``settled`` only grows), so a call whose messages start with them need not look
    # at that start again while nothing was ever replaced.
    checked: list[Message] = field(default_factory=list, compare=False, repr=False)

    def is_decided(self, tool_use_id: str) -> bool:
        return tool_use_id in self.decisions

    def keep(self, tool_use_id: str) -> None:
        """Decide that the result stays as it is."""
        self._decide(tool_use_id, replaced=False)

    def replace(self, tool_use_id: str, replacement: str) -> None:
        """Decide that the result is replaced by ``replacement`` from now on."""
        self._decide(tool_use_id, replaced=True)
        self.replacements[tool_use_id] = replacement

    def _decide(self, tool_use_id: str, *, replaced: bool) -> None:
        if tool_use_id in self.decisions:
            raise ValueError(f"The budget decision for tool_use {tool_use_id!r} is already made and is frozen.")
        self.decisions[tool_use_id] = replaced


@dataclass(frozen=True)
class BudgetResult:
    """The budgeted messages, and the ids whose results this call newly replaced."""

    messages: list[Message]
    replaced_ids: list[str]


def apply_tool_result_budget(
    messages: Sequence[Message],
    state: ContentReplacementState,
    *,
    limit_chars: int = DEFAULT_TOOL_RESULT_BUDGET_CHARS,
    ctx: ToolUseContext,
) -> BudgetResult:
    """``messages`` with every replaced result showing its preview, after deciding the results
    seen for the first time (see the module docstring). Records ``state``'s new decisions."""
    out = list(messages)
    replaced_ids: list[str] = []
    settled = state.settled
    # While nothing was ever replaced, a turn whose messages are all settled is left as it is:
    # the walk may start at the turn of the first user message not settled yet.
    start = 0 if state.replacements else _first_unsettled_turn(out, state)
    for group in _user_turns(out, start):
        # Plain loops, not all() over a generator: this runs over the whole history every pass.
        for index in group:
            if out[index].uuid not in settled:
                replaced_ids.extend(_decide_turn([out[i] for i in group], state, limit_chars=limit_chars, ctx=ctx))
                settled.update(out[i].uuid for i in group)
                break
        if not state.replacements:
            continue  # nothing was ever replaced: every message stays as it is
        for index in group:
            message = out[index]
            assert isinstance(message, UserMessage)  # _user_turns indexes user messages only
            out[index] = _apply_decisions(message, state)
    state.checked = list(out)  # every user message in it is settled now
    return BudgetResult(messages=out, replaced_ids=replaced_ids)


def _first_unsettled_turn(messages: Sequence[Message], state: ContentReplacementState) -> int:
    """Where the turn of the first user message not settled yet begins (right after the
    response before it: a turn never spans one); ``len(messages)`` when every one is settled."""
    checked, settled = state.checked, state.settled
    known = len(checked)
    # map over operator.is_ compares in C: the start the last call returned is not walked again.
    begin = known if known <= len(messages) and all(map(operator.is_, checked, messages)) else 0
    for index in range(begin, len(messages)):
        message = messages[index]
        if isinstance(message, UserMessage) and message.uuid not in settled:
            for before in range(index - 1, -1, -1):
                previous = messages[before]
                if isinstance(previous, AssistantMessage) and not previous.is_api_error_message:
                    return before + 1
            return 0
    return len(messages)


def _user_turns(messages: Sequence[Message], start: int = 0) -> list[list[int]]:
    """Indexes of user messages from ``start`` on (a turn's first message, or 0), grouped as the
    API merges them (an assistant response ends a turn)."""
    turns: list[list[int]] = []
    turn: list[int] = []
    for index in range(start, len(messages)):
        message = messages[index]
        if isinstance(message, UserMessage):
            turn.append(index)
        elif turn and isinstance(message, AssistantMessage) and not message.is_api_error_message:
            turns.append(turn)
            turn = []
    if turn:
        turns.append(turn)
    return turns


def _results(messages: Sequence[Message]) -> list[JsonDict]:
    return [
        block
        for message in messages
        if isinstance(message, UserMessage)
        for block in blocks_of(message.content)
        if block.get("type") == "tool_result"
    ]


def _decide_turn(
    turn: Sequence[Message], state: ContentReplacementState, *, limit_chars: int, ctx: ToolUseContext
) -> list[str]:
    results = _results(turn)
    if all(state.is_decided(block["tool_use_id"]) for block in results):
        return []  # every decision is frozen: nothing to measure (the common case, every pass)
    total = sum(_current_size(block, state) for block in results)
    fresh = [block for block in results if not state.is_decided(block["tool_use_id"])]
    replaced: list[str] = []
    # Largest first; ties in the order the results appear, so the choice is deterministic.
    for block in sorted(fresh, key=lambda b: -len(tool_result_text(b))):
        tool_use_id = block["tool_use_id"]
        if state.is_decided(tool_use_id):
            continue  # the same id twice in one turn: decided at its first appearance
        if total > limit_chars and _can_persist(block):
            preview = _persist(tool_use_id, tool_result_text(block), ctx)
            if preview is not None:
                state.replace(tool_use_id, preview)
                total -= len(tool_result_text(block)) - len(preview)
                replaced.append(tool_use_id)
                continue
        state.keep(tool_use_id)
    return replaced


def _current_size(block: JsonDict, state: ContentReplacementState) -> int:
    replacement = state.replacements.get(block["tool_use_id"])
    return len(replacement) if replacement is not None else len(tool_result_text(block))


def _can_persist(block: JsonDict) -> bool:
    """Only text can go to a file, and only text longer than its preview is worth it; a result
    already saved by its tool's own size limit is a preview of that file and must not
    overwrite it."""
    content = block.get("content")
    if isinstance(content, list) and any(not isinstance(b, dict) or b.get("type") != "text" for b in content):
        return False
    text = tool_result_text(block)
    return len(text) > MIN_REPLACEABLE_CHARS and f"{RESULTS_DIRNAME}/{block['tool_use_id']}.txt" not in text


def _persist(tool_use_id: str, text: str, ctx: ToolUseContext) -> str | None:
    """Save ``text`` and return its preview; None when the id cannot name a file."""
    try:
        return persist_result(tool_use_id, text, ctx)
    except ToolError:
        return None


def _apply_decisions(message: UserMessage, state: ContentReplacementState) -> UserMessage:
    content = message.content
    if not isinstance(content, list):
        return message
    changed = False
    new_content: list[JsonDict] = []
    for block in content:
        replacement = (
            state.replacements.get(block.get("tool_use_id", "")) if block.get("type") == "tool_result" else None
        )
        if replacement is not None and block.get("content") != replacement:
            block = {**block, "content": replacement}
            changed = True
        new_content.append(block)
    return with_content(message, new_content) if changed else message
