"""The pytest plugin (entry point ``pytest11: replay``): tests run any agent on the ``anthropic``
SDK, or this project's engine, against a recorded cassette or bundle, offline, and snapshot what
the loop did.

- Options: ``--record-mode=none|once|new_episodes|all|rewrite`` (default ``none``: never touch the
  network) and ``--replay-allow-unplayed`` (by default a test fails when its cassette has
  interactions left unplayed; ``--replay-strict`` is still accepted); ini ``replay_cassette_dir``
  (default ``cassettes``).
- Marker: ``@pytest.mark.replay_cassette("name", scenario=None, strict=None)`` names the cassette
  or bundle, looked up beside the test file (see ``locate_cassette``). While a marked test runs,
  every ``httpx2`` client, so every ``anthropic.Anthropic``/``AsyncAnthropic``, is served from it
  (`sdk_clients`), unless the test drives the engine through ``replay_engine``/``replay_bundle``.
- Fixtures: ``anthropic_client``, ``async_anthropic_client`` (SDK clients bound to the cassette),
  ``replay_engine`` (a ``CassetteEngine``), ``replay_bundle`` (an async factory giving a
  ``ReplayedBundle``), ``trace_snapshot`` (syrupy's ``snapshot`` writing ``.trace.txt`` files),
  ``replay_record_mode``, ``replay_proxy`` (``replay proxy`` for the test: its base URL; it
  records through ``replay_proxy_upstream``), ``claude_code`` (the pinned Claude Code CLI run
  against a scenario on loopback, in a copy of a workspace; docs/claude-code.md).
- A test that uses any of them (or carries the marker) may connect to loopback only, unless it
  records.

Everything a test writes goes to its own temp folder; a cassette file is written only while
recording. So the plugin runs under ``pytest -n auto``. The guide is docs/pytest-plugin.md.

Its parts: the options, the marker and where a name points (`options`), how the test went, for
the checks at teardown (`outcome`), SDK clients served from a cassette (`sdk_clients`),
``replay_engine`` (`cassette_engine`), ``replay_bundle`` (`bundle_replay`), ``replay_proxy``
(`proxy_fixture`), ``claude_code`` (`claude_code_fixture`) and the guard against the network
(``replay.network_guard``). pytest registers the hooks and fixtures it finds as attributes of this
module, so each is imported here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from replay.network_guard import NetworkGuard

# This module is loaded by every pytest run where agent-replay is installed, and before any
# test asks for it: the engine, the SDK and vcrpy are imported only when a fixture is used
# (they take seconds to load, in each xdist worker, and vcrpy imports httpx, which an early
# `-p replay.respx_alias` must see first). Its parts keep to that rule too.
from replay.pytest_plugin.bundle_replay import ReplayedBundle
from replay.pytest_plugin.bundle_replay import replay_bundle as replay_bundle
from replay.pytest_plugin.cassette_engine import CassetteEngine
from replay.pytest_plugin.cassette_engine import replay_engine as replay_engine
from replay.pytest_plugin.claude_code_fixture import ClaudeCodeRunner
from replay.pytest_plugin.claude_code_fixture import claude_code as claude_code
from replay.pytest_plugin.claude_code_fixture import claude_code_binary as claude_code_binary
from replay.pytest_plugin.options import MARKER, CassetteLocation, MarkerArguments, PluginOptions, locate_cassette
from replay.pytest_plugin.options import pytest_addoption as pytest_addoption
from replay.pytest_plugin.options import pytest_configure as pytest_configure
from replay.pytest_plugin.outcome import UnplayedInteractionsWarning, call_failed
from replay.pytest_plugin.outcome import pytest_runtest_makereport as pytest_runtest_makereport
from replay.pytest_plugin.proxy_fixture import replay_proxy as replay_proxy
from replay.pytest_plugin.proxy_fixture import replay_proxy_upstream as replay_proxy_upstream
from replay.pytest_plugin.sdk_clients import (
    ServedCassette,
    check_after_test,
    serve_sdk_clients,
    wants_sdk_clients,
)
from replay.pytest_plugin.sdk_clients import anthropic_client as anthropic_client
from replay.pytest_plugin.sdk_clients import async_anthropic_client as async_anthropic_client

if TYPE_CHECKING:
    from replay.cassette.record import RecordMode

__all__ = [
    "CassetteEngine",
    "CassetteLocation",
    "ClaudeCodeRunner",
    "NetworkGuard",
    "ReplayedBundle",
    "ServedCassette",
    "UnplayedInteractionsWarning",
    "locate_cassette",
]


# -- the network guard ------------------------------------------------------------------------


_PLUGIN_FIXTURES = frozenset({"replay_engine", "replay_bundle", "replay_proxy", "claude_code"})


@pytest.fixture(autouse=True)
def _replay_network_guard(request: pytest.FixtureRequest) -> Iterator[NetworkGuard | None]:
    """Installed for tests that carry the marker or use a replay fixture; others are untouched."""
    if request.node.get_closest_marker(MARKER) is None and not _PLUGIN_FIXTURES & set(request.fixturenames):
        yield None
        return
    with NetworkGuard() as guard:
        yield guard
    if guard.refused:
        failed, failure = call_failed(request)
        # Said again at teardown when the test hid it (an SDK reports it as "Connection error.").
        if not failed or guard.refused[0] not in failure:
            count = len(guard.refused)
            pytest.fail(f"{guard.refused[0]} ({count} connection{'s' if count != 1 else ''} refused)", pytrace=False)


# -- every SDK client of a marked test -----------------------------------------------------------


@pytest.fixture(autouse=True)
def _replay_sdk_clients(
    request: pytest.FixtureRequest, _replay_network_guard: NetworkGuard | None
) -> Iterator[ServedCassette | None]:
    """For a marked test: every httpx2 client, so every ``anthropic.Anthropic``/``AsyncAnthropic``,
    is served from the test's cassette (the client fixtures serve an unmarked test's themselves)."""
    if not wants_sdk_clients(request):
        yield None
        return
    options, marked = PluginOptions.of(request.config), MarkerArguments.of(request)
    with serve_sdk_clients(request, _replay_network_guard) as served:
        yield served
    check_after_test(request, served, strict=options.strict if marked.strict is None else marked.strict)


# -- snapshots and the record mode ------------------------------------------------------------------


@pytest.fixture
def trace_snapshot(snapshot: Any) -> Any:
    """syrupy's ``snapshot`` storing behaviour traces as ``__snapshots__/<module>/<test>.trace.txt``."""
    from replay.trace.snapshot import TraceSnapshotExtension  # syrupy is needed only by tests that snapshot

    return snapshot.use_extension(TraceSnapshotExtension)


@pytest.fixture(scope="session")
def replay_record_mode(pytestconfig: pytest.Config) -> RecordMode:
    """The session's ``--record-mode``."""
    return PluginOptions.of(pytestconfig).mode
