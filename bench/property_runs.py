"""How long one generated property run takes: the wall-time figure no test may assert.

The property suite (``tests/engine/test_properties.py``) checks that a run never sleeps for real
(every retry waits on the session's manual clock, nothing awaits a positive ``asyncio.sleep``),
as facts. How fast a run is depends on the machine and its load, so it is measured here instead:
the same generated runs (hypothesis, derandomized, the suite's own strategies and ``play``) are
timed with ``time.perf_counter`` and the table reports the distribution, with how many runs
would have failed the 2.0 s bound the suite used to assert.

Run: ``python bench/property_runs.py --runs 300`` (from the repository root, in the venv).
Informational: always exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, given, settings

from tests.engine import conftest
from tests.engine.test_properties import (
    abort_points,
    engine_settings,
    hook_names,
    play,
    prompts_with_images,
    scripts,
)

OLD_BOUND_S = 2.0  # the bound test_properties.py asserted until it failed on a busy machine


def time_runs(count: int) -> list[float]:
    """Wall seconds of ``count`` generated runs (the same ones every time: derandomized)."""
    timings: list[float] = []

    @settings(
        max_examples=count, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck)
    )
    @given(
        script=scripts, prompts=prompts_with_images, options=engine_settings, hooks=hook_names, abort_at=abort_points
    )
    def one(script: list[Any], prompts: list[Any], options: dict[str, Any], hooks: str, abort_at: int | None) -> None:
        with tempfile.TemporaryDirectory(prefix="bench-property-") as temp:
            started = time.perf_counter()
            asyncio.run(play(Path(temp), script, prompts=prompts, options=options, hooks=hooks, abort_at=abort_at))
            timings.append(time.perf_counter() - started)
        conftest._SESSIONS.clear()

    one()
    return timings


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="generated runs to time (default 300)")
    args = parser.parse_args()
    logging.getLogger("replay").setLevel(logging.ERROR)  # the fake model's "no scripted turn" notes

    load = os.getloadavg()
    timings = time_runs(args.runs)
    over = sum(t >= OLD_BOUND_S for t in timings)
    print(f"generated property runs, {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print()
    print("runs   median s   p90 s   p99 s   max s   total s   runs >= 2.0 s")
    print("-----  --------  ------  ------  ------  -------  -------------")
    print(
        f"{len(timings):5d}  {statistics.median(timings):8.3f}  {percentile(timings, 0.9):6.3f}  "
        f"{percentile(timings, 0.99):6.3f}  {max(timings):6.3f}  {sum(timings):7.1f}  {over:13d}"
    )


if __name__ == "__main__":
    main()
