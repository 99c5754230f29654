"""What the prompt-cache audit adds to a replay: per bundle, the replay itself, building the
behaviour trace from it, and the share of that spent in the cache audit.

Method
------
Each bundle below ``cassettes/`` (or the ones named) is replayed in process with
``replay_bundle``, and its behaviour trace built from that fresh run (``SessionRun.behaviour``,
which audits every request from its logged body, read a piece at a time). Then the audit alone
is run over the run's Messages API requests in order (all as main requests), read as the trace
reads them (each body's pieces parsed once for the session, `SharedParser`, and each block
written once, ``CacheAudit(shared_pieces=True)``) and the plain way (each body parsed whole and
audited on its own, as before the audit was made linear): the two must give the same audit.
Each step is timed ``--repeat`` times, each time on a fresh replay, and the median is reported;
the figures of one run are compared with each other, never with another machine's.

Run: ``python bench/cache_audit_cost.py --repeat 3`` (or name bundles:
``python bench/cache_audit_cost.py cassettes/long-session-crosses-autocompact-twice``)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from replay.cassette.fingerprints import route_key
from replay.cassette.normalized_text import SharedParser
from replay.cassette.sent_again import logged_pieces
from replay.session.bundle import load_bundle
from replay.session.session_run import SessionRun, replay_bundle
from replay.session.verify import find_bundles
from replay.trace.cache_audit import AuditedRequest, CacheAudit
from replay.trace.request_cache import RequestCache

LIBRARY = Path(__file__).resolve().parents[1] / "cassettes"
T = TypeVar("T")


def _seconds(step: Callable[[], T]) -> tuple[float, T]:
    started = time.perf_counter()
    result = step()
    return time.perf_counter() - started, result


def _messages_requests(run: SessionRun) -> list[Any]:
    """The Messages API requests, by their route as the trace tells them."""
    return [r for r in run.requests if route_key(r.path) == "/v1/messages"]


def _audit_as_the_trace_does(run: SessionRun) -> list[RequestCache]:
    reader, audit = SharedParser(), CacheAudit(shared_pieces=True)
    audited = []
    for r in _messages_requests(run):
        pieces = logged_pieces(r)
        body = reader.parsed(pieces) if pieces is not None else r.body
        if isinstance(body, dict):  # as the trace: no audit for a request without a JSON object
            audited.append(audit.audit(AuditedRequest(body=body, at=r.at, answered=r.answered)))
    return audited


def _audit_the_plain_way(run: SessionRun) -> list[RequestCache]:
    audit = CacheAudit()
    return [
        audit.audit(AuditedRequest(body=r.body, at=r.at, answered=r.answered))
        for r in _messages_requests(run)
        if isinstance(r.body, dict)
    ]


def _measure(path: Path, repeat: int) -> tuple[int, float, float, float, float]:
    """(audited requests, replay s, trace s, audit s, plain audit s) of one bundle: medians of
    ``repeat`` fresh replays, each traced and audited once (a logged body is parsed when read)."""
    bundle = load_bundle(path)
    timings: list[tuple[float, float, float, float]] = []
    audited = 0
    for _ in range(repeat):
        replay_s, run = _seconds(lambda: asyncio.run(replay_bundle(bundle)))
        trace_s, _ = _seconds(lambda run=run: run.behaviour(path.name, bundle.spec.prompts))
        audit_s, shared = _seconds(lambda run=run: _audit_as_the_trace_does(run))
        plain_s, plain = _seconds(lambda run=run: _audit_the_plain_way(run))
        if shared != plain:
            raise SystemExit(f"{path.name}: the audit as the trace runs it differs from the plain one")
        audited = len(plain)
        timings.append((replay_s, trace_s, audit_s, plain_s))
    replay_s, trace_s, audit_s, plain_s = (statistics.median(column) for column in zip(*timings, strict=True))
    return audited, replay_s, trace_s, audit_s, plain_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundles", nargs="*", type=Path, help="bundle folders (default: the whole library)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    bundles = args.bundles or find_bundles([LIBRARY])
    print(
        f"{'bundle':<44} {'requests':>8} {'replay s':>9} {'trace s':>8} {'audit s':>8} {'audit %':>8} "
        f"{'plain audit s':>14}"
    )
    totals = [0, 0.0, 0.0, 0.0, 0.0]
    for path in bundles:
        row = _measure(path, args.repeat)
        totals = [total + value for total, value in zip(totals, row, strict=True)]
        print(_row(path.name, *row))
    print(_row("total", *totals))


def _row(name: str, audited: float, replay_s: float, trace_s: float, audit_s: float, plain_s: float) -> str:
    share = 100 * audit_s / (replay_s + trace_s)
    return (
        f"{name:<44} {int(audited):>8} {replay_s:>9.3f} {trace_s:>8.3f} {audit_s:>8.3f} {share:>7.1f}% {plain_s:>14.3f}"
    )


if __name__ == "__main__":
    main()
