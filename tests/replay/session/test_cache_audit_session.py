"""A recorded session's trace audits the prompt cache on the session clock: the prefix the first
prompt cached is read by the next prompt within the TTL, and expires while the user is idle
longer than it — an expected break, the same in the recording and in its replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.session.recording import record_bundle
from replay.session.session_run import replay_bundle
from replay.trace.behaviour import BehaviourTrace, render_text
from replay.trace.request_cache import BreakCause, CacheBreak, RequestCache

SCENARIO = """\
version: 1
prompts: [What is 2 + 2?, And 3 + 3?]
session:
  clock_advance_minutes: [0, {minutes}]
turns:
  - content: [{{text: "4."}}]
  - content: [{{text: "6."}}]
"""


async def two_prompts(root: Path, *, idle_minutes: int) -> tuple[BehaviourTrace, BehaviourTrace]:
    """The recorded trace of two prompts ``idle_minutes`` apart, and its replay's."""
    scenario = root / "scenario.yaml"
    scenario.write_text(SCENARIO.format(minutes=idle_minutes))
    bundle = await record_bundle(root / "bundle", scenario=scenario)
    recorded = BehaviourTrace.from_json(json.loads((root / "bundle" / "trace.json").read_text()))
    replayed = (await replay_bundle(bundle)).behaviour(recorded.session, bundle.spec.prompts)
    return recorded, replayed


def caches(trace: BehaviourTrace) -> list[RequestCache]:
    return [r.cache for _, p in trace.passes() for r in p.requests if r.cache is not None]


async def test_the_next_prompt_within_the_ttl_reads_what_the_first_cached(tmp_path: Path) -> None:
    recorded, replayed = await two_prompts(tmp_path, idle_minutes=4)
    first, second = caches(recorded)
    assert first.written == first.prefix > 0
    assert second.read == first.prefix and second.cache_break is None
    assert replayed.dumps() == recorded.dumps()


@pytest.mark.parametrize("idle_minutes", [6, 61])
async def test_a_prefix_expired_while_the_user_was_idle_is_an_expected_break(tmp_path: Path, idle_minutes: int) -> None:
    recorded, replayed = await two_prompts(tmp_path, idle_minutes=idle_minutes)
    _, second = caches(recorded)
    assert second.read == 0
    # The expired prefix ended at the first prompt's last block: its breakpoint.
    assert second.cache_break == CacheBreak(path="messages[0].content[0]", cause=BreakCause.IDLE_EXPIRED)
    assert f"      cache break at {second.cache_break.path}: idle expired (expected)" in render_text(recorded)
    assert replayed.dumps() == recorded.dumps()


READ_THEN_ANSWER = """\
version: 1
prompts: [Read notes.md.]
turns:
  - content: [{tool_use: {name: Read, input: {file_path: notes.md}}}]
  - content: [{text: "It lists one TODO."}]
"""


async def test_the_audit_counts_what_the_fake_model_reports_when_the_scenario_pins_no_usage(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "notes.md").write_text("# Notes\n- TODO: x\n")
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(READ_THEN_ANSWER)
    await record_bundle(tmp_path / "bundle", scenario=scenario, workspace=source)
    recorded = BehaviourTrace.from_json(json.loads((tmp_path / "bundle" / "trace.json").read_text()))
    reported = [p.model_call["usage"] for _, p in recorded.passes()]
    simulated = [
        {
            "input_tokens": cache.uncached,
            "cache_creation_input_tokens": cache.written,
            "cache_read_input_tokens": cache.read,
        }
        for cache in caches(recorded)
    ]
    assert [{k: v for k, v in usage.items() if k != "output_tokens"} for usage in reported] == simulated
    assert simulated[1]["cache_read_input_tokens"] > 0
