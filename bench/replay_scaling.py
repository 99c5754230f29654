"""Per-request replay cost as the cassette grows: ``CassetteTransport`` beside vcrpy and a bare transport.

Method
------
1. **Interactions.** ``--sizes`` cassettes (default 10, 100, 1,000 and 10,000 interactions) of
   synthetic agent-loop traffic: sessions of six calls to ``POST /v1/messages``, each request
   re-sending its session's history (a prompt naming the session, then per step an assistant
   text + ``tool_use`` and a ``tool_result`` holding a few lines of source), with a ~2 KB system
   prompt and tool list. Every request body is different (1.8–4.8 KB), and every fingerprint
   too, so each lookup is a real match. Each answer is an event stream of 10 events (~1.4 KB).
2. **Files.** The interactions are saved in the native format (``save_cassette``) and loaded
   back (``load_cassette``), and every column replays the loaded interactions, so all three
   send the same request bytes and return the same response bytes. The vcrpy cassette is
   what vcrpy itself would write for that traffic: a ``vcr.request.Request`` per request and
   vcrpy's httpx response dict (status, header lists, body bytes), saved with
   ``vcr.serialize.serialize(..., yamlserializer)`` — a plain vcrpy YAML cassette, loaded by
   vcrpy's own YAML serializer, not by ours.
3. **Columns** (each sends ``POST https://api.anthropic.com/v1/messages`` with the recorded JSON
   body through ``httpx2.AsyncClient.post``, which reads the whole response):

   - *ours*: ``httpx2.AsyncClient(transport=CassetteTransport(player))`` with a fresh
     ``CassettePlayer.from_cassette`` (strict) per pass, so each pass starts with a cold
     normalizer cache, as a replay does; fingerprint index lookup.
   - *vcrpy*: ``vcr.VCR(record_mode="none", match_on=["method", "path", "body"])`` and
     ``use_cassette`` on the vcrpy YAML file, through an ``httpx2.AsyncClient`` over a real
     ``httpx2.AsyncHTTPTransport``, which vcrpy patches (it never reaches the network: a miss
     raises). vcrpy scans its interactions in order and runs the matchers on each (its body
     matcher parses both JSON bodies, and a failed match builds a diff of them), so its cost
     per request grows with the matched interaction's position; above ``--vcrpy-sample``
     interactions (default 20) it times that many requests at evenly spaced positions
     (``(j + 0.5) * n / sample``), whose mean cost is the cassette's mean per-request cost.
     Smaller cassettes are replayed whole (several passes, rewound in between). ``--quick``
     skips vcrpy at 10,000 interactions (minutes per repetition).
   - *bare*: an ``httpx2.AsyncBaseTransport`` that returns the recorded responses in order,
     pre-encoded, one chunk per event, without looking at the request: the floor that any
     replay through ``httpx2`` pays.

   Ours and bare replay every interaction in recorded order, in as many passes as it takes to
   reach ``--min-requests`` per repetition (default 2,000), so small cassettes are not timed on
   a handful of requests; each column keeps one client for all its passes. Only the requests
   are timed (``time.perf_counter``); building players, clients and cassettes is not. Each
   response's status and bytes are checked after timing. The table shows the median over
   ``--repeat`` repetitions (default 3); ours and bare are interleaved per repetition, vcrpy
   runs after them on one loaded cassette, rewound between passes. The load columns are one
   measurement each, apart from the request timings: ``load_cassette`` +
   ``CassettePlayer.from_cassette`` for ours, entering ``use_cassette`` for vcrpy.
4. **File size.** A ``--turns``-turn tool-using session (default 200) whose every request re-sends
   the whole growing history (built the way ``agent_session`` in ``tests/replay/cassette/test_cassette.py``
   builds it), written in the native format and as vcrpy YAML at half and full length.

Targets, printed as PASS/OVER (informational: the exit status is 0 either way):
(a) our cost per request does not grow with cassette size (largest/smallest size within 2×);
(b) at 1,000 interactions ours is at least 30× faster than vcrpy with body matching;
(c) the native file grows linearly (size(2t)/size(t) at most 2.2). ``--profile N`` adds a
cProfile of one replay of an N-interaction cassette through ``CassetteTransport``.

Speed target 2 (``bench/per_request.py``, printed after the targets above, or alone with
``--only-per-request``): ours beside a bare ``httpx2.MockTransport`` returning the same bytes in
30 chunks, per request, at ``--request-sizes`` (default ``--sizes``), CPU time, passes
alternating; PASS at most 1.5×.

Run: ``python bench/replay_scaling.py --quick`` (~3 min), or without ``--quick`` for the full table (~9 min)
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import math
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import per_request  # beside this script (bench/ is the script's first import path)
import vcr
import vcr.serialize
import yaml
from per_request import Chunks
from vcr.request import Request as VcrRequest
from vcr.serializers import yamlserializer

from replay.cassette import Cassette, dumps_cassette, load_cassette, save_cassette
from replay.cassette.interaction import BodyKind, Interaction, RecordedRequest, RecordedResponse, SseEvent
from replay.cassette.transport import CassettePlayer, CassetteTransport

DEFAULT_SIZES = (10, 100, 1_000, 10_000)
QUICK_VCRPY_LIMIT = 10_000  # --quick skips vcrpy at this many interactions and more
TARGET_GROWTH = 2.0  # (a) ours at the largest size / ours at the smallest
TARGET_SPEEDUP = 30.0  # (b) vcrpy / ours ...
TARGET_SPEEDUP_SIZE = 1_000  # ... at this many interactions
TARGET_LINEAR = 2.2  # (c) native size(2t) / size(t): linear is 2.0

URL = "https://api.anthropic.com/v1/messages"
MODEL = "claude-sonnet-4-6"
REQUEST_HEADERS = {"anthropic-version": "2023-06-01", "content-type": "application/json"}
STEPS_PER_SESSION = 6
SYSTEM_PROMPT = (
    "You are a careful coding agent working in a repository. Read files before you edit them, keep "
    "changes small, run the test suite after every change, and explain what you did in one short paragraph. "
) * 3
TOOLS = [
    {
        "name": name,
        "description": f"The {name} tool: {what}",
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path of the file, relative to the workspace."},
                "text": {"type": "string", "description": "Text to write, or the command to run."},
            },
            "required": ["path"],
        },
    }
    for name, what in (
        ("Read", "reads a file and returns its numbered lines."),
        ("Edit", "replaces one exact string in a file with another."),
        ("Bash", "runs a shell command in the workspace and returns its output."),
    )
]

JsonDict = dict[str, Any]


# ---------------------------------------------------------------------------------------------
# Synthetic traffic


def sse_answer(index: int, text: str, *, deltas: int = 4) -> RecordedResponse:
    """A streamed answer of 6 + ``deltas`` events (10 by default), as the Messages API sends it."""
    message = {
        "id": f"msg_{index:08d}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1000 + index, "output_tokens": 1},
    }
    events = [
        SseEvent("message_start", {"type": "message_start", "message": message}),
        SseEvent(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        SseEvent("ping", {"type": "ping"}),
        *(
            SseEvent(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": f"{text} (part {part} of the answer) "},
                },
            )
            for part in range(deltas)
        ),
        SseEvent("content_block_stop", {"type": "content_block_stop", "index": 0}),
        SseEvent(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 60},
            },
        ),
        SseEvent("message_stop", {"type": "message_stop"}),
    ]
    return RecordedResponse(
        status=200,
        headers={"content-type": "text/event-stream", "request-id": f"req_{index:08d}"},
        kind=BodyKind.SSE,
        body=events,
    )


def messages_request(messages: list[JsonDict]) -> RecordedRequest:
    body = {
        "model": MODEL,
        "max_tokens": 8192,
        "stream": True,
        "system": SYSTEM_PROMPT,
        "tools": TOOLS,
        "messages": messages,
    }
    return RecordedRequest(method="POST", uri=URL, headers=REQUEST_HEADERS, body=body)


def tool_step(session: int, step: int, *, functions: int) -> list[JsonDict]:
    """An assistant turn that reads a file, and the tool result with the file's source."""
    tool_id = f"toolu_{session:05d}_{step:04d}"
    path = f"src/app_{session}/module_{step}.py"
    source = "\n".join(
        f"def handler_{session}_{step}_{n}(event):\n    return event['key_{n}'] + {n}" for n in range(functions)
    )
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Step {step}: reading {path} next."},
                {"type": "tool_use", "id": tool_id, "name": "Read", "input": {"path": path}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": source}]},
    ]


def scaling_interactions(count: int, *, deltas: int = 4) -> list[Interaction]:
    """``count`` interactions from sessions of ``STEPS_PER_SESSION`` calls; all bodies differ."""
    interactions = []
    for index in range(count):
        session, step = divmod(index, STEPS_PER_SESSION)
        prompt = f"Session {session}: test_feature_{session} fails with a KeyError in src/app_{session}; fix it."
        messages: list[JsonDict] = [{"role": "user", "content": prompt}]
        for earlier in range(step):
            messages.extend(tool_step(session, earlier, functions=5))
        answer = sse_answer(index, f"Session {session}, step {step}: reading the next module.", deltas=deltas)
        interactions.append(Interaction(messages_request(messages), answer))
    return interactions


def growing_session(turns: int) -> list[Interaction]:
    """One tool-using session: every request re-sends the whole, growing history."""
    history: list[JsonDict] = [{"role": "user", "content": "Fix the failing test in tests/test_app.py."}]
    interactions = []
    for turn in range(turns):
        interactions.append(Interaction(messages_request(list(history)), sse_answer(turn, f"Turn {turn}.")))
        history.extend(tool_step(0, turn, functions=8))
    return interactions


def vcrpy_yaml(interactions: Sequence[Interaction]) -> str:
    """The YAML vcrpy itself writes for these interactions (its httpx stub's request and response
    shapes, its own serializer)."""
    requests = [
        VcrRequest(i.request.method, i.request.uri, i.request.body_bytes(), dict(i.request.headers))
        for i in interactions
    ]
    responses = [
        {
            "status": {"code": i.response.status, "message": HTTPStatus(i.response.status).phrase},
            "headers": {name: [value] for name, value in i.response.headers.items()},
            "body": {"string": i.response.body_bytes()},
        }
        for i in interactions
    ]
    return vcr.serialize.serialize({"requests": requests, "responses": responses}, yamlserializer)


# ---------------------------------------------------------------------------------------------
# One cassette size


@dataclass
class Fixture:
    """A cassette of one size, on disk in both formats and loaded in ours."""

    size: int
    cassette: Cassette
    bodies: list[bytes]  # request bytes, in recorded order
    expected: list[bytes]  # response bytes, in recorded order
    headers: list[list[tuple[str, str]]]
    native_path: Path
    vcrpy_path: Path
    native_load_s: float


def build_fixture(size: int, folder: Path) -> Fixture:
    native_path = folder / f"native-{size}.yaml"
    vcrpy_path = folder / f"vcrpy-{size}.yaml"
    save_cassette(Cassette(interactions=scaling_interactions(size)), native_path)
    start = time.perf_counter()
    cassette = load_cassette(native_path)
    CassettePlayer.from_cassette(cassette)
    native_load_s = time.perf_counter() - start
    if len(set(cassette.fingerprints())) != size:
        raise SystemExit(f"the {size}-interaction cassette has repeated fingerprints; matching would not be real")
    vcrpy_path.write_text(vcrpy_yaml(cassette.interactions), encoding="utf-8")
    return Fixture(
        size=size,
        cassette=cassette,
        bodies=[i.request.body_bytes() for i in cassette.interactions],
        expected=[i.response.body_bytes() for i in cassette.interactions],
        headers=[list(i.response.headers.items()) for i in cassette.interactions],
        native_path=native_path,
        vcrpy_path=vcrpy_path,
        native_load_s=native_load_s,
    )


class BareTransport(httpx2.AsyncBaseTransport):
    """Returns the recorded responses in order without looking at the request: the floor."""

    def __init__(self, fixture: Fixture) -> None:
        self._answers = [
            (headers, interaction.response.chunks())
            for headers, interaction in zip(fixture.headers, fixture.cassette.interactions, strict=True)
        ]
        self._next = 0

    def rewind(self) -> None:
        """Answer from the first recorded response again."""
        self._next = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        headers, chunks = self._answers[self._next]
        self._next += 1
        return httpx2.Response(200, headers=headers, stream=Chunks(chunks), request=request)


async def send_requests(client: httpx2.AsyncClient, bodies: Sequence[bytes]) -> tuple[float, list[httpx2.Response]]:
    """Seconds spent sending ``bodies`` and reading every response, and the responses."""
    responses = []
    start = time.perf_counter()
    for body in bodies:
        responses.append(await client.post(URL, content=body, headers=REQUEST_HEADERS))
    return time.perf_counter() - start, responses


def check(responses: Sequence[httpx2.Response], expected: Sequence[bytes], column: str, size: int) -> None:
    for number, (response, body) in enumerate(zip(responses, expected, strict=True), start=1):
        if response.status_code != 200 or response.content != body:
            raise SystemExit(f"{column} at {size} interactions: response {number} is not the recorded one")


async def time_ours(fixture: Fixture, passes: int) -> float:
    """Seconds per request over ``passes`` full replays, each with a fresh player (one client)."""
    total = 0.0
    transport = CassetteTransport(CassettePlayer.from_cassette(fixture.cassette, strict=True))
    async with httpx2.AsyncClient(transport=transport) as client:
        for _ in range(passes):
            transport.player = player = CassettePlayer.from_cassette(fixture.cassette, strict=True)
            elapsed, responses = await send_requests(client, fixture.bodies)
            player.finish()  # strict: raises if an interaction was not played
            check(responses, fixture.expected, "ours", fixture.size)
            total += elapsed
    return total / (passes * fixture.size)


async def time_bare(fixture: Fixture, passes: int) -> float:
    """Seconds per request over ``passes`` full replays through `BareTransport` (one client)."""
    total = 0.0
    transport = BareTransport(fixture)
    async with httpx2.AsyncClient(transport=transport) as client:
        for _ in range(passes):
            transport.rewind()
            elapsed, responses = await send_requests(client, fixture.bodies)
            check(responses, fixture.expected, "bare", fixture.size)
            total += elapsed
    return total / (passes * fixture.size)


def vcrpy_positions(size: int, sample: int) -> list[int]:
    """Every interaction, or ``sample`` evenly spaced ones (vcrpy's cost grows with position)."""
    if size <= sample:
        return list(range(size))
    return [int((j + 0.5) * size / sample) for j in range(sample)]


async def time_vcrpy(fixture: Fixture, *, sample: int, repeat: int) -> tuple[list[float], float, int]:
    """Seconds per request for each repetition, the load time, and the requests timed per repetition."""
    positions = vcrpy_positions(fixture.size, sample)
    passes = math.ceil(sample / len(positions))
    bodies = [fixture.bodies[i] for i in positions]
    expected = [fixture.expected[i] for i in positions]
    playback = vcr.VCR(record_mode="none", match_on=["method", "path", "body"])
    samples = []
    start = time.perf_counter()
    with playback.use_cassette(str(fixture.vcrpy_path)) as cassette:
        load_s = time.perf_counter() - start
        async with httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport()) as client:
            for _ in range(repeat):
                gc.collect()
                total = 0.0
                for _ in range(passes):
                    cassette.rewind()
                    elapsed, responses = await send_requests(client, bodies)
                    check(responses, expected, "vcrpy", fixture.size)
                    total += elapsed
                samples.append(total / (passes * len(positions)))
    return samples, load_s, passes * len(positions)


@dataclass
class Row:
    size: int
    ours: list[float]
    bare: list[float]
    vcrpy: list[float] | None  # None: skipped
    vcrpy_requests: int
    native_load_s: float
    vcrpy_load_s: float | None
    native_bytes: int
    vcrpy_bytes: int
    body_bytes: tuple[int, int]


async def measure_size(size: int, args: argparse.Namespace, folder: Path) -> Row:
    fixture = build_fixture(size, folder)
    passes = math.ceil(args.min_requests / size)
    await time_ours(fixture, 1)  # warm-up
    await time_bare(fixture, 1)
    ours, bare = [], []
    for _ in range(args.repeat):
        gc.collect()
        ours.append(await time_ours(fixture, passes))
        gc.collect()
        bare.append(await time_bare(fixture, passes))
    vcrpy_samples: list[float] | None = None
    vcrpy_load_s: float | None = None
    vcrpy_requests = 0
    if not (args.quick and size >= QUICK_VCRPY_LIMIT):
        vcrpy_samples, vcrpy_load_s, vcrpy_requests = await time_vcrpy(
            fixture, sample=args.vcrpy_sample, repeat=args.repeat
        )
    row = Row(
        size=size,
        ours=ours,
        bare=bare,
        vcrpy=vcrpy_samples,
        vcrpy_requests=vcrpy_requests,
        native_load_s=fixture.native_load_s,
        vcrpy_load_s=vcrpy_load_s,
        native_bytes=fixture.native_path.stat().st_size,
        vcrpy_bytes=fixture.vcrpy_path.stat().st_size,
        body_bytes=(min(map(len, fixture.bodies)), max(map(len, fixture.bodies))),
    )
    fixture.native_path.unlink()
    fixture.vcrpy_path.unlink()
    return row


# ---------------------------------------------------------------------------------------------
# File size of one long session


@dataclass
class SizeRow:
    turns: int
    native_bytes: int
    vcrpy_bytes: int


def measure_file_sizes(turns: int) -> list[SizeRow]:
    session = growing_session(turns)
    rows = []
    for length in (turns // 2, turns):
        part = session[:length]
        native = len(dumps_cassette(Cassette(interactions=part)).encode("utf-8"))
        rows.append(SizeRow(length, native, len(vcrpy_yaml(part).encode("utf-8"))))
    return rows


# ---------------------------------------------------------------------------------------------
# Report


def _load_average() -> str:
    # Other processes on the machine skew every column; the header says how busy it was.
    try:
        return f", load average {os.getloadavg()[0]:.2f}"
    except (AttributeError, OSError):
        return ""


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f}"


def print_header(args: argparse.Namespace) -> None:
    print("Replay cost per request as the cassette grows (bench/replay_scaling.py)")
    libyaml = "with libyaml" if getattr(yaml, "__with_libyaml__", False) else "pure Python"
    print(
        f"Python {platform.python_version()} ({platform.python_implementation()}), "
        f"anthropic {anthropic.__version__}, httpx2 {httpx2.__version__}, vcrpy {vcr.__version__}, "
        f"PyYAML {yaml.__version__} ({libyaml}), {os.cpu_count()} CPUs, "
        f"{platform.system()} {platform.machine()}{_load_average()}"
    )
    print(
        f"Median of {args.repeat} repetitions. ours/bare: every interaction in order, >= {args.min_requests:,} "
        f"requests per repetition; vcrpy: match_on method, path, body, {args.vcrpy_sample} requests at evenly "
        "spaced positions per repetition (all of them below that size)."
    )


def print_table(rows: Sequence[Row]) -> None:
    low, high = min(r.body_bytes[0] for r in rows), max(r.body_bytes[1] for r in rows)
    print(f"Request bodies {low:,}–{high:,} B, all different; answers: 10 SSE events each.")
    print()
    header = (
        f"{'interactions':>12} {'ours µs/req':>12} {'vcrpy µs/req':>13} {'bare µs/req':>12} {'vcrpy÷ours':>11} "
        f"{'ours load s':>12} {'vcrpy load s':>13} {'native MB':>10} {'vcrpy MB':>9}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        ours = statistics.median(row.ours)
        if row.vcrpy is None:
            vcrpy_text, ratio_text, load_text = "skipped", "—", "—"
        else:
            vcrpy = statistics.median(row.vcrpy)
            vcrpy_text, ratio_text = _us(vcrpy), f"{vcrpy / ours:,.0f}×"
            load_text = f"{row.vcrpy_load_s:.2f}"
        print(
            f"{row.size:>12,} {_us(ours):>12} {vcrpy_text:>13} {_us(statistics.median(row.bare)):>12} "
            f"{ratio_text:>11} {row.native_load_s:>12.2f} {load_text:>13} "
            f"{row.native_bytes / 1e6:>10.2f} {row.vcrpy_bytes / 1e6:>9.2f}"
        )
    print()
    for label, column in (("ours", "ours"), ("bare", "bare")):
        spreads = ", ".join(f"{r.size:,}: {_us(min(getattr(r, column)))}–{_us(max(getattr(r, column)))}" for r in rows)
        print(f"{label} min–max µs/req per size: {spreads}")
    print("Timings on a shared machine are noisy; ours and bare move together when the machine is busy.")


def print_sizes(size_rows: Sequence[SizeRow]) -> None:
    half, full = size_rows
    print()
    print("Cassette file of one session whose every request re-sends the whole history")
    header = f"{'turns':>6} {'native bytes':>14} {'vcrpy YAML bytes':>17} {'vcrpy÷native':>13}"
    print(header)
    print("-" * len(header))
    for row in size_rows:
        print(
            f"{row.turns:>6} {row.native_bytes:>14,} {row.vcrpy_bytes:>17,} "
            f"{row.vcrpy_bytes / row.native_bytes:>12.1f}×"
        )
    print(
        f"growth {full.turns}/{half.turns} turns: native {full.native_bytes / half.native_bytes:.2f}, "
        f"vcrpy {full.vcrpy_bytes / half.vcrpy_bytes:.2f} (linear is 2.00, quadratic 4.00)"
    )


def print_targets(rows: Sequence[Row], size_rows: Sequence[SizeRow]) -> None:
    print()
    print("Targets (informational):")
    smallest, largest = rows[0], rows[-1]
    if smallest is largest:
        print("(a) cost does not grow with size: not measured (needs two sizes)")
    else:
        growth = statistics.median(largest.ours) / statistics.median(smallest.ours)
        best = min(largest.ours) / min(smallest.ours)
        verdict = "PASS" if growth <= TARGET_GROWTH else "OVER"
        print(
            f"(a) ours at {largest.size:,} / ours at {smallest.size:,} interactions <= {TARGET_GROWTH:.0f}× "
            f"-> {verdict} ({growth:.2f}× on medians, {best:.2f}× best-of-{len(largest.ours)})"
        )
    at = next((r for r in rows if r.size == TARGET_SPEEDUP_SIZE and r.vcrpy is not None), None)
    if at is None:
        print(f"(b) ours >= {TARGET_SPEEDUP:.0f}× faster than vcrpy at {TARGET_SPEEDUP_SIZE:,}: not measured")
    else:
        vcrpy = at.vcrpy or []
        speedup = statistics.median(vcrpy) / statistics.median(at.ours)
        best = min(vcrpy) / min(at.ours)
        verdict = "PASS" if speedup >= TARGET_SPEEDUP else "OVER (see --profile 1000)"
        print(
            f"(b) ours >= {TARGET_SPEEDUP:.0f}× faster than vcrpy (body matching) at {TARGET_SPEEDUP_SIZE:,} "
            f"interactions -> {verdict} ({speedup:,.0f}× on medians, {best:,.0f}× best-of-{len(vcrpy)})"
        )
    half, full = size_rows
    native_growth = full.native_bytes / half.native_bytes
    verdict = "PASS" if native_growth <= TARGET_LINEAR else "OVER"
    print(
        f"(c) native file linear: size({full.turns})/size({half.turns}) <= {TARGET_LINEAR} -> {verdict} "
        f"({native_growth:.2f}; vcrpy {full.vcrpy_bytes / half.vcrpy_bytes:.2f}; at {full.turns} turns vcrpy's "
        f"file is {full.vcrpy_bytes / full.native_bytes:.1f}× the native one)"
    )


async def profile(size: int, top: int, folder: Path) -> None:
    fixture = build_fixture(size, folder)
    await time_ours(fixture, 1)  # warm-up, unprofiled
    player = CassettePlayer.from_cassette(fixture.cassette, strict=True)
    profiler = cProfile.Profile()
    async with httpx2.AsyncClient(transport=CassetteTransport(player)) as client:
        profiler.enable()
        await send_requests(client, fixture.bodies)
        profiler.disable()
    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    repo = str(Path(__file__).resolve().parent.parent) + os.sep
    rows = []
    for (filename, line, name), (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        where = filename.removeprefix(repo)
        if "site-packages" in where:
            where = where.split("site-packages" + os.sep, 1)[1]
        elif where.startswith(sys.base_prefix):
            where = "stdlib:" + Path(where).name
        rows.append((cumtime, tottime, ncalls, f"{where}:{line}({name})"))
    rows.sort(reverse=True)
    print()
    print(
        f"cProfile of one replay of {size:,} interactions through CassetteTransport "
        f"({total * 1e3:.1f} ms under the profiler, {total / size * 1e6:.1f} µs/request); "
        f"top {top} by cumulative time:"
    )
    print(f"{'cumulative ms':>14} {'own ms':>9} {'calls':>8}  function")
    for cumtime, tottime, ncalls, where in rows[:top]:
        print(f"{cumtime * 1e3:>14.1f} {tottime * 1e3:>9.1f} {ncalls:>8}  {where}")


def measure_cold(args: argparse.Namespace) -> dict[int, list[tuple[float, float]]]:
    """Target 2's cold column, per size: measured first, in children forked before this process
    replays anything (bench/fresh_process.py)."""
    return {
        size: per_request.measure_cold(
            size, lambda size=size: scaling_interactions(size, deltas=per_request.ANSWER_CHUNKS - 6), repeat=args.repeat
        )
        for size in sorted(set(args.request_sizes or args.sizes))
    }


async def run_per_request(args: argparse.Namespace, cold: dict[int, list[tuple[float, float]]]) -> None:
    """Target 2's rows (bench/per_request.py): ours against a bare MockTransport, 30 chunks."""
    rows = []
    for size in sorted(set(args.request_sizes or args.sizes)):
        interactions = scaling_interactions(size, deltas=per_request.ANSWER_CHUNKS - 6)
        rows.append(
            await per_request.measure_per_request(
                size, interactions, repeat=args.repeat, min_requests=args.min_requests, cold=cold.get(size, ())
            )
        )
    per_request.print_per_request(rows)


async def run(args: argparse.Namespace, cold: dict[int, list[tuple[float, float]]]) -> None:
    with tempfile.TemporaryDirectory(prefix="replay-scaling-") as tmp:
        rows = [await measure_size(size, args, Path(tmp)) for size in sorted(set(args.sizes))]
        size_rows = measure_file_sizes(args.turns)
        print_table(rows)
        print_sizes(size_rows)
        print_targets(rows, size_rows)
        await run_per_request(args, cold)
        if args.profile:
            await profile(args.profile, args.top, Path(tmp))
    print_load_section(args)


def print_load_section(args: argparse.Namespace) -> None:
    """Speed targets 1 (load beside vcrpy's loader) and 4 (a replay's memory): `replay_load.py`."""
    if not args.load_sizes:
        return
    from replay_load import load_tables, print_load_tables  # a sibling script, imported when used

    with tempfile.TemporaryDirectory(prefix="replay-load-") as tmp:
        load_rows, memory_rows = load_tables(args.load_sizes, args.repeat, Path(tmp))
    print_load_tables(load_rows, memory_rows, args.repeat)


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of counts") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError("sizes must be positive interaction counts")
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=_sizes, default=list(DEFAULT_SIZES), help="interaction counts (default 10,100,1000,10000)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions, median reported (default 3)")
    parser.add_argument("--quick", action="store_true", help=f"skip vcrpy at {QUICK_VCRPY_LIMIT:,} interactions")
    parser.add_argument("--vcrpy-sample", type=int, default=20, help="requests vcrpy times per repetition (default 20)")
    parser.add_argument(
        "--min-requests", type=int, default=2_000, help="requests ours and bare time per repetition (default 2000)"
    )
    parser.add_argument("--turns", type=int, default=200, help="session length for the file-size table (default 200)")
    parser.add_argument(
        "--request-sizes", type=_sizes, default=None, help="interaction counts of target 2's rows (default: --sizes)"
    )
    parser.add_argument(
        "--only-per-request", action="store_true", help="print target 2's rows only (no scaling table, no vcrpy)"
    )
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="also cProfile ours at N interactions")
    parser.add_argument("--top", type=int, default=25, help="functions to list with --profile (default 25)")
    parser.add_argument(
        "--load-sizes",
        type=lambda text: [] if text in ("", "0", "none") else _sizes(text),
        default=None,
        help="sizes for the load and memory rows (targets 1 and 4; default 200,1000,10000, --quick 200,1000; none)",
    )
    args = parser.parse_args(argv)
    if args.load_sizes is None:
        args.load_sizes = [200, 1_000] if args.quick else [200, 1_000, 10_000]
    if min(args.repeat, args.vcrpy_sample, args.min_requests) < 1 or args.turns < 2 or args.profile < 0:
        parser.error("--repeat, --vcrpy-sample and --min-requests must be at least 1, --turns at least 2")
    print_header(args)
    sys.stdout.flush()
    cold = measure_cold(args)  # before anything here replays: see bench/fresh_process.py
    asyncio.run(run_per_request(args, cold) if args.only_per_request else run(args, cold))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
