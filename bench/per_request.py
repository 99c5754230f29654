"""Speed target 2 for ``bench/replay_scaling.py``: what ``CassetteTransport`` costs per
request beside a bare ``httpx2.MockTransport`` returning the same bytes in the same 30 chunks.

Method
------
- Traffic: ``scaling_interactions`` (sessions of six requests that re-send their history, every
  body different) with answers of 30 server-sent events (``sse_answer`` with 24 text deltas),
  kept in memory as a ``Cassette`` (loading is the load columns' business). Request bodies are the
  recorded bodies as compact JSON in the order the SDK builds them (``model``, ``max_tokens``,
  ``stream``, ``system``, ``tools``, ``messages``).
- *ours*: ``httpx2.AsyncClient(transport=CassetteTransport(player))`` with a fresh
  ``CassettePlayer.from_cassette`` per pass, as a replay does: the player's own caches start
  cold, and what the process keeps between replays stays (a response's 30 chunks, encoded at its
  first replay and kept on the loaded cassette; the bodies already keyed, known by their bytes
  — ``replay/cassette/raw_keys.py``; the redactor's scanned strings). The untimed warm-up pays
  those once.
- *rekeyed*: the same, with the bodies known by their bytes forgotten before each pass
  (``raw_body_keys().clear()``), so every body is keyed from its text, but with the secret scan's
  verdicts on each message kept from the passes before: what a replay of a session this process
  has replayed before costs when its bodies' bytes differ (they name the run's own folder).
- *loaded*: the same interactions saved as a cassette file and loaded from it (untimed), replayed
  again and again with a fresh player a pass, as ``replay_bundle`` and the pytest plugin replay:
  a loaded cassette knows the home folder its fingerprints were computed under, so each request
  is first told sent again or not (``replay/cassette/sent_again.py``) and only then keyed; the
  *ours* column's in-memory cassette does not, so its requests go straight to the bodies known by
  their bytes.
- *cold*: a cassette's first replay in a process. The interactions are saved as a cassette file;
  each pass runs in a child forked (``bench/fresh_process.py``) before the parent has replayed
  anything, which loads the file (untimed: loading is targets 1 and 4's business) and replays
  it, sending the bodies as the client built them (a cassette stores a body's keys sorted), so
  nothing the process keeps between replays is known: each request is told sent again by its
  new messages (``replay/cassette/sent_again.py``) or keyed from its text. The child times a bare pass too (over
  objects of its own; half the children time the replay first, half the bare pass), and the
  cold ratio is the children's cold total over their bare total; at least 500 requests a
  repetition, from an even number of children (at most 50).
- *bare*: ``httpx2.AsyncClient(transport=httpx2.MockTransport(handler))`` whose handler returns
  the next recorded answer (status, headers, the same 30 chunks) without looking at the request.
- Each column sends every body with ``client.post`` and reads the whole response; every column
  is checked to return the recorded bytes. Passes alternate ours, bare, rekeyed, loaded, ours,
  bare ... until each has sent ``min_requests``; a repetition's ratios are ours', the rekeyed and
  the loaded totals over bare's, so all see the same load.
  Times are CPU time of this process (``time.process_time``): on a shared machine, time spent
  descheduled would land on whichever column was running. Before each repetition (and in a cold
  child before its passes) what the process holds is collected and frozen (`set_aside`): a full
  collection walks every object, the bench's own interactions and loaded cassette included, so
  one costs tens of milliseconds at 1,000 interactions and lands on whichever pass is running
  when it comes due (ours read 0.7x or 2x at 1,000 depending on the order of the passes); the
  young collections the passes' own objects cause are still counted. The table shows the median
  of the repetitions; PASS when the median ratio is at most 1.5 (printed for each column of ours).
"""

from __future__ import annotations

import asyncio
import gc
import math
import os
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from unittest.mock import patch

import httpx2
from fresh_process import in_fresh_child  # beside this script

from replay.cassette import Cassette, load_cassette, save_cassette
from replay.cassette._compiled import CACHE_ENV
from replay.cassette.interaction import Interaction
from replay.cassette.raw_keys import raw_body_keys
from replay.cassette.transport import CassettePlayer, CassetteTransport

TARGET_RATIO = 1.5  # ours / bare MockTransport, per request
ANSWER_CHUNKS = 30
URL = "https://api.anthropic.com/v1/messages"
REQUEST_HEADERS = {"anthropic-version": "2023-06-01", "content-type": "application/json"}


@dataclass
class PerRequestRow:
    size: int
    ours: list[float]  # seconds per request, per repetition
    bare: list[float]
    ratios: list[float]
    first: list[float] = field(default_factory=list)  # rekeyed: seconds per request
    first_ratios: list[float] = field(default_factory=list)
    cold: list[float] = field(default_factory=list)  # a cassette's first replay in a process
    cold_ratios: list[float] = field(default_factory=list)
    loaded: list[float] = field(default_factory=list)  # a later replay of a loaded cassette
    loaded_ratios: list[float] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    @property
    def first_ratio(self) -> float:
        return statistics.median(self.first_ratios)

    @property
    def cold_ratio(self) -> float:
        return statistics.median(self.cold_ratios)

    @property
    def loaded_ratio(self) -> float:
        return statistics.median(self.loaded_ratios)


class Chunks(httpx2.AsyncByteStream):
    """A response body that arrives in the given chunks (the other benches use it too)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


def mock_transport(interactions: Sequence[Interaction]) -> tuple[httpx2.MockTransport, Callable[[], None]]:
    """A bare ``MockTransport`` answering the recorded responses in order, and its rewind."""
    answers = [(list(i.response.headers.items()), i.response.chunks()) for i in interactions]
    position = [0]

    def handler(request: httpx2.Request) -> httpx2.Response:
        headers, chunks = answers[position[0]]
        position[0] += 1
        return httpx2.Response(200, headers=headers, stream=Chunks(chunks))

    def rewind() -> None:
        position[0] = 0

    return httpx2.MockTransport(handler), rewind


async def _send(client: httpx2.AsyncClient, bodies: Sequence[bytes], expected: Sequence[bytes], column: str) -> float:
    start = time.process_time()
    responses = [await client.post(URL, content=body, headers=REQUEST_HEADERS) for body in bodies]
    elapsed = time.process_time() - start
    for number, (response, body) in enumerate(zip(responses, expected, strict=True), start=1):
        if response.status_code != 200 or response.content != body:
            raise SystemExit(f"{column}: response {number} is not the recorded one")
    return elapsed


MIN_COLD_REQUESTS = 500
MAX_COLD_CHILDREN = 50


def measure_cold(
    size: int, make_interactions: Callable[[], list[Interaction]], *, repeat: int
) -> list[tuple[float, float]]:
    """Per repetition, the cold passes' and the bare passes' seconds per request, each pair from
    children forked from this process (call it before this process replays anything)."""
    # An even number of children, half replaying first: the first pass in a fresh process also
    # grows its heap for the responses it keeps (about 20 µs a request at 1,000), whichever it is.
    children = 2 * min(MAX_COLD_CHILDREN // 2, math.ceil(MIN_COLD_REQUESTS / (2 * size)))
    repetitions = []
    with tempfile.TemporaryDirectory(prefix="per-request-cold-") as folder:
        cassette_file = Path(folder) / "cassette.yaml"
        save_cassette(Cassette(interactions=make_interactions()), cassette_file)
        for _ in range(repeat):
            cold_total = bare_total = 0.0
            for child in range(children):
                cold, bare = in_fresh_child(
                    lambda first=child % 2 == 0: asyncio.run(
                        _cold_and_bare(cassette_file, make_interactions, cold_first=first)
                    )
                )
                cold_total += cold
                bare_total += bare
            repetitions.append((cold_total / (children * size), bare_total / (children * size)))
    return repetitions


async def _cold_and_bare(
    cassette_file: Path, make_interactions: Callable[[], list[Interaction]], *, cold_first: bool
) -> tuple[float, float]:
    """In a fresh child: one replay of the cassette file, loaded from its YAML, and one bare pass
    over interactions of its own, in the order given."""
    os.environ[CACHE_ENV] = "off"  # no compiled copy written beside the user's
    cassette = load_cassette(cassette_file)
    sent = make_interactions()
    # What the client sends (a cassette stores a body's keys sorted; the client's order is its own).
    bodies = [i.request.body_bytes() for i in sent]
    expected = [i.response.body_bytes() for i in cassette.interactions]
    bare_transport, _ = mock_transport(sent)
    player = CassettePlayer.from_cassette(cassette, strict=True)
    async with (
        httpx2.AsyncClient(transport=CassetteTransport(player)) as ours_client,
        httpx2.AsyncClient(transport=bare_transport) as bare_client,
    ):
        set_aside()
        if cold_first:
            cold = await _send(ours_client, bodies, expected, "cold replay")
            bare = await _send(bare_client, bodies, expected, "bare")
        else:
            bare = await _send(bare_client, bodies, expected, "bare")
            cold = await _send(ours_client, bodies, expected, "cold replay")
    player.finish()
    return cold, bare


async def measure_per_request(
    size: int,
    interactions: Sequence[Interaction],
    *,
    repeat: int,
    min_requests: int,
    cold: Sequence[tuple[float, float]] = (),
) -> PerRequestRow:
    """Ours and the bare MockTransport over ``interactions``, passes alternating."""
    cassette = Cassette(interactions=list(interactions))
    cassette.computed_fingerprints = cassette.fingerprints()  # as a loader leaves them: not per pass
    bodies = [i.request.body_bytes() for i in interactions]
    expected = [i.response.body_bytes() for i in interactions]
    if any(len(i.response.chunks()) != ANSWER_CHUNKS for i in interactions):
        raise SystemExit(f"every answer must come in {ANSWER_CHUNKS} chunks")
    passes = math.ceil(min_requests / size)
    loaded = _loaded(cassette)
    expected_loaded = [i.response.body_bytes() for i in loaded.interactions]
    ours_transport = CassetteTransport(CassettePlayer.from_cassette(cassette, strict=True))
    bare_transport, rewind = mock_transport(interactions)
    row = PerRequestRow(size, [], [], [])
    row.cold = [seconds for seconds, _ in cold]
    row.cold_ratios = [seconds / bare for seconds, bare in cold]
    async with (
        httpx2.AsyncClient(transport=ours_transport) as ours_client,
        httpx2.AsyncClient(transport=bare_transport) as bare_client,
    ):
        for repetition in range(repeat + 1):  # the first is a warm-up
            ours_total = bare_total = first_total = loaded_total = 0.0
            set_aside()
            for _ in range(passes):
                ours_transport.player = player = CassettePlayer.from_cassette(cassette, strict=True)
                ours_total += await _send(ours_client, bodies, expected, "ours")
                player.finish()  # strict: raises if an interaction was not played
                rewind()
                bare_total += await _send(bare_client, bodies, expected, "bare")
                raw_body_keys().clear()  # the first replay: every body keyed from its text
                ours_transport.player = player = CassettePlayer.from_cassette(cassette, strict=True)
                first_total += await _send(ours_client, bodies, expected, "rekeyed replay")
                player.finish()
                ours_transport.player = player = CassettePlayer.from_cassette(loaded, strict=True)
                loaded_total += await _send(ours_client, bodies, expected_loaded, "loaded replay")
                player.finish()
            if repetition:
                row.ours.append(ours_total / (passes * size))
                row.bare.append(bare_total / (passes * size))
                row.ratios.append(ours_total / bare_total)
                row.first.append(first_total / (passes * size))
                row.first_ratios.append(first_total / bare_total)
                row.loaded.append(loaded_total / (passes * size))
                row.loaded_ratios.append(loaded_total / bare_total)
    gc.unfreeze()  # the collector as it was, for what the caller measures next
    return row


def set_aside() -> None:
    """Collect, then freeze what is left, so that the full collections a pass may cause walk only
    what the passes made since (see the module)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def _loaded(cassette: Cassette) -> Cassette:
    """``cassette`` saved as a file and loaded from it, as a replay loads one (no compiled copy)."""
    with tempfile.TemporaryDirectory(prefix="per-request-loaded-") as folder:
        path = Path(folder) / "cassette.yaml"
        save_cassette(Cassette(interactions=cassette.interactions), path)
        with patch.dict(os.environ, {CACHE_ENV: "off"}):  # no compiled copy of a temp file
            return load_cassette(path)


def print_per_request(rows: Sequence[PerRequestRow]) -> None:
    print()
    print(
        f"Target 2: per request, ours beside a bare httpx2.MockTransport returning the same bytes in "
        f"{ANSWER_CHUNKS} chunks (CPU µs/request, median of {len(rows[0].ours) if rows else 0}; passes alternate)"
    )
    print("ours: a replay after the first in the process (bodies known by their bytes); rekeyed: every body keyed")
    print("from its text, the secret scan's verdicts kept; cold: a cassette's first replay in a fresh process;")
    print("loaded: a later replay of the cassette loaded from its file (each request told sent again first)")
    header = (
        f"{'interactions':>12} {'ours µs/req':>12} {'rekeyed':>8} {'cold':>7} {'loaded':>7} {'bare µs/req':>12} "
        f"{'ours÷bare':>10} {'rekeyed÷':>9} {'cold÷':>6} {'loaded÷':>8} {'target':>7} {'ours':>5} {'rekeyed':>8} "
        f"{'cold':>5} {'loaded':>7}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        cold = statistics.median(row.cold) * 1e6 if row.cold else float("nan")
        cold_ratio = row.cold_ratio if row.cold_ratios else float("nan")
        print(
            f"{row.size:>12,} {statistics.median(row.ours) * 1e6:>12.1f} {statistics.median(row.first) * 1e6:>8.1f} "
            f"{cold:>7.1f} {statistics.median(row.loaded) * 1e6:>7.1f} {statistics.median(row.bare) * 1e6:>12.1f} "
            f"{row.ratio:>9.2f}× {row.first_ratio:>8.2f}× {cold_ratio:>5.2f}× {row.loaded_ratio:>7.2f}× "
            f"{f'≤{TARGET_RATIO}×':>7} {_verdict(row.ratio):>5} {_verdict(row.first_ratio):>8} "
            f"{_verdict(cold_ratio) if row.cold_ratios else '—':>5} {_verdict(row.loaded_ratio):>7}"
        )
    spreads = ", ".join(
        f"{r.size:,}: {min(r.ratios):.2f}–{max(r.ratios):.2f} "
        f"(rekeyed {min(r.first_ratios):.2f}–{max(r.first_ratios):.2f}, "
        f"loaded {min(r.loaded_ratios):.2f}–{max(r.loaded_ratios):.2f}"
        + (f", cold {min(r.cold_ratios):.2f}–{max(r.cold_ratios):.2f})" if r.cold_ratios else ")")
        for r in rows
    )
    print(f"ratios min–max per size: {spreads}")


def _verdict(ratio: float) -> str:
    return "PASS" if ratio <= TARGET_RATIO else "FAIL"
