"""A faithful Python agent loop in the style of Claude Code.

``QueryEngine`` owns one conversation; ``query_loop`` is the ``while True`` state machine it
drives. The model is reached through ``AnthropicModel`` over an injected ``httpx2`` client, so
the transport decides whether a session is live, recorded or replayed.
"""

from engine.abort import AbortController, AbortedError
from engine.compact import CompactionError, CompactionResult, CompactTrigger
from engine.deps import ManualClock, QueryDeps, SeededUuids, SystemClock
from engine.events import CompactionTier, FallbackKind, LoopEnd, RequestStart, ToolOutcome, TraceEvent, TraceKind
from engine.hooks import (
    CommandHook,
    HookDecision,
    HookEvent,
    HookInput,
    HookOutcome,
    HookResult,
    Hooks,
    StopHookInput,
    StopHookResult,
)
from engine.loop import query, query_loop
from engine.messages import (
    AssistantMessage,
    AttachmentMessage,
    AttachmentType,
    Message,
    MessageType,
    ProgressMessage,
    SystemMessage,
    SystemSubtype,
    TombstoneMessage,
    UserMessage,
)
from engine.model import (
    AnthropicModel,
    ModelClient,
    ModelError,
    ModelErrorKind,
    ModelRequest,
)
from engine.normalize import normalize_messages_for_api
from engine.orchestration import (
    PermissionDenial,
    StreamingToolExecutor,
    partition_tool_calls,
    run_tools,
)
from engine.params import LoopParams
from engine.process import NetworkPolicy, ToolEnvironment
from engine.query_engine import QueryEngine, QueryResult, ResultSubtype
from engine.settings import DEFAULT_MODEL, CompactRequest, EngineSettings, MidStreamRecovery
from engine.state import State, Terminal, Transition
from engine.tools import Tool, ToolError, ToolResult, ToolUseContext, default_tools
from engine.transcript import TranscriptWriter, read_transcript

__all__ = [
    "DEFAULT_MODEL",
    "AbortController",
    "AbortedError",
    "AnthropicModel",
    "AssistantMessage",
    "AttachmentMessage",
    "AttachmentType",
    "CommandHook",
    "CompactRequest",
    "CompactTrigger",
    "CompactionError",
    "CompactionResult",
    "CompactionTier",
    "EngineSettings",
    "FallbackKind",
    "HookDecision",
    "HookEvent",
    "HookInput",
    "HookOutcome",
    "HookResult",
    "Hooks",
    "LoopEnd",
    "LoopParams",
    "ManualClock",
    "Message",
    "MessageType",
    "MidStreamRecovery",
    "ModelClient",
    "ModelError",
    "ModelErrorKind",
    "ModelRequest",
    "NetworkPolicy",
    "PermissionDenial",
    "ProgressMessage",
    "QueryDeps",
    "QueryEngine",
    "QueryResult",
    "RequestStart",
    "ResultSubtype",
    "SeededUuids",
    "State",
    "StopHookInput",
    "StopHookResult",
    "StreamingToolExecutor",
    "SystemClock",
    "SystemMessage",
    "SystemSubtype",
    "Terminal",
    "TombstoneMessage",
    "Tool",
    "ToolEnvironment",
    "ToolError",
    "ToolOutcome",
    "ToolResult",
    "ToolUseContext",
    "TraceEvent",
    "TraceKind",
    "TranscriptWriter",
    "Transition",
    "UserMessage",
    "default_tools",
    "normalize_messages_for_api",
    "partition_tool_calls",
    "query",
    "query_loop",
    "read_transcript",
    "run_tools",
]
