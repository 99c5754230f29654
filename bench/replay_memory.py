"""Peak memory of recording and replaying a session, against the size of its cassette.

Method
------
For each ``--sizes`` value S (MB, default 0.1, 1 and 10) two sessions are recorded through the
loopback fake model (``record_bundle``, real HTTP, the real SDK), each in its own process:

- *tool input*: the model's first answer is a ``Write`` whose ``content`` is S MB (the input is
  over the 1 MiB tool-input limit from 1 MB on, so the tool refuses it; the input still travels
  in the stream, the cassette, the transcript and the next request's history);
- *text answer*: the model's answer is S MB of text.

Each bundle is then replayed (``run_bundle``, what ``replay run`` does) in a fresh process. A
process reports ``ru_maxrss`` just before the record or replay (the interpreter and imports:
the *base*) and after it (the *peak*); *growth* is peak − base, and *ratio* is growth ÷ the
cassette's size on disk: the multiple of its cassette that a replay holds at its peak. The
verdict of each replay is printed too (it must be MATCH). A baseline row replays a session with
a one-line answer.

Run: ``python bench/replay_memory.py`` (about a minute), ``--sizes 0.1,1,10,30`` for more.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import yaml

_RECORD = textwrap.dedent(
    """
    import asyncio, resource, sys
    from pathlib import Path
    from replay.session.recording import record_bundle
    scenario, out = Path(sys.argv[1]), Path(sys.argv[2])
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    asyncio.run(record_bundle(out, scenario=scenario))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(base, peak)
    """
)
_REPLAY = textwrap.dedent(
    """
    import asyncio, resource, sys
    from pathlib import Path
    from replay.session.runner import run_bundle
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = asyncio.run(run_bundle(Path(sys.argv[1])))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(base, peak, report.verdict.value.upper())
    """
)


@dataclass(frozen=True)
class Row:
    """One recorded and replayed session."""

    kind: str
    content_mb: float
    cassette_bytes: int
    record_base_kib: int
    record_peak_kib: int
    replay_base_kib: int
    replay_peak_kib: int
    verdict: str

    @property
    def replay_growth_mib(self) -> float:
        return (self.replay_peak_kib - self.replay_base_kib) / 1024

    @property
    def ratio(self) -> float:
        return self.replay_growth_mib * 2**20 / self.cassette_bytes


def scenario_for(kind: str, size: int) -> dict[str, object]:
    """A two-turn scenario whose first answer carries ``size`` characters of ``kind``."""
    if kind == "tool input":
        first: dict[str, object] = {
            "content": [{"tool_use": {"name": "Write", "input": {"file_path": "big.txt", "content": "x" * size}}}],
            # Scripted usage: an estimate from megabytes of input would trigger a compaction.
            "usage": {"input_tokens": 100, "output_tokens": 30},
        }
    else:
        first = {"content": [{"text": "y" * size}], "usage": {"input_tokens": 100, "output_tokens": 30}}
    turns = [first, {"content": [{"text": "Done."}], "usage": {"input_tokens": 200, "output_tokens": 3}}]
    if kind != "tool input":
        turns = turns[:1]
    return {"version": 1, "name": f"memory-{kind.replace(' ', '-')}", "prompts": ["Go."], "turns": turns}


def measure(kind: str, content_mb: float, folder: Path) -> Row:
    """Record and replay one session, each in a fresh process."""
    size = int(content_mb * 1_000_000)
    scenario = folder / f"{kind.replace(' ', '-')}-{size}.yaml"
    scenario.write_text(yaml.safe_dump(scenario_for(kind, size)), encoding="utf-8")
    bundle = folder / scenario.stem
    recorded = _run(_RECORD, str(scenario), str(bundle))
    replayed = _run(_REPLAY, str(bundle))
    return Row(
        kind=kind,
        content_mb=content_mb,
        cassette_bytes=(bundle / "cassette.yaml").stat().st_size,
        record_base_kib=int(recorded[0]),
        record_peak_kib=int(recorded[1]),
        replay_base_kib=int(replayed[0]),
        replay_peak_kib=int(replayed[1]),
        verdict=replayed[2],
    )


def _run(script: str, *args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=False, timeout=3_600
    )
    if done.returncode != 0:
        raise SystemExit(f"a measured process failed:\n{done.stderr}")
    return done.stdout.split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="0.1,1,10", help="Content sizes in MB, comma-separated.")
    parser.add_argument("--json", action="store_true", help="Print the rows as JSON instead of a table.")
    args = parser.parse_args()
    sizes = [float(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="replay-memory-") as tmp:
        folder = Path(tmp)
        rows = [measure("text answer", 0.00001, folder)]
        rows += [measure(kind, size, folder) for size in sizes for kind in ("tool input", "text answer")]
    if args.json:
        print(json.dumps([row.__dict__ | {"ratio": row.ratio} for row in rows], indent=2))
        return
    print(f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    print()
    header = (
        f"{'session':>12} {'content MB':>10} {'cassette MB':>11} {'record peak MB':>14} "
        f"{'replay base MB':>14} {'replay peak MB':>14} {'growth MB':>9} {'growth÷cassette':>15} verdict"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row.kind:>12} {row.content_mb:>10.5g} {row.cassette_bytes / 1e6:>11.2f} "
            f"{row.record_peak_kib / 1024:>14.1f} {row.replay_base_kib / 1024:>14.1f} "
            f"{row.replay_peak_kib / 1024:>14.1f} {row.replay_growth_mib:>9.1f} {row.ratio:>14.1f}× {row.verdict}"
        )


if __name__ == "__main__":
    main()
