"""How a recorded session is run beyond its prompts and engine settings: hooks (shell commands),
permission rules, an interruption, the session clock between prompts, manual compactions and
system prompt changes between prompts, and the variables its commands (Bash, command hooks)
find in their environment.

They live in ``session.json`` (and in a scenario file, under ``session:``) so that re-executing
a bundle sets the loop up exactly as when it was recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from engine import AssistantMessage, CommandHook, Hooks, NetworkPolicy, ToolEnvironment, TraceEvent, TraceKind
from engine.orchestration import PermissionCallback
from engine.tools import RulePolicy, allow_all

__all__ = ["InterruptAt", "SessionOptions", "SessionOptionsError"]

_HOOK_EVENTS = ("pre_tool_use", "post_tool_use", "stop")
_KEYS = (
    "hooks",
    "permissions",
    "interrupt",
    "clock_advance_minutes",
    "compact_before_prompt",
    "system_prompt_before_prompt",
    "env",
)
_COMPACT_SHAPE = (
    "'compact_before_prompt' must be a prompt number from 2 up (the session compacts before that prompt) "
    "or a list of such numbers, e.g. 2 or [2, 4]"
)
_SYSTEM_PROMPT_SHAPE = (
    "'system_prompt_before_prompt' must map prompt numbers from 2 up to the system prompt used from that "
    "prompt on, e.g. {2: 'Answer tersely.'}"
)


class SessionOptionsError(ValueError):
    """Session options that cannot be used; the message names the option."""


class InterruptAt(StrEnum):
    """When the user interrupts, counted over the whole session (all its prompts):

    - ``tool_use``: as the n-th assistant message with a tool_use block streams in;
    - ``tool_result``: after the n-th tool result is handed out (later tools of the batch are
      answered "Interrupted by user");
    - ``tools_running``: when the n-th batch of tool calls runs (each call started and its tool
      called) and none of its results is handed out, so every call of the batch is answered
      "Interrupted by user";
    - ``request``: as the n-th pass begins, before its model request is sent (the request is
      never sent; the turn ends ``aborted_streaming``).
    """

    TOOL_USE = "tool_use"
    TOOL_RESULT = "tool_result"
    TOOLS_RUNNING = "tools_running"
    REQUEST = "request"

    @property
    def number_key(self) -> str:
        """The key of ``interrupt:`` that says which occurrence: ``{at: tools_running, batch: 2}``."""
        return _INTERRUPT_NUMBER_KEYS[self]


_INTERRUPT_NUMBER_KEYS = {
    InterruptAt.TOOL_USE: "count",
    InterruptAt.TOOL_RESULT: "count",
    InterruptAt.TOOLS_RUNNING: "batch",
    InterruptAt.REQUEST: "n",
}
_INTERRUPT_FORMS = ", ".join(f"{{at: {at.value}, {at.number_key}: N}}" for at in InterruptAt)


@dataclass(frozen=True)
class SessionOptions:
    """The parts of a session's set-up that are not engine settings."""

    hooks: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    deny_tools: tuple[str, ...] = ()
    interrupt: tuple[InterruptAt, int] | None = None
    clock_advance_minutes: tuple[float, ...] = ()
    # The prompts (numbered from 1) before which the user compacts the conversation (`/compact`):
    # a `manual` compact boundary whose summary request goes to the model like any other.
    compact_before_prompt: tuple[int, ...] = ()
    # The system prompt the session uses from a prompt (numbered from 1) on, as when the user
    # switches output style or edits an appended system prompt mid-session: the next request
    # sends the new text, so the cached prefix breaks there (on purpose: it is what a cache
    # audit must catch).
    system_prompt_before_prompt: Mapping[int, str] = field(default_factory=dict)
    # Variables set for the session's commands, with their values: stored in session.json, so a
    # replay on any machine gives its commands what the recording's had (never a secret: it is
    # committed with the bundle). Passing names through from the replaying machine would not be.
    env: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any] | None) -> SessionOptions:
        """Options from their JSON/YAML shape; ``SessionOptionsError`` names what is wrong."""
        raw = dict(raw or {})
        unknown = sorted(set(raw) - set(_KEYS))
        if unknown:
            raise SessionOptionsError(f"unknown session option(s) {', '.join(unknown)}; expected {', '.join(_KEYS)}")
        hooks_raw = raw.get("hooks") or {}
        if not isinstance(hooks_raw, Mapping) or set(hooks_raw) - set(_HOOK_EVENTS):
            raise SessionOptionsError(f"'hooks' must map {', '.join(_HOOK_EVENTS)} to lists of command hooks")
        hooks: dict[str, tuple[Mapping[str, Any], ...]] = {}
        for event, entries in hooks_raw.items():
            if not isinstance(entries, list):
                raise SessionOptionsError(f"hooks.{event} must be a list")
            for entry in entries:
                if not isinstance(entry, Mapping) or not isinstance(entry.get("command"), str):
                    raise SessionOptionsError(f"each hooks.{event} entry needs a 'command' string")
                if set(entry) - {"command", "matcher", "timeout_s"}:
                    raise SessionOptionsError(f"hooks.{event} entries take command, matcher and timeout_s only")
            hooks[event] = tuple(dict(entry) for entry in entries)
        permissions = raw.get("permissions") or {}
        if not isinstance(permissions, Mapping) or set(permissions) - {"deny"}:
            raise SessionOptionsError("'permissions' takes 'deny': a list of tool names")
        deny = tuple(str(name) for name in permissions.get("deny", []))
        interrupt = None if raw.get("interrupt") is None else _interrupt_from(raw["interrupt"])
        minutes = raw.get("clock_advance_minutes") or []
        if not isinstance(minutes, list) or not all(isinstance(m, (int, float)) and m >= 0 for m in minutes):
            raise SessionOptionsError("'clock_advance_minutes' must be a list of non-negative numbers, one per prompt")
        return cls(
            hooks=hooks,
            deny_tools=deny,
            interrupt=interrupt,
            clock_advance_minutes=tuple(minutes),
            compact_before_prompt=_prompt_numbers_from(raw.get("compact_before_prompt")),
            system_prompt_before_prompt=_system_prompts_from(raw.get("system_prompt_before_prompt")),
            env=_env_from(raw.get("env")),
        )

    def to_mapping(self) -> dict[str, Any]:
        document: dict[str, Any] = {}
        if self.hooks:
            document["hooks"] = {event: [dict(e) for e in entries] for event, entries in self.hooks.items()}
        if self.deny_tools:
            document["permissions"] = {"deny": list(self.deny_tools)}
        if self.interrupt is not None:
            at, number = self.interrupt
            document["interrupt"] = {"at": at.value, at.number_key: number}
        if self.clock_advance_minutes:
            document["clock_advance_minutes"] = list(self.clock_advance_minutes)
        if self.compact_before_prompt:
            numbers = self.compact_before_prompt
            document["compact_before_prompt"] = numbers[0] if len(numbers) == 1 else list(numbers)
        if self.system_prompt_before_prompt:
            # JSON object keys are strings; `from_mapping` reads them back as prompt numbers.
            document["system_prompt_before_prompt"] = {
                str(n): text for n, text in sorted(self.system_prompt_before_prompt.items())
            }
        if self.env:
            document["env"] = dict(self.env)
        return document

    def tool_environment(self, *, live_recording: bool) -> ToolEnvironment:
        """The environment of the session's commands: its ``env``, offline (proxies that point
        nowhere) unless this run is a live recording. A recording against the fake model is
        offline too, so that its commands behave as they will in every replay."""
        network = NetworkPolicy.ALLOW if live_recording else NetworkPolicy.OFFLINE
        return ToolEnvironment(variables=self.env, network=network)

    def build_hooks(self) -> Hooks:
        def commands(event: str) -> tuple[CommandHook, ...]:
            return tuple(
                CommandHook(e["command"], timeout_s=e.get("timeout_s"), matcher=e.get("matcher"))
                for e in self.hooks.get(event, ())
            )

        return Hooks(
            pre_tool_use=commands("pre_tool_use"), post_tool_use=commands("post_tool_use"), stop=commands("stop")
        )

    def build_permissions(self) -> PermissionCallback:
        if not self.deny_tools:
            return allow_all
        return RulePolicy(deny=self.deny_tools, fallback=allow_all)

    def minutes_before(self, prompt_index: int) -> float:
        """How far the session clock moves before prompt ``prompt_index`` (0-based)."""
        if prompt_index < len(self.clock_advance_minutes):
            return float(self.clock_advance_minutes[prompt_index])
        return 0.0

    def compacts_before(self, prompt_index: int) -> bool:
        """Whether the user compacts the conversation before prompt ``prompt_index`` (0-based)."""
        return prompt_index + 1 in self.compact_before_prompt

    def system_prompt_before(self, prompt_index: int) -> str | None:
        """The system prompt the session switches to before prompt ``prompt_index`` (0-based),
        or None when it keeps the one it has."""
        return self.system_prompt_before_prompt.get(prompt_index + 1)

    def check_prompt_count(self, count: int) -> None:
        """``SessionOptionsError`` when an option names a prompt the session does not submit."""
        for option, numbers in (
            ("compact_before_prompt", self.compact_before_prompt),
            ("system_prompt_before_prompt", sorted(self.system_prompt_before_prompt)),
        ):
            beyond = [n for n in numbers if n > count]
            if beyond:
                raise SessionOptionsError(
                    f"'{option}' names prompt {beyond[0]}, but the session submits only {count} "
                    f"prompt{'' if count == 1 else 's'}"
                )

    def should_interrupt(self, item: object, seen: list[int]) -> bool:
        """Whether the user interrupts on seeing ``item``; ``seen`` counts matches so far."""
        if self.interrupt is None:
            return False
        at, count = self.interrupt
        if at is InterruptAt.TOOL_USE:
            hit = isinstance(item, AssistantMessage) and any(b.get("type") == "tool_use" for b in item.content)
        else:
            hit = isinstance(item, TraceEvent) and item.kind is _INTERRUPT_EVENTS[at]
        if hit:
            seen.append(1)
        return hit and len(seen) == count


def _prompt_numbers_from(raw: object) -> tuple[int, ...]:
    """The ``compact_before_prompt`` option: one prompt number or a list of them, sorted."""
    if raw is None:
        return ()
    numbers = raw if isinstance(raw, list) else [raw]
    # bool is an int, but `true` is no prompt number; before prompt 1 there is nothing to compact.
    if not numbers or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 2 for n in numbers):
        raise SessionOptionsError(_COMPACT_SHAPE)
    if len(set(numbers)) != len(numbers):
        raise SessionOptionsError("'compact_before_prompt' names a prompt more than once")
    return tuple(sorted(numbers))


def _system_prompts_from(raw: object) -> dict[int, str]:
    """The ``system_prompt_before_prompt`` option: prompt numbers from 2 up (written as numbers
    in YAML, as strings of digits in JSON, whose keys are strings) to non-empty system prompts."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not raw:
        raise SessionOptionsError(_SYSTEM_PROMPT_SHAPE)
    prompts: dict[int, str] = {}
    for key, text in raw.items():
        number = _prompt_number(key)
        if number is None or not isinstance(text, str) or not text:
            raise SessionOptionsError(_SYSTEM_PROMPT_SHAPE)
        if number in prompts:
            raise SessionOptionsError(f"'system_prompt_before_prompt' names prompt {number} more than once")
        prompts[number] = text
    return dict(sorted(prompts.items()))


def _prompt_number(key: object) -> int | None:
    """A prompt number from 2 up written as a mapping key, or None."""
    if isinstance(key, str) and key.isascii() and key.isdigit() and not key.startswith("0"):
        key = int(key)
    # bool is an int, but `true` is no prompt number; before prompt 1 the session has its settings.
    if isinstance(key, int) and not isinstance(key, bool) and key >= 2:
        return key
    return None


# The trace event each interrupt waits for (``tool_use`` waits for an assistant message).
_INTERRUPT_EVENTS = {
    InterruptAt.TOOL_RESULT: TraceKind.TOOL_CALL,
    InterruptAt.TOOLS_RUNNING: TraceKind.TOOLS_RUNNING,
    InterruptAt.REQUEST: TraceKind.PASS,
}


def _interrupt_from(spec: object) -> tuple[InterruptAt, int]:
    """The ``interrupt`` option checked: a known ``at``, and only its own number key, at least 1."""
    if not isinstance(spec, Mapping) or "at" not in spec:
        raise SessionOptionsError(f"'interrupt' must be a mapping with 'at', one of {_INTERRUPT_FORMS}")
    try:
        at = InterruptAt(spec["at"])
    except ValueError:
        names = ", ".join(a.value for a in InterruptAt)
        raise SessionOptionsError(f"interrupt.at {spec['at']!r} is not one of {names}") from None
    key = at.number_key
    extra = sorted(str(k) for k in spec if k not in ("at", key))
    if extra:
        raise SessionOptionsError(
            f"'interrupt' at {at.value} is numbered by '{key}', not {', '.join(map(repr, extra))}: "
            f"write {{at: {at.value}, {key}: N}}"
        )
    number = spec.get(key, 1)
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise SessionOptionsError(f"interrupt.{key} must be a whole number of at least 1 (got {number!r})")
    return at, number


def _env_from(raw: object) -> dict[str, str]:
    """The ``env`` option checked as the engine will use it."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not all(isinstance(v, str) for v in raw.values()):
        raise SessionOptionsError("'env' must map variable names to string values, e.g. {APP_MODE: test}")
    try:
        return dict(ToolEnvironment(variables=raw).variables)
    except ValueError as exc:
        raise SessionOptionsError(f"env: {str(exc).rstrip('.')}") from None
