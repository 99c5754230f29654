"""Context shaping, cheapest first: the tool-result budget, snip, microcompact,
context collapse and autocompact; and the recovery chains' reactive compact and media
stripping (§3.6). Every pass is a projection: it returns new messages (a rewritten message
keeps its uuid) and never changes the ones it was given."""

from engine.compact.autocompact import (
    COMPACT_PROMPT,
    COMPACT_SYSTEM_PROMPT,
    AutoCompactTracking,
    CompactionError,
    CompactionResult,
    ConversationRequest,
    build_summary_request,
    compact_conversation,
    kept_messages_start,
    should_autocompact,
)
from engine.compact.boundary import (
    COMPACT_BOUNDARY_CONTENT,
    SUMMARY_PREAMBLE,
    CompactTrigger,
    compact_boundary,
    format_summary,
    summary_message,
)
from engine.compact.collapse import CollapseSpan, ContextCollapse, collapsed_text
from engine.compact.microcompact import (
    CLEARED_TOOL_RESULT,
    COMPACTABLE_TOOLS,
    MicrocompactResult,
    microcompact,
)
from engine.compact.reactive import (
    SINGLE_EXCHANGE_TEXT,
    MediaKind,
    MediaStripResult,
    is_single_exchange,
    reactive_compact,
    removed_media_text,
    strip_media,
)
from engine.compact.rounds import RoundSplit, group_into_rounds, split_rounds
from engine.compact.snip import SnipResult, snip_old_rounds
from engine.compact.tool_result_budget import (
    DEFAULT_TOOL_RESULT_BUDGET_CHARS,
    BudgetResult,
    ContentReplacementState,
    apply_tool_result_budget,
)

__all__ = [
    "CLEARED_TOOL_RESULT",
    "COMPACTABLE_TOOLS",
    "COMPACT_BOUNDARY_CONTENT",
    "COMPACT_PROMPT",
    "COMPACT_SYSTEM_PROMPT",
    "DEFAULT_TOOL_RESULT_BUDGET_CHARS",
    "SINGLE_EXCHANGE_TEXT",
    "SUMMARY_PREAMBLE",
    "AutoCompactTracking",
    "BudgetResult",
    "CollapseSpan",
    "CompactTrigger",
    "CompactionError",
    "CompactionResult",
    "ContentReplacementState",
    "ContextCollapse",
    "ConversationRequest",
    "MediaKind",
    "MediaStripResult",
    "MicrocompactResult",
    "RoundSplit",
    "SnipResult",
    "apply_tool_result_budget",
    "build_summary_request",
    "collapsed_text",
    "compact_boundary",
    "compact_conversation",
    "format_summary",
    "group_into_rounds",
    "is_single_exchange",
    "kept_messages_start",
    "microcompact",
    "reactive_compact",
    "removed_media_text",
    "should_autocompact",
    "snip_old_rounds",
    "split_rounds",
    "strip_media",
    "summary_message",
]
