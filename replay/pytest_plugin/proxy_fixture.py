"""``replay_proxy``: ``replay proxy`` for one test. It serves the test's cassette (beside the test
file, as the ``replay_cassette`` marker names it, like every replay fixture) on loopback, with the
session's ``--record-mode``, and yields the base URL to give a client or a subprocess as
``ANTHROPIC_BASE_URL``. When recording, it forwards to ``replay_proxy_upstream`` (the real API
unless a test overrides that fixture, e.g. with a fake model server's URL).

A test whose requests missed the cassette fails at teardown with the proxy's diagnosis, even if
the client swallowed the error answer; ``--replay-strict`` (or ``strict=True`` on the marker)
fails a test that left recorded interactions unplayed.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from replay.loopback import is_loopback
from replay.network_guard import NetworkGuard
from replay.pytest_plugin.options import (
    RECORD_HINT,
    MarkerArguments,
    PluginOptions,
    default_cassette_name,
    locate_cassette,
)
from replay.pytest_plugin.outcome import call_failed

# Loaded with the plugin by every pytest run: the proxy, the cassette code and httpx2 are
# imported only when the fixture is used (see the package's __init__).

__all__ = ["replay_proxy", "replay_proxy_upstream"]

BUNDLE_CASSETTE = "cassette.yaml"


@pytest.fixture
def replay_proxy_upstream() -> str:
    """Where ``replay_proxy`` forwards what it records: the real API; override it in a test module
    or conftest (a fake model server's URL, say)."""
    from replay.proxy.server import DEFAULT_UPSTREAM

    return DEFAULT_UPSTREAM


@pytest.fixture
def replay_proxy(
    request: pytest.FixtureRequest,
    pytestconfig: pytest.Config,
    replay_proxy_upstream: str,
    _replay_network_guard: NetworkGuard | None,
) -> Iterator[str]:
    """The base URL of a ``replay proxy`` serving this test's cassette."""
    from replay.cassette import CassetteError, CassetteNotFoundError, UnplayedInteractionsError
    from replay.proxy.server import CassetteProxy

    options = PluginOptions.of(pytestconfig)
    marker = MarkerArguments.of(request)
    location = locate_cassette(
        request.path.parent, marker.name or default_cassette_name(request), cassette_dir=options.cassette_dir
    )
    path = location.path / BUNDLE_CASSETTE if location.is_bundle else location.path
    try:
        proxy = CassetteProxy(path, mode=options.mode, upstream=replay_proxy_upstream)
    except CassetteNotFoundError as exc:
        pytest.fail(f"{exc} {RECORD_HINT}", pytrace=False)
    except CassetteError as exc:
        pytest.fail(str(exc), pytrace=False)
    if _replay_network_guard is not None and proxy.recording:
        # Recording may reach the upstream, wherever it is; replaying reaches nothing.
        _replay_network_guard.allow_remote = not is_loopback(urlsplit(replay_proxy_upstream).hostname)
    with proxy:
        yield proxy.url
    failed, _ = call_failed(request)
    if proxy.misses and not failed:
        pytest.fail(proxy.misses[0], pytrace=False)
    strict = marker.strict if marker.strict is not None else options.strict
    if strict and proxy.player is not None and not proxy.recording and not failed:
        try:
            proxy.player.finish()
        except UnplayedInteractionsError as exc:
            pytest.fail(str(exc), pytrace=False)
