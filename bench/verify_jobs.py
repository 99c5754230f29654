"""Whole-process time of `replay verify cassettes/` with --jobs 1 and --jobs 2.

Each run is a fresh `replay verify` process (interpreter start, imports, every bundle replayed,
the summary table), timed from outside; the two settings alternate so that a busy machine slows
both alike. Prints the median and range per setting, and their ratio. Usage:

    python bench/verify_jobs.py [--runs 5] [--path cassettes]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def time_verify(replay: str, path: str, jobs: int) -> float:
    started = time.perf_counter()
    result = subprocess.run([replay, "verify", path, "--jobs", str(jobs)], capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"replay verify --jobs {jobs} failed (exit {result.returncode}):\n{result.stdout}{result.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per setting (default 5)")
    parser.add_argument("--path", default="cassettes", help="the library to verify (default cassettes)")
    args = parser.parse_args()
    replay = shutil.which("replay") or str(Path(sys.executable).with_name("replay"))
    bundles = sum(1 for _ in Path(args.path).rglob("session.json"))
    times: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(args.runs):
        for jobs in (1, 2):
            times[jobs].append(time_verify(replay, args.path, jobs))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"replay verify {args.path} ({bundles} bundles), whole process, {args.runs} runs each, "
        f"{os.cpu_count()} CPUs, load average {load:.2f}"
    )
    print(f"{'setting':<10} {'median s':>9} {'min s':>7} {'max s':>7}")
    for jobs, values in times.items():
        print(f"--jobs {jobs:<3} {statistics.median(values):>9.2f} {min(values):>7.2f} {max(values):>7.2f}")
    ratio = statistics.median(times[1]) / statistics.median(times[2])
    verdict = "faster" if ratio > 1 else "not faster"
    print(f"--jobs 2 is {ratio:.2f}x the speed of --jobs 1 ({verdict})")


if __name__ == "__main__":
    main()
