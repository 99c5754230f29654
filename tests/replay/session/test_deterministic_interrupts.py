"""An interrupt that meets concurrent tools replays the same way every time.

The library's ``interrupt-during-parallel-globs`` bundle aborts after the first of two parallel
Globs is handed out, while the second may or may not have finished in its worker thread. Before
the executor decided outcomes in tool_use order, 13 of 30 replays of this unchanged bundle
reported DRIFT; here it is replayed 50 times in one process and must match every time, as must
``interrupted-while-tools-run``, which aborts while a whole concurrent batch runs (a Read, a
Grep and a ``tail -f`` that only the abort ends).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from replay.session.bundle import load_bundle
from replay.session.runner import Verdict, run_bundle

LIBRARY = Path(__file__).resolve().parents[3] / "cassettes"
BUNDLE = LIBRARY / "interrupt-during-parallel-globs"
REPLAYS = 50


def test_the_bundle_records_the_second_parallel_glob_as_interrupted() -> None:
    trace = (BUNDLE / "trace.txt").read_text(encoding="utf-8")
    assert "tools batch 1 (concurrent): Glob success, Glob interrupted" in trace
    assert "terminal: aborted_tools" in trace


def test_the_bundle_interrupted_while_tools_run_answers_every_call_of_the_running_batch() -> None:
    trace = (LIBRARY / "interrupted-while-tools-run" / "trace.txt").read_text(encoding="utf-8")
    assert "tools batch 1 (concurrent): Read interrupted, Grep interrupted, Bash interrupted" in trace
    assert "tools batch 2 (serial): Bash interrupted" in trace
    assert "terminal: aborted_tools" in trace


@pytest.mark.parametrize("name", ["interrupt-during-parallel-globs", "interrupted-while-tools-run"])
async def test_an_interrupted_library_bundle_replays_fifty_times_and_matches_every_time(name: str) -> None:
    bundle = load_bundle(LIBRARY / name)
    verdicts: Counter[Verdict] = Counter()
    drift: list[str] = []
    for _ in range(REPLAYS):
        report = await run_bundle(bundle)
        verdicts[report.verdict] += 1
        drift.extend(report.differences[:1])

    assert verdicts == Counter({Verdict.MATCH: REPLAYS}), drift[:3]
