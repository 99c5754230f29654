"""Loading a cassette beside vcrpy's own loader, and the memory a replay needs (speed targets 1 and 4).

Method
------
1. **Cassettes.** ``--sizes`` cassettes (default 200, 1,000 and 10,000 interactions) of the
   synthetic agent-loop traffic of ``replay_scaling.py`` (sessions of six calls, every request
   body different, every answer 10 SSE events), saved in the native format and, for the same
   interactions, as the YAML cassette vcrpy itself writes.
2. **Load columns**, per interaction, median of ``--repeat`` repetitions (default 5, and at
   least enough for 10,000 interactions per column: 50 at 200, so that a small cassette's
   few milliseconds are not one busy moment), the columns alternating within each repetition:

   - *vcrpy*: entering ``vcr.VCR(record_mode="none").use_cassette`` on vcrpy's YAML (its
     persister, its YAML serializer with libyaml, its Request objects);
   - *ours, YAML*: ``load_cassette`` + ``CassettePlayer.from_cassette`` with compiling turned
     off (``AGENT_REPLAY_CACHE_DIR=off``): what the first load of a cassette costs;
   - *ours, compiled*: the same with a compiled copy of the cassette in the cache folder (the
     first load writes it): what every later load of an unchanged cassette costs.

   Each load runs with the collector as the process has it (on), after a ``gc.collect()``.
3. **Memory** (target 4, Linux): a fresh process per row imports everything, notes its peak
   RSS (``VmHWM``: the baseline), loads the largest cassette (from the YAML, or from its compiled copy), builds
   the player and replays every interaction through ``CassetteTransport`` and
   ``httpx2.AsyncClient`` (one request body at a time); *growth* is the peak RSS above the
   baseline, divided by the cassette's size on disk.

Targets, printed with PASS/FAIL (informational: the exit status is 0 either way):
target 1: ours ≤ 1.0× vcrpy per interaction at every size, and flat in size (per interaction
at the largest size ≤ 1.5× the smallest): a row for the compiled copy, one for the first load
(from the YAML);
target 4: a replay's growth ≤ 3× its cassette's size.

Run: ``python bench/replay_load.py`` (~5 min, most of it writing the 10,000-interaction
cassettes), ``--sizes 200,1000`` for a quick look. ``replay_scaling.py`` prints the same rows.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import vcr

from replay.cassette import Cassette, load_cassette, save_cassette
from replay.cassette._compiled import CACHE_ENV
from replay.cassette.transport import CassettePlayer

DEFAULT_SIZES = (200, 1_000, 10_000)
TARGET_RATIO = 1.0  # target 1: ours / vcrpy per interaction
TARGET_FLAT = 1.5  # target 1: per interaction at the largest size / at the smallest
TARGET_MEMORY = 3.0  # target 4: replay growth / cassette bytes
MIN_INTERACTIONS = 10_000  # loaded per column, at least: more repetitions for small cassettes

_MEMORY = textwrap.dedent(
    """
    import asyncio, json, sys
    import httpx2
    from replay.cassette import load_cassette
    from replay.cassette.transport import CassettePlayer, CassetteTransport

    async def replay(cassette):
        player = CassettePlayer.from_cassette(cassette, strict=True)
        async with httpx2.AsyncClient(transport=CassetteTransport(player)) as client:
            for interaction in cassette.interactions:
                request = interaction.request
                response = await client.post(
                    request.uri, content=request.body_bytes(), headers=dict(request.headers)
                )
                await response.aread()
        player.finish()

    def peak():
        # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forking parent.
        with open("/proc/self/status") as status:
            line = next(line for line in status if line.startswith("VmHWM:"))
        return int(line.split()[1]) * 1024

    base = peak()
    cassette = load_cassette(sys.argv[1])
    loaded = peak()
    asyncio.run(replay(cassette))
    print(json.dumps({"base": base, "loaded": loaded, "peak": peak()}))
    """
)


@dataclass
class LoadRow:
    """Seconds per interaction of each loader, one entry per repetition."""

    size: int
    native_bytes: int
    vcrpy_bytes: int
    vcrpy: list[float]
    yaml: list[float]
    compiled: list[float]

    def ratio(self, column: str) -> float:
        return statistics.median(getattr(self, column)) / statistics.median(self.vcrpy)


@dataclass
class MemoryRow:
    source: str
    cassette_bytes: int
    base: int
    loaded: int
    peak: int

    @property
    def ratio(self) -> float:
        return (self.peak - self.base) / self.cassette_bytes


def write_cassettes(size: int, folder: Path) -> tuple[Path, Path]:
    """The native and the vcrpy cassette of ``size`` synthetic interactions."""
    from replay_scaling import scaling_interactions, vcrpy_yaml  # the same traffic as the per-request table

    interactions = scaling_interactions(size)
    native, vcrpy_path = folder / f"native-{size}.yaml", folder / f"vcrpy-{size}.yaml"
    save_cassette(Cassette(interactions=interactions), native)
    vcrpy_path.write_text(vcrpy_yaml(interactions), encoding="utf-8")
    return native, vcrpy_path


def _timed(load: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    loaded = load()
    elapsed = time.perf_counter() - start
    del loaded  # freeing the loaded objects is not part of loading them
    return elapsed


def _ours(path: Path, cache: str) -> Callable[[], object]:
    def load() -> object:
        os.environ[CACHE_ENV] = cache
        return CassettePlayer.from_cassette(load_cassette(path))

    return load


def _vcrpy(path: Path) -> Callable[[], object]:
    def load() -> object:
        with vcr.VCR(record_mode="none").use_cassette(str(path)) as cassette:
            return cassette

    return load


def measure_load(size: int, repeat: int, folder: Path) -> LoadRow:
    native, vcrpy_path = write_cassettes(size, folder)
    cache = str(folder / "cache")
    saved = os.environ.get(CACHE_ENV)
    try:
        _ours(native, cache)()  # writes the compiled copy
        columns: dict[str, list[float]] = {"vcrpy": [], "yaml": [], "compiled": []}
        loaders = {"vcrpy": _vcrpy(vcrpy_path), "yaml": _ours(native, "off"), "compiled": _ours(native, cache)}
        for _ in range(max(repeat, math.ceil(MIN_INTERACTIONS / size))):
            for name, load in loaders.items():
                columns[name].append(_timed(load) / size)
    finally:
        if saved is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = saved
    return LoadRow(size, native.stat().st_size, vcrpy_path.stat().st_size, **columns)


def measure_memory(native: Path, folder: Path) -> list[MemoryRow]:
    rows = []
    cache = str(folder / "cache")
    for source, setting in (("YAML", "off"), ("compiled", cache)):
        environment = {**os.environ, CACHE_ENV: setting}
        done = subprocess.run(
            [sys.executable, "-c", _MEMORY, str(native)],
            capture_output=True,
            text=True,
            check=False,
            env=environment,
            timeout=3_600,
        )
        if done.returncode != 0:
            raise SystemExit(f"the memory measurement failed:\n{done.stderr}")
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(MemoryRow(source, native.stat().st_size, **figures))
    return rows


def load_tables(sizes: Sequence[int], repeat: int, folder: Path) -> tuple[list[LoadRow], list[MemoryRow]]:
    """The load rows for ``sizes`` and the memory rows for the largest, files in ``folder``."""
    rows = [measure_load(size, repeat, folder) for size in sorted(set(sizes))]
    largest = folder / f"native-{rows[-1].size}.yaml"
    return rows, measure_memory(largest, folder)


def print_load_tables(rows: Sequence[LoadRow], memory: Sequence[MemoryRow], repeat: int) -> None:
    print()
    print(
        f"Loading a cassette, ms per interaction (median of {repeat} repetitions, more for small cassettes; "
        "vcrpy: use_cassette on its own YAML)"
    )
    header = (
        f"{'interactions':>12} {'native MB':>10} {'vcrpy MB':>9} {'vcrpy':>8} {'ours YAML':>10} "
        f"{'ours compiled':>14} {'YAML÷vcrpy':>11} {'compiled÷vcrpy':>15}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row.size:>12,} {row.native_bytes / 1e6:>10.2f} {row.vcrpy_bytes / 1e6:>9.2f} "
            f"{statistics.median(row.vcrpy) * 1e3:>8.3f} {statistics.median(row.yaml) * 1e3:>10.3f} "
            f"{statistics.median(row.compiled) * 1e3:>14.3f} "
            f"{row.ratio('yaml'):>10.2f}× {row.ratio('compiled'):>14.2f}×"
        )
    if memory:
        print()
        print(f"Replaying the {rows[-1].size:,}-interaction cassette in a fresh process (peak RSS above the baseline)")
        header = (
            f"{'loaded from':>12} {'cassette MB':>12} {'base MB':>8} {'after load MB':>14} "
            f"{'peak MB':>8} {'growth÷cassette':>16}"
        )
        print(header)
        print("-" * len(header))
        for m in memory:
            print(
                f"{m.source:>12} {m.cassette_bytes / 1e6:>12.2f} {m.base / 2**20:>8.1f} {m.loaded / 2**20:>14.1f} "
                f"{m.peak / 2**20:>8.1f} {m.ratio:>15.1f}×"
            )
    print_load_targets(rows, memory)


def print_load_targets(rows: Sequence[LoadRow], memory: Sequence[MemoryRow]) -> None:
    print()
    worst = max(row.ratio("compiled") for row in rows)
    worst_yaml = max(row.ratio("yaml") for row in rows)
    smallest, largest = rows[0], rows[-1]
    flat = statistics.median(largest.compiled) / statistics.median(smallest.compiled)
    flat_yaml = statistics.median(largest.yaml) / statistics.median(smallest.yaml)
    passed = worst <= TARGET_RATIO and (smallest is largest or flat <= TARGET_FLAT)
    passed_yaml = worst_yaml <= TARGET_RATIO and (smallest is largest or flat_yaml <= TARGET_FLAT)
    sizes = "/".join(f"{row.size:,}" for row in rows)
    goal = f"load <= {TARGET_RATIO:.1f}× vcrpy per interaction at {sizes}, flat within {TARGET_FLAT}×"
    print(
        f"target 1 ({goal}), from the compiled copy: {'PASS' if passed else 'FAIL'} — at most {worst:.2f}× "
        f"vcrpy, {flat:.2f}× largest/smallest"
    )
    each = ", ".join(f"{row.ratio('yaml'):.2f}×" for row in rows)
    print(
        f"target 1 ({goal}), the first load, from the YAML: {'PASS' if passed_yaml else 'FAIL'} — at most "
        f"{worst_yaml:.2f}× vcrpy ({each}), {flat_yaml:.2f}× largest/smallest"
    )
    for m in memory:
        verdict = "PASS" if m.ratio <= TARGET_MEMORY else "FAIL"
        print(
            f"target 4 (replay needs <= {TARGET_MEMORY:.0f}× the cassette above the baseline), loaded from the "
            f"{m.source}: {verdict} — {m.ratio:.1f}× ({(m.peak - m.base) / 2**20:.0f} MB for "
            f"{m.cassette_bytes / 1e6:.1f} MB)"
        )


def _sizes(text: str) -> list[int]:
    sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError("sizes must be positive interaction counts")
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=_sizes, default=list(DEFAULT_SIZES), help="interaction counts")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions, median reported (default 5)")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory rows (target 4)")
    args = parser.parse_args(argv)
    try:
        load_average = f", load average {os.getloadavg()[0]:.2f}"
    except OSError:
        load_average = ""
    print(f"Python {platform.python_version()}, vcrpy {vcr.__version__}, {os.cpu_count()} CPUs{load_average}")
    with tempfile.TemporaryDirectory(prefix="replay-load-") as tmp:
        folder = Path(tmp)
        if args.no_memory:
            rows, memory = [measure_load(size, args.repeat, folder) for size in sorted(set(args.sizes))], []
        else:
            rows, memory = load_tables(args.sizes, args.repeat, folder)
        print_load_tables(rows, memory, args.repeat)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
