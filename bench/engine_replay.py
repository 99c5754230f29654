"""Speed target 3 for ``bench/loop_overhead.py``: the engine replaying a cassette, per turn,
beside the SDK's floor over the same bytes; and ``replay_bundle`` of the long library session
beside the SDK's floor for its requests.

Method
------
- **Per turn.** The loop-overhead scenario (N turns of text + one ``Echo`` call) is run once
  through the fake model with a transport that keeps every request body and the response bytes
  it got, which become a cassette (in memory, with the recording's folders as its recorded
  paths). Three things are timed, alternating, fresh objects each repetition:

  - *SDK floor*: ``anthropic.AsyncAnthropic(max_retries=0)`` over an ``httpx2.MockTransport``
    that returns the recorded answers in order (the same chunks ``CassetteTransport`` streams),
    ``messages.create(**body, stream=True)`` for each recorded body, every event consumed;
  - *engine over the bare mock*: ``QueryEngine.submit_message`` with the same ``MockTransport``
    (no matching): what the loop itself costs;
  - *engine replay*: ``QueryEngine.submit_message`` over ``CassetteTransport`` with a fresh
    ``CassettePlayer`` (strict) in another workspace folder, as a replay runs. Target: at most
    1.5× the SDK floor. What the process keeps between replays stays (the bodies already keyed,
    known by their bytes: ``replay/cassette/raw_keys.py``);
  - *rekeyed*: the same with those forgotten first (``raw_body_keys().clear()``): every body
    keyed from its text, the secret scan's verdicts on each message kept from the replays
    before (as when a replay's bodies name its own run folder);
  - *cold*: a cassette's first replay in a process. The recording is saved as a cassette file,
    and each of four children forked (``bench/fresh_process.py``) before this process replays
    anything loads it (untimed), runs the SDK floor and the engine over the bare mock once to
    warm the SDK's and the engine's own first use (not the harness's), then times one replay and
    one SDK floor, in alternating order; the row's ratio is the children's totals.
- **Long session.** ``replay_bundle`` of ``cassettes/long-session-crosses-autocompact-twice``
  (loading, workspace copy, engine, tools, transcript) beside the SDK floor for its recorded
  requests: each body through ``create`` (streamed when the request streamed) over a
  ``MockTransport`` with the recorded answers; a recorded error answer raises in the SDK as it
  did for the engine, and is caught. Target: at most 2×. Timed again with the bodies known by
  their bytes forgotten before each replay (rekeyed), and cold as above: four fresh children
  each warm the SDK with one floor, then time one ``replay_bundle`` (its load included) and one
  floor, in alternating order.

Times are CPU time of this process (``time.process_time``; a shared machine's descheduling would
land on whichever row ran) and wall time beside them; medians of the repetitions.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import httpx2
from fresh_process import in_fresh_child  # beside this script
from per_request import Chunks

from engine import AnthropicModel, EngineSettings, QueryDeps, QueryEngine, QueryResult, ResultSubtype
from engine.tools.base import Tool
from replay.cassette import Cassette, load_cassette, save_cassette
from replay.cassette.interaction import (
    BodyKind,
    FaultKind,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    parse_sse,
)
from replay.cassette.raw_keys import raw_body_keys
from replay.cassette.transport import CassettePlayer, CassetteTransport
from replay.fake.model import FakeModel, FakeModelTransport
from replay.fake.scenario import Scenario
from replay.session import replay_bundle

TARGET_TURN = 1.5  # engine replay / SDK floor, per turn
TARGET_BUNDLE = 2.0  # replay_bundle of the long session / SDK floor for its requests
LONG_SESSION = Path(__file__).resolve().parent.parent / "cassettes" / "long-session-crosses-autocompact-twice"
API_KEY = "sk-ant-bench-placeholder"
COLD_CHILDREN = 4  # fresh processes per cold row
BASE_URL = "https://api.anthropic.com"


@dataclass
class Timed:
    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)

    async def run(self, work: Callable[[], Awaitable[Any]]) -> None:
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        await work()
        self.cpu.append(time.process_time() - cpu)
        self.wall.append(time.perf_counter() - wall)


def answers_in_order(interactions: Sequence[Interaction]) -> httpx2.MockTransport:
    """A bare ``MockTransport``: the recorded answers in order, the request never looked at."""
    answers = [(i.response.status, list(i.response.headers.items()), i.response.chunks()) for i in interactions]
    position = [0]

    def handler(request: httpx2.Request) -> httpx2.Response:
        status, headers, chunks = answers[position[0]]
        position[0] += 1
        return httpx2.Response(status, headers=headers, stream=Chunks(chunks))

    return httpx2.MockTransport(handler)


class _Keeping(httpx2.AsyncBaseTransport):
    """Forwards to the fake model and keeps each request and the bytes it got back."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner
        self.interactions: list[Interaction] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        response = await self.inner.handle_async_request(request)
        data = await response.aread()
        headers = {k: v for k, v in response.headers.items() if k.lower() in ("content-type", "request-id")}
        events = parse_sse(data)
        recorded = (
            RecordedResponse(status=response.status_code, headers=headers, kind=BodyKind.SSE, body=events)
            if events and "event-stream" in headers.get("content-type", "")
            else RecordedResponse(
                status=response.status_code, headers=headers, kind=BodyKind.JSON, body=json.loads(data)
            )
        )
        path = request.url.path + (f"?{request.url.query.decode()}" if request.url.query else "")
        self.interactions.append(
            Interaction(RecordedRequest(method=request.method, uri=BASE_URL + path, body=json.loads(body)), recorded)
        )
        return httpx2.Response(response.status_code, headers=response.headers, content=data, request=request)


def _engine(transport: httpx2.AsyncBaseTransport, folder: Path, tool: Tool, settings: EngineSettings) -> QueryEngine:
    client = httpx2.AsyncClient(transport=transport)
    workspace = folder / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    return QueryEngine(
        deps=QueryDeps.deterministic(AnthropicModel(http_client=client, api_key=API_KEY)),
        workspace=workspace,
        session_dir=folder / "session",
        tools=[tool],
        settings=settings,
    )


async def _drive(engine: QueryEngine, prompt: str) -> QueryResult:
    result: QueryResult | None = None
    async for item in engine.submit_message(prompt):
        if isinstance(item, QueryResult):
            result = item
    engine.close()
    if result is None or result.subtype is not ResultSubtype.SUCCESS:
        raise SystemExit(f"the engine did not finish the scenario: {result}")
    return result


async def sdk_floor(interactions: Sequence[Interaction]) -> None:
    """Every recorded request through the SDK over a bare mock of the recorded answers."""
    http_client = httpx2.AsyncClient(transport=answers_in_order(interactions))
    client = anthropic.AsyncAnthropic(api_key=API_KEY, http_client=http_client, max_retries=0)
    for interaction in interactions:
        body = dict(interaction.request.body)
        streamed = bool(body.pop("stream", False))
        try:
            if streamed:
                stream = await client.messages.create(**body, stream=True)
                async for _event in stream:
                    pass
                await stream.close()
            else:
                await client.messages.create(**body)
        except (anthropic.APIError, httpx2.HTTPError):
            pass  # a recorded error answer: the engine met it too
    await client.close()


async def replay_in_a_new_folder(cassette: Cassette, prompt: str, tool: Tool, settings: EngineSettings) -> None:
    """The engine replaying ``cassette`` (a strict player) in a fresh temp folder, as a replay runs."""
    with tempfile.TemporaryDirectory(prefix="engine-replay-") as tmp:
        folder = Path(tmp)
        player = CassettePlayer.from_cassette(
            cassette, workspace=folder / "workspace", session_dir=folder / "session", strict=True
        )
        await _drive(_engine(CassetteTransport(player), folder, tool, settings), prompt)
        player.finish()


@dataclass
class TurnRows:
    turns: int
    requests: int
    floor: Timed
    bare_engine: Timed
    replay: Timed
    first: Timed = field(default_factory=Timed)
    cold: tuple[float, float] | None = None  # the children's replay and floor CPU seconds


async def measure_turns(scenario: Scenario, prompt: str, tool: Tool, settings: EngineSettings, repeat: int) -> TurnRows:
    with tempfile.TemporaryDirectory(prefix="engine-replay-record-") as tmp:
        keeping = _Keeping(FakeModelTransport(FakeModel(scenario)))
        folder = Path(tmp)
        result = await _drive(_engine(keeping, folder, tool, settings), prompt)
        recorded_paths = {"workspace": str(folder / "workspace"), "session": str(folder / "session")}
    cassette = Cassette(interactions=keeping.interactions, recorded_paths=recorded_paths)
    cassette.computed_fingerprints = cassette.fingerprints()
    rows = TurnRows(result.num_turns, len(cassette.interactions), Timed(), Timed(), Timed())

    async def bare_engine() -> None:
        with tempfile.TemporaryDirectory(prefix="engine-replay-bare-") as tmp:
            await _drive(_engine(answers_in_order(cassette.interactions), Path(tmp), tool, settings), prompt)

    async def replay() -> None:
        await replay_in_a_new_folder(cassette, prompt, tool, settings)

    async def first_replay() -> None:
        raw_body_keys().clear()  # inside the timing: it costs next to nothing
        await replay()

    await replay()  # warm-up: each answer's chunks are encoded at its first replay
    for _ in range(repeat):
        await rows.floor.run(lambda: sdk_floor(cassette.interactions))
        await rows.bare_engine.run(bare_engine)
        await rows.replay.run(replay)
        await rows.first.run(first_replay)
    return rows


@dataclass
class BundleRows:
    requests: int
    floor: Timed
    replay: Timed
    first: Timed = field(default_factory=Timed)
    cold: tuple[float, float] | None = None  # the children's replay_bundle and floor CPU seconds


async def first_bundle_replay(bundle: Path) -> None:
    raw_body_keys().clear()
    await replay_bundle(bundle)


async def measure_bundle(repeat: int, bundle: Path = LONG_SESSION) -> BundleRows:
    interactions = load_cassette(bundle / "cassette.yaml").interactions
    playable = _playable(bundle)
    rows = BundleRows(len(interactions), Timed(), Timed())
    await replay_bundle(bundle)  # warm-up
    for _ in range(repeat):
        await rows.floor.run(lambda: sdk_floor(playable))
        await rows.replay.run(lambda: replay_bundle(bundle))
        await rows.first.run(lambda: first_bundle_replay(bundle))
    return rows


async def _record(scenario: Scenario, prompt: str, tool: Tool, settings: EngineSettings, cassette_file: Path) -> None:
    """The per-turn scenario recorded as measure_turns records it, saved (nothing is keyed)."""
    with tempfile.TemporaryDirectory(prefix="engine-replay-record-") as tmp:
        keeping = _Keeping(FakeModelTransport(FakeModel(scenario)))
        folder = Path(tmp)
        await _drive(_engine(keeping, folder, tool, settings), prompt)
        recorded_paths = {"workspace": str(folder / "workspace"), "session": str(folder / "session")}
    save_cassette(Cassette(interactions=keeping.interactions, recorded_paths=recorded_paths), cassette_file)


async def _cold_turns(
    cassette_file: Path, prompt: str, tool: Tool, settings: EngineSettings, *, replay_first: bool
) -> tuple[float, float]:
    """In a fresh child: the CPU seconds of a first replay of the cassette file and of the SDK
    floor, after one untimed floor and one engine over the bare mock (the SDK's and the
    engine's own first use), over objects of their own."""
    os.environ["AGENT_REPLAY_CACHE_DIR"] = "off"  # loaded from the YAML, nothing written
    cassette = load_cassette(cassette_file)
    floor_interactions = load_cassette(cassette_file).interactions
    await sdk_floor(floor_interactions)
    with tempfile.TemporaryDirectory(prefix="engine-replay-bare-") as tmp:
        bare = answers_in_order(load_cassette(cassette_file).interactions)
        await _drive(_engine(bare, Path(tmp), tool, settings), prompt)

    async def replay() -> None:
        await replay_in_a_new_folder(cassette, prompt, tool, settings)

    return await _timed_pair(replay, lambda: sdk_floor(floor_interactions), replay_first=replay_first)


async def _cold_bundle(bundle: Path, *, replay_first: bool) -> tuple[float, float]:
    """In a fresh child: the CPU seconds of ``replay_bundle`` and of the SDK floor for its
    requests, after one untimed floor (the SDK's own first use)."""
    await sdk_floor(_playable(bundle))
    floor_interactions = _playable(bundle)
    return await _timed_pair(
        lambda: replay_bundle(bundle), lambda: sdk_floor(floor_interactions), replay_first=replay_first
    )


async def _timed_pair(
    replay: Callable[[], Awaitable[Any]], floor: Callable[[], Awaitable[Any]], *, replay_first: bool
) -> tuple[float, float]:
    replay_timed, floor_timed = Timed(), Timed()
    for timed, work in ((replay_timed, replay), (floor_timed, floor))[:: 1 if replay_first else -1]:
        await timed.run(work)
    return replay_timed.cpu[0], floor_timed.cpu[0]


def _playable(bundle: Path) -> list[Interaction]:
    """The bundle's interactions the SDK floor sends (a recorded connection failure never
    reached the API)."""
    return [
        i
        for i in load_cassette(bundle / "cassette.yaml").interactions
        if not (i.response.fault is not None and i.response.fault.kind is FaultKind.CONNECTION_FAILED)
    ]


def measure_cold(
    scenario: Scenario, prompt: str, tool: Tool, settings: EngineSettings, *, bundle: bool
) -> tuple[tuple[float, float], tuple[float, float] | None]:
    """The cold rows' (replay, floor) CPU totals over `COLD_CHILDREN` fresh children each: call
    it before this process replays anything (bench/fresh_process.py)."""
    with tempfile.TemporaryDirectory(prefix="engine-replay-cold-") as tmp:
        cassette_file = Path(tmp) / "cassette.yaml"
        asyncio.run(_record(scenario, prompt, tool, settings, cassette_file))
        turns = [
            in_fresh_child(
                lambda first=child % 2 == 0: asyncio.run(
                    _cold_turns(cassette_file, prompt, tool, settings, replay_first=first)
                )
            )
            for child in range(COLD_CHILDREN)
        ]
    bundles = None
    if bundle:
        load_cassette(LONG_SESSION / "cassette.yaml")  # its compiled copy made, as for the other rows
        bundles = [
            in_fresh_child(lambda first=child % 2 == 0: asyncio.run(_cold_bundle(LONG_SESSION, replay_first=first)))
            for child in range(COLD_CHILDREN)
        ]
    return _totals(turns), (_totals(bundles) if bundles is not None else None)


def _totals(pairs: Sequence[tuple[float, float]]) -> tuple[float, float]:
    return sum(replay for replay, _ in pairs), sum(floor for _, floor in pairs)


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1e3:,.1f}"


def print_target_3(turn_rows: TurnRows, bundle_rows: BundleRows | None) -> None:
    print()
    print("Target 3: the engine replaying a cassette beside the SDK floor over the same bytes")
    print("(CPU ms of this process, median; wall ms beside it)")
    header = f"{'':<44} {'requests':>8} {'CPU ms':>9} {'wall ms':>9} {'per turn µs':>12} {'÷ floor':>8} {'verdict':>8}"
    print(header)
    print("-" * len(header))
    floor = statistics.median(turn_rows.floor.cpu)
    for label, timed, target in (
        ("SDK floor: create(stream=True) over a mock", turn_rows.floor, None),
        ("engine over the bare mock (no matching)", turn_rows.bare_engine, None),
        ("engine replay (CassetteTransport)", turn_rows.replay, TARGET_TURN),
        ("engine replay, rekeyed", turn_rows.first, TARGET_TURN),
    ):
        cpu = statistics.median(timed.cpu)
        verdict = "" if target is None else ("PASS" if cpu / floor <= target else "FAIL")
        ratio = "—" if timed is turn_rows.floor else f"{cpu / floor:.2f}×"
        print(
            f"{label:<44} {turn_rows.requests:>8} {cpu * 1e3:>9,.1f} {_ms(timed.wall):>9} "
            f"{cpu / turn_rows.turns * 1e6:>12,.1f} {ratio:>8} {verdict:>8}"
        )
    _print_cold("engine replay, cold (first in a fresh process)", turn_rows.cold, TARGET_TURN, turn_rows.turns)
    print(f"target: engine replay ≤ {TARGET_TURN}× the SDK floor per turn ({turn_rows.turns} turns)")
    if bundle_rows is None:
        return
    print()
    name = "long-session-crosses-autocompact-twice"
    header = f"{name:<44} {'requests':>8} {'CPU ms':>9} {'wall ms':>9} {'÷ floor':>8} {'verdict':>8}"
    print(header)
    print("-" * len(header))
    floor = statistics.median(bundle_rows.floor.cpu)
    print(
        f"{'SDK floor for its requests':<44} {bundle_rows.requests:>8} {floor * 1e3:>9,.1f} "
        f"{_ms(bundle_rows.floor.wall):>9} {'—':>8} {'':>8}"
    )
    for label, timed in (
        ("replay_bundle (load, copy, engine, tools)", bundle_rows.replay),
        ("replay_bundle, rekeyed", bundle_rows.first),
    ):
        replay_cpu = statistics.median(timed.cpu)
        verdict = "PASS" if replay_cpu / floor <= TARGET_BUNDLE else "FAIL"
        print(
            f"{label:<44} {bundle_rows.requests:>8} {replay_cpu * 1e3:>9,.1f} "
            f"{_ms(timed.wall):>9} {replay_cpu / floor:>7.2f}× {verdict:>8}"
        )
    _print_cold("replay_bundle, cold (first in a fresh process)", bundle_rows.cold, TARGET_BUNDLE, None)
    print(f"target: replay_bundle ≤ {TARGET_BUNDLE}× the SDK floor for its requests")


def _print_cold(label: str, cold: tuple[float, float] | None, target: float, turns: int | None) -> None:
    if cold is None:
        return
    replay, floor = cold
    ratio = replay / floor
    per_child = f"{replay / COLD_CHILDREN * 1e3:,.1f}"
    per_turn = f" {'':>9} {replay / COLD_CHILDREN / turns * 1e6:>12,.1f}" if turns else f" {'':>9}"
    print(
        f"{label:<44} {'':>8} {per_child:>9}{per_turn} {ratio:>7.2f}× {'PASS' if ratio <= target else 'FAIL':>8}"
        f"  (floor {floor / COLD_CHILDREN * 1e3:,.1f} ms in the same {COLD_CHILDREN} children)"
    )


def run_target_3(
    scenario: Scenario, prompt: str, tool: Tool, settings: EngineSettings, *, repeat: int, bundle: bool
) -> None:
    cold_turns, cold_bundle = measure_cold(scenario, prompt, tool, settings, bundle=bundle)

    async def both() -> tuple[TurnRows, BundleRows | None]:
        turn_rows = await measure_turns(scenario, prompt, tool, settings, repeat)
        return turn_rows, (await measure_bundle(repeat) if bundle else None)

    turn_rows, bundle_rows = asyncio.run(both())
    turn_rows.cold = cold_turns
    if bundle_rows is not None:
        bundle_rows.cold = cold_bundle
    print_target_3(turn_rows, bundle_rows)
