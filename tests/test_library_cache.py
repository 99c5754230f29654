"""The prompt cache across the scenario library (cassettes/): every request the engine sends
carries 1–4 cache marks, no bundle breaks the cache unexpectedly except the one recorded to show
such a break, backfilled tool inputs never break it, and a bundle's replay audits the cache
exactly as its recording did."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from replay.session.bundle import TRACE_JSON_FILE, load_bundle
from replay.session.session_run import replay_bundle
from replay.session.verify import find_bundles
from replay.trace.behaviour import BehaviourTrace, RequestTrace
from replay.trace.request_cache import BreakCause, CacheBreak

LIBRARY = Path(__file__).resolve().parent.parent / "cassettes"
BUNDLES = find_bundles([LIBRARY])
CHANGED_SYSTEM_PROMPT = "cache-break-from-changed-system-prompt"


def recorded(bundle: Path) -> BehaviourTrace:
    return BehaviourTrace.from_json(json.loads((bundle / TRACE_JSON_FILE).read_text(encoding="utf-8")))


def messages_requests(trace: BehaviourTrace) -> list[RequestTrace]:
    return [r for _, p in trace.passes() for r in p.requests if r.path.split("?")[0] == "/v1/messages"]


def unexpected_breaks(trace: BehaviourTrace) -> list[CacheBreak]:
    breaks = [r.cache.cache_break for r in messages_requests(trace) if r.cache is not None]
    for prompt in trace.prompts:  # summary requests of a compaction between prompts
        for entry in prompt.before:
            breaks.extend(
                CacheBreak.from_json(cache["break"]) for cache in entry.get("cache", []) if cache.get("break")
            )
    return [found for found in breaks if found is not None and not found.expected]


@pytest.mark.parametrize("bundle", BUNDLES, ids=[b.name for b in BUNDLES])
def test_every_request_the_engine_sent_carries_one_to_four_cache_marks(bundle: Path) -> None:
    requests = messages_requests(recorded(bundle))
    assert requests
    assert [r.fingerprint[:12] for r in requests if r.cache is None or not 1 <= r.cache.marks <= 4] == []


@pytest.mark.parametrize("bundle", BUNDLES, ids=[b.name for b in BUNDLES])
def test_no_bundle_breaks_the_cache_unexpectedly_but_the_one_that_shows_it(bundle: Path) -> None:
    breaks = unexpected_breaks(recorded(bundle))
    if bundle.name == CHANGED_SYSTEM_PROMPT:
        assert breaks == [CacheBreak(path="system[0].text", cause=BreakCause.SYSTEM_PROMPT_CHANGED)]
    else:
        assert breaks == []


def test_backfilled_tool_inputs_never_break_the_cache() -> None:
    trace = recorded(LIBRARY / "backfilled-relative-paths")
    caches = [r.cache for r in messages_requests(trace)]
    assert caches and all(cache is not None and cache.cache_break is None for cache in caches)
    # Each pass after the first reads what the one before it wrote.
    assert all(cache is not None and cache.read > 0 for cache in caches[1:])


@pytest.mark.parametrize("bundle", BUNDLES, ids=[b.name for b in BUNDLES])
def test_a_bundles_replay_audits_the_cache_as_its_recording_did(bundle: Path) -> None:
    loaded = load_bundle(bundle)
    before = recorded(bundle)
    run = asyncio.run(replay_bundle(loaded))
    replayed = run.behaviour(before.session, loaded.spec.prompts)
    assert replayed.dumps() == before.dumps()
