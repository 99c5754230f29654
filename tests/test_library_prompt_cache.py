"""The library's prompt-cache bundles show the cache at work in the usage the fake model reported
(their turns pin no usage, so it is the fake's prompt cache speaking): reads across tool turns,
nothing read after a changed system prompt or an idle gap past the TTL, and a backfilled tool
input that never breaks the prefix, because the input sent back is the model's own. A summary
request built on the conversation's prefix reads the cache too (its trace's cache audit)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replay.cassette import load_cassette
from replay.prompt_cache.cache import minimum_cacheable_tokens
from replay.session.bundle import TRACE_JSON_FILE
from replay.trace.behaviour import BehaviourTrace, RequestTrace

LIBRARY = Path(__file__).resolve().parent.parent / "cassettes"


@dataclass(frozen=True)
class Billed:
    """One request of a bundle: the prompt it served (numbered from 1) and its reported usage."""

    prompt: int
    read: int
    written: int

    @property
    def cached_prefix(self) -> int:
        """The tokens of the prefix this request left in the cache at its last breakpoint."""
        return self.read + self.written


def billed(bundle: str) -> list[Billed]:
    """The bundle's requests in order, from its transcript (one assistant message id each)."""
    prompt = 0
    usage: dict[str, tuple[int, dict[str, int]]] = {}
    for line in (LIBRARY / bundle / "transcript.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        message = record["message"]
        if record["type"] == "user" and isinstance(message["content"], str):
            prompt += 1
        elif record["type"] == "assistant":
            usage[message["id"]] = (prompt, message["usage"])
    return [
        Billed(prompt=p, read=u["cache_read_input_tokens"], written=u["cache_creation_input_tokens"])
        for p, u in usage.values()
    ]


def model(bundle: str) -> str:
    return json.loads((LIBRARY / bundle / "session.json").read_text(encoding="utf-8"))["model"]


def first_request_of(requests: list[Billed], prompt: int) -> int:
    return next(index for index, r in enumerate(requests) if r.prompt == prompt)


def reads_previous_prefix_whole(earlier: Billed, later: Billed) -> bool:
    return later.read == earlier.cached_prefix and later.read > 0


def test_each_tool_turn_reads_the_whole_prefix_the_previous_request_wrote() -> None:
    bundle = "prompt-cache-hits-across-tool-turns"
    first, *rest = requests = billed(bundle)

    assert len(requests) == 4 and {r.prompt for r in requests} == {1}
    assert first.read == 0 and first.written >= minimum_cacheable_tokens(model(bundle))
    for earlier, later in zip(requests, rest, strict=False):
        assert reads_previous_prefix_whole(earlier, later)
        # Only the new tail (the last tool call and its result) is written.
        assert 0 < later.written < later.read


def test_a_changed_system_prompt_reads_nothing_of_the_old_prefix() -> None:
    bundle = "cache-break-from-changed-system-prompt"
    requests = billed(bundle)
    second, third = first_request_of(requests, 2), first_request_of(requests, 3)
    switched = requests[second]

    assert reads_previous_prefix_whole(requests[0], requests[1])
    assert switched.read == 0
    assert switched.written > requests[second - 1].cached_prefix  # the whole prefix, anew
    # Under the new system prompt the cache works again.
    assert reads_previous_prefix_whole(switched, requests[third])
    systems = [
        i.request.body["system"][0]["text"] for i in load_cassette(LIBRARY / bundle / "cassette.yaml").interactions
    ]
    assert systems[0] != systems[second] == systems[-1]


def test_an_idle_gap_past_the_ttl_expires_the_prefix_and_the_next_request_reads_again() -> None:
    bundle = "cache-expires-after-idle"
    requests = billed(bundle)
    after_gap = first_request_of(requests, 2)
    minutes = json.loads((LIBRARY / bundle / "session.json").read_text(encoding="utf-8"))["session_options"]

    assert minutes == {"clock_advance_minutes": [0, 7]}
    assert reads_previous_prefix_whole(requests[0], requests[1])
    assert requests[after_gap].read == 0
    assert requests[after_gap].written > requests[after_gap - 1].cached_prefix
    assert reads_previous_prefix_whole(requests[after_gap], requests[after_gap + 1])
    # Well within the microcompact gap: expiry is the only thing the idle time did.
    assert "compaction" not in (LIBRARY / bundle / "trace.txt").read_text(encoding="utf-8")


def produced_tool_inputs(events: Any) -> dict[str, str]:
    """Each tool_use block of a streamed response: its id → the input JSON as the model streamed it."""
    ids: dict[int, str] = {}
    inputs: dict[str, str] = {}
    for event in events:
        data = event.data
        if data["type"] == "content_block_start" and data["content_block"]["type"] == "tool_use":
            ids[data["index"]] = data["content_block"]["id"]
            inputs[ids[data["index"]]] = ""
        elif data["type"] == "content_block_delta" and data["delta"]["type"] == "input_json_delta":
            inputs[ids[data["index"]]] += data["delta"]["partial_json"]
    return inputs


def sent_tool_inputs(body: Any) -> dict[str, str]:
    """Each tool_use block in a request's history: its id → its input, as compact JSON."""
    return {
        block["id"]: json.dumps(block["input"], ensure_ascii=False, separators=(",", ":"))
        for message in body["messages"]
        if message["role"] == "assistant"
        for block in message["content"]
        if block["type"] == "tool_use"
    }


def test_a_backfilled_tool_input_never_breaks_the_cache() -> None:
    bundle = "backfilled-relative-paths"
    interactions = load_cassette(LIBRARY / bundle / "cassette.yaml").interactions
    requests = billed(bundle)
    produced: dict[str, str] = {}

    assert len(requests) == len(interactions) == 3
    for index, interaction in enumerate(interactions):
        sent = sent_tool_inputs(interaction.request.body)
        # Every tool call the model made so far goes back exactly as it streamed it...
        assert sent == produced
        if index:
            # ...so each request reads the whole prefix the one before it wrote.
            assert reads_previous_prefix_whole(requests[index - 1], requests[index])
        produced |= produced_tool_inputs(interaction.response.body)
    assert json.loads(produced[next(iter(produced))]) == {"file_path": "notes.md"}
    # The hook (an observer) saw the backfilled, absolute path all the same.
    log = (LIBRARY / bundle / "transcript.jsonl").read_text(encoding="utf-8")
    assert '\\"file_path\\": \\"<workspace>/notes.md\\"' in log


def audited_requests(bundle: str) -> list[RequestTrace]:
    """The bundle's Messages requests in order, each with its cache audit, from its trace."""
    trace = BehaviourTrace.from_json(json.loads((LIBRARY / bundle / TRACE_JSON_FILE).read_text(encoding="utf-8")))
    return [r for _, p in trace.passes() for r in p.requests if r.cache is not None]


def test_a_conversation_prefix_summary_request_reads_the_whole_prefix_the_first_request_wrote() -> None:
    bundle = "summary-request-reads-the-cache"
    first, summary, after = audited_requests(bundle)
    settings = json.loads((LIBRARY / bundle / "session.json").read_text(encoding="utf-8"))["settings"]

    assert settings["compact_request"] == "conversation_prefix"
    assert (first.purpose, summary.purpose, after.purpose) == ("main", "compact", "main")
    assert first.cache is not None and summary.cache is not None
    assert summary.cache.read == first.cache.written > 0 and summary.cache.cache_break is None


def test_an_own_prompt_summary_request_reads_nothing() -> None:
    bundle = "autocompact-boundary"
    summary = next(r for r in audited_requests(bundle) if r.purpose == "compact")
    settings = json.loads((LIBRARY / bundle / "session.json").read_text(encoding="utf-8"))["settings"]

    assert settings["compact_request"] == "own_prompt"
    assert summary.cache is not None and summary.cache.read == 0
