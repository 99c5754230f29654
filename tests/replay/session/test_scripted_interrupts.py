"""Interrupts a scenario can script at the two instants the older forms cannot reach, each
deterministic by construction: the recording and every replay write the same bundle.

- ``{at: tools_running, batch: N}``: the N-th batch of tool calls has been started and none of
  its results is handed out, so every call of the batch is answered "Interrupted by user",
  whichever had finished meanwhile, and the loop ends ``aborted_tools``.
- ``{at: request, n: N}``: as the N-th pass begins, before its request is sent; the request
  never reaches the model (nor the cassette), and the turn ends ``aborted_streaming``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from replay.fake.scenario import Scenario
from replay.schema.options import SessionOptions
from replay.session.bundle import load_bundle
from replay.session.recording import record_bundle
from replay.session.runner import Verdict, run_bundle

DONE = {"content": [{"text": "Done."}]}
INTERRUPTED = "Interrupted by user"
BUNDLE_FILES = ("cassette.yaml", "transcript.jsonl", "trace.json", "trace.txt", "session.json")


async def record(
    out: Path, turns: list[dict[str, Any]], interrupt: dict[str, Any], prompts: tuple[str, ...] = ("go",)
) -> Path:
    workspace = out.parent / f"{out.name}-workspace"
    (workspace / "logs").mkdir(parents=True)
    (workspace / "notes.md").write_text("Ship on Friday.\n")
    (workspace / "logs" / "app.log").write_text("started\n")
    options = SessionOptions.from_mapping({"interrupt": interrupt})
    await record_bundle(out, prompts=prompts, scenario=Scenario.from_list(turns), workspace=workspace, options=options)
    return out


def transcript(bundle: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (bundle / "transcript.jsonl").read_text().splitlines()]


def tool_results(bundle: Path) -> dict[str, tuple[str, bool]]:
    """Each tool_use id with its result's text and is_error."""
    return {
        block["tool_use_id"]: (str(block["content"]), bool(block.get("is_error")))
        for record in transcript(bundle)
        if record["type"] == "user" and isinstance(record["message"]["content"], list)
        for block in record["message"]["content"]
        if block.get("type") == "tool_result"
    }


def texts(bundle: Path) -> list[str]:
    return [
        block["text"]
        for record in transcript(bundle)
        if record["type"] == "user" and isinstance(record["message"]["content"], list)
        for block in record["message"]["content"]
        if block.get("type") == "text"
    ]


def running_commands(command: str) -> list[int]:
    """The processes whose command line is ``command`` (a killed tool leaves none)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "cmdline").read_bytes().replace(b"\0", b" ").strip() == command.encode():
                found.append(int(proc.name))
        except OSError:
            continue  # gone meanwhile
    return found


async def assert_replays_and_rerecords_identically(
    bundle: Path, turns: list[dict[str, Any]], **record_args: Any
) -> None:
    for _ in range(3):
        report = await run_bundle(bundle)
        assert report.verdict is Verdict.MATCH, report.differences
    # Recorded again, from another folder under the same name: the same bytes.
    again = await record(bundle.parent / "again" / bundle.name, turns, **record_args)
    for name in BUNDLE_FILES:
        assert (again / name).read_bytes() == (bundle / name).read_bytes(), name


async def test_every_running_tool_of_the_batch_gets_the_synthetic_result(tmp_path: Path) -> None:
    # Three read-only calls run as one concurrent batch; the Bash follows a log and would never
    # end by itself, so only the abort can stop it.
    follow = "tail -f logs/app.log"
    turns = [
        {
            "content": [
                {"text": "Looking around."},
                {"tool_use": {"name": "Read", "input": {"file_path": "notes.md"}, "id": "toolu_read"}},
                {"tool_use": {"name": "Glob", "input": {"pattern": "**/*.log"}, "id": "toolu_glob"}},
                {"tool_use": {"name": "Bash", "input": {"command": follow}, "id": "toolu_tail"}},
            ]
        }
    ]
    interrupt = {"at": "tools_running", "batch": 1}

    bundle = await record(tmp_path / "bundle", turns, interrupt)

    assert tool_results(bundle) == dict.fromkeys(("toolu_read", "toolu_glob", "toolu_tail"), (INTERRUPTED, True))
    assert texts(bundle)[-1] == "[Request interrupted by user for tool use]"
    trace = load_bundle(bundle).recorded_trace()
    assert trace is not None and trace.prompts[0].terminal == "aborted_tools"
    assert trace.prompts[0].passes[0].tool_batches[0]["concurrent"] is True
    assert running_commands(follow) == []  # its process group was killed
    assert json.loads((bundle / "session.json").read_text())["session_options"] == {"interrupt": interrupt}
    await assert_replays_and_rerecords_identically(bundle, turns, interrupt=interrupt)
    assert running_commands(follow) == []


async def test_a_later_batch_is_interrupted_after_the_batches_before_it_ran(tmp_path: Path) -> None:
    # A Write runs alone (batch 1) and really finishes; the two reads after it form batch 2.
    turns = [
        {
            "content": [
                {"tool_use": {"name": "Write", "input": {"file_path": "out.md", "content": "x\n"}, "id": "toolu_w"}},
                {"tool_use": {"name": "Read", "input": {"file_path": "out.md"}, "id": "toolu_r"}},
                {"tool_use": {"name": "Glob", "input": {"pattern": "*.md"}, "id": "toolu_g"}},
            ]
        }
    ]
    interrupt = {"at": "tools_running", "batch": 2}

    bundle = await record(tmp_path / "bundle", turns, interrupt)

    results = tool_results(bundle)
    assert results["toolu_w"][1] is False
    assert results["toolu_r"] == results["toolu_g"] == (INTERRUPTED, True)
    trace = load_bundle(bundle).recorded_trace()
    assert trace is not None and trace.prompts[0].terminal == "aborted_tools"
    await assert_replays_and_rerecords_identically(bundle, turns, interrupt=interrupt)


async def test_an_interrupt_at_a_request_never_sends_it_and_the_next_prompt_goes_on(tmp_path: Path) -> None:
    # Two turns for three passes: the second pass (the tool result's follow-up) is interrupted
    # before its request is sent, so the script's second turn answers the second prompt. Had the
    # request been sent, it would have taken that turn and the second prompt would find none.
    turns = [
        {"content": [{"tool_use": {"name": "Read", "input": {"file_path": "notes.md"}, "id": "toolu_read"}}]},
        DONE,
    ]
    interrupt = {"at": "request", "n": 2}
    prompts = ("read the notes", "never mind")

    bundle = await record(tmp_path / "bundle", turns, interrupt, prompts)

    trace = load_bundle(bundle).recorded_trace()
    assert trace is not None
    first, second = trace.prompts
    assert first.terminal == "aborted_streaming" and second.terminal == "completed"
    assert [len(p.requests) for p in first.passes] == [1, 0]  # the interrupted pass sent nothing
    assert tool_results(bundle)["toolu_read"][1] is False  # the tool had run; its result stands
    assert texts(bundle) == ["[Request interrupted by user]"]
    assert transcript(bundle)[-1]["message"]["content"][0]["text"] == "Done."
    await assert_replays_and_rerecords_identically(bundle, turns, interrupt=interrupt, prompts=prompts)


async def test_an_interrupt_at_the_first_request_leaves_nothing_to_record_for_that_prompt(tmp_path: Path) -> None:
    interrupt = {"at": "request", "n": 1}
    prompts = ("hello", "hello again")

    bundle = await record(tmp_path / "bundle", [DONE], interrupt, prompts)

    trace = load_bundle(bundle).recorded_trace()
    assert trace is not None
    assert [p.terminal for p in trace.prompts] == ["aborted_streaming", "completed"]
    assert [len(p.requests) for prompt in trace.prompts for p in prompt.passes] == [0, 1]
    await assert_replays_and_rerecords_identically(bundle, [DONE], interrupt=interrupt, prompts=prompts)
