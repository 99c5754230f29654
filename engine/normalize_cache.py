"""``IncrementalNormalizer``: ``normalize_messages_for_api`` for a history that grows at the end.

The loop re-sends its whole history on every pass, and normalizing it from scratch made the
loop's own cost grow with the session. This keeps the API view of a settled prefix and
normalizes only what came after it. The prefix always ends right before a cut: a response (with
content the API keeps) that starts right after a user message. Concatenating the two views then
equals normalizing everything, provided the prefix's view ends with a user turn: the rest's
view starts with that response, so no merge, pairing repair or trailing-thinking rule reaches
across the cut. A history that does not extend the prefix starts over.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from engine.messages import AssistantMessage, Message, UserMessage
from engine.normalize import AttachmentRenderer, normalize_messages_for_api
from engine.prompt_cache import has_cache_mark

__all__ = ["IncrementalNormalizer"]

JsonDict = dict[str, Any]


class IncrementalNormalizer:
    """Call it like ``normalize_messages_for_api``; the result is always equal to it, and is
    read-only (its entries are shared with later results)."""

    def __init__(self, *, thinking_enabled: bool = True, render_attachment: AttachmentRenderer | None = None) -> None:
        self._thinking_enabled = thinking_enabled
        self._render_attachment = render_attachment
        self._inputs: list[Message] = []  # the settled prefix, compared by identity
        self._view: list[JsonDict] = []  # its API view
        # The view's longest start whose entries hold no cache_control mark, checked once as
        # each entry settles (entries are read-only): placing the marks need not walk it again.
        self._unmarked: list[JsonDict] = []
        # The last stretch normalized and its view: a pass's unsettled rest is, by identity, the
        # next pass's segment to settle, and normalizing depends on nothing but its input.
        self._last_inputs: list[Message] = []
        self._last_view: list[JsonDict] = []

    @property
    def unmarked_prefix(self) -> Sequence[JsonDict]:
        """The entries the last result starts with that hold no ``cache_control`` mark (the
        very objects, for ``place_message_breakpoint``'s ``unmarked``). Not a copy: the list
        only ever grows by entries that hold no mark (starting over makes a new one), and
        placing trusts it only as far as a request starts with those very objects."""
        return self._unmarked

    def __call__(self, messages: Sequence[Message]) -> list[JsonDict]:
        if not self._extends_prefix(messages):
            self._inputs, self._view, self._unmarked = [], [], []
        self._settle(messages)
        rest = self._normalize(messages[len(self._inputs) :])
        # The settled entries are shared with later results (copying them costs more than the
        # rest of a pass): a result is read-only, as the SDK treats it (it copies what it sends).
        return self._view + rest

    def _normalize(self, messages: Sequence[Message]) -> list[JsonDict]:
        """The view of ``messages`` (read-only: it may be the very list an earlier call gave)."""
        last = self._last_inputs
        if len(messages) == len(last) and all(map(operator.is_, messages, last)):
            return self._last_view
        view = normalize_messages_for_api(
            messages, thinking_enabled=self._thinking_enabled, render_attachment=self._render_attachment
        )
        self._last_inputs, self._last_view = list(messages), view
        return view

    def _extends_prefix(self, messages: Sequence[Message]) -> bool:
        prefix = self._inputs
        if len(messages) < len(prefix):
            return False
        # map over operator.is_ compares in C: this runs over the whole prefix on every pass.
        return all(map(operator.is_, prefix, messages))

    def _settle(self, messages: Sequence[Message]) -> None:
        """Grow the settled prefix to the last cut (a new response right after a user message)."""
        start = len(self._inputs)
        cut = _last_cut(messages, start, thinking_enabled=self._thinking_enabled)
        if cut <= start:
            return
        segment = self._normalize(messages[start:cut])
        if segment and segment[-1]["role"] == "user":
            self._inputs.extend(messages[start:cut])
            if len(self._unmarked) == len(self._view):  # no marked entry so far: it may grow
                for entry in segment:
                    if has_cache_mark(entry):
                        break
                    self._unmarked.append(entry)
            self._view.extend(segment)


def _last_cut(messages: Sequence[Message], start: int, *, thinking_enabled: bool) -> int:
    """The largest index k > start where a response the API keeps begins right after a user
    message; ``start`` when there is none."""
    for index in range(len(messages) - 1, start, -1):
        message = messages[index]
        if (
            isinstance(message, AssistantMessage)
            and not message.is_api_error_message
            and isinstance(messages[index - 1], UserMessage)
            and _response_has_substance(messages, index, thinking_enabled=thinking_enabled)
        ):
            return index
    return start


def _response_has_substance(messages: Sequence[Message], index: int, *, thinking_enabled: bool) -> bool:
    """Whether the response starting at ``index`` (its blocks share one id) keeps any content
    once thinking-only and blank content is dropped, as normalizing does."""
    response_id = messages[index].message.get("id")  # type: ignore[union-attr]
    for message in messages[index:]:
        if not isinstance(message, AssistantMessage) or message.is_api_error_message:
            break
        if message.message.get("id") != response_id:
            break
        for block in message.content:
            kind = block.get("type")
            if kind in ("thinking", "redacted_thinking"):
                continue
            if kind == "text" and not block.get("text", "").strip():
                continue
            return True
    return False
