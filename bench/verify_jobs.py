"""Speed target 5: `replay verify --jobs 2` against `--jobs 1` on a library of 64 bundles,
and the command line's start-up without the SDK.

The library is the scenario library's bundles copied into a temp folder, in name order and
then again from the first until there are 64 (renamed `00-autocompact-boundary`, ...), so it
holds the long session twice. Each run is a fresh `replay verify` process (interpreter start,
imports, every bundle replayed, the summary table), timed from outside; the two settings
alternate so that a busy machine slows both alike, and the ratio is of the medians. The "bound"
row is what two workers could reach at best with these bundles (their replay seconds from a
`--jobs 1` run: the total over the larger of half the total and the longest bundle, start-up
not counted); no number of workers makes a library faster than its longest bundle. The CPU
row compares the CPU time both settings use (the process and its workers): near 1.0 when the
workers redo no work (no imports), and unlike the wall-clock ratio it holds on a busy machine.
The "start" row is `replay verify` of one small bundle (the demo, replayed in the process):
about what both settings pay before a worker can begin (interpreter, imports) and after the
last one ends, so the ratio is about (start + replays) / (start + replays / 2): the "at best"
row is that with the bound's workers, and the "part after the start" row the speed-up of the rest of
the run (how well the two workers share the replays, whatever the start costs). The rows after
it say what the start would have to be for the target, with two workers halving the rest of the
run and with these workers as measured; what `import anthropic` alone costs beside it (beyond
`python -c pass`, the collector paused as the command line pauses it); and how much of that
import is the SDK's beta surface (modules with "beta" in their names, which the package's own
`__init__` imports whether or not a program uses them).

Bytecode: an installed package runs from cached bytecode (pip compiles it at install time, and
Python caches what it compiles), but a machine may turn that off (`PYTHONDONTWRITEBYTECODE=1`,
as the one these figures come from does), and then every start compiles the project's modules
again: about 0.13 s of a start both settings pay alike. The target row runs the processes with
bytecode cached (in a temp folder, `PYTHONPYCACHEPREFIX`); the row after it, with this
machine's own setting when it turns caching off.

Start-up: `replay --help` and `replay scrub --check` run in fresh processes; PASS when they
load no SDK module (anthropic, httpx2, engine) and `replay --help` takes under 0.3 s (median;
`python -c pass` is shown for scale: on a busy machine both grow). Usage:

    python bench/verify_jobs.py [--runs 5] [--bundles 64] [--library cassettes]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_RATIO = 1.6
TARGET_STARTUP_SECONDS = 0.3
SDK_MODULES = {"anthropic", "httpx2", "engine"}


def build_library(source: Path, target: Path, count: int) -> list[str]:
    """``count`` bundles in ``target``: the library's, in name order, then again from the start."""
    names = sorted(p.parent.name for p in source.glob("*/session.json"))
    for index in range(count):
        name = names[index % len(names)]
        shutil.copytree(source / name, target / f"{index:02d}-{name}")
    return names


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    return time.perf_counter() - started, result


def bytecode_env(cached: bool, folder: Path) -> dict[str, str]:
    """This process's environment with bytecode cached (into ``folder``) or not."""
    env = dict(os.environ)
    if cached:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(folder)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def cpu_seconds() -> float:
    """CPU time of every finished child process and its children (the workers) so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_verify(replay: str, library: Path, jobs: int, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (the process and its workers) of one `replay verify`."""
    cpu = cpu_seconds()
    elapsed, result = timed([replay, "verify", str(library), "--jobs", str(jobs)], env)
    if result.returncode != 0:
        sys.exit(f"replay verify --jobs {jobs} failed (exit {result.returncode}):\n{result.stdout}{result.stderr}")
    return elapsed, cpu_seconds() - cpu


def replay_seconds(replay: str, library: Path, env: dict[str, str]) -> list[float]:
    result = subprocess.run(
        [replay, "verify", str(library), "--json"], capture_output=True, text=True, check=True, env=env
    )
    return [float(summary["seconds"]) for summary in json.loads(result.stdout)]


def sdk_loaded(args: list[str]) -> set[str]:
    """The SDK modules a fresh `replay ARGS` process has loaded when it ends."""
    code = (
        "import sys\nfrom replay.cli.app import run\n"
        "sys.argv[0] = 'replay'\ntry:\n    run()\nexcept SystemExit:\n    pass\n"
        "print(' '.join({m.split('.')[0] for m in sys.modules}), file=sys.stderr)\n"
    )
    # -P: the current folder does not go first on sys.path, so PYTHONPATH picks the tree measured
    result = subprocess.run([sys.executable, "-P", "-c", code, *args], capture_output=True, text=True, check=False)
    return set(result.stderr.split()) & SDK_MODULES


def sdk_modules() -> tuple[int, int, float]:
    """The modules ``import anthropic`` loads in a fresh process, how many of them are the SDK's
    beta surface (a module whose dotted name has "beta" in a part), and their share of the
    import's own time (the sum of the modules' self times under ``-X importtime``, which slows
    every import alike)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import anthropic"], capture_output=True, text=True, check=True
    )
    own: dict[str, int] = {}
    for line in result.stderr.splitlines():
        fields = line.removeprefix("import time:").split("|")
        if len(fields) == 3 and fields[0].strip().isdigit():
            own[fields[2].strip()] = int(fields[0])
    beta = {name: us for name, us in own.items() if any("beta" in part for part in name.split("."))}
    return len(own), len(beta), sum(beta.values()) / max(sum(own.values()), 1)


def row(name: str, measured: str, target: str, ok: bool) -> None:
    print(f"{name:<44} {measured:>16} {target:>12}  {'PASS' if ok else 'FAIL'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per setting (default 5)")
    parser.add_argument("--bundles", type=int, default=64, help="bundles in the library (default 64)")
    parser.add_argument("--library", type=Path, default=Path("cassettes"), help="where to copy them from")
    args = parser.parse_args()
    replay = shutil.which("replay") or str(Path(sys.executable).with_name("replay"))
    with tempfile.TemporaryDirectory(prefix="verify-jobs-") as folder:
        library = Path(folder) / "library"
        names = build_library(args.library, library, args.bundles)
        envs = {True: bytecode_env(True, Path(folder) / "pycache")}
        if os.environ.get("PYTHONDONTWRITEBYTECODE"):
            envs[False] = bytecode_env(False, Path(folder))
        seconds = replay_seconds(replay, library, envs[True])  # and the bytecode cached
        times: dict[tuple[bool, int], list[float]] = {key: [] for key in ((c, j) for c in envs for j in (1, 2))}
        cpu: dict[tuple[bool, int], list[float]] = {key: [] for key in times}
        copies = sorted(library.iterdir())
        one_bundle = next((path for path in copies if path.name.endswith("-demo")), copies[0])
        start: list[float] = []
        sdk: list[float] = []
        for _ in range(args.runs):
            for cached, jobs in times:
                wall, used = time_verify(replay, library, jobs, envs[cached])
                times[cached, jobs].append(wall)
                cpu[cached, jobs].append(used)
            start.append(time_verify(replay, one_bundle, 1, envs[True])[0])
            # `import anthropic` beside the start and in its setting: with the collector paused, as
            # the command line imports it (replay/collector.py)
            sdk.append(timed([sys.executable, "-c", "import gc; gc.disable(); import anthropic"], envs[True])[0])
        scrub_check = [replay, "scrub", "--check", str(library / f"00-{names[0]}")]
        startup: dict[str, list[float]] = {"python -c pass": [], "replay --help": [], "replay scrub --check": []}
        for _ in range(max(args.runs, 5)):
            startup["python -c pass"].append(timed([sys.executable, "-c", "pass"])[0])
            startup["replay --help"].append(timed([replay, "--help"])[0])
            startup["replay scrub --check"].append(timed(scrub_check)[0])
        loaded = {
            "replay --help": sdk_loaded(["--help"]),
            "replay scrub --check": sdk_loaded(scrub_check[1:]),
        }
        modules, beta_modules, beta_share = sdk_modules()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"replay verify on {args.bundles} bundles ({len(names)} of the library, then again), whole process, "
        f"{args.runs} runs each, alternating; {os.cpu_count()} CPUs, load average {load:.2f} at the end"
    )
    print(f"{'setting':<36} {'median s':>9} {'min s':>7} {'max s':>7} {'CPU s':>7}")
    for (cached, jobs), values in times.items():
        setting = f"--jobs {jobs}, bytecode {'cached' if cached else 'not cached'}"
        print(
            f"{setting:<36} {statistics.median(values):>9.2f} {min(values):>7.2f} {max(values):>7.2f} "
            f"{statistics.median(cpu[cached, jobs]):>7.2f}"
        )
    setting = f"start ({one_bundle.name} alone)"
    print(f"{setting:<36} {statistics.median(start):>9.2f} {min(start):>7.2f} {max(start):>7.2f}")
    total, longest = sum(seconds), max(seconds)
    print(f"replay seconds of the bundles (--jobs 1 --json): total {total:.2f}, longest {longest:.2f}")
    print()
    print(f"{'target':<44} {'measured':>16} {'target':>12}  verdict")
    ratio = statistics.median(times[True, 1]) / statistics.median(times[True, 2])
    row("5. --jobs 2 speed / --jobs 1 speed", f"{ratio:.2f}x", f">= {TARGET_RATIO}x", ratio >= TARGET_RATIO)
    if False in envs:
        uncached = statistics.median(times[False, 1]) / statistics.median(times[False, 2])
        print(f"{'   (the same, bytecode not cached)':<44} {uncached:>15.2f}x")
    bound = total / max(total / 2, longest)
    print(f"{'   (bound for two workers, these bundles)':<44} {bound:>15.2f}x")
    # What the start (interpreter, imports: the SDK's alone is about 0.8 s) leaves possible, and
    # the speed-up of what follows it: the workers' own part of the ratio.
    started = statistics.median(start)
    one, two = statistics.median(times[True, 1]), statistics.median(times[True, 2])
    at_best = (started + total) / (started + total / bound)
    print(f"{'   (at best with this start, these bundles)':<44} {at_best:>15.2f}x")
    print(f"{'   (the part after the start)':<44} {(one - started) / (two - started):>15.2f}x")
    # The start at which the target is reached, (s + rest1) / (s + rest2) >= target: with two
    # workers that halve the rest, and with these workers' rest as measured.
    for workers, rest in (("the rest halved", (one - started) / 2), ("the rest as measured", two - started)):
        needed = ((one - started) - TARGET_RATIO * rest) / (TARGET_RATIO - 1)
        shown = f"{needed:.2f} s" if needed > 0 else "none"
        print(f"{f'   (start needed: {workers})':<44} {shown:>16}")
    imported = statistics.median(sdk) - statistics.median(startup["python -c pass"])
    print(f"{'   (import anthropic alone, beside the start)':<44} {imported:>14.2f} s")
    print(
        f"{'   (its beta modules, of all it loads)':<44} {f'{beta_modules:,} of {modules:,}':>16}"
        f"  {beta_share:.0%} of the import's own time"
    )
    extra = statistics.median(cpu[True, 2]) / statistics.median(cpu[True, 1])
    print(f"{'   (CPU time of --jobs 2 / --jobs 1)':<44} {extra:>15.2f}x")
    help_median = statistics.median(startup["replay --help"])
    row("5. replay --help start-up", f"{help_median:.3f} s", f"< {TARGET_STARTUP_SECONDS} s", help_median < 0.3)
    for name, values in startup.items():
        if name != "replay --help":
            print(f"{'   ' + name:<44} {statistics.median(values):>14.3f} s")
    for name, modules in loaded.items():
        row(f"5. {name} loads no SDK", ", ".join(sorted(modules)) or "none", "none", not modules)


if __name__ == "__main__":
    main()
