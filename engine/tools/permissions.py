"""Permission policies: how a session answers the tools' "may this call run?"."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from engine.tools.base import JsonDict, PermissionBehavior, PermissionDecision, Tool

__all__ = ["PermissionPolicy", "RulePolicy", "allow_all", "deny_all"]


class PermissionPolicy(Protocol):
    """Given a tool, the input observers see and the tool's own decision, the final decision.

    The session calls it with every decision. A policy that returns ``ask`` leaves the call
    unanswered, which the session treats as a denial.
    """

    async def __call__(
        self, tool: Tool, observed_input: JsonDict, decision: PermissionDecision
    ) -> PermissionDecision: ...


async def allow_all(tool: Tool, observed_input: JsonDict, decision: PermissionDecision) -> PermissionDecision:
    """Answer every ``ask`` with ``allow``; a tool's own ``deny`` (e.g. a workspace escape) stands."""
    if decision.behavior is PermissionBehavior.ASK:
        return PermissionDecision.allow()
    return decision


def deny_all(reason: str) -> PermissionPolicy:
    """A policy that answers every ``ask`` with ``deny`` and ``reason``; tools that need no
    permission (``allow``) still run."""

    async def policy(tool: Tool, observed_input: JsonDict, decision: PermissionDecision) -> PermissionDecision:
        if decision.behavior is PermissionBehavior.ASK:
            return PermissionDecision.deny(reason)
        return decision

    return policy


@dataclass(frozen=True, init=False)
class RulePolicy:
    """Rules by tool name: ``deny`` always wins, even over a tool's own ``allow``; ``allow``
    answers ``ask``; anything else goes to ``fallback`` or, without one, is denied."""

    allow: frozenset[str]
    deny: frozenset[str]
    fallback: PermissionPolicy | None

    def __init__(
        self, *, allow: Iterable[str] = (), deny: Iterable[str] = (), fallback: PermissionPolicy | None = None
    ) -> None:
        object.__setattr__(self, "allow", frozenset(allow))
        object.__setattr__(self, "deny", frozenset(deny))
        object.__setattr__(self, "fallback", fallback)

    async def __call__(self, tool: Tool, observed_input: JsonDict, decision: PermissionDecision) -> PermissionDecision:
        """Apply the rules to one call."""
        if tool.name in self.deny:
            return PermissionDecision.deny(f"Permission to use {tool.name} has been denied by a rule of this session.")
        if decision.behavior is not PermissionBehavior.ASK:
            return decision
        if tool.name in self.allow:
            return PermissionDecision.allow()
        if self.fallback is not None:
            return await self.fallback(tool, observed_input, decision)
        return PermissionDecision.deny(
            f"Permission to use {tool.name} was not granted: no rule of this session allows it. "
            f"Add {tool.name} to the allow list to let it run."
        )
