"""What the prompt-cache audit adds to a replay: per bundle, the replay itself, building the
behaviour trace from it, and the share of that spent in the cache audit.

Method
------
Each bundle below ``cassettes/`` (or the ones named) is replayed in process with
``replay_bundle``; then its behaviour trace is built from the run (``SessionRun.behaviour``,
which audits every request), and the audit alone is run again over the run's logged requests
(``audit_requests``: each body is already normalized by the transport, as in the trace).
Each step is timed ``--repeat`` times and the median is reported; the figures of one run are
compared with each other, never with another machine's.

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
from typing import TypeVar

from replay.session.bundle import load_bundle
from replay.session.session_run import SessionRun, replay_bundle
from replay.session.verify import find_bundles
from replay.trace.cache_audit import AuditedRequest, audit_requests

LIBRARY = Path(__file__).resolve().parents[1] / "cassettes"
T = TypeVar("T")


def _median_seconds(step: Callable[[], T], repeat: int) -> tuple[float, T]:
    timings, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = step()
        timings.append(time.perf_counter() - started)
    assert result is not None
    return statistics.median(timings), result


def _audit_only(run: SessionRun) -> int:
    requests = [
        AuditedRequest(body=r.body, at=r.at, answered=r.answered)
        for r in run.requests
        if r.body is not None and r.path.split("?")[0] == "/v1/messages"
    ]
    return len(audit_requests(requests))


def _measure(path: Path, repeat: int) -> tuple[int, float, float, float]:
    """(audited requests, replay s, trace s, audit s) of one bundle."""
    bundle = load_bundle(path)
    replay_s, run = _median_seconds(lambda: asyncio.run(replay_bundle(bundle)), repeat)
    trace_s, _ = _median_seconds(lambda: run.behaviour(path.name, bundle.spec.prompts), repeat)
    audit_s, audited = _median_seconds(lambda: _audit_only(run), repeat)
    return audited, replay_s, trace_s, audit_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundles", nargs="*", type=Path, help="bundle folders (default: the whole library)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    bundles = args.bundles or find_bundles([LIBRARY])
    print(f"{'bundle':<44} {'requests':>8} {'replay s':>9} {'trace s':>8} {'audit s':>8} {'audit %':>8}")
    totals = [0, 0.0, 0.0, 0.0]
    for path in bundles:
        row = _measure(path, args.repeat)
        totals = [total + value for total, value in zip(totals, row, strict=True)]
        print(_row(path.name, *row))
    print(_row("total", *totals))


def _row(name: str, audited: float, replay_s: float, trace_s: float, audit_s: float) -> str:
    share = 100 * audit_s / (replay_s + trace_s)
    return f"{name:<44} {int(audited):>8} {replay_s:>9.3f} {trace_s:>8.3f} {audit_s:>8.3f} {share:>7.1f}%"


if __name__ == "__main__":
    main()
