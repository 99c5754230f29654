"""Recording a session into a bundle: against the fake model serving a scenario on loopback
(the real record path, without a key) or live against the API. The workspace is copied and
redacted first, every file goes through the one redaction pass, and the folder is written whole
or not at all, under the bundle's writer lock.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from engine import EngineSettings
from replay.cassette.record import RecordMode
from replay.fake.model import FakeModel, ScenarioExhaustedError
from replay.fake.scenario import Scenario, load_scenario
from replay.fake.scenario_writer import scenario_to_document
from replay.fake.server import FakeModelServer
from replay.redact.files import redact_tree, write_redacted
from replay.schema.options import SessionOptions
from replay.session.bundle import (
    CASSETTE_FILE,
    FAKE_SERVER_BASE_URL,
    PLACEHOLDER_KEY,
    SCENARIO_FILE,
    SESSION_FILE,
    TRACE_JSON_FILE,
    TRANSCRIPT_FILE,
    WORKSPACE_DIR,
    Bundle,
    BundleError,
    SessionSpec,
    copy_workspace,
    load_bundle,
)
from replay.session.bundle_layout import TRACE_TEXT_FILE
from replay.session.bundle_swap import begin_bundle_write, swap_into_place
from replay.session.session_run import run_session
from replay.session.session_setup import resolve_setup
from replay.trace.behaviour import render_text

__all__ = ["exhausted_message", "record_bundle"]


async def record_bundle(
    out: Path,
    *,
    prompts: Sequence[str] = (),
    scenario: Scenario | Path | None = None,
    workspace: Path | None = None,
    settings: EngineSettings | None = None,
    overrides: Mapping[str, Any] | None = None,
    seed: int = 0,
    api_key: str | None = None,
    base_url: str | None = None,
    options: SessionOptions | None = None,
    wait: float = 0.0,
    on_wait: Callable[[int | None], None] | None = None,
) -> Bundle:
    """Record a session into the bundle folder ``out``: against the fake model serving
    ``scenario`` on loopback (the real record path, without a key), or, with no scenario, live
    against the API at ``base_url`` with ``api_key``. What is not given comes from the scenario
    file (its ``prompts:``, ``settings:``, ``session:`` and the ``workspace/`` beside it), else the
    defaults; ``overrides`` set single settings fields (`replay.session.session_setup`). The
    folder is written whole or not at all, under the bundle's writer lock: if another process
    holds it, wait up to ``wait`` seconds (``on_wait`` is told its pid), then raise
    ``BundleBusyError``. A script that runs out of turns is refused (`BundleError`), and nothing
    is written."""
    out = Path(out)
    scenario_text: str | None = None
    scenario_path: Path | None = None
    if isinstance(scenario, Path):
        # Loaded (and so checked) first: a file that is not a scenario is never read as text.
        scenario_path, scenario = scenario, load_scenario(scenario)
        scenario_text = scenario_path.read_text(encoding="utf-8")
    setup = resolve_setup(
        scenario=scenario,
        scenario_path=scenario_path,
        prompts=prompts,
        settings=settings,
        overrides=overrides,
        options=options,
        workspace=workspace,
    )
    live = scenario is None
    if live and not api_key:
        raise BundleError("A live recording needs an API key: set ANTHROPIC_API_KEY (or pass api_key).")
    spec = SessionSpec(
        prompts=setup.prompts,
        settings=setup.settings,
        seed=seed,
        live=live,
        scenario=SCENARIO_FILE if scenario is not None else None,
        options=setup.options,
    )
    write = begin_bundle_write(out, wait=wait, on_wait=on_wait)
    staging = write.staging
    try:
        copy_workspace(setup.workspace, staging / WORKSPACE_DIR)
        # Before the session runs in it: the recording and every replay read the same redacted
        # files, and a secret in the workspace never reaches a tool result.
        redact_tree(staging / WORKSPACE_DIR)
        if not any((staging / WORKSPACE_DIR).iterdir()):
            # git keeps no empty folder, and a bundle without its workspace/ is incomplete.
            (staging / WORKSPACE_DIR / ".keep").write_text("", encoding="utf-8")
        fake = FakeModel(scenario) if scenario is not None else None
        server = FakeModelServer(fake) if fake is not None else None
        if server is not None:
            base_url = server.start()
        try:
            run = await run_session(
                spec,
                staging / WORKSPACE_DIR,
                cassette=staging / CASSETTE_FILE,
                mode=RecordMode.ALL,
                api_key=api_key or PLACEHOLDER_KEY,
                base_url=base_url,
                stored_base_url=(base_url, FAKE_SERVER_BASE_URL) if server is not None and base_url else None,
                fake_model=fake,
            )
        finally:
            if server is not None:
                server.stop()
        if fake is not None and fake.exhausted is not None:
            # The loop ends `completed` after the server's 500, as any client's would: a recording
            # of that run would look like a finished session, so it is refused.
            raise BundleError(exhausted_message(fake.exhausted, scenario_path, out))
        # Every file through the one redaction pass (replay.redact.redactor) before it reaches disk.
        write_redacted(staging / TRANSCRIPT_FILE, run.transcript)
        behaviour = run.behaviour(out.name, spec.prompts)
        write_redacted(staging / TRACE_JSON_FILE, behaviour.dumps())
        write_redacted(staging / TRACE_TEXT_FILE, render_text(behaviour))
        write_redacted(staging / SESSION_FILE, spec.to_json())
        if scenario is not None:
            write_redacted(staging / SCENARIO_FILE, scenario_text or _scenario_yaml(scenario))
        swap_into_place(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        write.release()
    return load_bundle(out)


def exhausted_message(exhausted: ScenarioExhaustedError, scenario_path: Path | None, out: Path) -> str:
    """The one sentence that refuses a recording whose script had no turn for a request."""
    script = str(scenario_path) if scenario_path is not None else "The scenario"
    last = f"last user message: {exhausted.last_user_message!r}"
    if exhausted.positional:
        # Turns answer requests in order: the request's number is the turn it needed.
        turns = f"{exhausted.turns} turn{'' if exhausted.turns == 1 else 's'}"
        return (
            f"{script} ran out of turns: it has {turns}, but request {exhausted.request} to the model needed turn "
            f"{exhausted.request} ({last}); add that turn to the scenario "
            f"(or check its prompts and settings). Nothing was written to {out}."
        )
    request = f"request {exhausted.request} to the model (purpose {exhausted.purpose}, model {exhausted.model}, {last})"
    left = f"the turns left are {exhausted.describe_turns_left()}" if exhausted.turns_left else "no turn is left"
    return (
        f"{script} has no turn for {request}: {left}; add a turn for it or change a match "
        f"(or check its prompts and settings). Nothing was written to {out}."
    )


def _scenario_yaml(scenario: Scenario) -> str:
    return yaml.safe_dump(scenario_to_document(scenario), sort_keys=False, allow_unicode=True)
