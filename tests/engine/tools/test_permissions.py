"""Permission policies answer a tool's `ask`; a tool's own `deny` stands."""

from __future__ import annotations

from engine.tools import (
    BashTool,
    PermissionDecision,
    PermissionPolicy,
    ReadTool,
    RulePolicy,
    Tool,
    allow_all,
    deny_all,
)
from engine.tools.base import JsonDict

ASK = PermissionDecision.ask("Bash wants to run: ls")
ALLOW = PermissionDecision.allow()
ESCAPE = PermissionDecision.deny("Path '../x' is outside the workspace.")


async def test_allow_all_answers_ask_with_allow() -> None:
    assert await allow_all(BashTool(), {"command": "ls"}, ASK) == ALLOW


async def test_allow_all_keeps_a_tools_own_deny() -> None:
    assert await allow_all(ReadTool(), {"file_path": "../x"}, ESCAPE) == ESCAPE


async def test_deny_all_answers_ask_with_its_reason() -> None:
    policy = deny_all("This session is read-only.")
    decision = await policy(BashTool(), {"command": "ls"}, ASK)
    assert decision == PermissionDecision.deny("This session is read-only.")


async def test_deny_all_lets_tools_that_need_no_permission_run() -> None:
    assert await deny_all("no")(ReadTool(), {"file_path": "a"}, ALLOW) == ALLOW


async def test_a_rule_allowing_a_tool_answers_its_ask() -> None:
    assert await RulePolicy(allow=["Bash"])(BashTool(), {"command": "ls"}, ASK) == ALLOW


async def test_a_deny_rule_wins_even_over_a_tools_own_allow() -> None:
    decision = await RulePolicy(allow=["Read"], deny=["Read"])(ReadTool(), {"file_path": "a"}, ALLOW)
    assert decision == PermissionDecision.deny("Permission to use Read has been denied by a rule of this session.")


async def test_an_ask_no_rule_answers_is_denied_with_a_sentence_saying_what_to_do() -> None:
    decision = await RulePolicy()(BashTool(), {"command": "ls"}, ASK)
    assert decision == PermissionDecision.deny(
        "Permission to use Bash was not granted: no rule of this session allows it. "
        "Add Bash to the allow list to let it run."
    )


async def test_an_ask_no_rule_answers_goes_to_the_fallback_policy() -> None:
    seen: list[tuple[str, JsonDict]] = []

    async def prompt(tool: Tool, observed_input: JsonDict, decision: PermissionDecision) -> PermissionDecision:
        seen.append((tool.name, observed_input))
        return PermissionDecision.allow()

    policy: PermissionPolicy = RulePolicy(allow=["Read"], fallback=prompt)
    assert await policy(BashTool(), {"command": "ls"}, ASK) == ALLOW
    assert seen == [("Bash", {"command": "ls"})]
