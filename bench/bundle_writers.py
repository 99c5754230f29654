"""What one-writer-per-bundle costs, and what readers see while a bundle is re-recorded.

1. The locks, uncontended: the writer lock (filelock on ``.NAME.lock``, taken, pid written,
   file removed, released) and a reader's shared lock on one generation of the bundle folder.
2. ``verify_bundle`` run over and over while another process re-records the same bundle in a
   loop (two alternating prompts, so consecutive generations differ): how many verifies MATCH,
   how many recordings were swapped in meanwhile, and how long a reader or a swap waited.

Usage:

    python bench/bundle_writers.py [--cycles 2000] [--verifies 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from replay.fake.scenario import Scenario
from replay.session.recording import record_bundle
from replay.session.verify import verify_bundle
from replay.storage.bundle_lock import bundle_write_lock, reading_generation

REPO = Path(__file__).resolve().parents[1]
SCENARIO = """\
version: 1
turns:
  - content: [{tool_use: {name: Bash, input: {command: echo one}}}]
  - content: [{tool_use: {name: Bash, input: {command: echo two}}}]
  - content: [{text: Done.}]
"""
WRITER = """
import asyncio, sys
from pathlib import Path
from replay.session.recording import record_bundle
out, scenario, stop = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
count = 0
while not stop.exists():
    asyncio.run(record_bundle(out, prompts=[("first", "second")[count % 2]], scenario=scenario))
    count += 1
    print(count, flush=True)
"""


def per_cycle_us(action: Callable[[], None], cycles: int) -> float:
    started = time.perf_counter()
    for _ in range(cycles):
        action()
    return (time.perf_counter() - started) / cycles * 1e6


def lock_costs(folder: Path, cycles: int) -> list[tuple[str, str]]:
    bundle = folder / "locks" / "bundle"
    asyncio.run(record_bundle(bundle, prompts=["p"], scenario=Scenario.from_list([{"content": [{"text": "ok"}]}])))

    def write_lock() -> None:
        with bundle_write_lock(bundle):
            pass

    def read_lock() -> None:
        with reading_generation(bundle):
            pass

    return [
        ("writer lock, taken and released", f"{per_cycle_us(write_lock, cycles):.0f} µs"),
        ("reader's generation lock, taken and released", f"{per_cycle_us(read_lock, cycles):.0f} µs"),
    ]


def verify_during_records(folder: Path, verifies: int) -> list[tuple[str, str]]:
    scenario, out, stop = folder / "scenario.yaml", folder / "lib" / "notes", folder / "stop"
    scenario.write_text(SCENARIO)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(out), str(scenario), str(stop)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    writer.stdout.readline()
    verdicts, seconds = [], []
    for _ in range(verifies):
        started = time.perf_counter()
        verdicts.append(verify_bundle(out).verdict)
        seconds.append(time.perf_counter() - started)
    stop.touch()
    records = len(writer.stdout.read().split()) + 1
    writer.wait()
    return [
        ("verifies while re-recorded", str(len(verdicts))),
        ("  of which MATCH", str(verdicts.count("match"))),
        ("  of which DRIFT (a mixed bundle)", str(verdicts.count("drift"))),
        ("recordings swapped in meanwhile", str(records)),
        (
            "verify time, median (min–max)",
            f"{statistics.median(seconds):.2f} s ({min(seconds):.2f}–{max(seconds):.2f})",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=2000, help="lock cycles to time (default 2000)")
    parser.add_argument("--verifies", type=int, default=20, help="verifies during re-recording (default 20)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        rows = lock_costs(Path(temp), args.cycles) + verify_during_records(Path(temp), args.verifies)
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
