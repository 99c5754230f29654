"""Tool orchestration: batches, concurrency, order, and the streaming executor."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2

from engine import ToolOutcome, TraceKind, default_tools, partition_tool_calls
from replay.fake.model import FakeModel
from tests.engine.conftest import make_session
from tests.engine.probe_tools import Journal, ProbeTool, probe

DONE = {"content": [{"text": "Done."}]}


def probe_tools(journal: Journal) -> list[Any]:
    return [ProbeTool(journal), ProbeTool(journal, name="Mutate", read_only=False)]


async def test_three_read_only_calls_run_in_one_concurrent_batch(session_root: Path) -> None:
    journal = Journal()
    # Each call waits until the one after it has started: only a concurrent batch finishes.
    turn = {
        "content": [
            probe("a", wait_for="b-started"),
            probe("b", wait_for="c-started", opens=["b-started"]),
            probe("c", opens=["c-started"]),
        ]
    }
    session = make_session(session_root, [turn, DONE], tools=probe_tools(journal))
    await session.submit("go")

    batches = session.trace(TraceKind.TOOL_BATCH)
    assert [(b.data["tools"], b.data["concurrent"]) for b in batches] == [(["Probe", "Probe", "Probe"], True)]
    assert [e for e in journal.entries if e[0] == "start"] == [("start", "a"), ("start", "b"), ("start", "c")]
    assert {e.data["outcome"] for e in session.trace(TraceKind.TOOL_CALL)} == {"success"}


async def test_a_write_between_read_only_calls_splits_the_batches(session_root: Path) -> None:
    journal = Journal()
    turn = {"content": [probe("a"), probe("b"), probe("w", name="Mutate"), probe("c")]}
    session = make_session(session_root, [turn, DONE], tools=probe_tools(journal))
    await session.submit("go")

    batches = session.trace(TraceKind.TOOL_BATCH)
    assert [(b.data["tools"], b.data["concurrent"]) for b in batches] == [
        (["Probe", "Probe"], True),
        (["Mutate"], False),
        (["Probe"], True),
    ]
    order = journal.entries
    # The write starts only after both reads before it ended, and the read after it waits for it.
    assert order.index(("start", "w")) > max(order.index(("end", "a")), order.index(("end", "b")))
    assert order.index(("start", "c")) > order.index(("end", "w"))


async def test_results_come_back_in_tool_use_order_even_when_a_later_call_finishes_first(
    session_root: Path,
) -> None:
    journal = Journal()
    turn = {"content": [probe("slow", wait_for="fast-done"), probe("fast", opens=["fast-done"])]}
    session = make_session(session_root, [turn, DONE], tools=probe_tools(journal))
    await session.submit("go")

    assert journal.entries.index(("end", "fast")) < journal.entries.index(("end", "slow"))
    results = session.requests[1]["messages"][2]["content"]
    assert [r["content"] for r in results] == ["Probe slow done", "Probe fast done"]


async def test_the_streaming_executor_starts_a_tool_while_the_model_is_still_streaming(
    session_root: Path,
) -> None:
    journal = Journal()
    sent: list[int] = []

    class PacedTransport(httpx2.AsyncBaseTransport):
        """The fake model's bytes, one event at a time, yielding to the event loop between
        events as a network read would."""

        def __init__(self, fake: FakeModel) -> None:
            self.fake = fake

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            body = await request.aread()
            answer = self.fake.respond(request.method, request.url.path, dict(request.headers), body)

            async def stream() -> Any:
                for chunk in answer.chunks:
                    sent.append(len(chunk))
                    yield chunk
                    await asyncio.sleep(0)

            return httpx2.Response(answer.status, headers=answer.headers, content=stream())

    started_after_events: list[int] = []

    class Marking(ProbeTool):
        async def call(self, tool_input: Any, ctx: Any) -> Any:
            started_after_events.append(len(sent))
            return await super().call(tool_input, ctx)

    long_text = {"text": "and now a long explanation " * 20}
    turn = {"content": [probe("early"), long_text]}
    session = make_session(session_root, [turn, DONE], tools=[Marking(journal)])
    session.fake = FakeModel(session.fake.scenario)
    session.engine.deps.call_model.client._client._transport = PacedTransport(session.fake)
    await session.submit("go")

    events_in_first_response = len(
        FakeModel(session.fake.scenario).respond("POST", "/v1/messages", {}, b'{"stream": true, "messages": []}').chunks
    )
    assert started_after_events and started_after_events[0] < events_in_first_response


def test_partition_puts_unknown_and_invalid_calls_in_batches_of_their_own() -> None:
    tools = {t.name: t for t in default_tools()}
    blocks = [
        {"id": "1", "name": "Read", "input": {"file_path": "a"}},
        {"id": "2", "name": "Nope", "input": {}},
        {"id": "3", "name": "Read", "input": {"file_path": "b"}},
        {"id": "4", "name": "Read", "input": {"wrong": True}},
        {"id": "5", "name": "Glob", "input": {"pattern": "*"}},
    ]
    batches = partition_tool_calls(blocks, tools)
    assert [([b["id"] for b in batch.blocks], batch.concurrent) for batch in batches] == [
        (["1"], True),
        (["2"], False),
        (["3"], True),
        (["4"], False),
        (["5"], True),
    ]


async def test_an_unknown_tool_gets_an_error_result_and_the_loop_goes_on(session_root: Path) -> None:
    turn = {"content": [{"tool_use": {"name": "Teleport", "input": {}, "id": "toolu_x"}}]}
    session = make_session(session_root, [turn, DONE])
    result = await session.submit("go")

    assert session.tool_results()["toolu_x"] == {
        "type": "tool_result",
        "tool_use_id": "toolu_x",
        "content": "No such tool available: Teleport",
        "is_error": True,
    }
    assert result.terminal_reason.value == "completed" and result.result == "Done."


async def test_input_that_fails_the_schema_gets_an_input_validation_error(session_root: Path) -> None:
    turn = {"content": [{"tool_use": {"name": "Read", "input": {"path": "x"}, "id": "toolu_x"}}]}
    session = make_session(session_root, [turn, DONE])
    result = await session.submit("go")

    block = session.tool_results()["toolu_x"]
    assert block["is_error"] and block["content"].startswith("InputValidationError: ")
    assert "file_path" in block["content"]
    assert result.result == "Done."


async def test_a_denied_permission_gives_the_reason_and_is_recorded_on_the_session(session_root: Path) -> None:
    from engine.tools import RulePolicy

    turn = {
        "content": [{"tool_use": {"name": "Write", "input": {"file_path": "x.txt", "content": "x"}, "id": "toolu_w"}}]
    }
    session = make_session(session_root, [turn, DONE], can_use_tool=RulePolicy(deny=["Write"]))
    result = await session.submit("go")

    block = session.tool_results()["toolu_w"]
    assert block["is_error"] and "denied" in block["content"]
    assert not (session.workspace / "x.txt").exists()
    assert [d.tool_use_id for d in result.permission_denials] == ["toolu_w"]
    assert session.engine.permission_denials[0].tool_name == "Write"
    assert session.trace(TraceKind.TOOL_CALL)[0].data["outcome"] == ToolOutcome.PERMISSION_DENIED.value


async def test_a_path_outside_the_workspace_is_refused_with_an_error_result(session_root: Path) -> None:
    (session_root / "secret.txt").write_text("top secret")
    turn = {"content": [{"tool_use": {"name": "Read", "input": {"file_path": "../secret.txt"}, "id": "toolu_r"}}]}
    session = make_session(session_root, [turn, DONE])
    result = await session.submit("go")

    block = session.tool_results()["toolu_r"]
    assert block["is_error"] and "outside the workspace" in block["content"]
    assert "top secret" not in block["content"]
    assert result.result == "Done."


async def test_an_oversized_result_is_saved_to_the_session_folder_and_previewed(session_root: Path) -> None:
    big = "".join(f"match line {i:05d} with some padding text\n" for i in range(2_000))
    turn = {
        "content": [
            {"tool_use": {"name": "Grep", "id": "toolu_g", "input": {"pattern": "match", "output_mode": "content"}}}
        ]
    }
    session = make_session(session_root, [turn, DONE], files={"big.txt": big})
    result = await session.submit("go")

    block = session.tool_results()["toolu_g"]
    assert "tool-results/toolu_g.txt" in block["content"]
    assert len(block["content"]) < 20_000
    saved = (session.session_dir / "tool-results" / "toolu_g.txt").read_text()
    assert saved.count("match line") == 2_000
    assert result.result == "Done."


async def test_a_tool_with_no_output_says_so(session_root: Path) -> None:
    turn = {"content": [{"tool_use": {"name": "Bash", "input": {"command": "true"}, "id": "toolu_b"}}]}
    session = make_session(session_root, [turn, DONE])
    await session.submit("go")
    assert session.tool_results()["toolu_b"]["content"] == "(Bash completed with no output)"


async def test_an_unreadable_file_gives_an_error_result_naming_it_and_loses_no_transcript_line(
    session_root: Path,
) -> None:
    turn = {"content": [{"tool_use": {"name": "Read", "input": {"file_path": "blob.bin"}, "id": "toolu_r"}}]}
    session = make_session(session_root, [turn, DONE])
    (session.workspace / "blob.bin").write_bytes(b"\xff\xfe\x00\x01" * 10)
    await session.submit("go")

    block = session.tool_results()["toolu_r"]
    assert block["is_error"] and "blob.bin" in block["content"]
    lines = session.transcript_bytes().decode().splitlines()
    assert len(lines) == len(session.engine.mutable_messages)


async def test_a_failing_bash_call_cancels_its_concurrent_siblings(session_root: Path) -> None:
    journal = Journal()
    turn = {
        "content": [
            {"tool_use": {"name": "Bash", "input": {"command": "ls does-not-exist"}, "id": "toolu_b"}},
            probe("sibling", wait_for="never"),
        ]
    }
    tools = [*default_tools(), ProbeTool(journal)]
    session = make_session(session_root, [turn, DONE], tools=tools)
    await session.submit("go")

    outcomes = {e.data["id"]: e.data["outcome"] for e in session.trace(TraceKind.TOOL_CALL)}
    sibling_id = next(i for i in outcomes if i != "toolu_b")
    assert outcomes["toolu_b"] == "error"
    assert outcomes[sibling_id] == "cancelled"
    assert "Bash" in session.tool_results()[sibling_id]["content"]
