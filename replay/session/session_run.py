"""Running a bundle's session: a fresh engine in a scratch copy of the workspace, its tools
really running, every model call recorded into or answered from a cassette, and the transcript
written with the folders it ran in replaced by ``<workspace>`` and ``<session>`` (and the scratch
folder that holds them by ``<tmp>``) — so a bundle replays the same from any folder, under any
TMPDIR. ``replay_bundle`` re-executes a bundle offline; `replay.session.recording` runs a session
the same way to record one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from engine import (
    AnthropicModel,
    CompactionError,
    CompactionTier,
    ManualClock,
    QueryDeps,
    QueryEngine,
    QueryResult,
    TraceEvent,
    TraceKind,
    default_tools,
)
from replay.cassette.fingerprints import TEMP_PLACEHOLDER
from replay.cassette.record import CassetteRecorder, RecordMode
from replay.cassette.rewrite import DivergenceHook, RewriteCounts
from replay.cassette.transport import LoggedRequest
from replay.redact.redactor import current_redactor
from replay.session.bundle import (
    PLACEHOLDER_KEY,
    SESSION_PLACEHOLDER,
    WORKSPACE_DIR,
    WORKSPACE_PLACEHOLDER,
    Bundle,
    SessionSpec,
    check_workspace,
    load_bundle,
)
from replay.storage.stale_folders import ScratchKind, scratch_prefix
from replay.trace.behaviour import BehaviourTrace, extract_trace

if TYPE_CHECKING:  # only a recording has a fake model, and it imports this
    from replay.fake.model import FakeModel

__all__ = ["SessionRun", "replay_bundle", "run_session"]


@dataclass(frozen=True)
class SessionRun:
    """What running a session produced: the transcript (normalized text), the trace, and one
    result per prompt."""

    transcript: str
    trace: list[TraceEvent]
    results: list[QueryResult]
    unplayed: list[int] = field(default_factory=list)
    # Every request in order, with its fingerprint (and whether the cassette had it).
    requests: list[LoggedRequest] = field(default_factory=list)
    # Record mode rewrite: what it did to the cassette's interactions.
    rewrite: RewriteCounts | None = None

    def behaviour(self, session: str, prompts: Sequence[str]) -> BehaviourTrace:
        """The behaviour trace of this run, redacted (`replay.redact.redactor`) as its file is."""
        trace = extract_trace(session, prompts, self.trace, self.requests)
        return BehaviourTrace.from_json(current_redactor().redact_value(trace.to_json()))


async def replay_bundle(bundle: Bundle | Path, *, strict: bool = True) -> SessionRun:
    """Re-execute a bundle offline: a fresh engine in a temp copy of its workspace, the tools
    really running, every model call answered from the cassette."""
    if not isinstance(bundle, Bundle):
        bundle = load_bundle(bundle)
    # Checked as a copy is, then copied once: into the run's own scratch folder by run_session.
    check_workspace(bundle.workspace_path)
    return await run_session(
        bundle.spec, bundle.workspace_path, cassette=bundle.cassette_path, mode=RecordMode.NONE, strict=strict
    )


async def run_session(
    spec: SessionSpec,
    workspace: Path,
    *,
    cassette: Path,
    mode: RecordMode,
    api_key: str = PLACEHOLDER_KEY,
    base_url: str | None = None,
    strict: bool = False,
    stored_base_url: tuple[str, str] | None = None,
    on_divergence: DivergenceHook | None = None,
    fake_model: FakeModel | None = None,
) -> SessionRun:
    """Run ``spec``'s prompts in a scratch copy of ``workspace`` (so the bundle's own files
    never change), recording into or replaying from ``cassette``. ``fake_model``, when it is
    the model answering, keeps its prompt cache on the session's clock."""
    with tempfile.TemporaryDirectory(prefix=scratch_prefix(ScratchKind.SESSION)) as temp:
        run_workspace = Path(temp) / WORKSPACE_DIR
        shutil.copytree(workspace, run_workspace, symlinks=True)
        session_dir = Path(temp) / "session"
        results: list[QueryResult] = []
        with CassetteRecorder(
            cassette,
            mode=mode,
            workspace=run_workspace,
            session_dir=session_dir,
            strict=strict,
            stored_base_url=stored_base_url,
            on_divergence=on_divergence,
        ) as recorder:
            async with recorder.async_client() as http_client:
                model = AnthropicModel(http_client=http_client, api_key=api_key, base_url=base_url)
                deps = (
                    QueryDeps.live(model)
                    if spec.live and mode is not RecordMode.NONE
                    else QueryDeps.deterministic(model, seed=spec.seed)
                )
                session_seconds = _SessionSeconds(deps.clock) if isinstance(deps.clock, ManualClock) else None
                if fake_model is not None:
                    fake_model.normalize = recorder.normalize_body
                if fake_model is not None and session_seconds is not None:
                    fake_model.clock = session_seconds
                if session_seconds is not None and not spec.live:
                    recorder.clock = session_seconds  # the cache audit's request times
                tools = [tool for tool in default_tools() if tool.name in spec.tools]
                engine = QueryEngine(
                    deps=deps,
                    workspace=run_workspace,
                    session_dir=session_dir,
                    settings=spec.settings,
                    tools=tools,
                    hooks=spec.options.build_hooks(),
                    can_use_tool=spec.options.build_permissions(),
                    tool_environment=spec.options.tool_environment(
                        live_recording=spec.live and mode is not RecordMode.NONE
                    ),
                )
                interrupts: list[int] = []
                for index, prompt in enumerate(spec.prompts):
                    minutes = spec.options.minutes_before(index)
                    if minutes and session_seconds is not None:
                        session_seconds.advance(minutes * 60)
                    if spec.options.compacts_before(index):
                        await _compact(engine)
                    system_prompt = spec.options.system_prompt_before(index)
                    if system_prompt is not None:
                        # The engine reads its settings at each submit, so the next request sends it.
                        engine.settings = dataclasses.replace(engine.settings, system_prompt=system_prompt)
                    async for item in engine.submit_message(prompt):
                        if isinstance(item, QueryResult):
                            results.append(item)
                        elif spec.options.should_interrupt(item, interrupts):
                            engine.abort()
                engine.close()
            unplayed = recorder.unplayed()
            requests = list(recorder.request_log)
        transcript = (session_dir / "transcript.jsonl").read_text(encoding="utf-8")
        transcript = _normalize_paths(transcript, run_workspace, session_dir, Path(temp))
        # Redacted as the recorded transcript was, so a replay compares like with like.
        transcript = current_redactor().redact_text(transcript)
        return SessionRun(
            transcript=transcript,
            trace=list(engine.trace),
            results=results,
            unplayed=unplayed,
            requests=requests,
            rewrite=recorder.rewrite_counts,
        )


class _SessionSeconds:
    """The seconds a session's ManualClock has moved (its jumps and the engine's sleeps), read
    without reading the clock itself: each reading ticks it, which would move the transcript's
    timestamps whenever the fake model looked at the time."""

    def __init__(self, clock: ManualClock) -> None:
        self._clock = clock
        self._advanced = 0.0

    def advance(self, seconds: float) -> None:
        self._clock.advance(seconds)
        self._advanced += seconds

    def __call__(self) -> float:
        return self._advanced + sum(self._clock.slept)


async def _compact(engine: QueryEngine) -> None:
    """The user's manual compaction between prompts; one that fails is traced as a failed
    `manual` compaction (as the loop traces its own), and the session carries on uncompacted."""
    try:
        await engine.compact()
    except CompactionError as exc:
        data = {"tier": CompactionTier.MANUAL.value, "failed": str(exc), "summary_requests": exc.summary_requests}
        engine.trace.append(TraceEvent(TraceKind.COMPACTION, 0, data))


def _normalize_paths(text: str, workspace: Path, session_dir: Path, scratch: Path) -> str:
    for path, placeholder in ((workspace, WORKSPACE_PLACEHOLDER), (session_dir, SESSION_PLACEHOLDER)):
        for variant in {str(path), os.path.realpath(path)}:
            text = text.replace(json.dumps(variant)[1:-1], placeholder)
    # Then the run's scratch folder that holds both, as fingerprints read an entry of the temp
    # folder: its name varies per run and with TMPDIR (a tool that prints the workspace's parent).
    for variant in sorted({str(scratch), os.path.realpath(scratch)}, key=len, reverse=True):
        text = text.replace(json.dumps(variant)[1:-1], TEMP_PLACEHOLDER)
    return text
