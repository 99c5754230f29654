"""The worker pool of ``replay verify --jobs N``: one outcome per item, in the order given,
whatever happens to the workers, and no worker left behind when the caller stops."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from replay.session.verify import ERROR, MATCH, exit_code, verify_bundles
from replay.session.verify_pool import Outcome, WorkerPool
from tests.replay.session.worker_jobs import echo, verify_unless_crash

ROOT = Path(__file__).resolve().parents[3]
LIBRARY = ROOT / "cassettes"


def values(outcomes: list[Outcome[tuple[str, int]]]) -> list[str | None]:
    return [None if o.value is None else o.value[0] for o in outcomes]


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_outcomes_come_back_in_the_order_given_one_per_item_even_a_repeated_one(method: str) -> None:
    with WorkerPool(echo, 2, method=method) as pool:
        outcomes = pool.run(["b", "a", "b", "c"])

    assert values(outcomes) == ["B", "A", "B", "C"]
    assert [o.item for o in outcomes] == ["b", "a", "b", "c"]
    assert {o.error for o in outcomes} == {None}


def test_a_job_that_raises_is_that_items_error_and_its_worker_carries_on() -> None:
    with WorkerPool(echo, 1) as pool:
        failed, fine = pool.run(["raise", "x"])
        (worker,) = pool.pids

    assert failed.value is None and failed.error == "raise: RuntimeError: the job failed"
    assert fine.value == ("X", worker)


def test_a_worker_that_dies_gives_its_item_an_error_and_is_replaced() -> None:
    with WorkerPool(echo, 2) as pool:
        outcomes = pool.run(["a", "crash", "b", "crash-again", "c", "d"])

    assert outcomes[1].error == "crash: its worker process died (killed by SIGKILL) while running it."
    assert outcomes[3].error == "crash-again: its worker process died (killed by SIGKILL) while running it."
    assert values(outcomes) == ["A", None, "B", None, "C", "D"]


def test_a_job_past_the_timeout_is_stopped_and_reported_and_the_rest_still_run() -> None:
    # The pool's clock passes the timeout once the other worker has answered the three quick items:
    # the hung job is late then, and only then, however fast the machine (nobody waits 2 s).
    now = [0.0]

    def answered(outcome: Outcome[tuple[str, int]]) -> None:
        if outcome.item == "c":
            now[0] += 10

    with WorkerPool(echo, 2, timeout=2, clock=lambda: now[0]) as pool:
        outcomes = pool.run(["hang", "a", "b", "c"], on_outcome=answered)
        again = pool.run(["d", "e"])  # the killed worker was replaced

    assert outcomes[0].error == "hang: still running after 2 s, so it was stopped."
    assert values(outcomes) == [None, "A", "B", "C"]
    assert values(again) == ["D", "E"]


def test_verify_bundles_reports_a_bundle_whose_worker_died_and_judges_the_others(tmp_path: Path) -> None:
    bundles = [tmp_path / "first", tmp_path / "crash", tmp_path / "last"]
    for bundle in bundles:
        shutil.copytree(LIBRARY / "demo", bundle)

    with WorkerPool(verify_unless_crash, 2) as pool:
        summaries = verify_bundles(bundles, pool=pool)

    assert [(s.bundle, s.verdict) for s in summaries] == [
        (str(bundles[0]), MATCH),
        (str(bundles[1]), ERROR),
        (str(bundles[2]), MATCH),
    ]
    assert summaries[1].error == f"{bundles[1]}: its worker process died (exit code 3) while running it."
    assert exit_code(summaries) == 2


# A caller whose two workers hang; the test stops it as a user or a CI runner would.
CALLER = """
from replay.cli.signals import cleanup_on_sigterm
from replay.session.verify_pool import Outcome, WorkerPool
from tests.replay.session.worker_jobs import echo

with cleanup_on_sigterm(), WorkerPool(echo, 2) as pool:
    pool.run(["hang-1", "hang-2"])
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # exited, waiting for init to reap it


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize(
    "stop",
    ["SIGTERM to the caller", "Ctrl-C (SIGINT to the process group)", "SIGKILL to the caller"],
)
def test_stopping_the_caller_leaves_no_worker_behind(stop: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    caller = subprocess.Popen(
        [sys.executable, "-c", CALLER], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert caller.stdout is not None
    workers = [int(caller.stdout.readline().split()[-1]) for _ in range(2)]  # both are hanging

    if stop.startswith("SIGTERM"):
        caller.send_signal(signal.SIGTERM)
    elif stop.startswith("Ctrl-C"):
        os.killpg(caller.pid, signal.SIGINT)
    else:
        caller.kill()
    caller.wait(timeout=60)

    deadline = time.monotonic() + 30  # the kernel's and init's time, not the test's subject
    while not all(map(_gone, workers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(map(_gone, workers)), f"{stop}: workers {workers} outlived their caller"
    if stop.startswith("SIGTERM"):
        assert caller.returncode == 143
