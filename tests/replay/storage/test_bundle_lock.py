"""Concurrent and interrupted writers of one bundle, with real processes (the ``replay``
command line, a looping recorder, SIGTERM and SIGKILL), ordered by the lock and by marker
files, never by sleeping:

- a second writer — ``replay record`` or ``replay run --update`` — exits 2 naming the process
  that holds the bundle, or with ``--wait`` waits for it and then writes a whole bundle of its own;
- ``run --update`` swaps in a whole new bundle, so a record racing it leaves one generation;
- ``replay verify`` while another process re-records the bundle over and over never sees a mix;
- SIGTERM removes a recording's staging and scratch folders; after a SIGKILL the next write
  sweeps the dead writer's, and never a live writer's.

A recording is held mid-way by a Bash tool call that creates a "started" file and waits for a
"go" file; the writer lock is held all the while.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from threading import Thread

import pytest
import yaml
from typer.testing import CliRunner

from replay.cli.app import app
from replay.session.recording import record_bundle
from replay.session.runner import run_bundle
from replay.session.verify import MATCH, verify_bundle
from replay.storage.bundle_lock import reading_generation
from replay.storage.process_owner import OwnerTag
from tests import forked
from tests.replay.bundle_helpers import held_by_another_process

REPO = Path(__file__).resolve().parents[3]
# Only a bound on a hung child: every wait below ends on an event long before it.
DEADLINE_S = 240.0
VERIFIES = 8


def tree(folder: Path) -> dict[str, bytes]:
    """Every file of a bundle, by relative path."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def write_scenario(path: Path, turns: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"version": 1, "turns": turns}, sort_keys=False))
    return path


@dataclass(frozen=True)
class Gate:
    """A scenario whose Bash call holds the session until the test opens the gate."""

    scenario: Path
    started: Path
    go: Path

    def open(self) -> None:
        self.go.touch()

    def reset(self) -> None:
        self.started.unlink(missing_ok=True)
        self.go.unlink(missing_ok=True)


def make_gate(folder: Path, name: str) -> Gate:
    started, go = folder / f"{name}.started", folder / f"{name}.go"
    # The wait also ends when the writer that ran it is gone (a test kills one with SIGKILL, which
    # leaves this shell behind): never a loop left polling after the test.
    command = f"touch {started}; while [ ! -e {go} ] && kill -0 $PPID 2>/dev/null; do sleep 0.01; done; echo through"
    turns = [
        {"content": [{"tool_use": {"name": "Bash", "input": {"command": command}}}]},
        {"content": [{"text": "Done."}]},
    ]
    return Gate(write_scenario(folder / f"{name}-scenario" / "scenario.yaml", turns), started, go)


def plain_scenario(folder: Path) -> Path:
    return write_scenario(folder / "plain-scenario" / "scenario.yaml", [{"content": [{"text": "Plain answer."}]}])


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """The children's system temp folder, so what they leave there can be seen."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    return folder


class Cli:
    """``replay`` commands in child processes (forked from this one: see ``tests.forked``)."""

    def __init__(self, scratch: Path) -> None:
        self.env = {**os.environ, "TMPDIR": str(scratch)}
        self.started: list[subprocess.Popen[str]] = []

    def start(self, *args: str) -> subprocess.Popen[str]:
        process = forked.Popen(
            [sys.executable, "-m", "replay.cli", *args],
            cwd=REPO,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.started.append(process)
        return process

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return forked.run(
            [sys.executable, "-m", "replay.cli", *args],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
        )


@pytest.fixture
def cli(scratch: Path, tmp_path: Path) -> Iterator[Cli]:
    runner = Cli(scratch)
    yield runner
    for process in runner.started:  # a failed test leaves no child behind
        if process.poll() is None:
            process.kill()
            process.wait()
    # Nor a grandchild: the gated Bash of a writer killed with SIGKILL runs on in its own process
    # group (nothing can clean up after SIGKILL); opening every gate lets it finish.
    for started in tmp_path.glob("*.started"):
        started.with_suffix(".go").touch()


def wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    """Until ``path`` exists; fails at once if ``process`` ends first."""
    deadline = time.monotonic() + DEADLINE_S
    while not path.exists():
        if process.poll() is not None:
            raise AssertionError(f"the process ended ({process.returncode}) first: {process.communicate()}")
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=DEADLINE_S)
    return process.returncode, out, err


def prompts_of(bundle: Path) -> list[str]:
    return json.loads((bundle / "session.json").read_text())["prompts"]


def reference(folder: Path, name: str, prompt: str, scenario: Path) -> dict[str, bytes]:
    """What a complete, undisturbed recording writes (a bundle of the same name elsewhere)."""
    out = folder / "reference" / prompt / name
    asyncio.run(record_bundle(out, prompts=[prompt], scenario=scenario))
    return tree(out)


def test_a_second_writer_exits_2_naming_the_process_that_is_writing_the_bundle(tmp_path: Path, cli: Cli) -> None:
    out, gate, plain = tmp_path / "lib" / "notes", make_gate(tmp_path, "a"), plain_scenario(tmp_path)
    asyncio.run(record_bundle(out, prompts=["old"], scenario=plain))
    previous = tree(out)
    writer = cli.start("record", "--scenario", str(gate.scenario), "--prompt", "A", "--out", str(out))
    wait_for(gate.started, writer)  # the writer is mid-recording, holding the lock

    second = cli.run("record", "--scenario", str(plain), "--prompt", "B", "--out", str(out))
    update = cli.run("run", str(out), "--update")

    for refused in (second, update):
        assert refused.returncode == 2, refused
        assert refused.stderr == (
            f"error: Bundle {out} is being written by process {writer.pid}; wait for it to finish, "
            "or write another bundle.\n"
        )
    assert tree(out) == previous
    gate.open()
    assert finish(writer)[0] == 0
    assert prompts_of(out) == ["A"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["notes"], "no lock file or staging folder is left"


def test_with_wait_a_second_record_waits_for_the_first_and_then_writes_its_own_whole_bundle(
    tmp_path: Path, cli: Cli
) -> None:
    out, gate, plain = tmp_path / "lib" / "notes", make_gate(tmp_path, "a"), plain_scenario(tmp_path)
    expected = reference(tmp_path, "notes", "B", plain)
    first = cli.start("record", "--scenario", str(gate.scenario), "--prompt", "A", "--out", str(out))
    wait_for(gate.started, first)

    second = cli.start("record", "--scenario", str(plain), "--prompt", "B", "--out", str(out), "--wait", "600")
    assert second.stderr is not None
    assert second.stderr.readline() == f"Waiting for {out}: process {first.pid} is writing it.\n"
    gate.open()

    assert finish(first)[0] == 0
    code, printed, _ = finish(second)
    assert code == 0 and printed.startswith(f"Recorded {out}")
    assert tree(out) == expected, "the bundle is the second recording's, whole"


def test_run_update_racing_a_record_leaves_one_whole_generation(tmp_path: Path, cli: Cli) -> None:
    out, gate, plain = tmp_path / "lib" / "notes", make_gate(tmp_path, "u"), plain_scenario(tmp_path)
    expected = reference(tmp_path, "notes", "R", plain)
    gate.open()
    # Recorded by a child, as it is updated: a fingerprint takes a path for a temporary one by
    # the temp folder of the process that reads it, and the gate's paths are in this process's
    # temp folder, not in the children's.
    assert cli.run("record", "--scenario", str(gate.scenario), "--prompt", "U", "--out", str(out)).returncode == 0
    transcript = out / "transcript.jsonl"
    transcript.write_text(transcript.read_text().replace("Done.", "Done!"))  # a drift for --update to accept
    gate.reset()
    updater = cli.start("run", str(out), "--update")
    wait_for(gate.started, updater)  # its replay runs the Bash call again, holding the lock

    record = cli.start("record", "--scenario", str(plain), "--prompt", "R", "--out", str(out), "--wait", "600")
    assert record.stderr is not None
    assert record.stderr.readline() == f"Waiting for {out}: process {updater.pid} is writing it.\n"
    gate.open()

    code, printed, _ = finish(updater)
    assert code == 0 and printed.startswith(f"UPDATED {out}")
    assert finish(record)[0] == 0
    assert tree(out) == expected, "every file is the record's: none is left from the update"


async def test_run_update_swaps_in_a_whole_new_bundle(tmp_path: Path) -> None:
    out, plain = tmp_path / "notes", plain_scenario(tmp_path)
    await record_bundle(out, prompts=["P"], scenario=plain)
    transcript = out / "transcript.jsonl"
    transcript.write_text(transcript.read_text().replace("Plain answer.", "Plain answer!"))
    before = os.stat(out)
    held = os.open(out, os.O_RDONLY | os.O_DIRECTORY)  # a reader of the old generation
    try:
        report = await run_bundle(out, update=True)
        old_generation = os.fstat(held)
    finally:
        os.close(held)

    assert report.updated
    after = os.stat(out)
    assert (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino), "a new folder is swapped in"
    assert old_generation.st_nlink == 0, "the old generation is removed whole, not rewritten"
    assert (await run_bundle(out)).matched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes", "plain-scenario"]


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


def test_verify_while_another_process_re_records_the_bundle_never_sees_a_mixed_bundle(
    tmp_path: Path, scratch: Path
) -> None:
    out, stop = tmp_path / "lib" / "notes", tmp_path / "stop"
    # Two tool calls, so a replay reads the cassette over a while and a swap can land inside it.
    scenario = write_scenario(
        tmp_path / "s" / "scenario.yaml",
        [
            {"content": [{"tool_use": {"name": "Bash", "input": {"command": "echo one"}}}]},
            {"content": [{"tool_use": {"name": "Bash", "input": {"command": "echo two"}}}]},
            {"content": [{"text": "Done."}]},
        ],
    )
    writer = forked.Popen(
        [sys.executable, "-c", WRITER, str(out), str(scenario), str(stop)],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(scratch)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline() == "1\n"  # the first generation is in place
        verdicts: list[str] = []
        with _records_counted(writer) as records:
            while len(verdicts) < VERIFIES or records[0] < 4:
                verdicts.append(verify_bundle(out).verdict)
                assert len(verdicts) < 100, f"the writer made only {records[0]} recordings meanwhile"
        stop.touch()
        writer.stdout.read()
        assert writer.wait(timeout=DEADLINE_S) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert verdicts == [MATCH] * len(verdicts), f"a verify saw a mixed bundle: {verdicts}"
    assert records[0] >= 4, "the bundle was swapped while it was verified"


@contextmanager
def _records_counted(writer: subprocess.Popen[str]) -> Iterator[list[int]]:
    """How many more recordings the writer has swapped in, counted as it prints them."""
    counted = [0]

    def count() -> None:
        assert writer.stdout is not None
        for _ in writer.stdout:
            counted[0] += 1

    reader = Thread(target=count, daemon=True)
    reader.start()
    yield counted


def test_sigterm_during_a_recording_removes_its_staging_and_scratch_folders(
    tmp_path: Path, scratch: Path, cli: Cli
) -> None:
    out, gate, plain = tmp_path / "lib" / "notes", make_gate(tmp_path, "a"), plain_scenario(tmp_path)
    asyncio.run(record_bundle(out, prompts=["old"], scenario=plain))
    previous = tree(out)
    writer = cli.start("record", "--scenario", str(gate.scenario), "--prompt", "A", "--out", str(out))
    wait_for(gate.started, writer)
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(".notes.new-")], "a staging folder is there"
    assert [p.name for p in scratch.iterdir() if p.name.startswith("agent-replay-")], "scratch folders are there"

    writer.send_signal(signal.SIGTERM)
    code, _, err = finish(writer)

    assert code == 128 + signal.SIGTERM
    assert "Traceback" not in err
    assert sorted(p.name for p in out.parent.iterdir()) == ["notes"]
    assert list(scratch.iterdir()) == []
    assert tree(out) == previous


def test_after_a_sigkill_the_next_write_sweeps_the_dead_writers_folders_and_never_a_live_ones(
    tmp_path: Path, scratch: Path, cli: Cli
) -> None:
    out, plain = tmp_path / "lib" / "notes", plain_scenario(tmp_path)
    dead_gate, live_gate = make_gate(tmp_path, "dead"), make_gate(tmp_path, "live")
    asyncio.run(record_bundle(out, prompts=["old"], scenario=plain))
    dead = cli.start("record", "--scenario", str(dead_gate.scenario), "--prompt", "A", "--out", str(out))
    wait_for(dead_gate.started, dead)
    dead.send_signal(signal.SIGKILL)
    dead.wait()
    dead_staging = [p for p in out.parent.iterdir() if p.name.startswith(f".notes.new-{dead.pid}-")]
    dead_scratch = [p for p in scratch.iterdir() if f"-{dead.pid}-" in p.name]
    assert len(dead_staging) == 1 and dead_scratch, "the kill left folders behind"
    # A live writer of another bundle beside it, mid-recording, and folders named after this
    # (live) test process, one of them with a start time that is not this process's (a reused pid).
    live = cli.start(
        "record", "--scenario", str(live_gate.scenario), "--prompt", "L", "--out", str(out.parent / "other")
    )
    wait_for(live_gate.started, live)
    live_scratch = sorted(p for p in scratch.iterdir() if f"-{live.pid}-" in p.name)
    live_staging = sorted(p for p in out.parent.iterdir() if p.name.startswith(".other.new-"))
    me = OwnerTag.current()
    mine = out.parent / f".notes.new-{me}-planted"
    reused = out.parent / f".notes.new-{me.pid}-{me.start + 1}-planted"
    for folder in (mine, reused):
        folder.mkdir()
        (folder / "file").write_text("x")
    assert live_scratch and live_staging

    assert cli.run("record", "--scenario", str(plain), "--prompt", "B", "--out", str(out)).returncode == 0

    assert not any(p.exists() for p in (*dead_staging, *dead_scratch, reused))
    assert all(p.exists() for p in (*live_scratch, *live_staging, mine))
    assert prompts_of(out) == ["B"]
    live_gate.open()
    assert finish(live)[0] == 0


def test_scrub_will_not_rewrite_a_bundle_another_process_is_writing(tmp_path: Path) -> None:
    out = tmp_path / "notes"
    asyncio.run(record_bundle(out, prompts=["P"], scenario=plain_scenario(tmp_path)))
    leaking = out / "workspace" / "config.txt"
    leaking.write_text("key = sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789\n")

    with held_by_another_process(out) as holder:
        refused = CliRunner().invoke(app, ["scrub", str(out)])

    assert refused.exit_code == 2
    assert refused.output == (
        f"error: Bundle {out} is being written by process {holder}; wait for it to finish, or write another bundle.\n"
    )
    assert "sk-ant-api03-abcdef" in leaking.read_text()
    assert CliRunner().invoke(app, ["scrub", str(out)]).exit_code == 0
    assert "sk-ant-api03-abcdef" not in leaking.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes", "plain-scenario"]


def test_a_reader_holding_a_generation_keeps_a_swap_out_until_it_is_done(tmp_path: Path) -> None:
    out = tmp_path / "notes"
    asyncio.run(record_bundle(out, prompts=["P"], scenario=plain_scenario(tmp_path)))
    other = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with reading_generation(out), reading_generation(out):  # readers share it
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what a swap takes
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(other)
