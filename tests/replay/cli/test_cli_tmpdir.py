"""A bundle recorded under one TMPDIR replays under any other, through the real command line.

Each `replay` runs in a process of its own (forked, see tests/forked.py) with the TMPDIR (and
HOME) asked for, as on another machine or in another shell: the process reads its temp folder
once, as a real one does. The scenario's Bash call prints the folder the session's workspace
sits in, an entry of the temp folder whose name changes with every run and every TMPDIR.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forked

SCENARIO = """\
version: 1
name: scratch
prompts:
  - Where does this session run?
turns:
  - content:
      - text: Looking one folder up.
      - tool_use:
          name: Bash
          input: {command: "cd .. && pwd && ls"}
    usage: {input_tokens: 100, output_tokens: 10}
  - content:
      - text: It runs in a scratch folder beside its session folder.
    usage: {input_tokens: 200, output_tokens: 12}
"""
UNSET = "unset"
# A replay's transcript and behaviour trace, printed by a child that replays a bundle.
REPLAYED = """\
import asyncio, json, sys
from pathlib import Path
from replay.session.bundle import load_bundle
from replay.session.session_run import replay_bundle
bundle = load_bundle(Path(sys.argv[1]))
run = asyncio.run(replay_bundle(bundle))
trace = run.behaviour(bundle.path.name, bundle.spec.prompts).to_json()
print(json.dumps({"transcript": run.transcript, "trace": trace}))
"""


def replay(*arguments: str, tmpdir: str, home: str | None = None) -> subprocess.CompletedProcess[str]:
    """``replay ARGUMENTS`` in a process of its own, under ``tmpdir`` (`UNSET`: no TMPDIR)."""
    env = {k: v for k, v in os.environ.items() if k != "TMPDIR" and not k.startswith("ANTHROPIC_")}
    if tmpdir != UNSET:
        env["TMPDIR"] = tmpdir
    if home is not None:
        env["HOME"] = home
    command = [sys.executable, "-c", "from replay.cli.app import app; app()", *arguments]
    return forked.run(command, env=env, capture_output=True, text=True, timeout=120)


def record(tmp_path: Path, tmpdir: str, home: str | None = None) -> Path:
    scenario = tmp_path / "scenario" / "scenario.yaml"
    if not scenario.exists():
        (scenario.parent / "workspace").mkdir(parents=True)
        (scenario.parent / "workspace" / "notes.md").write_text("notes\n")
        scenario.write_text(SCENARIO)
    out = tmp_path / "bundles" / f"recorded-{len(list(tmp_path.glob('bundles/*')))}"
    result = replay("record", "--scenario", str(scenario), "--out", str(out), tmpdir=tmpdir, home=home)
    assert result.returncode == 0, result.stderr
    return out


def assert_matches(bundle: Path, tmpdir: str, home: str | None = None) -> None:
    result = replay("run", str(bundle), tmpdir=tmpdir, home=home)
    matched = result.returncode == 0 and result.stdout.startswith(f"MATCH {bundle}")
    assert matched, (tmpdir, result.stdout, result.stderr)


def folder(path: Path) -> str:
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def test_a_bundle_recorded_under_one_tmpdir_replays_under_none_and_under_others(tmp_path: Path) -> None:
    recorded_in = folder(tmp_path / "recording-tmp")
    bundle = record(tmp_path, recorded_in)

    cassette = (bundle / "cassette.yaml").read_text()
    assert f"recorded_paths:\n  temp: {recorded_in}\n" in cassette
    assert "<tmp>" in (bundle / "transcript.jsonl").read_text()  # the scratch folder, as fingerprints read it
    for tmpdir in (UNSET, folder(tmp_path / "another-tmp"), recorded_in):
        assert_matches(bundle, tmpdir)
    verified = replay("verify", str(bundle.parent), tmpdir=UNSET)
    assert verified.returncode == 0 and "1 bundle(s): 1 match, 0 drift, 0 error." in verified.stdout, verified.stdout


def test_a_bundle_recorded_with_no_tmpdir_replays_under_one(tmp_path: Path) -> None:
    bundle = record(tmp_path, UNSET)

    assert "recorded_paths:\n  temp: /tmp\n" in (bundle / "cassette.yaml").read_text()
    assert_matches(bundle, folder(tmp_path / "custom-tmp"))


@pytest.mark.parametrize(
    ("recording", "replaying"),
    [
        ("t", "t/inner"),  # the replay's temp folder inside the recording's
        ("t/inner", "t"),  # and the other way round
        ("t/", "other"),  # TMPDIR with a trailing slash
        ("other", "t/"),
    ],
)
def test_temp_folders_inside_one_another_or_written_with_a_slash(
    tmp_path: Path, recording: str, replaying: str
) -> None:
    def tmpdir(name: str) -> str:
        return folder(tmp_path / name.rstrip("/")) + ("/" if name.endswith("/") else "")

    bundle = record(tmp_path, tmpdir(recording))
    assert_matches(bundle, tmpdir(replaying))
    assert_matches(bundle, UNSET)


def test_a_tmpdir_that_is_a_link_is_recorded_as_written_and_resolved(tmp_path: Path) -> None:
    real = folder(tmp_path / "real-tmp")
    link = tmp_path / "linked-tmp"
    link.symlink_to(real)

    bundle = record(tmp_path, str(link))

    # The shell's pwd prints the resolved folder: both forms are the recording's.
    assert f"recorded_paths:\n  temp: {link}\n  temp_resolved: {real}\n" in (bundle / "cassette.yaml").read_text()
    assert_matches(bundle, UNSET)
    assert_matches(bundle, real)


def test_a_tmpdir_inside_home_replays_on_a_machine_with_another_home_and_no_tmpdir(tmp_path: Path) -> None:
    home = folder(tmp_path / "home" / "ana")
    bundle = record(tmp_path, folder(tmp_path / "home" / "ana" / "tmp"), home=home)

    assert f"  home: {home}\n" in (bundle / "cassette.yaml").read_text()
    # The temp folder's entries are <tmp>, not <home>/tmp/...: the longer folder first.
    assert_matches(bundle, UNSET, home=folder(tmp_path / "home" / "bob"))


def test_replays_under_two_tmpdirs_give_byte_identical_transcripts_and_traces(tmp_path: Path) -> None:
    bundle = record(tmp_path, folder(tmp_path / "recording-tmp"))

    outputs = []
    for tmpdir in (UNSET, folder(tmp_path / "x"), folder(tmp_path / "a-much-longer-temp-folder-name")):
        env = {k: v for k, v in os.environ.items() if k != "TMPDIR"}
        if tmpdir != UNSET:
            env["TMPDIR"] = tmpdir
        result = forked.run([sys.executable, "-c", REPLAYED, str(bundle)], env=env, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)

    assert outputs[0] == outputs[1] == outputs[2]
    replayed = json.loads(outputs[0])
    assert replayed["transcript"] == (bundle / "transcript.jsonl").read_text()
    assert replayed["trace"] == json.loads((bundle / "trace.json").read_text())


def test_an_answer_that_names_a_file_in_the_recordings_temp_folder_matches_when_sent_back(tmp_path: Path) -> None:
    recorded_in = folder(tmp_path / "recording-tmp")
    scenario = tmp_path / "scenario" / "scenario.yaml"
    (scenario.parent / "workspace").mkdir(parents=True)
    # The model's answer, replayed from the cassette, names the recording's temp folder; the
    # engine sends it back in the next request as it was recorded, whatever this run's TMPDIR.
    answer = f"I keep my notes in {recorded_in}/agent-notes/today.md while I look."
    scenario.write_text(SCENARIO.replace("Looking one folder up.", answer))

    bundle = record(tmp_path, recorded_in)

    assert_matches(bundle, UNSET)
    assert_matches(bundle, folder(tmp_path / "another-tmp"))


def test_a_cassette_written_before_the_temp_key_still_replays_under_its_own_tmpdir(tmp_path: Path) -> None:
    recorded_in = folder(tmp_path / "recording-tmp")
    bundle = record(tmp_path, recorded_in)
    cassette = bundle / "cassette.yaml"
    # As written before the key existed: its fingerprints read the temp folder of the process.
    cassette.write_text(cassette.read_text().replace(f"recorded_paths:\n  temp: {recorded_in}\n", ""))
    assert "recorded_paths" not in cassette.read_text()

    assert_matches(bundle, recorded_in)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [("relative/tmp", "recorded_paths.temp"), ("[/tmp]", "recorded_paths.temp")],
)
def test_a_broken_temp_key_is_one_clear_sentence(tmp_path: Path, value: str, fragment: str) -> None:
    recorded_in = folder(tmp_path / "recording-tmp")
    bundle = record(tmp_path, recorded_in)
    cassette = bundle / "cassette.yaml"
    cassette.write_text(cassette.read_text().replace(f"  temp: {recorded_in}\n", f"  temp: {value}\n"))

    result = replay("run", str(bundle), tmpdir=UNSET)

    assert result.returncode == 2, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], result.stderr
    assert "temp, temp_resolved, each an absolute path" in lines[0]
    assert "Traceback" not in result.stderr


def test_an_update_under_another_tmpdir_is_refused_in_one_sentence_and_changes_nothing(tmp_path: Path) -> None:
    """An update keeps the recording's temp folder and would record this run's: it runs under
    the recording's TMPDIR, and says so."""
    scenario = tmp_path / "scenario" / "scenario.yaml"
    (scenario.parent / "workspace").mkdir(parents=True)
    (scenario.parent / "workspace" / "notes.md").write_text("notes\n")
    scenario.write_text(SCENARIO.replace("cd .. && pwd && ls", "cat notes.md; cd .. && pwd"))
    recorded_in = folder(tmp_path / "recording-tmp")
    bundle = record(tmp_path, recorded_in)
    (bundle / "workspace" / "notes.md").write_text("changed notes\n")  # the session now drifts
    before = {path: path.read_bytes() for path in sorted(bundle.rglob("*")) if path.is_file()}

    result = replay("run", "--update", str(bundle), tmpdir=folder(tmp_path / "another-tmp"))

    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        f"error: {bundle}: its cassette was recorded under TMPDIR={recorded_in}, and this process's is "
        f"{tmp_path / 'another-tmp'}; run the update with TMPDIR={recorded_in} (nothing was changed)."
    ]
    assert {path: path.read_bytes() for path in sorted(bundle.rglob("*")) if path.is_file()} == before
    updated = replay("run", "--update", str(bundle), tmpdir=recorded_in)
    assert updated.returncode == 0 and updated.stdout.startswith(f"UPDATED {bundle}"), updated.stdout
