"""What the agent loop costs per turn, beside the bare SDK stream over the same bytes.

Method
------
1. Build a scenario of N turns (``--turns``, default 200). Turns 1..N-1 each answer with a text
   block of a few hundred characters and one ``tool_use`` of ``Echo``, a trivial in-process,
   read-only tool defined here that returns its input, so the tool's own cost is negligible and
   deterministic. Turn N ends with text only.
2. **Agent loop**: a ``QueryEngine`` (deterministic deps, ``AnthropicModel`` over an
   ``httpx2.AsyncClient`` whose transport is ``FakeModelTransport``) runs one
   ``submit_message`` and everything it yields is consumed. The first (untimed) run records the
   request bodies the loop sent (``FakeModel.requests``) and checks the run completed all N
   turns.
3. **Bare SDK stream** (the baseline): the same N request bodies, replayed in order through a
   plain ``anthropic.AsyncAnthropic(http_client=httpx2.AsyncClient(transport=
   FakeModelTransport(...)), max_retries=0)`` with ``messages.create(**body, stream=True)``,
   iterating every event. A fresh ``FakeModel`` answers them, so the baseline receives the same
   response bytes. The loop re-sends the whole history each turn, so the bodies grow; replaying
   the recorded bodies makes the baseline pay the same growing request-building, JSON and
   SSE-parsing cost. The script checks that the baseline's request bytes equal the loop's.
   Baseline = SDK request building + transport + fake model + SSE parsing, with no loop.
4. Both are timed with ``time.perf_counter`` over ``--repeat`` repetitions (interleaved, so
   drift hits both alike); clients, engines and fake models are built outside the timed region.
   The table reports the median total and median per-turn cost, and the overhead
   ``loop / SDK - 1``. Two extra loop rows break the cost down: transcript written to
   ``/dev/null`` (records still built and serialized, no file I/O) and a null transcript writer
   (no records serialized at all).

The target is that the loop adds less than 50% to the SDK's own per-turn cost;
the script prints PASS or OVER against it. This is informational: the exit status is 0 either
way. ``--profile`` additionally runs the loop once under cProfile and prints the ``engine/``
functions with the highest cumulative time.

Speed target 3 (``bench/engine_replay.py``, printed after the table, or alone with
``--only-target-3``): the engine replaying a cassette per turn beside the SDK floor over the same
bytes (PASS at most 1.5×), and ``replay_bundle`` of the long library session beside the SDK floor
for its requests (PASS at most 2×).

Run: ``python bench/loop_overhead.py --turns 100 --repeat 3``
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import engine_replay  # beside this script: target 3 (the engine replaying a cassette)
import httpx2

from engine import (
    AnthropicModel,
    EngineSettings,
    QueryDeps,
    QueryEngine,
    QueryResult,
    ResultSubtype,
)
from engine.tools.base import Tool, ToolResult, ToolUseContext
from replay.fake.blocks import TextBlock, ToolUseBlock, Turn
from replay.fake.model import FakeModel, FakeModelTransport
from replay.fake.scenario import Scenario

TARGET_OVERHEAD = 0.50  # the loop may add less than 50% to the SDK's own per-turn cost
API_KEY = "sk-ant-bench-placeholder"
SYSTEM_PROMPT = "You are a benchmark assistant. Call Echo when asked."
PROMPT = "Echo a line per step until you are done."

JsonDict = dict[str, Any]


class EchoTool(Tool):
    """Returns its input's text: a tool whose own cost is negligible and deterministic."""

    name = "Echo"
    description = "Echo the given text back."
    input_schema: JsonDict = {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    }
    is_read_only = True

    async def call(self, tool_input: JsonDict, ctx: ToolUseContext) -> ToolResult:
        return ToolResult(content=tool_input["text"])


class NullTranscript:
    """Stands in for ``TranscriptWriter``: accepts records and never builds or writes them."""

    path = None

    def enqueue(self, record: Callable[[], JsonDict]) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def build_scenario(turns: int) -> Scenario:
    """N turns: text + one Echo call each, and a last turn of text only."""
    items: list[Turn] = []
    for number in range(1, turns + 1):
        text = (
            f"Step {number} of {turns}. "
            + f"Thinking about what to do next at step {number}; the plan is unchanged and on track. " * 4
        ).strip()
        if number < turns:
            items.append(
                Turn(
                    content=(
                        TextBlock(text=text),
                        ToolUseBlock(name="Echo", input={"text": f"echo {number}: " + "x" * 80}),
                    )
                )
            )
        else:
            items.append(Turn(content=(TextBlock(text=text + " All steps are done."),)))
    return Scenario(turns=tuple(items), name=f"loop-overhead-{turns}")


# ---------------------------------------------------------------------------------------------
# The two things being timed


@dataclass
class LoopRun:
    engine: QueryEngine
    fake: FakeModel
    http_client: httpx2.AsyncClient


def make_loop_run(scenario: Scenario, tmp: Path, *, transcript: str) -> LoopRun:
    """An engine ready to run the scenario; ``transcript`` is ``file``, ``devnull`` or ``none``."""
    fake = FakeModel(scenario)
    http_client = httpx2.AsyncClient(transport=FakeModelTransport(fake))
    model = AnthropicModel(http_client=http_client, api_key=API_KEY)
    workspace = tmp / "workspace"
    session_dir = tmp / "session"
    workspace.mkdir(parents=True, exist_ok=True)
    engine = QueryEngine(
        deps=QueryDeps.deterministic(model),
        workspace=workspace,
        session_dir=session_dir,
        tools=[EchoTool()],
        settings=EngineSettings(system_prompt=SYSTEM_PROMPT, max_output_tokens=4096),
        transcript_path=Path(os.devnull) if transcript == "devnull" else None,
    )
    if transcript == "none":
        engine.transcript = NullTranscript()  # type: ignore[assignment]
    return LoopRun(engine=engine, fake=fake, http_client=http_client)


async def drive_loop(run: LoopRun) -> QueryResult:
    result: QueryResult | None = None
    async for item in run.engine.submit_message(PROMPT):
        if isinstance(item, QueryResult):
            result = item
    assert result is not None
    return result


async def close_loop(run: LoopRun) -> None:
    run.engine.close()
    await run.http_client.aclose()


async def time_loop(scenario: Scenario, *, transcript: str) -> float:
    with tempfile.TemporaryDirectory(prefix="loop-overhead-") as tmp:
        run = make_loop_run(scenario, Path(tmp), transcript=transcript)
        gc.collect()
        start = time.perf_counter()
        await drive_loop(run)
        elapsed = time.perf_counter() - start
        await close_loop(run)
    return elapsed


def sdk_kwargs(bodies: list[bytes]) -> list[JsonDict]:
    kwargs = []
    for body in bodies:
        parsed = json.loads(body)
        parsed.pop("stream", None)
        kwargs.append(parsed)
    return kwargs


async def time_sdk(scenario: Scenario, requests: list[JsonDict], *, expect_bodies: list[bytes] | None = None) -> float:
    fake = FakeModel(scenario)
    http_client = httpx2.AsyncClient(transport=FakeModelTransport(fake))
    client = anthropic.AsyncAnthropic(api_key=API_KEY, http_client=http_client, max_retries=0)
    gc.collect()
    start = time.perf_counter()
    for kwargs in requests:
        stream = await client.messages.create(**kwargs, stream=True)
        async for _event in stream:
            pass
        await stream.close()
    elapsed = time.perf_counter() - start
    await client.close()
    if expect_bodies is not None:
        sent = [r.body for r in fake.requests]
        if sent != expect_bodies:
            mismatched = next(i for i, (a, b) in enumerate(zip(sent, expect_bodies, strict=False)) if a != b)
            raise SystemExit(f"baseline request {mismatched + 1} differs from the loop's request bytes")
    return elapsed


# ---------------------------------------------------------------------------------------------
# Driver


async def record(scenario: Scenario, turns: int) -> list[bytes]:
    """One untimed loop run (also a warm-up): check it completes, return the request bodies."""
    with tempfile.TemporaryDirectory(prefix="loop-overhead-") as tmp:
        run = make_loop_run(scenario, Path(tmp), transcript="file")
        result = await drive_loop(run)
        await close_loop(run)
    if result.subtype is not ResultSubtype.SUCCESS or result.num_turns != turns:
        raise SystemExit(f"the loop did not complete the scenario: {result.to_dict()}")
    if run.fake.turns_remaining != 0:
        raise SystemExit(f"the loop left {run.fake.turns_remaining} scripted turns unplayed")
    bodies = [r.body for r in run.fake.requests if r.path.split("?", 1)[0] == "/v1/messages"]
    if len(bodies) != turns:
        raise SystemExit(f"expected {turns} model requests, saw {len(bodies)}")
    return bodies


async def measure(turns: int, repeat: int) -> tuple[list[bytes], dict[str, list[float]]]:
    scenario = build_scenario(turns)
    bodies = await record(scenario, turns)
    requests = sdk_kwargs(bodies)
    await time_sdk(scenario, requests, expect_bodies=bodies)  # warm-up + byte-equality check
    samples: dict[str, list[float]] = {"sdk": [], "loop": [], "devnull": [], "none": []}
    for _ in range(repeat):
        samples["sdk"].append(await time_sdk(scenario, requests))
        samples["loop"].append(await time_loop(scenario, transcript="file"))
        samples["devnull"].append(await time_loop(scenario, transcript="devnull"))
        samples["none"].append(await time_loop(scenario, transcript="none"))
    return bodies, samples


def _load_average() -> str:
    # Other processes on the machine skew both rows; the spread column shows how much.
    try:
        return f", load average {os.getloadavg()[0]:.2f}"
    except (AttributeError, OSError):
        return ""


def print_report(turns: int, repeat: int, bodies: list[bytes], samples: dict[str, list[float]]) -> None:
    print("Agent loop overhead over the fake transport (bench/loop_overhead.py)")
    print(
        f"Python {platform.python_version()} ({platform.python_implementation()}), "
        f"anthropic {anthropic.__version__}, httpx2 {httpx2.__version__}, "
        f"{os.cpu_count()} CPUs, {platform.system()} {platform.machine()}{_load_average()}"
    )
    sizes = [len(b) for b in bodies]
    print(
        f"{turns} turns (text + 1 Echo tool_use each, last turn text), {repeat} repetitions, median shown; "
        f"request body {sizes[0]:,} B on turn 1 -> {sizes[-1]:,} B on turn {turns}"
    )
    print()
    sdk_total = statistics.median(samples["sdk"])
    rows = [
        ("bare SDK stream", "sdk"),
        ("agent loop (QueryEngine)", "loop"),
        ("  loop, transcript -> /dev/null", "devnull"),
        ("  loop, no transcript (null writer)", "none"),
    ]
    header = f"{'':<36} {'turns':>6} {'median total ms':>16} {'per-turn µs':>12} {'overhead':>9} {'min–max ms':>15}"
    print(header)
    print("-" * len(header))
    for label, key in rows:
        total = statistics.median(samples[key])
        per_turn_us = total / turns * 1e6
        overhead = "—" if key == "sdk" else f"{(total / sdk_total - 1) * 100:+.1f}%"
        spread = f"{min(samples[key]) * 1e3:.1f}–{max(samples[key]) * 1e3:.1f}"
        print(f"{label:<36} {turns:>6} {total * 1e3:>16.1f} {per_turn_us:>12.1f} {overhead:>9} {spread:>15}")
    print()
    ratio = statistics.median(samples["loop"]) / sdk_total - 1
    verdict = "PASS" if ratio < TARGET_OVERHEAD else "OVER"
    best_ratio = min(samples["loop"]) / min(samples["sdk"]) - 1
    print(
        f"target: the loop adds < {TARGET_OVERHEAD:.0%} to the SDK's per-turn cost -> {verdict} "
        f"({ratio * 100:+.1f}% on medians, {best_ratio * 100:+.1f}% best-of-{repeat}; informational)"
    )


async def profile(turns: int, top: int) -> None:
    scenario = build_scenario(turns)
    with tempfile.TemporaryDirectory(prefix="loop-overhead-") as tmp:
        run = make_loop_run(scenario, Path(tmp), transcript="file")
        profiler = cProfile.Profile()
        profiler.enable()
        await drive_loop(run)
        profiler.disable()
        await close_loop(run)
    stats = pstats.Stats(profiler)
    repo = Path(__file__).resolve().parent.parent
    engine_dir = str(repo / "engine") + os.sep
    rows = []
    entries = stats.stats.items()  # type: ignore[attr-defined]
    for (filename, line, name), (_cc, ncalls, tottime, cumtime, _callers) in entries:
        if filename.startswith(engine_dir):
            rows.append((cumtime, tottime, ncalls, f"{Path(filename).relative_to(repo)}:{line}({name})"))
    rows.sort(reverse=True)
    total = stats.total_tt  # type: ignore[attr-defined]
    print()
    print(
        f"cProfile of one loop run ({turns} turns, total {total * 1e3:.1f} ms under the profiler); "
        f"top {top} engine/ functions by cumulative time:"
    )
    print(f"{'cumulative ms':>14} {'own ms':>9} {'calls':>8}  function")
    for cumtime, tottime, ncalls, where in rows[:top]:
        print(f"{cumtime * 1e3:>14.1f} {tottime * 1e3:>9.1f} {ncalls:>8}  {where}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="turns in the scenario (default 200)")
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions, median reported (default 5)")
    parser.add_argument("--profile", action="store_true", help="also profile one loop run with cProfile")
    parser.add_argument("--only-target-3", action="store_true", help="print target 3's rows only")
    parser.add_argument("--no-bundle", action="store_true", help="target 3 without the long library session")
    parser.add_argument("--top", type=int, default=20, help="engine/ functions to list with --profile (default 20)")
    args = parser.parse_args(argv)
    if args.turns < 1 or args.repeat < 1:
        parser.error("--turns and --repeat must be at least 1")
    if not args.only_target_3:
        bodies, samples = asyncio.run(measure(args.turns, args.repeat))
        print_report(args.turns, args.repeat, bodies, samples)
    engine_replay.run_target_3(
        build_scenario(args.turns),
        PROMPT,
        EchoTool(),
        EngineSettings(system_prompt=SYSTEM_PROMPT, max_output_tokens=4096),
        repeat=args.repeat,
        bundle=not args.no_bundle,
    )
    if args.profile:
        asyncio.run(profile(args.turns, args.top))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
