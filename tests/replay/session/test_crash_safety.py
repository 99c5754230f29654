"""Crash safety: a recording killed with SIGKILL at any point loses nothing it had written.

Real processes, really killed. A helper process (itself forked from the test process, see
``tests.forked``) forks one child per recording (so a run costs its recording, not an interpreter
start); the helper kills the child with SIGKILL after a seeded random delay, or at a chosen
system call, and reports how it ended.
Each recording runs in the same folder, so its files compare byte for byte with those of a run
left to finish. Afterwards:

- a cassette is absent, or byte-identical to one of the complete versions the uninterrupted run
  saved (it is rewritten after every session), and loads and ends with its end line;
- a temp file left by an interrupted atomic write is hidden and never named like a cassette;
- the transcript holds a prefix of the complete run's lines, and at most a torn last line,
  which `read_transcript` skips with a warning;
- a killed `record_bundle` leaves the previous bundle byte-identical (or the complete new one).

``CRASH_SAFETY_KILLS`` and ``CRASH_SAFETY_SEED`` change the number of kills and the seed.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from engine import AnthropicModel, QueryDeps, QueryEngine, default_tools
from engine.transcript import TornTranscriptWarning, read_transcript
from replay.cassette import load_cassette
from replay.cassette.record import CassetteRecorder, RecordMode
from replay.fake.model import FakeModel
from replay.fake.scenario import Scenario
from replay.fake.server import FakeModelServer
from replay.session.bundle import FAKE_SERVER_BASE_URL, PLACEHOLDER_KEY
from replay.session.recording import record_bundle
from replay.session.scrub_files import files_below
from replay.session.verify import find_bundles
from tests import forked

REPO = Path(__file__).resolve().parents[3]
SEED = int(os.environ.get("CRASH_SAFETY_SEED", "7"))
KILLS = int(os.environ.get("CRASH_SAFETY_KILLS", "20"))
BUNDLE_KILLS = max(1, KILLS // 3)
SESSIONS = 4  # each one rewrites the cassette: four complete versions, one after another
TURNS = 10  # model turns per session, nearly all with tool calls
CASSETTE = "cassette.yaml"
TRANSCRIPT = "transcript.jsonl"
END_LINE = b"# end of cassette\n"
# What atomic_write_text names its temp file: hidden, the target's name inside, .tmp at the end.
TEMP_FILE = re.compile(r"^\.cassette\.yaml\..+\.tmp$")
LIMIT_S = 60.0  # no recording here takes more than a few seconds


# ---------------------------------------------------------------------------------------------
# What the children run


def _turns(session: int) -> list[dict[str, Any]]:
    """A session's script: writes, reads, parallel globs and reads, then an answer."""
    turns: list[dict[str, Any]] = []
    for turn in range(TURNS):
        name = f"notes-{session}-{turn - turn % 2}.txt"
        if turn % 2 == 0:
            text = "".join(f"line {n} of turn {turn}\n" for n in range(30))
            call = {"name": "Write", "input": {"file_path": name, "content": text}}
            turns.append({"content": [{"text": f"Writing {name}."}, {"tool_use": call}]})
        else:
            calls = [{"name": "Read", "input": {"file_path": name}}, {"name": "Glob", "input": {"pattern": "*.txt"}}]
            turns.append({"content": [{"text": "Checking."}, *({"tool_use": call} for call in calls)]})
    turns.append({"content": [{"text": f"Session {session} is done."}]})
    return turns


async def _record_session(folder: Path, session: int) -> None:
    workspace, session_dir = folder / f"workspace-{session}", folder / f"session-{session}"
    workspace.mkdir()
    server = FakeModelServer(FakeModel(Scenario.from_list(_turns(session))))
    base_url = server.start()
    try:
        with CassetteRecorder(
            folder / CASSETTE,
            mode=RecordMode.ALL,
            workspace=workspace,
            session_dir=session_dir,
            stored_base_url=(base_url, FAKE_SERVER_BASE_URL),
        ) as recorder:
            async with recorder.async_client() as http_client:
                model = AnthropicModel(http_client=http_client, api_key=PLACEHOLDER_KEY, base_url=base_url)
                engine = QueryEngine(
                    deps=QueryDeps.deterministic(model, seed=session),
                    workspace=workspace,
                    session_dir=session_dir,
                    tools=default_tools(),
                    transcript_path=folder / TRANSCRIPT,
                )
                async for _ in engine.submit_message(f"Session {session}: write the notes, then read them back."):
                    pass
                engine.close()
    finally:
        server.stop()


async def _record_sessions(folder: Path, versions: Path | None) -> None:
    for session in range(SESSIONS):
        await _record_session(folder, session)
        if versions is not None:
            shutil.copyfile(folder / CASSETTE, versions / f"{session}.yaml")


def _kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class _TearingFile:
    """A transcript file whose ``tear_at``-th write stops mid-line and kills the process."""

    def __init__(self, file: IO[str], tear_at: int) -> None:
        self._file, self._tear_at, self._writes = file, tear_at, 0

    def write(self, text: str) -> int:
        self._writes += 1
        if self._writes == self._tear_at:
            last_line = text.rindex("\n", 0, len(text) - 1) + 1 if text.count("\n") > 1 else 0
            self._file.write(text[: last_line + 40])  # every line but the last, and 40 characters of it
            self._file.flush()
            _kill_self()
        return self._file.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


def _crash_at(point: str, folder: Path) -> None:
    """Arrange for this process to kill itself at ``point``: the third transcript write (mid-line),
    the temp file's fsync or rename in the second cassette save, or between the two renames that
    swap a new bundle in for the old one."""
    if point == "transcript-write":
        real_open = Path.open

        def tearing_open(self: Path, *args: Any, **kwargs: Any) -> Any:
            file = real_open(self, *args, **kwargs)
            return _TearingFile(file, tear_at=3) if self == folder / TRANSCRIPT else file

        Path.open = tearing_open  # type: ignore[method-assign]
        return
    if point == "bundle-swap":
        real_rmtree = shutil.rmtree

        def kill_before_deleting_the_old_bundle(path: Any, *args: Any, **kwargs: Any) -> Any:
            if Path(path).name.startswith(f".{folder.name}."):
                _kill_self()
            return real_rmtree(path, *args, **kwargs)

        shutil.rmtree = kill_before_deleting_the_old_bundle  # type: ignore[assignment]
        return
    name = "fsync" if point == "cassette-fsync" else "replace"
    real = getattr(os, name)
    calls = [0]

    def at_point(*args: Any) -> bool:
        if point == "cassette-fsync":  # the temp file's, not the folder's
            return stat.S_ISREG(os.fstat(args[0]).st_mode)
        if point == "cassette-rename":
            return bool(TEMP_FILE.match(Path(str(args[0])).name))
        return False

    def crash(*args: Any) -> Any:
        if not at_point(*args):
            return real(*args)
        calls[0] += 1
        if calls[0] == 2:  # the second cassette save: one complete version is on disk
            _kill_self()
        return real(*args)

    setattr(os, name, crash)


def _run_job(job: dict[str, Any]) -> None:
    folder = Path(job["folder"])
    if job.get("crash_at"):
        _crash_at(job["crash_at"], folder)
    if job["kind"] == "sessions":
        versions = Path(job["versions"]) if job.get("versions") else None
        asyncio.run(_record_sessions(folder, versions))
    elif job["kind"] == "bundle":
        scenario = Scenario.from_list(_turns(0))
        asyncio.run(record_bundle(folder, prompts=[job["prompt"]], scenario=scenario, workspace=Path(job["workspace"])))
    else:
        raise ValueError(f"unknown job {job['kind']!r}")


def serve_kills() -> None:
    """The helper process: one JSON job a line on stdin, one JSON outcome a line on stdout."""
    for line in sys.stdin:
        job = json.loads(line)
        sys.stdout.flush()  # nothing buffered may be written twice by the child
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            try:
                _run_job(job)
            except BaseException:
                traceback.print_exc()
                os._exit(1)
            os._exit(0)
        deadline = started + (job["delay"] if job.get("delay") is not None else LIMIT_S)
        status = _wait_until(pid, deadline)
        if status is None:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        outcome = {
            "killed": os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL,
            "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "seconds": time.monotonic() - started,
        }
        print(json.dumps(outcome), flush=True)


def _wait_until(pid: int, deadline: float) -> int | None:
    while (remaining := deadline - time.monotonic()) > 0:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(min(remaining, 0.002))
    done, status = os.waitpid(pid, os.WNOHANG)
    return status if done else None


# ---------------------------------------------------------------------------------------------
# The test side


@dataclass(frozen=True)
class Outcome:
    """How a child ended: killed by SIGKILL, or its exit code; and how long it ran."""

    killed: bool
    exit_code: int | None
    seconds: float


def finished(outcome: Outcome) -> Outcome:
    """``outcome``, of a run that must have finished cleanly (no kill, exit code 0)."""
    assert not outcome.killed and outcome.exit_code == 0, f"the run did not finish: {outcome}"
    return outcome


class Killer:
    """The helper process, from the test's side."""

    def __init__(self, temp_folder: Path) -> None:
        # The children's own temp folders (a recorder's scratch folder), which a kill leaves behind.
        self.temp_folder = temp_folder
        self._process = forked.Popen(
            [sys.executable, "-c", "from tests.replay.session.test_crash_safety import serve_kills; serve_kills()"],
            cwd=REPO,
            env={**os.environ, "TMPDIR": str(temp_folder)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, kind: str, folder: Path, *, delay: float | None = None, **job: Any) -> Outcome:
        """Run a job in a fresh child; kill it after ``delay`` seconds (None: let it finish)."""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps({"kind": kind, "folder": str(folder), "delay": delay, **job}) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        assert line, f"the helper process ended (exit code {self._process.poll()}); see its stderr above"
        return Outcome(**json.loads(line))

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


@pytest.fixture(scope="module")
def killer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Killer]:
    helper = Killer(tmp_path_factory.mktemp("children-temp"))
    yield helper
    helper.close()


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The one folder every recording of this module runs in, so their files compare byte for byte."""
    return tmp_path_factory.mktemp("crash") / "run"


def fresh(folder: Path) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    return folder


@dataclass(frozen=True)
class CompleteRun:
    """What an uninterrupted recording writes: each cassette version, the whole transcript."""

    versions: list[bytes]
    transcript_lines: list[bytes]
    seconds: float


@pytest.fixture(scope="module")
def complete_run(killer: Killer, run_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> CompleteRun:
    folder, versions = fresh(run_folder), tmp_path_factory.mktemp("versions")
    outcome = finished(killer.run("sessions", folder, versions=str(versions)))
    saved = [(versions / f"{n}.yaml").read_bytes() for n in range(SESSIONS)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a finished run has no torn line
        assert len(read_transcript(folder / TRANSCRIPT)) == len((folder / TRANSCRIPT).read_bytes().splitlines())
    return CompleteRun(saved, (folder / TRANSCRIPT).read_bytes().splitlines(keepends=True), outcome.seconds)


def test_a_complete_run_saves_distinct_complete_cassette_versions(complete_run: CompleteRun) -> None:
    assert len(set(complete_run.versions)) == SESSIONS
    assert all(version.endswith(END_LINE) for version in complete_run.versions)
    assert len(complete_run.transcript_lines) > SESSIONS * TURNS


def check_cassette(folder: Path, complete_run: CompleteRun) -> str:
    """The cassette is absent or a complete version; leftovers are hidden temp files. Returns
    what was found, e.g. ``version 2``."""
    for entry in folder.iterdir():
        assert (
            entry.name in (CASSETTE, TRANSCRIPT)
            or re.match(r"^(workspace|session)-\d+$", entry.name)
            or (TEMP_FILE.match(entry.name))
        ), f"unexpected file {entry.name} after the kill"
    temp_files = [entry for entry in folder.iterdir() if TEMP_FILE.match(entry.name)]
    assert not {entry.name for entry in temp_files} & {CASSETTE, TRANSCRIPT}
    # replay scrub scans a left-over temp file too: it holds what the killed write was writing.
    assert set(temp_files) <= set(files_below([folder])), "a temp file would escape the secret scan"
    cassette = folder / CASSETTE
    if not cassette.exists():
        return "absent"
    data = cassette.read_bytes()
    assert data in complete_run.versions, "the cassette is neither a complete version nor absent"
    assert data.endswith(END_LINE)
    assert len(load_cassette(cassette).interactions) > TURNS
    state = f"version {complete_run.versions.index(data)}"
    return f"{state} + temp file" if temp_files else state


def check_transcript(folder: Path, complete_run: CompleteRun) -> int:
    """The transcript is a prefix of the complete one, with at most a torn last line that the
    reader skips with a warning. Returns the number of whole lines."""
    path = folder / TRANSCRIPT
    if not path.exists():
        return 0
    lines = path.read_bytes().splitlines(keepends=True)
    torn = lines.pop() if lines and not lines[-1].endswith(b"\n") else None
    assert lines == complete_run.transcript_lines[: len(lines)], "a written line was lost or changed"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = read_transcript(path)
    assert [json.loads(line) for line in lines] == records
    if torn is None:
        assert not caught
    else:
        assert complete_run.transcript_lines[len(lines)].startswith(torn)
        assert [w.category for w in caught] == [TornTranscriptWarning]
        assert f"the last line ({len(lines) + 1}) is incomplete" in str(caught[0].message)
    return len(lines)


def test_recordings_killed_at_random_points_leave_whole_cassettes_and_a_transcript_prefix(
    killer: Killer, complete_run: CompleteRun, run_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(SEED)
    states: dict[str, int] = {}
    killed = torn = runs = 0
    scale = complete_run.seconds  # how long a whole run takes, as far as we know
    # Kill instants are drawn in wall time, so a machine that speeds up lets some runs finish;
    # rather than asserting on the machine's speed, keep drawing (the scale shrinking to the
    # fastest whole run) until most of the runs have been killed, within a bounded count.
    while runs < KILLS or (killed < KILLS // 2 and runs < 3 * KILLS):
        runs += 1
        folder = fresh(run_folder)
        outcome = killer.run("sessions", folder, delay=rng.uniform(0.0, 1.1) * scale)
        assert outcome.killed or outcome.exit_code == 0, f"the recording failed: {outcome}"
        killed += outcome.killed
        if not outcome.killed:  # the machine is faster now than when the complete run was timed
            scale = min(scale, outcome.seconds)
        state = check_cassette(folder, complete_run)
        lines = check_transcript(folder, complete_run)
        if not outcome.killed:
            assert state == f"version {SESSIONS - 1}" and lines == len(complete_run.transcript_lines)
        states[state] = states.get(state, 0) + 1
        torn += (folder / TRANSCRIPT).exists() and not (folder / TRANSCRIPT).read_bytes().endswith(b"\n")
    with capsys.disabled():
        print(f"\n{runs} runs (seed {SEED}), {killed} killed mid-run; cassettes: {states}; torn transcripts: {torn}")
    assert killed >= KILLS // 2, f"only {killed} of {runs} kills landed while the recording ran"


@pytest.mark.parametrize("point", ["cassette-fsync", "cassette-rename"])
def test_a_kill_inside_an_atomic_cassette_write_keeps_the_previous_version(
    killer: Killer, complete_run: CompleteRun, run_folder: Path, point: str
) -> None:
    folder = fresh(run_folder)

    outcome = killer.run("sessions", folder, crash_at=point)

    assert outcome.killed
    assert (folder / CASSETTE).read_bytes() == complete_run.versions[0]
    assert check_cassette(folder, complete_run) == "version 0 + temp file"
    [temp_file] = [entry for entry in folder.iterdir() if TEMP_FILE.match(entry.name)]
    if point == "cassette-rename":  # written and synced, never renamed: the complete next version
        assert temp_file.read_bytes() == complete_run.versions[1]
    check_transcript(folder, complete_run)


def test_a_kill_in_the_middle_of_a_transcript_line_leaves_a_torn_line_the_reader_skips(
    killer: Killer, complete_run: CompleteRun, run_folder: Path
) -> None:
    folder = fresh(run_folder)

    outcome = killer.run("sessions", folder, crash_at="transcript-write")

    assert outcome.killed
    assert not (folder / TRANSCRIPT).read_bytes().endswith(b"\n")
    assert check_transcript(folder, complete_run) >= 2
    assert check_cassette(folder, complete_run) == "absent"


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@dataclass(frozen=True)
class Bundles:
    """A bundle folder holding a previous recording, and what a complete re-recording writes."""

    out: Path
    saved: Path
    job: dict[str, str]
    previous: dict[str, bytes]
    new: dict[str, bytes]
    seconds: float

    def restore(self) -> None:
        """The parent folder as it was before the re-recording: the previous bundle alone."""
        shutil.rmtree(self.out.parent)
        shutil.copytree(self.saved, self.out)


@pytest.fixture(scope="module")
def bundles(killer: Killer, tmp_path_factory: pytest.TempPathFactory) -> Bundles:
    tmp_path = tmp_path_factory.mktemp("bundles")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "README.md").write_text("A project.\n")
    out = tmp_path / "cassettes" / "notes"
    job = {"workspace": str(workspace), "prompt": "Write the notes again."}
    finished(killer.run("bundle", out, workspace=str(workspace), prompt="Write the notes."))
    previous, saved = _tree(out), tmp_path / "previous"
    shutil.copytree(out, saved)
    rerecording = finished(killer.run("bundle", out, **job))
    assert _tree(out) != previous
    return Bundles(out, saved, job, previous, _tree(out), rerecording.seconds)


def test_record_bundle_killed_at_random_points_leaves_the_previous_bundle_intact(
    killer: Killer, bundles: Bundles, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(SEED)
    out, parent = bundles.out, bundles.out.parent
    outcomes = {"previous": 0, "new": 0}
    for _ in range(BUNDLE_KILLS):
        bundles.restore()
        outcome = killer.run("bundle", out, delay=rng.uniform(0, bundles.seconds * 1.15), **bundles.job)
        assert outcome.killed or outcome.exit_code == 0, f"the recording failed: {outcome}"
        assert out.exists(), "the swap left no bundle at its name"
        tree = _tree(out)
        assert tree in (bundles.previous, bundles.new), "the bundle is neither the previous one nor the new one"
        outcomes["previous" if tree == bundles.previous else "new"] += 1
        assert find_bundles([parent]) == [out], "a staging folder would be taken for a bundle"
        assert all(entry.name.startswith(f".{out.name}.") for entry in parent.iterdir() if entry != out)
    with capsys.disabled():
        print(f"\n{BUNDLE_KILLS} record_bundle runs killed at random (seed {SEED}): {outcomes}")
    assert outcomes["previous"] >= 1


def test_a_kill_right_after_the_swap_leaves_the_old_bundle_hidden_until_the_next_recording_sweeps_it(
    killer: Killer, bundles: Bundles
) -> None:
    # The swap exchanges the two folders in one step (renameat2), so there is no instant without
    # a bundle at the name; a kill before the old one is deleted leaves it under a hidden name.
    bundles.restore()

    outcome = killer.run("bundle", bundles.out, crash_at="bundle-swap", **bundles.job)

    assert outcome.killed
    assert _tree(bundles.out) == bundles.new
    # The kill also leaves the writer lock's file (its lock died with the process).
    lock_file = bundles.out.with_name(f".{bundles.out.name}.lock")
    [old] = [entry for entry in bundles.out.parent.iterdir() if entry not in (bundles.out, lock_file)]
    assert old.name.startswith(f".{bundles.out.name}.new-") and _tree(old) == bundles.previous
    assert find_bundles([bundles.out.parent]) == [bundles.out]
    # Its owner is dead: the next recording sweeps it away, and leaves no lock file either.
    finished(killer.run("bundle", bundles.out, **bundles.job))
    assert [entry.name for entry in bundles.out.parent.iterdir()] == [bundles.out.name]
