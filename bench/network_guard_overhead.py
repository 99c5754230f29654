"""What the network guard costs: its audit hook runs for every audited action of the process
(each open, exec, compile, import...), not only for sockets.

Prints, for replays of library bundles: how many audit events a replay raises, how many of them
are socket events the guard looks at, and the replay's wall time without the guard and with it
(a fresh interpreter for each, as an audit hook cannot be removed); then the hook's own cost per
event. Not a test: it always exits 0.

    python bench/network_guard_overhead.py                      # demo + the 203-turn session, 5 runs each
    python bench/network_guard_overhead.py --bundles cassettes/demo --repeat 9
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BUNDLES = ("cassettes/demo", "cassettes/long-session-crosses-autocompact-twice")

# One replay in a fresh interpreter: its wall time, and (when counting) the audit events it raised.
_CHILD = """
import asyncio, json, sys, time
from collections import Counter
from pathlib import Path
from replay.network_guard import NetworkGuard
from replay.session.bundle import load_bundle
from replay.session.session_run import replay_bundle

mode, path = sys.argv[1], Path(sys.argv[2])
events = Counter()
if mode == "count":
    sys.addaudithook(lambda event, args: events.update((event,)))
if mode == "guard":
    NetworkGuard().install()
bundle = load_bundle(path)
started = time.perf_counter()
asyncio.run(replay_bundle(bundle))
elapsed = time.perf_counter() - started
sockets = sum(n for e, n in events.items() if e.startswith("socket."))
print(json.dumps({"seconds": elapsed, "events": sum(events.values()), "socket_events": sockets}))
"""


def replay_in_child(mode: str, bundle: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, str(bundle)], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    return json.loads(out.splitlines()[-1])


def hook_cost_ns(calls: int = 1_000_000) -> float:
    """The guard's hook on an event it does not watch (nearly all of them), per call."""
    from replay import network_guard

    network_guard._installed.append(network_guard.NetworkGuard())  # so the hook takes its full path
    try:
        started = time.perf_counter_ns()
        for _ in range(calls):
            network_guard._audit("open", ())
        return (time.perf_counter_ns() - started) / calls
    finally:
        network_guard._installed.pop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundles", nargs="+", default=list(DEFAULT_BUNDLES))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.2f}, median of {args.repeat}")
    per_event_ns = hook_cost_ns()
    header = (
        f"{'bundle':<45} {'audit events':>12} {'socket':>7} {'bare s':>8} {'guarded s':>10} {'measured':>9} "
        f"{'hook ms':>8} {'computed':>9}"
    )
    print(header)
    print("-" * len(header))
    for name in args.bundles:
        bundle = ROOT / name
        counted = replay_in_child("count", bundle)
        bare, guarded = [], []
        for _ in range(args.repeat):  # interleaved, so load changes hit both alike
            bare.append(replay_in_child("bare", bundle)["seconds"])
            guarded.append(replay_in_child("guard", bundle)["seconds"])
        b, g = statistics.median(bare), statistics.median(guarded)
        hook_s = counted["events"] * per_event_ns / 1e9  # the hook's own time: events x its cost per call
        print(
            f"{Path(name).name[:45]:<45} {counted['events']:>12,} {counted['socket_events']:>7,} "
            f"{b:>8.3f} {g:>10.3f} {(g - b) / b:>+9.1%} {hook_s * 1000:>8.1f} {hook_s / b:>+9.2%}"
        )
    print(
        f"\nThe hook on an unwatched event: {per_event_ns:.0f} ns per call. 'measured' compares wall times (noisy on a "
        "busy machine); 'computed' is the hook's own time (events x cost per call) over the bare replay's."
    )


if __name__ == "__main__":
    main()
