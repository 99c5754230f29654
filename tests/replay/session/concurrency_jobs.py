"""Jobs for the concurrency tests' worker processes: module-level, so a fork server can send them
by name, and in a module of their own, which the fork server loads before it forks (no pytest,
no test module: each of the eight replay workers imported those anew, 1.5 s of the test)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from replay.fake.scenario import Scenario
from replay.session.recording import record_bundle
from replay.session.session_run import replay_bundle
from replay.trace.behaviour import render_text

# What the tests' fork server loads before it forks its workers.
PRELOAD = ["replay.session.session_run", "replay.session.verify", __name__]


def tool_use(name: str, **tool_input: Any) -> dict[str, Any]:
    return {"tool_use": {"name": name, "input": tool_input}}


def replay_once(path: str) -> tuple[str, str]:
    """In a worker process: replay the bundle and give back its transcript and trace text."""
    run = asyncio.run(replay_bundle(Path(path)))
    return run.transcript, render_text(run.behaviour("order-sensitive", ("work",)))


def turns_for(name: str, rounds: int, meeting: Path) -> list[dict[str, Any]]:
    """``rounds`` tool rounds. The first one waits, in its Bash call, until the other recording
    has reached its own first round too, so the two overlap by construction (nothing is timed)."""
    # Marker files named by side, not by recording: a body must never name the other recording.
    mine, theirs = ("side-1", "side-2") if name == "zebra" else ("side-2", "side-1")
    meet = f"touch {meeting}/{mine}.up; while [ ! -e {meeting}/{theirs}.up ]; do sleep 0.01; done; "
    turns: list[dict[str, Any]] = [
        {"content": [{"text": f"{name} round {n}"}, tool_use("Bash", command=f"{meet * (n == 0)}echo {name}-{n}")]}
        for n in range(rounds)
    ]
    return [*turns, {"content": [{"text": f"{name} is done."}]}]


def record_in_process(out: str, name: str, rounds: int, barrier: Any, results: Any) -> None:
    """In a child process: wait for the other recorder, then record, and report how it went."""
    workspace = Path(out).parent / f"{name}-workspace"
    workspace.mkdir()
    barrier.wait(timeout=60)
    try:
        asyncio.run(
            record_bundle(
                Path(out),
                prompts=[f"Task for {name}"],
                scenario=Scenario.from_list(turns_for(name, rounds, Path(out).parent)),
                workspace=workspace,
            )
        )
    except BaseException as exc:
        results.put((name, repr(exc)))
        raise
    results.put((name, None))
