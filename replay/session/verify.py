"""Re-executing every bundle below some folders (``replay verify``), in one process or several.

A bundle is a folder holding ``session.json``. Each bundle is judged by ``run_bundle`` and
summed up in a small picklable record, so worker processes can send it back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from replay.cassette import CassetteError
from replay.session.bundle import BundleError
from replay.session.bundle_layout import SESSION_FILE
from replay.session.runner import run_bundle
from replay.session.verify_pool import Outcome, WorkerPool
from replay.storage.atomic import FileWriteError
from replay.trace.cache_summary import BreakReport, unexpected_breaks

__all__ = ["BundleSummary", "exit_code", "find_bundles", "start_workers", "verify_bundle", "verify_bundles"]

MATCH, DRIFT, ERROR = "match", "drift", "error"


@dataclass(frozen=True)
class BundleSummary:
    """One bundle's verdict: ``match``, ``drift`` or ``error`` (a bundle that cannot be read)."""

    bundle: str
    verdict: str
    passes: int = 0
    requests: int = 0
    seconds: float = 0.0
    differences: list[str] = field(default_factory=list)
    error: str | None = None
    # The replayed run's cache breaks the loop did not mean (``replay verify --fail-on-cache-break``).
    cache_breaks: list[BreakReport] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "seconds": round(self.seconds, 3),
            "cache_breaks": [found.to_json() for found in self.cache_breaks],
        }


def find_bundles(paths: Iterable[Path]) -> list[Path]:
    """Every bundle at or below ``paths``, sorted, each once. A bundle's own folders (its
    workspace) are not searched, nor hidden folders (a recording in progress).
    ``FileNotFoundError`` for a path that does not exist."""
    found: dict[Path, None] = {}
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist.")
        if not path.is_dir():
            raise BundleError(f"{path} is not a folder; give a bundle folder or a folder of bundles.")
        found.update(dict.fromkeys(_walk(path)))
    return sorted(found)


def _walk(folder: Path) -> Iterator[Path]:
    if (folder / SESSION_FILE).is_file():
        yield folder
        return
    for child in sorted(folder.iterdir()):
        if child.is_dir() and not child.name.startswith(".") and not child.is_symlink():
            yield from _walk(child)


def verify_bundle(path: str | Path) -> BundleSummary:
    """Re-execute one bundle and sum it up; bad input becomes an ``error`` summary. A module
    function, so a worker process can run it."""
    started = time.perf_counter()
    try:
        report = asyncio.run(run_bundle(Path(path)))
    except (BundleError, CassetteError, FileWriteError, OSError) as exc:
        return BundleSummary(str(path), ERROR, seconds=time.perf_counter() - started, error=str(exc))
    trace = report.trace
    passes = sum(len(p.passes) for p in trace.prompts) if trace is not None else 0
    requests = sum(len(p.requests) for _, p in trace.passes()) if trace is not None else 0
    return BundleSummary(
        str(path),
        MATCH if report.matched else DRIFT,
        passes=passes,
        requests=requests,
        seconds=report.seconds,
        differences=list(report.differences),
        cache_breaks=unexpected_breaks(trace) if trace is not None else [],
    )


def start_workers(jobs: int, bundles: int, *, timeout: float | None = None) -> WorkerPool[BundleSummary] | None:
    """A warm pool of ``jobs`` worker processes, or None when this process should replay the
    bundles itself (one job and no ``timeout``, or a single bundle without one). Call it once
    the SDK is imported (importing this module does that) while this process runs no other
    thread: on Linux each worker starts as a copy of this process, with every module loaded."""
    if jobs < 1:
        raise ValueError(f"--jobs must be 1 or more, not {jobs}.")
    if timeout is None and (jobs == 1 or bundles < 2):
        return None
    return WorkerPool(verify_bundle, min(jobs, max(bundles, 1)), timeout=timeout)


def verify_bundles(
    bundles: Sequence[Path],
    *,
    jobs: int = 1,
    pool: WorkerPool[BundleSummary] | None = None,
    on_done: Callable[[BundleSummary], None] | None = None,
) -> list[BundleSummary]:
    """Verify ``bundles``, in ``pool``'s worker processes if given (else ``jobs`` at a time);
    the summaries come back in the order of ``bundles`` (so ``--jobs 2`` reports what
    ``--jobs 1`` does), ``on_done`` is told of each as it ends. A bundle whose worker died or
    ran out of time is an ``error`` summary saying so."""
    own_pool = pool is None
    if pool is None:
        pool = start_workers(jobs, len(bundles))
    if pool is None:
        summaries = []
        for bundle in bundles:
            summaries.append(verify_bundle(bundle))
            if on_done is not None:
                on_done(summaries[-1])
        return summaries

    def done(outcome: Outcome[BundleSummary]) -> None:
        if on_done is not None:
            on_done(_summary(outcome))

    try:
        # The biggest cassettes first, so one long session does not finish alone at the end.
        order = sorted(range(len(bundles)), key=lambda i: _weight(bundles[i]), reverse=True)
        outcomes = pool.run([str(bundles[i]) for i in order], on_outcome=done)
    finally:
        if own_pool:
            pool.close()
    summaries: list[BundleSummary | None] = [None] * len(bundles)
    for index, outcome in zip(order, outcomes, strict=True):
        summaries[index] = _summary(outcome)
    return [summary for summary in summaries if summary is not None]


def _summary(outcome: Outcome[BundleSummary]) -> BundleSummary:
    if outcome.value is not None:
        return outcome.value
    return BundleSummary(outcome.item, ERROR, error=outcome.error)


def _weight(bundle: str | Path) -> int:
    try:
        return (Path(bundle) / "cassette.yaml").stat().st_size
    except OSError:
        return 0


def exit_code(summaries: Iterable[BundleSummary]) -> int:
    """0 when every bundle matches, 1 on any drift, 2 when any bundle could not be read."""
    verdicts = {s.verdict for s in summaries}
    return 2 if ERROR in verdicts else 1 if DRIFT in verdicts else 0
