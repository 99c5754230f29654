"""Concurrency: replays of one bundle in parallel processes do not interfere, and two recordings
in two processes at once each keep only their own interactions.

Each replay runs in its own temp copy of the workspace, so the bundle's scenario is written to be
order-sensitive: a shared workspace would show up as a second line in log.txt or an Edit that
finds nothing to replace. Recording patches httpx2 through vcrpy, which is process-global, so
concurrent recordings are supported in separate processes only (the README says so).
"""

from __future__ import annotations

import asyncio
import hashlib
import multiprocessing
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from replay.cassette import load_cassette
from replay.cassette.fingerprints import canonical_json
from replay.fake.scenario import Scenario
from replay.session.recording import record_bundle
from replay.session.session_run import replay_bundle
from replay.session.verify import MATCH, BundleSummary, start_workers, verify_bundles
from tests.replay.session.concurrency_jobs import PRELOAD, record_in_process, replay_once, tool_use

REPLAYS = 8
# Not forked from the test process, which may be running threads (servers of other tests): a
# fork server, started clean, imports the engine once and forks each worker from there.
WORKERS = multiprocessing.get_context("forkserver")
WORKERS.set_forkserver_preload(PRELOAD)

ORDER_SENSITIVE = [
    {"content": [tool_use("Bash", command="echo run >> log.txt && wc -l < log.txt && sleep 0.2")]},
    {"content": [tool_use("Edit", file_path="notes.md", old_string="status: draft", new_string="status: final")]},
    {
        "content": [
            tool_use("Write", file_path="out.txt", content="written once\n"),
            tool_use("Read", file_path="out.txt"),
        ]
    },
    {"content": [{"text": "Done."}]},
]


def snapshot(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "folder"
        for path in sorted(folder.rglob("*"))
    }


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("concurrency")
    workspace = root / "workspace"
    workspace.mkdir()
    (workspace / "notes.md").write_text("# Notes\nstatus: draft\n")
    scenario = Scenario.from_list(ORDER_SENSITIVE)
    asyncio.run(record_bundle(root / "order-sensitive", prompts=["work"], scenario=scenario, workspace=workspace))
    return root / "order-sensitive"


@pytest.fixture
def bundle(recorded: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "order-sensitive"
    shutil.copytree(recorded, copy)
    return copy


def test_the_scenario_would_notice_a_shared_workspace(bundle: Path) -> None:
    transcript = (bundle / "transcript.jsonl").read_text()
    assert '"content":"1"' in transcript  # log.txt had one line
    assert "has been updated successfully" in transcript


def test_replays_of_one_bundle_in_parallel_processes_give_identical_bytes_and_change_nothing(bundle: Path) -> None:
    before = snapshot(bundle.parent)

    with ProcessPoolExecutor(max_workers=REPLAYS, mp_context=WORKERS) as pool:
        outcomes = list(pool.map(replay_once, [str(bundle)] * REPLAYS))

    transcripts = {transcript for transcript, _ in outcomes}
    traces = {trace for _, trace in outcomes}
    assert transcripts == {(bundle / "transcript.jsonl").read_text()}
    assert traces == {(bundle / "trace.txt").read_text()}
    assert snapshot(bundle.parent) == before


def test_verify_with_worker_processes_judges_every_parallel_replay_a_match(bundle: Path) -> None:
    before = snapshot(bundle.parent)
    done: list[BundleSummary] = []
    pool = start_workers(4, REPLAYS)
    assert pool is not None
    try:
        summaries = verify_bundles([bundle] * REPLAYS, pool=pool, on_done=done.append)
    finally:
        pool.close()

    assert len(done) == REPLAYS
    assert [(s.verdict, s.error, s.differences) for s in done] == [(MATCH, None, [])] * REPLAYS
    assert {s.verdict for s in summaries} == {MATCH}
    assert snapshot(bundle.parent) == before


async def test_replays_in_one_process_at_once_do_not_interfere_either(bundle: Path) -> None:
    # Replaying patches nothing (only recording goes through vcrpy), so tasks can share a process.
    before = snapshot(bundle.parent)

    runs = await asyncio.gather(*(replay_bundle(bundle) for _ in range(4)))

    assert {run.transcript for run in runs} == {(bundle / "transcript.jsonl").read_text()}
    assert snapshot(bundle.parent) == before


# ---------------------------------------------------------------------------------------------
# Two recordings at once


def test_two_recordings_in_two_processes_at_once_keep_only_their_own_interactions(tmp_path: Path) -> None:
    # Names no tool description or system prompt could contain.
    rounds = {"zebra": 3, "quokka": 5}
    barrier, results = WORKERS.Barrier(2), WORKERS.Queue()
    processes = [
        WORKERS.Process(target=record_in_process, args=(str(tmp_path / name), name, count, barrier, results))
        for name, count in rounds.items()
    ]
    for process in processes:
        process.start()
    errors = dict(results.get(timeout=120) for _ in processes)
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0

    assert errors == {"zebra": None, "quokka": None}
    for name, count in rounds.items():
        other = "quokka" if name == "zebra" else "zebra"
        cassette = load_cassette(tmp_path / name / "cassette.yaml")
        bodies = [canonical_json(i.request.body) for i in cassette.interactions]
        assert len(bodies) == count + 1, name
        assert all(f"Task for {name}" in body for body in bodies), name
        assert not any(other in body for body in bodies), name
        assert all(f"{name}-{n}" in bodies[n + 1] for n in range(count)), name
    summaries = verify_bundles([tmp_path / name for name in rounds])
    assert [s.verdict for s in summaries] == [MATCH, MATCH]
