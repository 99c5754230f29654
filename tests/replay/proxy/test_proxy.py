"""``replay proxy`` (`CassetteProxy`), specified through the clients it is for: a subprocess agent
on the SDK that knows only ``ANTHROPIC_BASE_URL``, curl, raw HTTP, and the SDK in process. The
upstream is the project's fake model server on loopback; "the upstream gone" is that server
stopped."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from replay.cassette import CassetteError, CassettePlayer, CassetteTransport, load_cassette
from replay.cassette.interaction import parse_sse
from replay.fake.model import FakeModel
from replay.fake.scenario import Scenario
from replay.fake.server import FakeModelServer
from replay.proxy import MISS_STATUS, CassetteProxy, ProxyOutcome
from tests.replay.proxy.helpers import MODEL, SHOUTING, raw_exchange, run_agent

STREAMED = {"model": MODEL, "max_tokens": 64, "stream": True, "messages": [{"role": "user", "content": "hi"}]}

Proxy = Callable[..., CassetteProxy]


@pytest.fixture
def upstream() -> Iterator[FakeModelServer]:
    """The fake model server playing SHOUTING, to record against."""
    with FakeModelServer(FakeModel(SHOUTING)) as server:
        yield server


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    """Starts CassetteProxies and stops them after the test."""
    started: list[CassetteProxy] = []

    def start(cassette: Path, **options: Any) -> CassetteProxy:
        server = CassetteProxy(cassette, **options)
        started.append(server)
        server.start()
        return server

    yield start
    for server in started:
        server.stop()


def text_turn(text: str) -> dict[str, Any]:
    return {"content": [{"text": text}]}


# --- record, then replay with the upstream gone ----------------------------------------------


def test_a_subprocess_agent_records_through_the_proxy_and_replays_with_the_upstream_gone(
    tmp_path: Path, upstream: FakeModelServer, proxy: Proxy
) -> None:
    cassette = tmp_path / "agent.yaml"

    recording = proxy(cassette, mode="once", upstream=upstream.url)
    recorded = run_agent(recording.url, "Shout hello.")
    recording.stop()
    upstream.stop()
    replaying = proxy(cassette, mode="none")
    replayed = run_agent(replaying.url, "Shout hello.", api_key="sk-ant-any-key-will-do")

    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout.splitlines() == [
        "text: Let me shout it.",
        "tool: shout {'text': 'hello'}",
        "stop: tool_use msg_fake_0001",
        "text: Done: HELLO, as asked. ünïcödé ✓",
        "stop: end_turn msg_fake_0002",
    ]
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout
    assert [r.outcome for r in recording.requests] == [ProxyOutcome.RECORDED] * 2
    assert [r.outcome for r in replaying.requests] == [ProxyOutcome.MATCH] * 2
    assert [r.fingerprint for r in replaying.requests] == [r.fingerprint for r in recording.requests]
    assert replaying.player is not None and replaying.player.unplayed() == []


def test_streamed_events_replay_byte_for_byte_one_chunk_per_event(
    tmp_path: Path, upstream: FakeModelServer, proxy: Proxy
) -> None:
    cassette = tmp_path / "raw.yaml"

    recording = proxy(cassette, mode="once", upstream=upstream.url)
    recorded_head, recorded_chunks = raw_exchange(recording.url, STREAMED)
    recording.stop()
    upstream.stop()
    replayed_head, replayed_chunks = raw_exchange(proxy(cassette, mode="none").url, STREAMED)

    assert recorded_head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert replayed_chunks == recorded_chunks
    assert all(chunk.endswith(b"\n\n") and chunk.count(b"\n\n") == 1 for chunk in recorded_chunks)
    events = [parse_sse(chunk)[0] for chunk in recorded_chunks]  # type: ignore[index]
    assert [event.event for event in events] == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert b"request-id: req_fake_0001" in replayed_head


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not on PATH")
def test_curl_records_and_replays_through_the_proxy(tmp_path: Path, upstream: FakeModelServer, proxy: Proxy) -> None:
    cassette = tmp_path / "curl.yaml"

    def curl(base_url: str) -> str:
        command = [
            *("curl", "--silent", "--show-error", "--no-buffer", "--noproxy", "*", "--max-time", "10"),
            *("--header", "x-api-key: sk-ant-test", "--header", "content-type: application/json"),
            *("--data", json.dumps(STREAMED), f"{base_url}/v1/messages"),
        ]
        return subprocess.run(command, capture_output=True, text=True, timeout=20, check=True).stdout

    recorded = curl(proxy(cassette, mode="once", upstream=upstream.url).url)
    upstream.stop()
    replayed = curl(proxy(cassette, mode="none").url)

    assert replayed == recorded
    assert recorded.startswith("event: message_start\n")
    assert '"text":"Let me shout it."' in recorded


# --- misses, faults, the file ----------------------------------------------------------------


def test_a_miss_answers_599_with_the_diagnosis_and_logs_it(
    tmp_path: Path, upstream: FakeModelServer, proxy: Proxy
) -> None:
    cassette = tmp_path / "miss.yaml"
    raw_exchange(proxy(cassette, mode="once", upstream=upstream.url).url, STREAMED)  # saved when it ends
    upstream.stop()
    log: list[str] = []
    replaying = proxy(cassette, mode="none", on_log=log.append)
    changed = {**STREAMED, "max_tokens": 7}

    with anthropic.Anthropic(api_key="sk-ant-test", base_url=replaying.url, max_retries=2) as client:
        with pytest.raises(anthropic.APIStatusError) as caught:
            client.messages.create(**changed)

    message = caught.value.body["error"]["message"]
    assert caught.value.status_code == MISS_STATUS
    assert caught.value.body["error"]["type"] == "cassette_miss"
    assert message.startswith("No recorded interaction matches request 1: POST /v1/messages")
    assert "differs at max_tokens" in message
    assert "--record-mode new_episodes" in message
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert [r.outcome for r in replaying.requests] == [ProxyOutcome.MISS]  # not retried
    assert log[0] == message == replaying.misses[0]
    assert re.fullmatch(r"[0-9a-f]{12} POST /v1/messages miss 599 \d+ ms", log[1])


def test_a_dropped_connection_is_recorded_and_replayed_as_the_same_drop(tmp_path: Path, proxy: Proxy) -> None:
    cassette = tmp_path / "drop.yaml"
    dropping = Scenario.from_list([{"fault": "drop_connection", "after_events": 2, "content": [{"text": "Cut."}]}])

    def stream(base_url: str) -> tuple[list[str], httpx2.RemoteProtocolError]:
        events: list[str] = []
        with anthropic.Anthropic(api_key="sk-ant-test", base_url=base_url, max_retries=0) as client:
            with pytest.raises(httpx2.RemoteProtocolError) as caught:
                for event in client.messages.create(**STREAMED):
                    events.append(event.type)
        return events, caught.value

    with FakeModelServer(FakeModel(dropping)) as upstream:
        recorded = stream(proxy(cassette, mode="once", upstream=upstream.url).url)
    replayed = stream(proxy(cassette, mode="none").url)

    assert recorded[0] == replayed[0] == ["message_start", "content_block_start"]
    assert str(recorded[1]) == str(replayed[1])
    fault = load_cassette(cassette).interactions[0].response.fault
    assert fault is not None and (fault.kind, fault.after_events) == ("dropped_connection", 2)


def test_an_upstream_that_never_answers_is_recorded_and_replayed_as_no_response(tmp_path: Path, proxy: Proxy) -> None:
    cassette = tmp_path / "refused.yaml"

    def ask(base_url: str) -> anthropic.APIConnectionError:
        with anthropic.Anthropic(api_key="sk-ant-test", base_url=base_url, max_retries=0) as client:
            with pytest.raises(anthropic.APIConnectionError) as caught:
                client.messages.create(**{**STREAMED, "stream": False})
        return caught.value

    log: list[str] = []
    recording = proxy(cassette, mode="once", upstream="http://127.0.0.1:9", on_log=log.append)  # nothing listens
    ask(recording.url)
    ask(proxy(cassette, mode="none").url)

    assert log[0].startswith("The upstream http://127.0.0.1:9 did not answer POST")
    assert recording.requests[0].status == 0
    fault = load_cassette(cassette).interactions[0].response.fault
    assert fault is not None and fault.kind == "connection_failed"


def test_an_upstream_that_resets_the_connection_is_recorded_as_no_response(tmp_path: Path, proxy: Proxy) -> None:
    cassette = tmp_path / "reset.yaml"
    resetting = Scenario.from_list([{"fault": "reset_connection"}])

    with FakeModelServer(FakeModel(resetting)) as upstream:
        recording = proxy(cassette, mode="once", upstream=upstream.url)
        with anthropic.Anthropic(api_key="sk-ant-test", base_url=recording.url, max_retries=0) as client:
            with pytest.raises(anthropic.APIConnectionError):
                client.messages.create(**STREAMED)

    assert recording.requests[0].status == 0
    fault = load_cassette(cassette).interactions[0].response.fault
    assert fault is not None and fault.kind == "connection_failed"


def test_the_cassette_is_saved_after_each_interaction_and_new_episodes_appends(
    tmp_path: Path, upstream: FakeModelServer, proxy: Proxy
) -> None:
    cassette = tmp_path / "episodes.yaml"
    first = {**STREAMED, "stream": False}
    recording = proxy(cassette, mode="once", upstream=upstream.url)
    raw_exchange(recording.url, first)
    recording.stop()

    extending = proxy(cassette, mode="new_episodes", upstream=upstream.url)
    raw_exchange(extending.url, first)  # in the cassette: answered from it
    raw_exchange(extending.url, STREAMED)  # not: recorded
    saved_while_running = load_cassette(cassette).interactions  # written before each response ended
    extending.stop()

    assert [r.outcome for r in extending.requests] == [ProxyOutcome.MATCH, ProxyOutcome.RECORDED]
    assert [i.request.body.get("stream") for i in saved_while_running] == [False, True]
    assert not list(tmp_path.glob("*.tmp*"))


def test_all_records_the_cassette_afresh(tmp_path: Path, upstream: FakeModelServer, proxy: Proxy) -> None:
    cassette = tmp_path / "afresh.yaml"
    recording = proxy(cassette, mode="once", upstream=upstream.url)
    raw_exchange(recording.url, {**STREAMED, "stream": False})
    recording.stop()

    again = proxy(cassette, mode="all", upstream=upstream.url)
    raw_exchange(again.url, STREAMED)  # only this one is in the cassette afterwards
    again.stop()

    assert [r.outcome for r in again.requests] == [ProxyOutcome.RECORDED]
    assert [i.request.body.get("stream") for i in load_cassette(cassette).interactions] == [True]


def test_rewrite_keeps_what_matches_up_to_the_first_difference_records_the_rest_and_prunes(
    tmp_path: Path, upstream: FakeModelServer, proxy: Proxy
) -> None:
    cassette = tmp_path / "rewritten.yaml"
    first, second = {**STREAMED, "stream": False}, {**STREAMED, "max_tokens": 32}
    recording = proxy(cassette, mode="once", upstream=upstream.url)
    for body in (first, second, second):
        raw_exchange(recording.url, body)
    recording.stop()
    positioned_at: list[int] = []

    def position(kept: Any) -> None:
        positioned_at.append(len(kept))

    again = proxy(cassette, mode="rewrite", upstream=upstream.url, on_divergence=position)
    raw_exchange(again.url, first)  # as recorded: kept
    raw_exchange(again.url, STREAMED)  # differs: recorded, and the recorded two after it are pruned
    again.stop()

    assert [r.outcome for r in again.requests] == [ProxyOutcome.MATCH, ProxyOutcome.RECORDED]
    assert positioned_at == [1]
    assert again.rewrite_counts is not None and again.rewrite_counts.to_json() == {
        "kept": 1,
        "rerecorded": 1,
        "pruned": 2,
    }
    assert [i.request.body.get("max_tokens") for i in load_cassette(cassette).interactions] == [64, 64]


def test_rewrite_prunes_on_stop_what_a_shorter_session_no_longer_requests(
    tmp_path: Path, upstream: FakeModelServer, proxy: Proxy
) -> None:
    cassette = tmp_path / "shorter.yaml"
    recording = proxy(cassette, mode="once", upstream=upstream.url)
    raw_exchange(recording.url, {**STREAMED, "stream": False})
    raw_exchange(recording.url, STREAMED)
    recording.stop()

    again = proxy(cassette, mode="rewrite", upstream=upstream.url)
    raw_exchange(again.url, {**STREAMED, "stream": False})
    again.stop()

    assert [r.outcome for r in again.requests] == [ProxyOutcome.MATCH]
    assert [i.request.body.get("stream") for i in load_cassette(cassette).interactions] == [False]


def test_a_proxy_cassette_replays_under_the_sdk_transport_too(
    tmp_path: Path, upstream: FakeModelServer, proxy: Proxy
) -> None:
    cassette = tmp_path / "shared.yaml"
    recording = proxy(cassette, mode="once", upstream=upstream.url)
    with anthropic.Anthropic(api_key="sk-ant-test", base_url=recording.url, max_retries=0) as client:
        live = client.messages.create(**{**STREAMED, "stream": False})
    recording.stop()

    transport = CassetteTransport(CassettePlayer.from_cassette(load_cassette(cassette)))
    http_client = httpx2.AsyncClient(transport=transport)

    async def replay() -> anthropic.types.Message:
        async with anthropic.AsyncAnthropic(api_key="k", base_url="http://elsewhere", http_client=http_client) as c:
            return await c.messages.create(**{**STREAMED, "stream": False})

    assert asyncio.run(replay()) == live


def test_the_cassette_holds_no_secret_from_headers_or_prompts(
    tmp_path: Path, upstream: FakeModelServer, proxy: Proxy
) -> None:
    cassette = tmp_path / "secrets.yaml"
    header_key = "sk-ant-api03-" + "H7x" * 30
    prompt_key = "sk-ant-api03-" + "P9q" * 30
    request = {**STREAMED, "messages": [{"role": "user", "content": f"My key is {prompt_key}; shout hello."}]}
    recording = proxy(cassette, mode="once", upstream=upstream.url)

    with anthropic.Anthropic(api_key=header_key, base_url=recording.url, max_retries=0) as client:
        recorded = [event.type for event in client.messages.create(**request)]
    recording.stop()
    replaying = proxy(cassette, mode="none")
    with anthropic.Anthropic(api_key="sk-ant-test", base_url=replaying.url, max_retries=0) as client:
        replayed = [event.type for event in client.messages.create(**request)]

    text = cassette.read_text()
    assert header_key not in text and prompt_key not in text
    assert "sk-ant-api03" not in text
    assert "x-api-key" not in text and "authorization" not in text
    assert "My key is [REDACTED:anthropic-api-key]; shout hello." in text
    assert replayed == recorded  # the live request is scrubbed the same way before it is matched


# --- refusals --------------------------------------------------------------------------------


def test_record_mode_none_without_a_cassette_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="record it first with --record-mode once or all"):
        CassetteProxy(tmp_path / "absent.yaml", mode="none")


def test_a_broken_cassette_is_refused_before_serving(tmp_path: Path) -> None:
    cassette = tmp_path / "broken.yaml"
    cassette.write_text("agent_replay_cassette: 1\ninteractions: [\n")

    with pytest.raises(CassetteError, match=r"broken\.yaml"):
        CassetteProxy(cassette, mode="none")


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"host": "0.0.0.0"}, "only loopback"),
        ({"upstream": "api.anthropic.com"}, "http:// or https://"),
        ({"mode": "sometimes"}, "not one of"),
    ],
)
def test_a_bad_setting_is_refused(tmp_path: Path, options: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        CassetteProxy(tmp_path / "c.yaml", **{"mode": "once", **options})
