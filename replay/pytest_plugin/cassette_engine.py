"""The ``replay_engine`` fixture: a `CassetteEngine`, a ``QueryEngine`` wired to the test's cassette
or bundle through a ``CassetteRecorder``, replaying offline or recording under ``--record-mode``
(against the real API, or a scenario's fake model on loopback), and the context that opens and
closes it: the recorder, its write lock, the HTTP client, the unplayed-interactions check."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import shutil
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from replay.loopback import is_loopback
from replay.network_guard import NetworkGuard
from replay.pytest_plugin.options import (
    RECORD_HINT,
    CassetteLocation,
    MarkerArguments,
    PluginOptions,
    bundle_record_hint,
    default_cassette_name,
    load_located_bundle,
    locate_cassette,
)
from replay.pytest_plugin.outcome import UnplayedInteractionsWarning, call_failed, unplayed_message
from replay.pytest_plugin.script_guard import ScriptGuard

# Loaded with the plugin, by every pytest run where agent-replay is installed, and before any
# test asks for it: the engine, the SDK and vcrpy are imported only when a fixture is used
# (they take seconds to load, in each xdist worker, and vcrpy imports httpx, which an early
# `-p replay.respx_alias` must see first).
if TYPE_CHECKING:
    from engine import (
        AnthropicModel,
        EngineSettings,
        Hooks,
        ManualClock,
        QueryEngine,
        QueryResult,
        Tool,
        ToolEnvironment,
    )
    from replay.cassette.record import CassetteRecorder, RecordMode
    from replay.cassette.rewrite import DivergenceHook
    from replay.fake.scenario import Scenario
    from replay.session.bundle import Bundle
    from replay.session.session_setup import SessionSetup
    from replay.trace.behaviour import BehaviourTrace

try:  # optional: a project without pytest-asyncio sees pytest's own error for an async fixture
    from pytest_asyncio import fixture as _async_fixture
except ImportError:  # pragma: no cover
    _async_fixture = pytest.fixture


__all__ = ["CassetteEngine", "replay_engine"]


def _offline() -> ToolEnvironment:
    """The tool environment of a replay: no session variables, proxies that point nowhere."""
    from engine import NetworkPolicy, ToolEnvironment

    return ToolEnvironment(network=NetworkPolicy.OFFLINE)


@dataclass(repr=False)
class CassetteEngine:
    """A ``QueryEngine`` wired to the test's cassette through ``CassetteRecorder`` (replayed, or
    recorded under ``--record-mode``), working in a temp workspace the test can fill; a
    bundle's workspace, settings, tools and seed are copied in, and a marker scenario's
    ``settings:`` and ``session:`` set up a recording from it (`resolve_setup`: what ``start`` is
    given wins). ``submit`` runs one prompt and ``trace()`` is the behaviour trace of everything
    submitted. ``tool_environment`` is what Bash and command hooks get: a bundle's or scenario's
    ``env``, offline unless recording live."""

    name: str
    location: CassetteLocation
    recorder: CassetteRecorder
    workspace: Path
    session_dir: Path
    model: AnthropicModel
    bundle: Bundle | None = None
    tool_environment: ToolEnvironment = field(default_factory=_offline)
    prompts: list[str] = field(default_factory=list)
    results: list[QueryResult] = field(default_factory=list)
    _live_sleep: bool = False
    _engine: QueryEngine | None = None
    # The marker's scenario, when the fake model serves this recording.
    _scenario: Scenario | None = None
    _scenario_path: Path | None = None
    _script: ScriptGuard | None = None

    def __repr__(self) -> str:
        doing = "recording into" if self.recording else "replaying"
        return f"<CassetteEngine {self.name!r}: {doing} {self.cassette}, {len(self.prompts)} prompt(s) submitted>"

    @property
    def cassette(self) -> Path:
        """The cassette file (a bundle's ``cassette.yaml``)."""
        return self.recorder.path

    @property
    def mode(self) -> RecordMode:
        """The record mode in force (``none`` for a bundle, whatever ``--record-mode`` says)."""
        return self.recorder.mode

    @property
    def recording(self) -> bool:
        """Whether requests the cassette lacks go to the network (or the scenario's fake server)."""
        return self.recorder.recording

    def start(
        self,
        *,
        settings: EngineSettings | None = None,
        tools: Sequence[Tool] | None = None,
        hooks: Hooks | None = None,
        seed: int | None = None,
    ) -> QueryEngine:
        """Create the engine with these options (before the first ``submit``); unset ones come
        from the bundle's session.json or the marker's scenario, else the engine's defaults."""
        from engine import QueryDeps, QueryEngine, default_tools

        if self._engine is not None:
            raise RuntimeError("The replay engine has already started; call start() before the first submit().")
        setup = self.setup(settings=settings)
        spec = self.bundle.spec if self.bundle is not None else None
        if spec is not None:
            tools = tools if tools is not None else [t for t in default_tools() if t.name in spec.tools]
            seed = spec.seed if seed is None else seed
        if hooks is None and setup.options.hooks:
            hooks = setup.options.build_hooks()
        deps = QueryDeps.deterministic(self.model, seed=seed or 0)
        if self._live_sleep:
            deps = dataclasses.replace(deps, sleep=_waiting(deps.clock))  # type: ignore[arg-type]
        self._engine = QueryEngine(
            deps=deps,
            workspace=self.workspace,
            session_dir=self.session_dir,
            settings=setup.settings,
            tools=tools,
            can_use_tool=setup.options.build_permissions(),
            hooks=hooks,
            tool_environment=self.tool_environment,
        )
        return self._engine

    def setup(self, *, settings: EngineSettings | None = None) -> SessionSetup:
        """The session's set-up by the one rule (`replay.session.session_setup`): ``settings`` if
        given, else the bundle's session.json or the marker's scenario, else the defaults."""
        from replay.session.bundle import BundleError
        from replay.session.session_setup import resolve_setup

        try:
            return resolve_setup(
                scenario=self._scenario,
                scenario_path=self._scenario_path,
                spec=self.bundle.spec if self.bundle is not None else None,
                settings=settings,
                need_prompts=False,
            )
        except BundleError as exc:
            pytest.fail(str(exc), pytrace=False)

    def check_script(self) -> None:
        """Fail the test if the scenario's script ran out of turns while recording: the loop
        ends ``completed`` after the fake server's 500, so the test might pass on a broken script."""
        __tracebackhide__ = True
        if self._script is not None:
            self._script.check()

    @property
    def engine(self) -> QueryEngine:
        """The engine (started with the defaults if ``start`` was not called)."""
        return self._engine if self._engine is not None else self.start()

    async def submit(self, prompt: str) -> QueryResult:
        """Run one prompt to its end. A request the cassette cannot answer (when not recording)
        raises ``CassetteMismatchError`` with the nearest recorded requests and their diff."""
        from engine import QueryResult
        from replay.cassette.transport import CassetteMismatchError

        __tracebackhide__ = True  # a failure points at the test's line, not into the plugin
        engine = self.engine
        seen = len(self.recorder.request_log)
        self.prompts.append(prompt)
        result: QueryResult | None = None
        async for item in engine.submit_message(prompt):
            if isinstance(item, QueryResult):
                result = item
        assert result is not None, "submit_message ended without a QueryResult"
        self.results.append(result)
        self.check_script()
        missed = [r for r in self.recorder.request_log[seen:] if not r.matched]
        if missed and not self.recording:
            # The engine ends the turn with model_error and the miss message (which says how to
            # re-record) as its error.
            raise CassetteMismatchError(
                result.result if result.is_error else f"Request {missed[0].fingerprint[:12]} is not in {self.cassette}."
            )
        return result

    def trace(self) -> BehaviourTrace:
        """The behaviour trace of the prompts submitted so far."""
        from replay.trace.behaviour import extract_trace

        events = self._engine.trace if self._engine is not None else []
        return extract_trace(self.name, self.prompts, events, self.recorder.request_log)


def _waiting(clock: ManualClock) -> Callable[[float], Awaitable[None]]:
    """A live recording really waits between retries, and its clock moves as its replay's will."""

    async def sleep(seconds: float) -> None:
        await asyncio.sleep(seconds)
        await clock.sleep(seconds)

    return sleep


@contextlib.asynccontextmanager
async def _cassette_engine(
    request: pytest.FixtureRequest, tmp_path: Path, guard: NetworkGuard | None
) -> AsyncIterator[CassetteEngine]:
    from engine import AnthropicModel
    from replay.cassette import CassetteError
    from replay.cassette.record import CassetteRecorder, RecordMode
    from replay.fake.model import FakeModel
    from replay.fake.server import FakeModelServer
    from replay.session.bundle import FAKE_SERVER_BASE_URL, PLACEHOLDER_KEY
    from replay.storage.bundle_lock import BundleBusyError, bundle_write_lock

    options, marked = PluginOptions.of(request.config), MarkerArguments.of(request)
    name = marked.name or default_cassette_name(request)
    location = locate_cassette(request.path.parent, name, cassette_dir=options.cassette_dir)
    strict = options.strict if marked.strict is None else marked.strict
    workspace, session_dir = tmp_path / "workspace", tmp_path / "session"
    bundle: Bundle | None = None
    mode = options.mode
    if location.is_bundle:
        bundle = load_located_bundle(location.path)
        shutil.copytree(bundle.workspace_path, workspace, symlinks=True)
        mode = RecordMode.NONE  # a bundle is re-recorded whole, with `replay record`
        cassette = bundle.cassette_path
    else:
        workspace.mkdir()
        cassette = location.path
        if mode is RecordMode.NONE and not cassette.exists():
            pytest.fail(
                f"No cassette for {name!r}: neither a bundle folder {cassette.with_suffix('')}/ nor a cassette file "
                f"{cassette} exists. {RECORD_HINT}",
                pytrace=False,
            )
    # Decided before the recorder opens: a recorder in mode "all" that closes on a failed setup
    # would replace the cassette with an empty one.
    recording = mode is not RecordMode.NONE and (mode is not RecordMode.ONCE or not cassette.exists())
    api_key, base_url, live_remote = PLACEHOLDER_KEY, None, False
    # The marker's scenario sets the session up whether it is recorded or replayed (a cassette
    # file holds only the HTTP, so a replay set up otherwise would ask other questions); a
    # bundle has its own set-up in session.json.
    scenario = _scenario(marked.scenario) if bundle is None and marked.scenario is not None else None
    if recording and scenario is None:
        api_key, base_url, live_remote = _live_endpoint(cassette)
    fake = FakeModel(scenario) if recording and scenario is not None else None
    async with contextlib.AsyncExitStack() as stack:
        if recording:  # one writer of a cassette at a time; released after the recorder saves it
            try:
                stack.enter_context(bundle_write_lock(cassette))
            except BundleBusyError as exc:
                pytest.fail(str(exc), pytrace=False)
        on_divergence: DivergenceHook | None = None
        script: ScriptGuard | None = None
        if fake is not None and marked.scenario is not None:
            # After the recorder has saved, before the lock is released: a script that ran out
            # leaves the cassette as it was.
            script = ScriptGuard.before_recording(marked.scenario, cassette)
            script.fake_model = fake
            stack.callback(script.restore_if_ran_out)
            server = FakeModelServer(fake)
            base_url = server.start()
            stack.callback(server.stop)
            on_divergence = fake.fast_forward
        recorder = CassetteRecorder(
            cassette,
            mode=mode,
            workspace=workspace,
            session_dir=session_dir,
            strict=strict,
            on_divergence=on_divergence,
        )
        if base_url is not None and not live_remote:  # the fake server's port changes on every run
            recorder.stored_base_url = (base_url, FAKE_SERVER_BASE_URL)
        try:
            stack.enter_context(recorder)
        except CassetteError as exc:
            pytest.fail(str(exc), pytrace=False)
        assert recorder.recording == recording, "the plugin and CassetteRecorder disagree on when to record"
        if bundle is not None and recorder.player is not None:  # a miss names the way to accept it
            recorder.player.rerecord_hint = bundle_record_hint(request.node.nodeid)
        if guard is not None:
            guard.allow_remote = live_remote
        client = recorder.async_client()
        stack.push_async_callback(client.aclose)
        cassette_engine = CassetteEngine(
            name=location.path.name if bundle is not None else name,
            location=location,
            recorder=recorder,
            workspace=workspace,
            session_dir=session_dir,
            model=AnthropicModel(http_client=client, api_key=api_key, base_url=base_url),
            bundle=bundle,
            _live_sleep=live_remote,
            _scenario=scenario,
            _scenario_path=marked.scenario if scenario is not None else None,
            _script=script,
        )
        cassette_engine.tool_environment = cassette_engine.setup().options.tool_environment(live_recording=live_remote)
        yield cassette_engine
        if cassette_engine._engine is not None:
            cassette_engine._engine.close()
        await stack.aclose()  # the client, then the recorder: saved if recording, checked if strict
    # (An UnplayedInteractionsError from a strict recorder propagates from aclose; see the fixture.)
    if not call_failed(request)[0]:
        cassette_engine.check_script()  # a script run out by engine calls other than submit()
    if not recorder.recording and not strict and not call_failed(request)[0]:
        unplayed = recorder.unplayed()
        if unplayed:
            warnings.warn(UnplayedInteractionsWarning(unplayed_message(cassette, unplayed)), stacklevel=1)


def _live_endpoint(cassette: Path) -> tuple[str, str | None, bool]:
    """The key and base URL for a recording without a scenario, and whether it leaves the machine."""
    from replay.session.bundle import PLACEHOLDER_KEY

    base_url = os.environ.get("ANTHROPIC_BASE_URL") or None
    host = _host_of(base_url) if base_url else None
    if host is not None and is_loopback((host,)):
        return os.environ.get("ANTHROPIC_API_KEY") or PLACEHOLDER_KEY, base_url, False
    api_key = os.environ.get("ANTHROPIC_API_KEY")
    if not api_key:
        pytest.fail(
            f"Recording {cassette} against the real API needs ANTHROPIC_API_KEY. Or record against the fake model: "
            "give the marker scenario='file.yaml', or set ANTHROPIC_BASE_URL to the URL `replay serve --scenario "
            "FILE` prints.",
            pytrace=False,
        )
    return api_key, base_url, True


def _host_of(url: str) -> str | None:
    match = re.match(r"^[a-z][a-z0-9+.-]*://(\[[^\]]+\]|[^/:]+)", url, re.IGNORECASE)
    return match.group(1).strip("[]") if match else None


def _scenario(path: Path) -> Scenario:
    from replay.fake.blocks import ScenarioError
    from replay.fake.scenario import load_scenario

    try:
        return load_scenario(path)
    except (OSError, ScenarioError) as exc:
        pytest.fail(f"The marker's scenario {path} cannot be used: {exc}", pytrace=False)


@_async_fixture
async def replay_engine(
    request: pytest.FixtureRequest, tmp_path: Path, _replay_network_guard: NetworkGuard | None
) -> AsyncIterator[CassetteEngine]:
    """A ``CassetteEngine`` for the cassette or bundle the ``replay_cassette`` marker names."""
    from replay.cassette.transport import UnplayedInteractionsError

    unplayed: str | None = None
    try:
        async with _cassette_engine(request, tmp_path, _replay_network_guard) as cassette_engine:
            yield cassette_engine
    except UnplayedInteractionsError as exc:
        unplayed = str(exc)
    if unplayed is not None and not call_failed(request)[0]:  # a failed test has said what went wrong
        pytest.fail(unplayed, pytrace=False)
