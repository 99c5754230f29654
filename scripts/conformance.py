"""Runs library scenarios through this engine and through the pinned Claude Code CLI, and prints
or writes the comparison, docs/conformance.md.

    python scripts/conformance.py                               # print the page
    python scripts/conformance.py --write docs/conformance.md   # rewrite it

Both clients talk to the fake model over loopback HTTP, a fresh `FakeModelServer` per run. The
engine runs the scenario as `replay record` does (its prompts, settings and session options, a
temp copy of its workspace, retry waits on the session clock). The CLI runs once with the
scenario's prompt in a temp copy of the workspace (an isolated HOME, no traffic but to the
loopback model), its settings mapped to flags and its session options to a project
``.claude/settings.json`` where the CLI has an equivalent. Only facts reach the page: request
counts, purposes, what changed between requests (by shape), models, limits, terminals. Nothing
the CLI sent (its system prompt, tool descriptions or messages) is written anywhere.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import itertools
import json
import logging
import shutil
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml

from replay.cassette.record import RecordMode
from replay.claude_code import (
    CLAUDE_CODE_VERSION,
    ClaudeCodeInstallError,
    ClaudeCodeRunError,
    PermissionMode,
    find_or_install_claude,
    run_claude,
)
from replay.fake.blocks import RequestPurpose
from replay.fake.matching import purpose_of
from replay.fake.model import FakeModel
from replay.fake.scenario import Scenario, load_scenario
from replay.fake.server import FakeModelServer
from replay.schema.options import SessionOptions
from replay.session.bundle import SessionSpec
from replay.session.session_run import run_session
from replay.session.session_setup import SessionSetup, resolve_setup

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "cassettes"
NOTES = Path(__file__).resolve().with_name("conformance-notes.yaml")
Json = dict[str, Any]
CLI_TIMEOUT = 300.0


# Engine settings the CLI takes as flags; any other setting a scenario sets is reported unmapped,
# unless its value is the one _CLI_BUILT_IN names.
_FLAG_SETTINGS = ("model", "max_turns", "fallback_model")
# Engine settings whose value here is what the CLI always does (it has no flag for them): a
# scenario that sets one to this value needs nothing mapped; another value is reported unmapped.
_CLI_BUILT_IN: dict[str, object] = {
    "max_output_tokens_escalation": False,
    "mid_stream_recovery": "resume",
    "compact_request": "conversation_prefix",
}
# The engine's hook events and the CLI's names for them.
_UNSET = object()
_HOOK_EVENTS = {"pre_tool_use": "PreToolUse", "post_tool_use": "PostToolUse", "stop": "Stop"}


class Step(StrEnum):
    """What a request adds to the one before it, read from the shape of its messages alone."""

    PROMPT = "prompt"  # the first request of the run
    RESEND = "resend"  # the same number of messages again: a retry, a fallback or an escalation
    TOOL_RESULTS = "tool results"  # the answer kept, then a user message of tool results
    USER_TEXT = "user text after the answer"  # the answer kept, then a user text (a resume, hook feedback)
    SUMMARY = "summary request"  # purpose compact, a request of its own (other tools or none)
    PREFIX_SUMMARY = "summary request on the conversation's prefix"  # compact, the main request's tools
    COMPACTED = "compacted history"  # the first main request after a summary request
    SIDE = "side request"  # no tools, not a summary
    OTHER = "history changed"  # anything else


@dataclass(frozen=True, kw_only=True)
class RequestFacts:
    """What one /v1/messages request was, in facts a page may hold."""

    step: Step
    purpose: RequestPurpose
    model: str
    max_tokens: int | None
    stream: bool
    tool_errors: int = 0  # tool_result blocks marked is_error among the messages this request added

    def label(self) -> str:
        text = self.step.value
        if self.tool_errors:
            text += f" ({self.tool_errors} error{'' if self.tool_errors == 1 else 's'})"
        return text if self.stream else f"{text}, not streamed"


@dataclass(frozen=True, kw_only=True)
class RunFacts:
    """One client's run of one scenario."""

    requests: tuple[RequestFacts, ...]
    terminal: str
    exhausted: bool = False  # the client sent a request the scenario had no turn for


@dataclass(frozen=True, kw_only=True)
class CliInvocation:
    """How a scenario's set-up maps onto the CLI: flags, a project settings file, what has no
    equivalent."""

    model: str
    max_turns: int | None = None
    args: tuple[str, ...] = ()
    project_settings: Json = field(default_factory=dict)
    unmapped: tuple[str, ...] = ()
    built_in: tuple[str, ...] = ()  # engine settings set to what the CLI does anyway

    def describe(self) -> str:
        parts = [f"`--model {self.model}`"]
        if self.max_turns is not None:
            parts.append(f"`--max-turns {self.max_turns}`")
        parts += [f"`{' '.join(self.args[i : i + 2])}`" for i in range(0, len(self.args), 2)]
        parts += [f"settings.json `{key}`" for key in sorted(self.project_settings)]
        parts += [f"`{setting}` (the CLI's own behaviour)" for setting in self.built_in]
        return ", ".join(parts)


@dataclass(frozen=True, kw_only=True)
class Row:
    """One scenario, both clients."""

    scenario: str
    invocation: CliInvocation
    engine: RunFacts
    cli: RunFacts

    def differences(self) -> tuple[str, ...]:
        return compare(self.engine, self.cli)


def load_notes(path: Path = NOTES) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """The hand-written notes: scenarios left out (name -> why), explanations of differences
    (name -> why, and the classification), and the page's fixed text (``about``, ``every_row``,
    and ``fixed``: the differences this comparison found that the engine no longer has)."""
    document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    texts = {key: str(document[key]) for key in ("about", "every_row")}
    texts["fixed"] = str(document.get("fixed") or "")
    return dict(document.get("left_out") or {}), dict(document.get("explanations") or {}), texts


LEFT_OUT, EXPLANATIONS, NOTES_TEXT = load_notes()
# The library scenarios compared, in the page's order: one prompt each, faults and set-ups the
# CLI meets through the HTTP API, its flags or a project settings file.
SCENARIOS: tuple[str, ...] = tuple(yaml.safe_load(NOTES.read_text(encoding="utf-8"))["scenarios"])

# --- pure comparison ---------------------------------------------------------------------------


def request_facts(bodies: Sequence[Mapping[str, Any]]) -> tuple[RequestFacts, ...]:
    """The facts of each /v1/messages request body, in order."""
    facts: list[RequestFacts] = []
    previous_main: Mapping[str, Any] | None = None
    after_summary = False
    for index, body in enumerate(bodies):
        purpose = purpose_of(body)
        messages = _messages(body)
        step: Step
        tool_errors = 0
        if purpose is RequestPurpose.COMPACT:
            step, after_summary = _summary_step(body, previous_main), True
        elif purpose is RequestPurpose.SIDE:
            step = Step.SIDE
        elif index == 0 or previous_main is None:
            step = Step.PROMPT
        elif after_summary:
            step, after_summary = Step.COMPACTED, False
        else:
            step, tool_errors = _step_after(_messages(previous_main), messages)
        if purpose is not RequestPurpose.COMPACT and purpose is not RequestPurpose.SIDE:
            previous_main = body
        max_tokens = body.get("max_tokens")
        facts.append(
            RequestFacts(
                step=step,
                purpose=purpose,
                model=str(body.get("model")),
                max_tokens=max_tokens if isinstance(max_tokens, int) else None,
                stream=body.get("stream") is True,
                tool_errors=tool_errors,
            )
        )
    return tuple(facts)


def _summary_step(body: Mapping[str, Any], previous_main: Mapping[str, Any] | None) -> Step:
    """A summary request that offers the tools of the main request before it extends the
    conversation's own request (so it can read its cache); any other is a request of its own."""
    tools = body.get("tools")
    same = previous_main is not None and bool(tools) and tools == previous_main.get("tools")
    return Step.PREFIX_SUMMARY if same else Step.SUMMARY


def _messages(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    messages = body.get("messages")
    return [m for m in messages if isinstance(m, Mapping)] if isinstance(messages, list) else []


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content if isinstance(block, Mapping)] if isinstance(content, list) else []


def _step_after(before: list[Mapping[str, Any]], now: list[Mapping[str, Any]]) -> tuple[Step, int]:
    if len(now) == len(before):
        return Step.RESEND, 0
    added = now[len(before) :]
    roles = [message.get("role") for message in added]
    if len(now) < len(before) or roles != ["assistant", "user"]:
        return Step.OTHER, 0
    types = {block.get("type") for block in _blocks(added[1])}
    if "tool_result" in types:
        errors = sum(1 for block in _blocks(added[1]) if block.get("type") == "tool_result" and block.get("is_error"))
        return Step.TOOL_RESULTS, errors
    return (Step.USER_TEXT, 0) if types == {"text"} else (Step.OTHER, 0)


def compare(engine: RunFacts, cli: RunFacts) -> tuple[str, ...]:
    """What differs between two runs of one scenario, as aspect names (empty: the same).

    ``requests``: the steps (and tool errors) in order. ``models``: the models asked for, in order,
    repeats merged. ``max_tokens``: whether the main requests' limit changes during the run (the
    first request's limit is left out: the clients' defaults always differ). ``streaming``: the
    main requests' streaming, in order, repeats merged. ``terminal``: the terminal words."""
    differences: list[str] = []
    if [(r.step, r.tool_errors) for r in engine.requests] != [(r.step, r.tool_errors) for r in cli.requests]:
        differences.append("requests")
    if _merged(r.model for r in engine.requests) != _merged(r.model for r in cli.requests):
        differences.append("models")
    if _limit_changes(engine.requests) != _limit_changes(cli.requests):
        differences.append("max_tokens")
    if _merged(r.stream for r in _main(engine.requests)) != _merged(r.stream for r in _main(cli.requests)):
        differences.append("streaming")
    if engine.terminal != cli.terminal:
        differences.append("terminal")
    return tuple(differences)


def _merged(values: Iterable[object]) -> list[object]:
    return [value for value, _ in itertools.groupby(values)]


def _main(requests: Sequence[RequestFacts]) -> list[RequestFacts]:
    return [r for r in requests if r.purpose is RequestPurpose.MAIN]


def _limit_changes(requests: Sequence[RequestFacts]) -> bool:
    return len({r.max_tokens for r in _main(requests)}) > 1


def render_steps(requests: Sequence[RequestFacts]) -> str:
    """``3: prompt → resend ×2`` (consecutive equal steps counted)."""
    groups = [(label, len(list(group))) for label, group in itertools.groupby(r.label() for r in requests)]
    return f"{len(requests)}: " + " → ".join(label + (f" ×{n}" if n > 1 else "") for label, n in groups)


def render_limits(requests: Sequence[RequestFacts]) -> str:
    """``claude-sonnet-4-6 8,000 → 64,000 ×2`` (the model named when it changes)."""
    parts: list[str] = []
    model = None
    for (name, limit), group in itertools.groupby((r.model, r.max_tokens) for r in requests):
        n = len(list(group))
        text = (f"{name} " if name != model else "") + (f"{limit:,}" if limit is not None else "none")
        parts.append(text + (f" ×{n}" if n > 1 else ""))
        model = name
    return " → ".join(parts) if parts else "none"


# --- running -----------------------------------------------------------------------------------


def cli_invocation(scenario: Scenario, options: SessionOptions, model: str) -> CliInvocation:
    """The CLI's flags and project settings for a scenario's set-up, and what has no equivalent."""
    settings = dict(scenario.settings or {})
    args: list[str] = []
    if settings.get("fallback_model"):
        args += ["--fallback-model", str(settings["fallback_model"])]
    max_turns = settings.get("max_turns")
    unmapped = [
        f"setting `{key}`" if key not in _CLI_BUILT_IN else f"setting `{_setting(key, settings[key])}`"
        for key in sorted(settings)
        if key not in _FLAG_SETTINGS and _CLI_BUILT_IN.get(key, _UNSET) != settings[key]
    ]
    project: Json = {}
    hooks: Json = {}
    for event, entries in sorted(options.hooks.items()):
        cli_event = _HOOK_EVENTS[event]
        for entry in entries:
            hook: Json = {"type": "command", "command": entry["command"]}
            if "timeout_s" in entry:
                hook["timeout"] = entry["timeout_s"]
            group: Json = {"hooks": [hook]}
            if "matcher" in entry:
                group["matcher"] = entry["matcher"]
            hooks.setdefault(cli_event, []).append(group)
    if hooks:
        project["hooks"] = hooks
    if options.deny_tools:
        project["permissions"] = {"deny": list(options.deny_tools)}
    mapping = options.to_mapping()
    unmapped += [f"session option `{key}`" for key in sorted(mapping) if key not in ("hooks", "permissions")]
    return CliInvocation(
        model=model,
        max_turns=int(max_turns) if isinstance(max_turns, int) else None,
        args=tuple(args),
        project_settings=project,
        unmapped=tuple(unmapped),
        built_in=tuple(
            _setting(key, value) for key, value in sorted(settings.items()) if _CLI_BUILT_IN.get(key) == value
        ),
    )


def _setting(key: str, value: object) -> str:
    """``key: value`` as a scenario file writes it."""
    return f"{key}: {json.dumps(value) if isinstance(value, bool) else value}"


def _bodies(fake: FakeModel) -> list[Json]:
    return [
        request.json
        for request in fake.requests
        if request.path.split("?")[0] == "/v1/messages" and isinstance(request.json, dict)
    ]


def _workspace_copy(source: Path | None, temp: str) -> Path:
    workspace = Path(temp) / "workspace"
    if source is not None and source.is_dir():
        shutil.copytree(source, workspace)
    else:
        workspace.mkdir()
    return workspace


async def run_engine(scenario: Scenario, setup: SessionSetup) -> RunFacts:
    """The engine's run of a scenario, set up as `replay record` sets it up."""
    spec = SessionSpec(prompts=setup.prompts, settings=setup.settings, options=setup.options)
    fake = FakeModel(scenario)
    with tempfile.TemporaryDirectory(prefix="conformance-engine-") as temp:
        workspace = _workspace_copy(setup.workspace, temp)
        with FakeModelServer(fake) as server:
            run = await run_session(
                spec,
                workspace,
                cassette=Path(temp) / "cassette.yaml",
                mode=RecordMode.ALL,
                base_url=server.url,
                fake_model=fake,
            )
    result = run.results[-1]
    terminal = result.terminal_reason.value + (", is_error" if result.is_error else "")
    return RunFacts(requests=request_facts(_bodies(fake)), terminal=terminal, exhausted=fake.exhausted is not None)


def run_cli(claude: Path, path: Path, invocation: CliInvocation) -> RunFacts:
    """The pinned CLI's run of the scenario at ``path``: its first prompt, in a temp copy of the
    scenario's workspace, against a fresh fake model server."""
    scenario = load_scenario(path)
    fake = FakeModel(scenario)
    with tempfile.TemporaryDirectory(prefix="conformance-cli-") as temp:
        workspace = _workspace_copy(path.parent / "workspace", temp)
        if invocation.project_settings:
            (workspace / ".claude").mkdir(exist_ok=True)
            (workspace / ".claude" / "settings.json").write_text(
                json.dumps(invocation.project_settings, indent=2), encoding="utf-8"
            )
        with FakeModelServer(fake) as server:
            result = run_claude(
                claude,
                scenario.prompts[0],
                base_url=server.url,
                workspace=workspace,
                home=Path(temp) / "home",
                model=invocation.model,
                max_turns=invocation.max_turns,
                # The engine's library sessions allow every tool unless a rule denies it.
                permission_mode=PermissionMode.BYPASS_PERMISSIONS,
                args=invocation.args,
                timeout=CLI_TIMEOUT,
            )
    terminal = (result.terminal_reason or f"no terminal_reason (subtype {result.subtype})") + (
        ", is_error" if result.is_error else ""
    )
    return RunFacts(requests=request_facts(_bodies(fake)), terminal=terminal, exhausted=fake.exhausted is not None)


def compare_scenario(claude: Path, name: str) -> Row:
    """Both clients' runs of one library scenario."""
    path = LIBRARY / name / "scenario.yaml"
    scenario = load_scenario(path)
    if len(scenario.prompts) != 1:
        raise ValueError(f"{path}: the CLI takes one prompt per run, and this scenario has {len(scenario.prompts)}.")
    setup = resolve_setup(scenario=scenario, scenario_path=path)
    engine = asyncio.run(run_engine(scenario, setup))
    invocation = cli_invocation(scenario, setup.options, setup.settings.model)
    return Row(scenario=name, invocation=invocation, engine=engine, cli=run_cli(claude, path, invocation))


# --- the page ----------------------------------------------------------------------------------


def render_page(rows: Sequence[Row], *, date: datetime.date) -> str:
    """docs/conformance.md: the table, then each difference with its explanation."""
    lines = [
        "# Conformance: this engine against the Claude Code CLI",
        "",
        f"Claude Code **{CLAUDE_CODE_VERSION}** (the pinned version), generated on {date.isoformat()} by",
        "`scripts/conformance.py`. Re-run it after changing the engine or the pin:",
        "",
        "```bash",
        "python scripts/conformance.py --write docs/conformance.md",
        "```",
        "",
        *NOTES_TEXT["about"].rstrip("\n").split("\n"),
        "",
        "| scenario | CLI run as | requests: engine | requests: CLI | max_tokens: engine | max_tokens: CLI "
        "| terminal: engine | terminal: CLI | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        verdict = ", ".join(row.differences()) or "same"
        lines.append(
            f"| {row.scenario} | {row.invocation.describe()} | {render_steps(row.engine.requests)} "
            f"| {render_steps(row.cli.requests)} | {render_limits(row.engine.requests)} "
            f"| {render_limits(row.cli.requests)} | {row.engine.terminal} | {row.cli.terminal} | {verdict} |"
        )
    same = sum(1 for row in rows if not row.differences())
    lines += [
        "",
        f"{len(rows)} scenario{'' if len(rows) == 1 else 's'}; {same} the same, {len(rows) - same} different.",
        "",
        "## What the CLI run could not carry",
        "",
    ]
    unmapped = [row for row in rows if row.invocation.unmapped]
    if unmapped:
        for row in unmapped:
            lines.append(
                f"- {row.scenario}: {', '.join(row.invocation.unmapped)} (no CLI equivalent; the CLI ran without it)."
            )
    else:
        lines.append("- Nothing: every scenario's settings and session options had a CLI equivalent.")
    lines += [
        "- Scenarios with more than one prompt are not in the table: the CLI takes one prompt per run.",
        *[f"- {name} is not in the table: {reason}" for name, reason in sorted(LEFT_OUT.items())],
        "- The engine's `max_tokens` and the tools offered are not flags of the CLI: each client sends",
        "  its own (difference 1).",
        "",
        "## Differences",
        "",
        *NOTES_TEXT["every_row"].rstrip("\n").split("\n"),
    ]
    number = 2
    for row in rows:
        differences = row.differences()
        if not differences:
            continue
        facts = (
            f"engine {render_steps(row.engine.requests)}, max_tokens {render_limits(row.engine.requests)}, "
            f"terminal {row.engine.terminal}; CLI {render_steps(row.cli.requests)}, max_tokens "
            f"{render_limits(row.cli.requests)}, terminal {row.cli.terminal}"
        )
        if row.cli.exhausted:
            facts += "; the CLI sent a request the scenario had no turn for (the fake model answered 500)"
        explanation = EXPLANATIONS.get(
            row.scenario, "Not explained yet. **Classification and decision:** for the lead."
        )
        lines += [
            f"{number}. **{row.scenario}** ({', '.join(differences)}): {facts}.",
            f"   {explanation}",
        ]
        number += 1
    if NOTES_TEXT["fixed"].strip():
        lines += ["", "## Fixed in the engine", "", *NOTES_TEXT["fixed"].rstrip("\n").split("\n")]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--write", type=Path, metavar="PATH", help="write the page to PATH instead of printing it")
    parser.add_argument("--scenario", action="append", metavar="NAME", help="only this library scenario (repeatable)")
    args = parser.parse_args(argv)
    # The fake model logs a request it has no turn for with the request's last user message: the
    # CLI's own text, which this script never prints.
    logging.getLogger("replay.fake.server").setLevel(logging.ERROR)
    names = tuple(args.scenario or SCENARIOS)
    for name in names:
        if not (LIBRARY / name / "scenario.yaml").is_file():
            print(
                f"conformance: {LIBRARY / name / 'scenario.yaml'} does not exist; name a library scenario.",
                file=sys.stderr,
            )
            return 2
    try:
        claude = find_or_install_claude()
        rows = [compare_scenario(claude, name) for name in names]
    except (ClaudeCodeInstallError, ClaudeCodeRunError, ValueError) as error:
        print(f"conformance: {error}", file=sys.stderr)
        return 2
    page = render_page(rows, date=datetime.datetime.now(datetime.UTC).date())
    if args.write:
        args.write.write_text(page, encoding="utf-8")
    else:
        sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
