"""The pytest plugin (entry point ``pytest11: replay``): tests drive the engine against a
recorded cassette or bundle, offline, and snapshot what the loop did.

- Options: ``--record-mode=none|once|new_episodes|all`` (default ``none``: never touch the
  network) and ``--replay-strict`` (a test fails when its cassette has interactions left
  unplayed); ini ``replay_cassette_dir`` (default ``cassettes``).
- Marker: ``@pytest.mark.replay_cassette("name", scenario=None, strict=None)`` names the cassette
  or bundle, looked up beside the test file (see ``locate_cassette``).
- Fixtures: ``replay_engine`` (a ``CassetteEngine``), ``replay_bundle`` (an async factory giving
  a ``ReplayedBundle``), ``trace_snapshot`` (syrupy's ``snapshot`` writing ``.trace.txt``
  files), ``replay_record_mode``.
- A test that uses any of them (or carries the marker) may connect to loopback only, unless it
  records against the real API.

Everything a test writes goes to its own temp folder; a cassette file is written only while
recording. So the plugin runs under ``pytest -n auto``. The guide is docs/pytest-plugin.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import re
import shutil
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from replay.pytest_plugin.network_guard import NetworkGuard, is_loopback

# This module is loaded by every pytest run where agent-replay is installed, and before any
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
    from replay.fake.scenario import Scenario
    from replay.session.bundle import Bundle
    from replay.session.session_run import SessionRun
    from replay.trace.behaviour import BehaviourTrace

try:  # optional: a project without pytest-asyncio sees pytest's own error for an async fixture
    from pytest_asyncio import fixture as _async_fixture
except ImportError:  # pragma: no cover
    _async_fixture = pytest.fixture

__all__ = [
    "CassetteEngine",
    "CassetteLocation",
    "NetworkGuard",
    "ReplayedBundle",
    "UnplayedInteractionsWarning",
    "locate_cassette",
]

MARKER = "replay_cassette"
CASSETTE_SUFFIXES = (".yaml", ".yml", ".json")
RECORD_HINT = "Run pytest with --record-mode=once to record cassettes that do not exist yet."
BUNDLE_RECORD_HINT = (
    "A bundle is re-recorded whole: `replay record --scenario FILE --prompt TEXT --out DIR` (or --live)."
)


class UnplayedInteractionsWarning(UserWarning):
    """A replayed test left recorded interactions unplayed (a failure with ``--replay-strict``)."""


# -- options, marker, settings -------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("replay", "agent-replay: replayed engines, bundles and trace snapshots")
    group.addoption(
        "--record-mode",
        dest="record_mode",
        default=None,
        type=_record_mode_option,
        metavar="MODE",
        help="When replay tests reach the network: none (default; replay only, offline), once (record cassettes "
        "that do not exist yet), new_episodes (record requests a cassette lacks), all (record everything anew).",
    )
    group.addoption(
        "--replay-strict",
        dest="replay_strict",
        action="store_true",
        default=False,
        help="Fail a replay test whose cassette has interactions it never requested (default: a warning).",
    )
    parser.addini(
        "replay_cassette_dir",
        "Folder beside each test file where replay_cassette names are looked up (default: cassettes).",
        default="cassettes",
    )


def _record_mode_option(value: str) -> RecordMode:
    from replay.cassette.record import RecordModeError, parse_record_mode

    try:
        return parse_record_mode(value)
    except RecordModeError as exc:
        raise argparse.ArgumentTypeError(
            f"{exc} Use none (the default: replay only) or once (record cassettes that do not exist yet)."
        ) from None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(name=None, *, scenario=None, strict=None): the cassette or bundle the replay fixtures use, "
        "looked up in the replay_cassette_dir beside the test file (default name: <module>/<test name>); "
        "scenario= a scenario file to record against instead of the real API; strict= overrides --replay-strict.",
    )


@dataclass(frozen=True)
class _Options:
    mode: RecordMode
    strict: bool
    cassette_dir: str

    @classmethod
    def of(cls, config: pytest.Config) -> _Options:
        from replay.cassette.record import RecordMode

        return cls(
            mode=config.getoption("record_mode") or RecordMode.NONE,
            strict=bool(config.getoption("replay_strict")),
            cassette_dir=str(config.getini("replay_cassette_dir")),
        )


@dataclass(frozen=True, kw_only=True)
class _Marked:
    """What the test's ``replay_cassette`` marker says (or the defaults without one)."""

    name: str | None
    scenario: Path | None
    strict: bool | None

    @classmethod
    def of(cls, request: pytest.FixtureRequest) -> _Marked:
        marker = request.node.get_closest_marker(MARKER)
        if marker is None:
            return cls(name=None, scenario=None, strict=None)
        unknown = sorted(set(marker.kwargs) - {"name", "scenario", "strict"})
        if unknown or len(marker.args) > 1:
            pytest.fail(
                f"@pytest.mark.{MARKER} takes one name and the keywords scenario= and strict=, not "
                f"{', '.join([*map(repr, marker.args), *(f'{k}=' for k in unknown)])}.",
                pytrace=False,
            )
        name = marker.args[0] if marker.args else marker.kwargs.get("name")
        scenario = marker.kwargs.get("scenario")
        return cls(
            name=str(name) if name is not None else None,
            scenario=request.path.parent / scenario if scenario is not None else None,
            strict=marker.kwargs.get("strict"),
        )


_CALL_REPORT = pytest.StashKey[pytest.TestReport]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    # Teardown checks (unplayed interactions, refused connections) need to know how the test went.
    report = yield
    if report.when == "call":
        item.stash[_CALL_REPORT] = report
    return report


def _call_failed(request: pytest.FixtureRequest) -> tuple[bool, str]:
    report = request.node.stash.get(_CALL_REPORT, None)
    if report is None or not report.failed:
        return False, ""
    return True, report.longreprtext


# -- where a name points ----------------------------------------------------------------------


@dataclass(frozen=True)
class CassetteLocation:
    """Where a ``replay_cassette`` name points: a bundle folder or a cassette file."""

    name: str
    path: Path
    is_bundle: bool


def locate_cassette(test_dir: Path, name: str, *, cassette_dir: str = "cassettes") -> CassetteLocation:
    """The lookup rule: ``<test_dir>/<cassette_dir>/<name>/`` if that folder exists (a bundle),
    else the cassette file ``<test_dir>/<cassette_dir>/<name>.yaml`` (``name`` kept as it is when
    it already ends in .yaml, .yml or .json). An absolute ``name`` is used as it is."""
    path = Path(name) if Path(name).is_absolute() else test_dir / cassette_dir / name
    if path.is_dir():
        return CassetteLocation(name, path, is_bundle=True)
    if path.suffix not in CASSETTE_SUFFIXES:
        path = path.with_name(path.name + ".yaml")
    return CassetteLocation(name, path, is_bundle=False)


def _default_name(request: pytest.FixtureRequest) -> str:
    return f"{request.path.stem}/{re.sub(r'[^A-Za-z0-9._-]+', '_', request.node.name)}"


# -- the network guard ------------------------------------------------------------------------


_PLUGIN_FIXTURES = frozenset({"replay_engine", "replay_bundle"})


@pytest.fixture(autouse=True)
def _replay_network_guard(request: pytest.FixtureRequest) -> Iterator[NetworkGuard | None]:
    """Installed for tests that carry the marker or use a replay fixture; others are untouched."""
    if request.node.get_closest_marker(MARKER) is None and not _PLUGIN_FIXTURES & set(request.fixturenames):
        yield None
        return
    with NetworkGuard() as guard:
        yield guard
    if guard.refused:
        failed, failure = _call_failed(request)
        # Said again at teardown when the test hid it (an SDK reports it as "Connection error.").
        if not failed or guard.refused[0] not in failure:
            count = len(guard.refused)
            pytest.fail(f"{guard.refused[0]} ({count} connection{'s' if count != 1 else ''} refused)", pytrace=False)


# -- replay_engine ------------------------------------------------------------------------------


def _offline() -> ToolEnvironment:
    """The tool environment of a replay: no session variables, proxies that point nowhere."""
    from engine import NetworkPolicy, ToolEnvironment

    return ToolEnvironment(network=NetworkPolicy.OFFLINE)


@dataclass(repr=False)
class CassetteEngine:
    """A ``QueryEngine`` wired to the test's cassette through ``CassetteRecorder`` (replayed, or
    recorded under ``--record-mode``), working in a temp workspace the test can fill; a
    bundle's workspace, settings, tools and seed are copied in. ``submit`` runs one prompt and
    ``trace()`` is the behaviour trace of everything submitted. ``tool_environment`` is what
    Bash and command hooks get: a bundle's ``env``, offline unless recording live."""

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
        from the bundle, or the engine's defaults."""
        from engine import QueryDeps, QueryEngine, default_tools

        if self._engine is not None:
            raise RuntimeError("The replay engine has already started; call start() before the first submit().")
        spec = self.bundle.spec if self.bundle is not None else None
        if spec is not None:
            settings = settings or spec.settings
            tools = tools if tools is not None else [t for t in default_tools() if t.name in spec.tools]
            seed = spec.seed if seed is None else seed
        deps = QueryDeps.deterministic(self.model, seed=seed or 0)
        if self._live_sleep:
            deps = dataclasses.replace(deps, sleep=_waiting(deps.clock))  # type: ignore[arg-type]
        self._engine = QueryEngine(
            deps=deps,
            workspace=self.workspace,
            session_dir=self.session_dir,
            settings=settings,
            tools=tools,
            hooks=hooks,
            tool_environment=self.tool_environment,
        )
        return self._engine

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
    from replay.schema.options import SessionOptions
    from replay.session.bundle import FAKE_SERVER_BASE_URL, PLACEHOLDER_KEY
    from replay.storage.bundle_lock import BundleBusyError, bundle_write_lock

    options, marked = _Options.of(request.config), _Marked.of(request)
    name = marked.name or _default_name(request)
    location = locate_cassette(request.path.parent, name, cassette_dir=options.cassette_dir)
    strict = options.strict if marked.strict is None else marked.strict
    workspace, session_dir = tmp_path / "workspace", tmp_path / "session"
    bundle: Bundle | None = None
    mode = options.mode
    if location.is_bundle:
        bundle = _load(location.path)
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
    scenario = _scenario(marked.scenario) if recording and marked.scenario is not None else None
    if recording and scenario is None:
        api_key, base_url, live_remote = _live_endpoint(cassette)
    async with contextlib.AsyncExitStack() as stack:
        if recording:  # one writer of a cassette at a time; released after the recorder saves it
            try:
                stack.enter_context(bundle_write_lock(cassette))
            except BundleBusyError as exc:
                pytest.fail(str(exc), pytrace=False)
        if scenario is not None:
            server = FakeModelServer(FakeModel(scenario))
            base_url = server.start()
            stack.callback(server.stop)
        recorder = CassetteRecorder(cassette, mode=mode, workspace=workspace, session_dir=session_dir, strict=strict)
        if base_url is not None and not live_remote:  # the fake server's port changes on every run
            recorder.stored_base_url = (base_url, FAKE_SERVER_BASE_URL)
        try:
            stack.enter_context(recorder)
        except CassetteError as exc:
            pytest.fail(str(exc), pytrace=False)
        assert recorder.recording == recording, "the plugin and CassetteRecorder disagree on when to record"
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
            tool_environment=(bundle.spec.options if bundle is not None else SessionOptions()).tool_environment(
                live_recording=live_remote
            ),
            _live_sleep=live_remote,
        )
        yield cassette_engine
        if cassette_engine._engine is not None:
            cassette_engine._engine.close()
        await stack.aclose()  # the client, then the recorder: saved if recording, checked if strict
    # (An UnplayedInteractionsError from a strict recorder propagates from aclose; see the fixture.)
    if not recorder.recording and not strict and not _call_failed(request)[0]:
        unplayed = recorder.unplayed()
        if unplayed:
            warnings.warn(UnplayedInteractionsWarning(_unplayed_message(cassette, unplayed)), stacklevel=1)


def _unplayed_message(cassette: Path, unplayed: Sequence[int]) -> str:
    listed = ", ".join(f"#{i + 1}" for i in unplayed[:5])
    if len(unplayed) > 5:
        listed += f" and {len(unplayed) - 5} more"
    return (
        f"{len(unplayed)} recorded interaction(s) in {cassette} were never requested ({listed}): the session made "
        "fewer calls than when it was recorded (a failure with --replay-strict)."
    )


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


def _load(path: Path) -> Bundle:
    from replay.session.bundle import BundleError, load_bundle

    try:
        return load_bundle(path)
    except BundleError as exc:
        pytest.fail(str(exc), pytrace=False)


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
    if unplayed is not None and not _call_failed(request)[0]:  # a failed test has said what went wrong
        pytest.fail(unplayed, pytrace=False)


# -- replay_bundle --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplayedBundle:
    """A bundle re-executed offline: what the run produced and its behaviour trace."""

    bundle: Bundle
    run: SessionRun
    trace: BehaviourTrace


BundleReplayer = Callable[..., Awaitable[ReplayedBundle]]


@pytest.fixture
def replay_bundle(request: pytest.FixtureRequest, _replay_network_guard: NetworkGuard | None) -> BundleReplayer:
    """``await replay_bundle(name=None, *, strict=None)``: re-execute the bundle ``name`` (default:
    the marker's) offline — its workspace in a temp copy, its prompts resubmitted, every model
    call answered from its cassette. A request the cassette lacks raises ``CassetteMismatchError``."""
    options, marked = _Options.of(request.config), _Marked.of(request)

    async def replay(name: str | None = None, *, strict: bool | None = None) -> ReplayedBundle:
        from replay.cassette.transport import CassetteMismatchError, UnplayedInteractionsError
        from replay.session.session_run import replay_bundle as replay_bundle_run

        __tracebackhide__ = True

        name = name or marked.name
        if name is None:
            pytest.fail(f"Name the bundle: replay_bundle('name') or @pytest.mark.{MARKER}('name').", pytrace=False)
        location = locate_cassette(request.path.parent, name, cassette_dir=options.cassette_dir)
        if not location.is_bundle:
            pytest.fail(f"No bundle folder for {name!r} at {location.path.with_suffix('')}/.", pytrace=False)
        bundle = _load(location.path)
        if strict is None:
            strict = options.strict if marked.strict is None else marked.strict
        # Not strict underneath: a request the cassette lacks is the first thing to report, and it
        # also leaves the rest unplayed.
        run = await replay_bundle_run(bundle, strict=False)
        missed = [r for r in run.requests if not r.matched]
        if missed:
            errors = [r.result for r in run.results if r.is_error]
            message = errors[0] if errors else f"Request {missed[0].fingerprint[:12]} is not recorded."
            raise CassetteMismatchError(f"{message}\n{BUNDLE_RECORD_HINT}")
        if run.unplayed:
            message = _unplayed_message(bundle.cassette_path, run.unplayed)
            if strict:
                raise UnplayedInteractionsError(f"{message} {BUNDLE_RECORD_HINT}")
            warnings.warn(UnplayedInteractionsWarning(message), stacklevel=2)
        return ReplayedBundle(bundle, run, run.behaviour(bundle.path.name, bundle.spec.prompts))

    return replay


# -- snapshots and the record mode ------------------------------------------------------------------


@pytest.fixture
def trace_snapshot(snapshot: Any) -> Any:
    """syrupy's ``snapshot`` storing behaviour traces as ``__snapshots__/<module>/<test>.trace.txt``."""
    from replay.trace.snapshot import TraceSnapshotExtension  # syrupy is needed only by tests that snapshot

    return snapshot.use_extension(TraceSnapshotExtension)


@pytest.fixture(scope="session")
def replay_record_mode(pytestconfig: pytest.Config) -> RecordMode:
    """The session's ``--record-mode``."""
    return _Options.of(pytestconfig).mode
