"""Any SDK client, served from the test's cassette: while a test that carries the
``replay_cassette`` marker runs (or while an ``anthropic_client`` / ``async_anthropic_client``
fixture lives), every ``httpx2`` client in the process — so every
``anthropic.Anthropic`` and ``AsyncAnthropic`` the test or its code creates — is answered from
the cassette, and the real SDK parses every byte.

How: for the test's duration ``httpx2.HTTPTransport.handle_request`` and
``httpx2.AsyncHTTPTransport.handle_async_request`` are replaced (as respx does) by functions that
ask a ``CassettePlayer``. While recording (``--record-mode`` once for a missing cassette,
new_episodes, all, rewrite), a ``CassetteRecorder`` has vcrpy patch those methods first, and a
request the cassette cannot answer goes through vcrpy over real HTTP. In rewrite mode the
cassette answers only while the test's requests are its own, in order; from the first that
differs every request is recorded (a marker's scenario plays on from where it was), and what
was not requested is pruned.

A request the cassette lacks fails the test at once with the player's diagnosis (the nearest
recorded requests, where they differ, and the command that re-records this test). It is raised
as pytest's own failure, a ``BaseException`` the SDK neither retries nor wraps into
"Connection error."; if the code under test swallows it anyway, the test fails at teardown.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from replay.network_guard import NetworkGuard
from replay.pytest_plugin.options import (
    MARKER,
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

# Loaded with the plugin, by every pytest run where agent-replay is installed: httpx2, the SDK
# and vcrpy are imported only when a test needs them (see the package's __init__).
if TYPE_CHECKING:
    import anthropic
    import httpx2

    from replay.cassette.interaction import Interaction
    from replay.cassette.record import CassetteRecorder, RecordMode
    from replay.fake.model import FakeModel

try:  # optional: a project without pytest-asyncio sees pytest's own error for an async fixture
    from pytest_asyncio import fixture as _async_fixture
except ImportError:  # pragma: no cover
    _async_fixture = pytest.fixture

__all__ = ["ServedCassette", "anthropic_client", "async_anthropic_client", "serve_sdk_clients"]

# These drive the engine through a transport of their own; they keep to it.
# Fixtures that answer the test's requests their own way: the engine's transport, or a proxy the
# test's clients reach over HTTP (serving them here would answer before the proxy sees them).
_OWN_TRANSPORT_FIXTURES = frozenset({"replay_engine", "replay_bundle", "replay_proxy"})


@dataclass(repr=False)
class ServedCassette:
    """The cassette a test's SDK clients are served from. ``recorder`` is None when the cassette
    does not exist and nothing may record it: the first request then fails and says so."""

    name: str
    location: CassetteLocation
    cassette: Path
    mode: RecordMode
    nodeid: str
    recorder: CassetteRecorder | None
    misses: list[str] = field(default_factory=list)
    # The marker's scenario, when the fake model serves this recording.
    script: ScriptGuard | None = None

    def __repr__(self) -> str:
        doing = "recording into" if self.recording else "replaying"
        return f"<ServedCassette {self.name!r}: {doing} {self.cassette}>"

    @property
    def recording(self) -> bool:
        """Whether requests the cassette lacks go to the network (through vcrpy)."""
        return self.recorder is not None and self.recorder.recording

    @property
    def api_key(self) -> str:
        """The key a client of this test uses: a placeholder in a replay (nothing checks it)."""
        from replay.session.bundle import PLACEHOLDER_KEY

        return (os.environ.get("ANTHROPIC_API_KEY") if self.recording else None) or PLACEHOLDER_KEY

    def client(self, **kwargs: Any) -> anthropic.Anthropic:
        """An ``anthropic.Anthropic`` for this test (``kwargs`` go to its constructor)."""
        import anthropic

        return anthropic.Anthropic(**{"api_key": self.api_key, **kwargs})

    def async_client(self, **kwargs: Any) -> anthropic.AsyncAnthropic:
        """An ``anthropic.AsyncAnthropic`` for this test (``kwargs`` go to its constructor)."""
        import anthropic

        return anthropic.AsyncAnthropic(**{"api_key": self.api_key, **kwargs})

    def answer(self, method: str, path: str, body: bytes) -> Interaction | None:
        """The recorded interaction for this request, or None when it is to be recorded. A
        request the cassette lacks, in a replay, fails the test."""
        from replay.cassette.transport import CassetteMismatchError

        __tracebackhide__ = True
        if self.recorder is None:
            self.fail(
                f"No cassette for {self.name!r}: neither a bundle folder {self.cassette.with_suffix('')}/ nor a "
                f"cassette file {self.cassette} exists, and this test made a request ({method} {path}). "
                f"To record it: `pytest {self.nodeid} --record-mode=once`."
            )
        rewrite = self.recorder.rewrite
        if rewrite is not None:  # rewrite: the cassette's own requests, in order, until the first that differs
            from replay.cassette.transport import LoggedRequest

            key, normalized = rewrite.fingerprint_with_body(method, path, body)
            kept = rewrite.answer(method, path, body, key=key)
            if kept is not None:
                logged = LoggedRequest(path, key, body=normalized, at=self.recorder.now(), answered=kept.response.began)
                self.recorder.request_log.append(logged)
            return kept
        player = self.recorder.player
        if player is None:
            return None
        player.rerecord_hint = self._rerecord_hint()
        try:
            interaction = player.match(method, path, body)
        except CassetteMismatchError as exc:
            miss = str(exc)
        else:
            miss = None
        if miss is not None:
            if self.recording:
                return None  # a new episode: recorded through vcrpy
            self.fail(miss)  # outside the except: the failure is the miss alone
        if self.recording:  # new_episodes: the recorder keeps its own log of the session
            self.recorder.request_log.append(player.log[-1])
        return interaction

    def fail(self, message: str) -> NoReturn:
        """Fail the test with ``message`` as the first line of its failure."""
        __tracebackhide__ = True
        self.misses.append(message)
        pytest.fail(message, pytrace=False)

    def _rerecord_hint(self) -> str:
        if self.location.is_bundle:
            return bundle_record_hint(self.nodeid)
        return (
            f"To re-record this test: `pytest {self.nodeid} --record-mode=rewrite` (keeps what matches up to "
            "the first request that differs, records from there and prunes what is no longer requested; "
            "--record-mode=new_episodes keeps everything and records what is missing)."
        )

    def unplayed(self) -> list[int]:
        """The recorded interactions no request asked for (none while recording)."""
        if self.recorder is None or self.recording:
            return []
        return self.recorder.unplayed()


@contextlib.contextmanager
def serve_sdk_clients(request: pytest.FixtureRequest, guard: NetworkGuard | None) -> Iterator[ServedCassette]:
    """Serve every ``httpx2`` client from the test's cassette until the context ends; the
    cassette is saved then if it was recorded."""
    from replay.cassette import CassetteError
    from replay.cassette.record import CassetteRecorder, RecordMode
    from replay.session.bundle import FAKE_SERVER_BASE_URL
    from replay.storage.bundle_lock import BundleBusyError, bundle_write_lock

    options, marked = PluginOptions.of(request.config), MarkerArguments.of(request)
    name = marked.name or default_cassette_name(request)
    location = locate_cassette(request.path.parent, name, cassette_dir=options.cassette_dir)
    mode, cassette = options.mode, location.path
    if location.is_bundle:  # a bundle is re-recorded whole, with `replay record`
        mode, cassette = RecordMode.NONE, load_located_bundle(location.path).cassette_path
    exists = cassette.exists()
    recording = mode is not RecordMode.NONE and (mode is not RecordMode.ONCE or not exists)
    with contextlib.ExitStack() as stack:
        recorder: CassetteRecorder | None = None
        script: ScriptGuard | None = None
        if recording:  # one writer of a cassette at a time; released after the recorder saves it
            try:
                stack.enter_context(bundle_write_lock(cassette))
            except BundleBusyError as exc:
                pytest.fail(str(exc), pytrace=False)
            if marked.scenario is not None:
                # Registered before the recorder, so it runs after the recorder has saved: a
                # script that ran out leaves the cassette as it was.
                script = ScriptGuard.before_recording(marked.scenario, cassette)
                stack.callback(script.restore_if_ran_out)
        if recording or exists:
            recorder = CassetteRecorder(cassette, mode=mode)
            try:
                stack.enter_context(recorder)  # vcrpy patches httpx2 first when recording
            except CassetteError as exc:
                pytest.fail(str(exc), pytrace=False)
        served = ServedCassette(name, location, cassette, mode, request.node.nodeid, recorder, script=script)
        has_key = bool(os.environ.get("ANTHROPIC_API_KEY"))
        if guard is not None:  # a recording leaves the machine only with a key to show
            guard.allow_remote = served.recording and has_key and marked.scenario is None
        patch = stack.enter_context(pytest.MonkeyPatch.context())
        if recorder is not None and served.recording and marked.scenario is not None:
            # The marker's scenario, served by the fake model on loopback, for every client that
            # takes its base URL from the environment (anthropic.Anthropic() does).
            base_url, fake_model = _start_fake_server(marked.scenario, stack)
            if script is not None:
                script.fake_model = fake_model
            if recorder.rewrite is not None:  # from the divergence on, the script plays from where it was
                recorder.rewrite.on_divergence = fake_model.fast_forward
            patch.setenv("ANTHROPIC_BASE_URL", base_url)
            recorder.stored_base_url = (base_url, FAKE_SERVER_BASE_URL)  # its port changes on every run
        if not has_key:
            # A client made with no key (anthropic.Anthropic()) refuses to start; a replay, or a
            # recording against a fake server on loopback, needs none.
            patch.setenv("ANTHROPIC_API_KEY", served.api_key)
        _intercept(served, patch)
        yield served


def _start_fake_server(scenario: Path, stack: contextlib.ExitStack) -> tuple[str, FakeModel]:
    from replay.fake.blocks import ScenarioError
    from replay.fake.model import FakeModel
    from replay.fake.scenario import load_scenario
    from replay.fake.server import FakeModelServer

    try:
        server = FakeModelServer(FakeModel(load_scenario(scenario)))
    except (OSError, ScenarioError) as exc:
        pytest.fail(f"The marker's scenario {scenario} cannot be used: {exc}", pytrace=False)
    base_url = server.start()
    stack.callback(server.stop)
    return base_url, server.fake_model


def _intercept(served: ServedCassette, patch: pytest.MonkeyPatch) -> None:
    """Put ``served`` in the place of httpx2's network transports (on top of vcrpy's patch)."""
    import httpx2

    from replay.cassette.transport import replay_response, request_path

    send_sync = httpx2.HTTPTransport.handle_request
    send_async = httpx2.AsyncHTTPTransport.handle_async_request

    def handle_request(transport: httpx2.HTTPTransport, request: httpx2.Request) -> httpx2.Response:
        __tracebackhide__ = True
        interaction = served.answer(request.method, request_path(request), request.read())
        if interaction is None:
            return send_sync(transport, request)
        return replay_response(interaction, request, sync=True)

    async def handle_async_request(transport: httpx2.AsyncHTTPTransport, request: httpx2.Request) -> httpx2.Response:
        __tracebackhide__ = True
        if served.recorder is not None and served.recording:
            # The recorder's transport answers what the cassette has, records the rest through
            # vcrpy, and records a dropped connection as a fault.
            recording = served.recorder.recording_transport(transport, send=lambda r: send_async(transport, r))
            return await recording.handle_async_request(request)
        interaction = served.answer(request.method, request_path(request), await request.aread())
        assert interaction is not None, "a replay either answers or fails"
        return replay_response(interaction, request, sync=False)

    patch.setattr(httpx2.HTTPTransport, "handle_request", handle_request)
    patch.setattr(httpx2.AsyncHTTPTransport, "handle_async_request", handle_async_request)


def wants_sdk_clients(request: pytest.FixtureRequest) -> bool:
    """Whether a marked test's clients are served from its cassette: unless it drives the engine
    through ``replay_engine``/``replay_bundle``, which have a transport of their own, or goes
    through ``replay_proxy``."""
    return request.node.get_closest_marker(MARKER) is not None and not _OWN_TRANSPORT_FIXTURES & set(
        request.fixturenames
    )


def check_after_test(request: pytest.FixtureRequest, served: ServedCassette, *, strict: bool) -> None:
    """At teardown: a miss the test swallowed, then interactions never requested."""
    __tracebackhide__ = True
    failed, failure = call_failed(request)
    if served.misses and served.misses[0].splitlines()[0] not in failure:
        pytest.fail(served.misses[0], pytrace=False)
    if served.script is not None:  # the agent saw a 500 and may have carried on regardless
        served.script.check()
    unplayed = served.unplayed()
    if not unplayed or failed:  # a failed test has said what went wrong
        return
    message = unplayed_message(served.cassette, unplayed)
    if strict:
        pytest.fail(message, pytrace=False)
    request.node.warn(UnplayedInteractionsWarning(message))


@contextlib.contextmanager
def _served(request: pytest.FixtureRequest, served: ServedCassette | None) -> Iterator[ServedCassette]:
    """The marked test's cassette; for an unmarked test, its default cassette, served (and
    guarded, and checked) for as long as the client fixture lives."""
    __tracebackhide__ = True
    if served is not None:
        yield served
        return
    if _OWN_TRANSPORT_FIXTURES & set(request.fixturenames):
        pytest.fail(
            "The client fixtures serve a cassette of their own; they cannot be used with "
            f"{' or '.join(sorted(_OWN_TRANSPORT_FIXTURES))}.",
            pytrace=False,
        )
    options = PluginOptions.of(request.config)
    with NetworkGuard() as guard, serve_sdk_clients(request, guard) as served:
        yield served
    check_after_test(request, served, strict=options.strict)


@pytest.fixture
def anthropic_client(
    request: pytest.FixtureRequest, _replay_sdk_clients: ServedCassette | None
) -> Iterator[anthropic.Anthropic]:
    """An ``anthropic.Anthropic`` served from the test's cassette (the marker's, else
    ``cassettes/<module>/<test>.yaml``), with a placeholder key in a replay."""
    with _served(request, _replay_sdk_clients) as served:
        client = served.client()
        yield client
        client.close()


@_async_fixture
async def async_anthropic_client(
    request: pytest.FixtureRequest, _replay_sdk_clients: ServedCassette | None
) -> AsyncIterator[anthropic.AsyncAnthropic]:
    """An ``anthropic.AsyncAnthropic`` served from the test's cassette (the marker's, else
    ``cassettes/<module>/<test>.yaml``), with a placeholder key in a replay."""
    with _served(request, _replay_sdk_clients) as served:
        client = served.async_client()
        yield client
        await client.close()
