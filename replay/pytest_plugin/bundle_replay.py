"""The ``replay_bundle`` fixture: ``await replay_bundle(name)`` re-executes a recorded bundle
offline (its workspace in a temp copy, its prompts resubmitted, every model call answered from
its cassette) and gives a `ReplayedBundle`: the run and its behaviour trace. Under
``--record-mode=rewrite`` a drifted bundle is first updated from its first divergence, as
``replay run --update`` does (`replay.session.bundle_update`)."""

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
    from replay.cassette.rewrite import RewriteCounts
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
    # Under --record-mode=rewrite, when the bundle drifted: the interactions its update kept,
    # re-recorded and pruned (None when it was not updated).
    rewrite: RewriteCounts | None = None


BundleReplayer = Callable[..., Awaitable[ReplayedBundle]]


@pytest.fixture
def replay_bundle(request: pytest.FixtureRequest, _replay_network_guard: NetworkGuard | None) -> BundleReplayer:
    """``await replay_bundle(name=None, *, strict=None)``: re-execute the bundle ``name`` (default:
    the marker's) offline — its workspace in a temp copy, its prompts resubmitted, every model
    call answered from its cassette. A request the cassette lacks raises ``CassetteMismatchError``.
    With ``--record-mode=rewrite`` a drifted bundle is updated first (kept up to its first
    divergence, re-recorded from there against its scenario or the live API, pruned)."""
    options, marked = PluginOptions.of(request.config), MarkerArguments.of(request)

    async def replay(name: str | None = None, *, strict: bool | None = None) -> ReplayedBundle:
        from replay.cassette.record import RecordMode
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
        rewrite = None
        if options.mode is RecordMode.REWRITE:
            rewrite = await _update(bundle, _replay_network_guard)
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
        return ReplayedBundle(bundle, run, run.behaviour(bundle.path.name, bundle.spec.prompts), rewrite)

    return replay


async def _update(bundle: Bundle, guard: NetworkGuard | None) -> RewriteCounts | None:
    """Update a drifted bundle from its first divergence (a live one may reach the API); the
    counts, if it was updated."""
    from replay.session.bundle import BundleError
    from replay.session.bundle_update import update_bundle

    __tracebackhide__ = True
    if guard is not None and bundle.spec.live:
        guard.allow_remote = True  # the API is reached only if a request differs, and with a key
    try:
        report = await update_bundle(bundle.path)
    except BundleError as exc:
        pytest.fail(str(exc), pytrace=False)
    if not report.matched and not report.updated:  # e.g. a session that is not deterministic
        pytest.fail(f"Cannot update {bundle.path}: {report.differences[-1]}", pytrace=False)
    return report.rewrite
