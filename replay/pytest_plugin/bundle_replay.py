"""The ``replay_bundle`` fixture: ``await replay_bundle(name)`` re-executes a recorded bundle
offline (its workspace in a temp copy, its prompts resubmitted, every model call answered from
its cassette) and gives a `ReplayedBundle`: the run and its behaviour trace."""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from replay.network_guard import NetworkGuard
from replay.pytest_plugin.options import (
    MARKER,
    MarkerArguments,
    PluginOptions,
    bundle_record_hint,
    load_located_bundle,
    locate_cassette,
)
from replay.pytest_plugin.outcome import UnplayedInteractionsWarning, unplayed_message

# Loaded with the plugin, by every pytest run where agent-replay is installed: the engine, the
# SDK and vcrpy are imported only when a fixture is used (see the package's __init__).
if TYPE_CHECKING:
    from replay.session.bundle import Bundle
    from replay.session.session_run import SessionRun
    from replay.trace.behaviour import BehaviourTrace

__all__ = ["BundleReplayer", "ReplayedBundle", "replay_bundle"]


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
    options, marked = PluginOptions.of(request.config), MarkerArguments.of(request)

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
        bundle = load_located_bundle(location.path)
        if strict is None:
            strict = options.strict if marked.strict is None else marked.strict
        # Not strict underneath: a request the cassette lacks is the first thing to report, and it
        # also leaves the rest unplayed.
        run = await replay_bundle_run(bundle, strict=False)
        missed = [r for r in run.requests if not r.matched]
        if missed:
            errors = [r.result for r in run.results if r.is_error]
            message = errors[0] if errors else f"Request {missed[0].fingerprint[:12]} is not recorded."
            raise CassetteMismatchError(f"{message}\n{bundle_record_hint(request.node.nodeid)}")
        if run.unplayed:
            message = unplayed_message(bundle.cassette_path, run.unplayed)
            if strict:
                raise UnplayedInteractionsError(f"{message} {bundle_record_hint(request.node.nodeid)}")
            warnings.warn(UnplayedInteractionsWarning(message), stacklevel=2)
        return ReplayedBundle(bundle, run, run.behaviour(bundle.path.name, bundle.spec.prompts))

    return replay
