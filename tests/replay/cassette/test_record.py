"""CassetteRecorder: record modes, what gets recorded, and that secrets never reach disk."""

from __future__ import annotations

from pathlib import Path

import anthropic
import httpx2
import pytest
import vcr

from engine import AnthropicModel, EngineSettings, ModelRequest, QueryDeps, QueryEngine
from replay.cassette import load_cassette
from replay.cassette.interaction import FaultKind, RecordedFault
from replay.cassette.record import (
    CassetteNotFoundError,
    CassetteRecorder,
    RecordMode,
    RecordModeError,
    parse_record_mode,
)
from replay.cassette.transport import (
    CONNECTION_FAILED_MESSAGE,
    CassetteMismatchError,
    CassettePlayer,
    CassetteTransport,
)
from replay.fake.model import FakeModel
from replay.fake.scenario import Scenario
from replay.fake.server import FakeModelServer

SECRET_KEY = "sk-ant-api03-Zx9TOPSECRETKEYthatmustneverbewritten0123456789"


def scenario(*texts: str) -> Scenario:
    return Scenario.from_list([{"content": [{"text": t}]} for t in texts])


async def ask(recorder: CassetteRecorder, base_url: str | None, question: str, *, key: str = "sk-ant-test") -> str:
    async with recorder.async_client() as http_client:
        client = anthropic.AsyncAnthropic(api_key=key, base_url=base_url, max_retries=0, http_client=http_client)
        message = await client.messages.create(
            model="claude-sonnet-4-6", max_tokens=100, messages=[{"role": "user", "content": question}]
        )
    return message.content[0].text


def test_record_modes_are_validated_with_a_clear_error() -> None:
    assert parse_record_mode("new_episodes") is RecordMode.NEW_EPISODES
    with pytest.raises(
        RecordModeError, match=r"^Record mode 'sometimes' is not one of none, once, new_episodes, all, rewrite\.$"
    ):
        parse_record_mode("sometimes")


def test_mode_none_with_no_cassette_is_a_clear_error_not_a_network_call(tmp_path: Path) -> None:
    with pytest.raises(CassetteNotFoundError, match=r"does not exist and record mode is 'none'"):
        CassetteRecorder(tmp_path / "missing.yaml").__enter__()
    assert not (tmp_path / "missing.yaml").exists()


async def test_once_records_a_new_cassette_then_only_replays_it(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with FakeModelServer(FakeModel(scenario("first answer"))) as server:
        with CassetteRecorder(path, mode="once") as recorder:
            assert await ask(recorder, server.url, "hi") == "first answer"
    assert len(load_cassette(path).interactions) == 1

    with CassetteRecorder(path, mode="once") as recorder:
        assert not recorder.recording
        assert await ask(recorder, "http://127.0.0.1:9", "hi") == "first answer"  # port 9: nothing listens
        with pytest.raises(anthropic.APIConnectionError) as caught:
            await ask(recorder, "http://127.0.0.1:9", "something new")
        assert isinstance(caught.value.__cause__, CassetteMismatchError)


async def test_new_episodes_replays_what_is_recorded_and_records_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with FakeModelServer(FakeModel(scenario("one"))) as server, CassetteRecorder(path, mode="all") as recorder:
        await ask(recorder, server.url, "first")
    fake = FakeModel(scenario("two"))
    with FakeModelServer(fake) as server, CassetteRecorder(path, mode="new_episodes") as recorder:
        assert await ask(recorder, server.url, "first") == "one"  # from the cassette
        assert await ask(recorder, server.url, "second") == "two"  # from the server, recorded
    assert len(fake.requests) == 1
    assert [i.request.body["messages"][0]["content"] for i in load_cassette(path).interactions] == ["first", "second"]


async def test_all_records_everything_anew(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    for answer in ("old", "new"):
        with FakeModelServer(FakeModel(scenario(answer))) as server, CassetteRecorder(path, mode="all") as recorder:
            await ask(recorder, server.url, "hi")
    (interaction,) = load_cassette(path).interactions
    assert "new" in str(interaction.response.body)


async def test_a_connection_reset_before_any_response_is_recorded_as_connection_failed_and_replays_as_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.yaml"
    turns = Scenario.from_list([{"fault": "reset_connection"}, {"content": [{"text": "retried"}]}])
    with FakeModelServer(FakeModel(turns)) as server, CassetteRecorder(path, mode="all") as recorder:
        with pytest.raises(anthropic.APIConnectionError) as live:
            await ask(recorder, server.url, "hi")
        assert await ask(recorder, server.url, "hi") == "retried"
    failed, answered = load_cassette(path).interactions
    with CassetteRecorder(path, mode="none") as recorder:
        with pytest.raises(anthropic.APIConnectionError) as replayed:
            await ask(recorder, None, "hi")
        assert await ask(recorder, None, "hi") == "retried"

    assert (failed.response.status, failed.response.fault) == (0, RecordedFault(kind=FaultKind.CONNECTION_FAILED))
    assert answered.response.status == 200
    # The live session saw exactly the error its replays see.
    assert (
        repr(live.value.__cause__) == repr(replayed.value.__cause__) == f"ConnectError({CONNECTION_FAILED_MESSAGE!r})"
    )


async def test_count_tokens_calls_are_recorded_like_any_other(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with FakeModelServer(FakeModel(scenario())) as server, CassetteRecorder(path, mode="all") as recorder:
        async with recorder.async_client() as http_client:
            model = AnthropicModel(http_client=http_client, base_url=server.url)
            tokens = await model.count_tokens(
                ModelRequest(model="claude-sonnet-4-6", messages=[{"role": "user", "content": "hi"}], max_tokens=10)
            )
    (interaction,) = load_cassette(path).interactions
    assert interaction.request.path == "/v1/messages/count_tokens"
    assert interaction.response.body == {"input_tokens": tokens}


async def test_compaction_requests_are_recorded_in_order(tmp_path: Path) -> None:
    turns = [
        {
            "content": [{"tool_use": {"name": "Glob", "input": {"pattern": "*"}}}],
            "usage": {"input_tokens": 7_000, "output_tokens": 5},
        },
        {"content": [{"text": "Summary: listed files."}]},
        {"content": [{"text": "Done."}]},
    ]
    path = tmp_path / "c.yaml"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = EngineSettings(context_window=20_000, max_output_tokens=1_000)
    with FakeModelServer(FakeModel(Scenario.from_list(turns))) as server:
        with CassetteRecorder(path, mode="all", workspace=workspace) as recorder:
            async with recorder.async_client() as http_client:
                model = AnthropicModel(http_client=http_client, base_url=server.url)
                engine = QueryEngine(
                    deps=QueryDeps.deterministic(model),
                    workspace=workspace,
                    session_dir=tmp_path / "s",
                    settings=settings,
                )
                async for _ in engine.submit_message("list"):
                    pass
    interactions = load_cassette(path).interactions
    assert len(interactions) == 3
    assert "tools" not in interactions[1].request.body  # the summary request


def test_recordings_share_one_tls_context_made_for_the_environments_certificates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def tls_context(name: str) -> object:
        with CassetteRecorder(tmp_path / name, mode=RecordMode.ALL) as recorder:
            return recorder.recording_transport().inner._pool._ssl_context

    first = tls_context("a.yaml")

    assert tls_context("b.yaml") is first, "loading the CA store once a process, not once a recording"
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    assert tls_context("c.yaml") is not first


async def test_a_key_never_reaches_any_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with FakeModelServer(FakeModel(scenario(f"echo {SECRET_KEY}"))) as server:
        with CassetteRecorder(path, mode="all") as recorder:
            await ask(recorder, server.url, f"my key is {SECRET_KEY}", key=SECRET_KEY)
    for written in tmp_path.rglob("*"):
        if written.is_file():
            data = written.read_bytes()
            assert SECRET_KEY.encode() not in data, f"{written} holds the key"
            assert b"authorization" not in data.lower()
    assert "[REDACTED:anthropic-api-key]" in path.read_text()


async def test_a_plain_vcrpy_cassette_of_an_sdk_session_replays_through_the_transport(tmp_path: Path) -> None:
    path = tmp_path / "plain.yaml"
    with FakeModelServer(FakeModel(scenario("recorded by vcrpy"))) as server:
        with vcr.VCR(record_mode="all").use_cassette(str(path)):
            async with httpx2.AsyncClient() as http_client:
                client = anthropic.AsyncAnthropic(
                    api_key="sk-ant-test", base_url=server.url, max_retries=0, http_client=http_client
                )
                stream = await client.messages.create(
                    model="claude-sonnet-4-6",
                    max_tokens=100,
                    messages=[{"role": "user", "content": "hi"}],
                    stream=True,
                )
                async for _ in stream:
                    pass
    assert "interactions:" in path.read_text()  # vcrpy's own YAML

    player = CassettePlayer.from_cassette(load_cassette(path))
    client = anthropic.AsyncAnthropic(
        api_key="sk-ant-test", max_retries=0, http_client=httpx2.AsyncClient(transport=CassetteTransport(player))
    )
    stream = await client.messages.create(
        model="claude-sonnet-4-6", max_tokens=100, messages=[{"role": "user", "content": "hi"}], stream=True
    )
    text = "".join([e.delta.text async for e in stream if e.type == "content_block_delta"])
    assert text == "recorded by vcrpy"
