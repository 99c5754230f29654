"""vcrpy and the native format: plain vcrpy cassettes load, and vcrpy records and plays native cassettes."""

from __future__ import annotations

import base64
import gzip
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
import vcr
import vcr.serialize
from vcr.errors import CannotOverwriteExistingCassetteException
from vcr.persisters.filesystem import CassetteDecodeError, CassetteNotFoundError
from vcr.request import Request
from vcr.serializers import jsonserializer, yamlserializer

from replay.cassette import (
    FAULT_KEY,
    AgentReplaySerializer,
    AtomicPersister,
    Cassette,
    CassetteError,
    CassetteSource,
    dumps_cassette,
    fingerprints,
    interactions_from_vcr,
    load_cassette,
    loads_cassette,
    register_with_vcr,
)
from replay.cassette._vcr import FingerprintMatcher
from replay.cassette.interaction import (
    BodyKind,
    FaultKind,
    Interaction,
    RecordedFault,
    RecordedRequest,
    RecordedResponse,
    SseEvent,
)
from replay.cassette.scrub import scrub_vcr_request, scrub_vcr_response
from replay.cassette.secret_scan import find_secrets
from replay.fake.blocks import TextBlock, ToolUseBlock, Turn
from replay.fake.model import FakeModel
from replay.fake.scenario import Scenario

MODEL = "claude-sonnet-4-6"
KEY = "sk-ant-api03-FakeRecordingKey_0123456789-abcdefghij"
PROMPT = [{"role": "user", "content": "Read app.py"}]


def fake_model() -> FakeModel:
    return FakeModel(
        Scenario.from_list(
            [
                Turn(content=(TextBlock(text="Reading."), ToolUseBlock(name="Read", input={"path": "app.py"}))),
                Turn(content=(TextBlock(text="It prints hello."),)),
            ]
        )
    )


def mock_transport(model: FakeModel, *, gzip_json: bool = False) -> httpx2.MockTransport:
    """The fake model behind an httpx2.MockTransport, which vcrpy patches."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        answer = model.respond(request.method, request.url.raw_path.decode(), request.headers, request.read())
        body = b"".join(answer.chunks)
        headers = list(answer.headers)
        if gzip_json and dict(headers)["content-type"] == "application/json":
            body, headers = gzip.compress(body), [*headers, ("content-encoding", "gzip")]
        return httpx2.Response(answer.status, headers=headers, content=body)

    return httpx2.MockTransport(handle)


@pytest.fixture
def client_on() -> Iterator[Callable[[httpx2.BaseTransport], anthropic.Anthropic]]:
    clients: list[anthropic.Anthropic] = []

    def build(transport: httpx2.BaseTransport, base_url: str | None = None) -> anthropic.Anthropic:
        client = anthropic.Anthropic(
            api_key=KEY, base_url=base_url, max_retries=0, http_client=httpx2.Client(transport=transport)
        )
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.close()


def run_session(client: anthropic.Anthropic) -> list[str]:
    """Two turns (streamed, then not) and a count_tokens call; returns what the SDK read."""
    with client.messages.stream(model=MODEL, max_tokens=256, messages=PROMPT) as stream:
        first = stream.get_final_message()
    tool_use = first.content[1]
    history = [
        *PROMPT,
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "print('hi')"}]},
    ]
    second = client.messages.create(model=MODEL, max_tokens=256, messages=history)
    tokens = client.messages.count_tokens(model=MODEL, messages=history)
    return [first.content[0].text, tool_use.id, second.content[0].text, str(tokens.input_tokens)]


def record_plain(tmp_path: Path, serializer: str, client_on: Any, **options: Any) -> Path:
    my_vcr = vcr.VCR(serializer=serializer, record_mode="once", **options)
    path = tmp_path / f"plain.{serializer}"
    with my_vcr.use_cassette(str(path)):
        run_session(client_on(mock_transport(fake_model(), gzip_json=True)))
    return path


# ---------------------------------------------------------------------------------------------
# Plain vcrpy cassettes as input


@pytest.mark.parametrize(
    ("serializer", "source"), [("yaml", CassetteSource.VCRPY_YAML), ("json", CassetteSource.VCRPY_JSON)]
)
def test_a_plain_vcrpy_cassette_of_an_sdk_session_loads_as_data(
    tmp_path: Path, client_on: Any, serializer: str, source: CassetteSource
) -> None:
    path = record_plain(tmp_path, serializer, client_on, decode_compressed_response=serializer == "json")

    cassette = load_cassette(path)

    assert cassette.source is source
    assert [i.request.path for i in cassette.interactions] == [
        "/v1/messages",
        "/v1/messages",
        "/v1/messages/count_tokens",
    ]
    streamed, created, counted = cassette.interactions
    assert streamed.request.body["messages"] == PROMPT
    assert streamed.response.kind is BodyKind.SSE
    assert streamed.response.body[0].event == "message_start"
    assert created.request.body["messages"][2]["content"][0]["type"] == "tool_result"
    assert created.response.kind is BodyKind.JSON
    assert created.response.body["content"][0]["text"] == "It prints hello."
    assert "content-encoding" not in created.response.headers
    assert counted.response.body == {"input_tokens": counted.response.body["input_tokens"]}
    assert len(set(cassette.fingerprints())) == 3


def test_vcrpy_yaml_with_binary_bodies_loads_them(tmp_path: Path) -> None:
    raw = bytes(range(200, 256))
    requests = [Request("GET", "https://example.com/blob", None, {"Accept": "*/*"})]
    responses = [
        {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Type": ["application/octet-stream"]},
            "body": {"string": raw},
        }
    ]
    text = vcr.serialize.serialize({"requests": requests, "responses": responses}, yamlserializer)
    assert "!!binary" in text

    cassette = loads_cassette(text, source_name="blob.yaml")

    response = cassette.interactions[0].response
    assert response.kind is BodyKind.BINARY
    assert response.body_bytes() == raw
    assert cassette.interactions[0].request.body is None


def test_a_fault_stored_beside_a_vcrpy_response_becomes_a_recorded_fault() -> None:
    body = b'event: ping\ndata: {"type":"ping"}\n\nevent: message_start\ndata: {"ty'
    document = {
        "version": 1,
        "interactions": [
            {
                "request": {"method": "POST", "uri": "https://x/v1/messages", "body": "{}", "headers": {}},
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"content-type": ["text/event-stream"]},
                    "body": {"string": body.decode()},
                    FAULT_KEY: {"kind": "dropped_connection", "after_events": 1, "after_bytes": None},
                },
            }
        ],
    }

    response = loads_cassette(json.dumps(document), source_name="c.json").interactions[0].response

    assert response.fault == RecordedFault(kind=FaultKind.DROPPED_CONNECTION, after_events=1)
    assert response.body == [SseEvent("ping", {"type": "ping"})]


def test_vcrpys_in_memory_interactions_convert_with_faults_and_compression() -> None:
    requests = [
        Request("POST", "https://x/v1/messages", b'{"messages": []}', {"content-type": "application/json"}),
        Request("POST", "https://x/v1/messages", b'{"messages": []}', {"content-type": "application/json"}),
    ]
    responses = [
        {
            "status": {"code": 0, "message": ""},
            "headers": {},
            "body": {"string": b""},
            FAULT_KEY: {"kind": "connection_failed"},
        },
        {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Type": ["application/json"], "Content-Encoding": ["gzip"]},
            "body": {"string": gzip.compress(b'{"id": "msg_1"}')},
        },
    ]

    failed, answered = interactions_from_vcr(requests, responses)

    assert failed.request.body == {"messages": []}
    assert (failed.response.status, failed.response.kind) == (0, BodyKind.EMPTY)
    assert failed.response.fault == RecordedFault(kind=FaultKind.CONNECTION_FAILED)
    assert (answered.response.kind, answered.response.body) == (BodyKind.JSON, {"id": "msg_1"})
    assert answered.response.headers == {"content-type": "application/json"}
    saved = loads_cassette(dumps_cassette(Cassette(interactions=[failed, answered])), source_name="c")
    assert saved.interactions == [failed, answered]


# ---------------------------------------------------------------------------------------------
# The serializer inside vcrpy's own pipeline


def test_the_serializer_round_trips_through_vcrpys_serialize_and_deserialize() -> None:
    serializer = AgentReplaySerializer(recorded_paths={"workspace": "/srv/ws"})
    request = Request(
        "POST",
        "https://api.anthropic.com/v1/messages",
        b'{"messages":[{"content":"hi","role":"user"}],"model":"claude-sonnet-4-6"}',
        {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"},
    )
    sse = (
        b'event: message_start\ndata: {"type":"message_start"}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    response = {
        "status": {"code": 200, "message": "OK"},
        "headers": {"Content-Type": ["text/event-stream"], "request-id": ["req_1"]},
        "body": {"string": sse},
        FAULT_KEY: {"kind": "dropped_connection", "after_events": 1, "after_bytes": None},
    }

    text = vcr.serialize.serialize({"requests": [request], "responses": [response]}, serializer)
    requests, responses = vcr.serialize.deserialize(text, serializer)

    assert text.startswith("# agent-replay cassette") and "recorded_paths:\n  workspace: /srv/ws" in text
    assert KEY not in text
    assert (requests[0].method, requests[0].uri) == (request.method, request.uri)
    assert json.loads(requests[0].body) == json.loads(request.body)
    assert dict(requests[0].headers) == {"content-type": "application/json"}
    assert responses[0]["body"]["string"] == sse
    assert responses[0]["status"] == {"code": 200, "message": "OK"}
    assert responses[0]["headers"] == {"content-type": ["text/event-stream"], "request-id": ["req_1"]}
    assert responses[0][FAULT_KEY] == {"kind": "dropped_connection", "after_events": 1, "after_bytes": None}
    assert vcr.serialize.serialize({"requests": requests, "responses": responses}, serializer) == text


def test_the_serializer_reads_a_plain_vcrpy_cassette_too() -> None:
    requests = [Request("GET", "https://example.com/", b"", {})]
    responses = [{"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": b"hello"}}]
    plain = vcr.serialize.serialize({"requests": requests, "responses": responses}, jsonserializer)

    loaded_requests, loaded_responses = vcr.serialize.deserialize(plain, AgentReplaySerializer())

    assert loaded_requests[0].uri == "https://example.com/"
    assert loaded_responses[0]["body"]["string"] == b"hello"


# ---------------------------------------------------------------------------------------------
# Recording and playing with vcrpy


def test_vcrpy_records_a_native_cassette_without_the_key_and_plays_it_back(tmp_path: Path, client_on: Any) -> None:
    my_vcr = vcr.VCR(serializer="agent_replay", record_mode="once")
    register_with_vcr(my_vcr, recorded_paths={"workspace": str(tmp_path)})
    path = tmp_path / "session.yaml"

    with my_vcr.use_cassette(str(path)):
        recorded = run_session(client_on(mock_transport(fake_model(), gzip_json=True)))

    data = path.read_bytes()
    assert KEY.encode() not in data and b"sk-ant-api03" not in data
    assert find_secrets(data.decode()) == []
    assert load_cassette(path).source is CassetteSource.NATIVE

    def unreachable(request: httpx2.Request) -> httpx2.Response:
        raise AssertionError(f"vcrpy sent {request.url} to the network")

    playback = vcr.VCR(serializer="agent_replay", record_mode="none")
    register_with_vcr(playback)
    with playback.use_cassette(str(path)) as cassette:
        replayed = run_session(client_on(httpx2.MockTransport(unreachable)))

    assert cassette.all_played

    assert replayed == recorded


@pytest.mark.parametrize("serializer", ["agent_replay", "yaml", "json"])
def test_a_vcrpy_cassette_recorded_against_one_base_url_replays_against_another(
    tmp_path: Path, client_on: Any, serializer: str
) -> None:
    path = tmp_path / f"session.{serializer}"
    recording = vcr.VCR(serializer=serializer, record_mode="once", match_on=["agent_replay"])
    register_with_vcr(recording, recorded_paths={"workspace": str(tmp_path)})
    with recording.use_cassette(str(path)):
        model = mock_transport(fake_model(), gzip_json=serializer != "json")
        recorded = run_session(client_on(model, "http://127.0.0.1:8123"))
    assert "127.0.0.1:8123" in path.read_text(encoding="utf-8")

    def unreachable(request: httpx2.Request) -> httpx2.Response:
        raise AssertionError(f"vcrpy sent {request.url} to the network")

    playback = vcr.VCR(serializer=serializer, record_mode="none", match_on=["agent_replay"])
    register_with_vcr(playback)
    with playback.use_cassette(str(path)) as cassette:
        replayed = run_session(client_on(httpx2.MockTransport(unreachable), "https://proxy.example.com:9443"))

    assert replayed == recorded
    assert cassette.all_played


def test_vcrpys_default_matchers_do_not_replay_across_base_urls(tmp_path: Path, client_on: Any) -> None:
    path = tmp_path / "session.yaml"
    recording = vcr.VCR(serializer="agent_replay", record_mode="once")
    register_with_vcr(recording)
    with recording.use_cassette(str(path)):
        run_session(client_on(mock_transport(fake_model()), "http://127.0.0.1:8123"))

    playback = vcr.VCR(serializer="agent_replay", record_mode="none")
    register_with_vcr(playback)
    with playback.use_cassette(str(path)), pytest.raises(anthropic.APIConnectionError) as caught:
        run_session(client_on(mock_transport(fake_model()), "http://127.0.0.1:9000"))

    assert isinstance(caught.value.__cause__, CannotOverwriteExistingCassetteException)


def test_the_fingerprint_matcher_leaves_out_beta_true_and_compares_the_rest() -> None:
    matcher = FingerprintMatcher()
    body = json.dumps({"model": MODEL, "messages": PROMPT}).encode()
    live = Request("POST", "https://api.anthropic.com/v1/messages", body, {})

    assert matcher(live, Request("POST", "http://127.0.0.1:1/v1/messages?beta=true", body, {})) is None
    with pytest.raises(AssertionError, match="fingerprint"):
        matcher(live, Request("POST", "http://127.0.0.1:1/v1/messages?limit=2", body, {}))
    with pytest.raises(AssertionError, match="fingerprint"):
        matcher(live, Request("POST", "http://127.0.0.1:1/v1/messages", body.replace(b"Read", b"Edit"), {}))


def test_the_fingerprint_matcher_normalizes_each_side_against_its_own_folders(tmp_path: Path) -> None:
    def read_request(workspace: str) -> dict[str, Any]:
        return {"model": MODEL, "messages": [{"role": "user", "content": f"Read {workspace}/app.py"}]}

    recorded = Cassette(
        interactions=[
            Interaction(
                RecordedRequest(
                    method="POST", uri="http://127.0.0.1:8123/v1/messages", body=read_request("/home/ana/work")
                ),
                RecordedResponse(status=200, kind=BodyKind.JSON, body={"type": "message"}),
            )
        ],
        recorded_paths={"workspace": "/home/ana/work"},
    )
    serializer = AgentReplaySerializer(recorded_paths={"workspace": str(tmp_path)})
    matcher = FingerprintMatcher(recorded_paths={"workspace": str(tmp_path)}, serializer=serializer)
    [stored] = [Request(**i["request"]) for i in serializer.deserialize(dumps_cassette(recorded))["interactions"]]
    live = Request("POST", "https://api.anthropic.com/v1/messages", json.dumps(read_request(str(tmp_path))), {})

    assert matcher(live, stored) is None
    with pytest.raises(AssertionError):
        FingerprintMatcher(recorded_paths={"workspace": str(tmp_path)})(live, stored)


def test_a_plain_vcrpy_recording_with_the_scrub_hooks_holds_no_key(tmp_path: Path, client_on: Any) -> None:
    path = record_plain(
        tmp_path, "yaml", client_on, before_record_request=scrub_vcr_request, before_record_response=scrub_vcr_response
    )

    data = path.read_bytes()
    assert KEY.encode() not in data
    assert find_secrets(data.decode()) == []


# ---------------------------------------------------------------------------------------------
# The persister


def test_the_persister_reports_missing_and_empty_cassettes_as_vcrpy_does(tmp_path: Path) -> None:
    with pytest.raises(CassetteNotFoundError):
        AtomicPersister.load_cassette(tmp_path / "absent.yaml", AgentReplaySerializer())
    (tmp_path / "empty.yaml").write_text("\n")
    with pytest.raises(CassetteNotFoundError):
        AtomicPersister.load_cassette(tmp_path / "empty.yaml", AgentReplaySerializer())
    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(CassetteDecodeError):
        AtomicPersister.load_cassette(tmp_path / "binary.yaml", AgentReplaySerializer())


def test_the_persister_names_the_file_of_a_corrupt_cassette(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("agent_replay_cassette: 2\n# end of cassette\n")

    with pytest.raises(CassetteError, match=rf"^{path} is format version 2"):
        AtomicPersister.load_cassette(path, AgentReplaySerializer())


def test_the_persister_saves_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.yaml"
    requests = [Request("GET", "https://example.com/", b"", {})]
    responses = [{"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": b"v1"}}]
    AtomicPersister.save_cassette(path, {"requests": requests, "responses": responses}, AgentReplaySerializer())
    before = path.read_bytes()

    def fail(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    responses[0]["body"]["string"] = b"v2"
    with pytest.raises(CassetteError, match="could not be written"):
        AtomicPersister.save_cassette(path, {"requests": requests, "responses": responses}, yamlserializer)

    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]
    assert base64.b64encode(b"v1") not in before and b"body: v1" in before


def _temp_folder_inside_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Path:
    """This process on a machine whose TMPDIR is ``home/name``: the home folder."""
    home = tmp_path / "home"
    (home / name).mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(tempfile, "tempdir", str(home / name))
    monkeypatch.setattr(fingerprints, "_LEGACY_TEMP", None)
    monkeypatch.setattr(fingerprints, "_TEMP_FOLDERS", None)
    return home


@pytest.mark.parametrize("run_paths_name_temp", [False, True])
@pytest.mark.parametrize("records_temp", [True, False])
def test_the_vcr_matcher_reads_a_live_request_as_the_cassette_it_is_compared_with_reads_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, records_temp: bool, run_paths_name_temp: bool
) -> None:
    """TMPDIR inside HOME, a request naming an entry of it (a per-run scratch folder): matched
    against a cassette that records its temp folder, and one written before temp folders were
    recorded, each read its own way."""
    home = _temp_folder_inside_home(tmp_path, monkeypatch, "tmp")
    uri = "https://api.anthropic.com/v1/messages"

    def asking(run: str) -> dict[str, Any]:
        return {"model": "m", "messages": [{"role": "user", "content": f"read {home}/tmp/{run}/f.txt"}]}

    request = RecordedRequest(
        method="POST", uri=uri, headers={"content-type": "application/json"}, body=asking("run-1")
    )
    response = RecordedResponse(status=200, headers={"content-type": "application/json"}, kind=BodyKind.JSON, body={})
    text = dumps_cassette(Cassette(interactions=[Interaction(request, response)], temp_as_before=not records_temp))
    assert ("temp:" in text) is records_temp
    serializer = AgentReplaySerializer()
    stored = serializer.deserialize(text)["interactions"][0]["request"]
    run_paths = {"temp": str(home / "tmp")} if run_paths_name_temp else {}
    matcher = FingerprintMatcher(recorded_paths=run_paths, serializer=serializer)
    recorded = Request(stored["method"], stored["uri"], stored["body"], stored["headers"])
    if records_temp:  # this run's scratch entry: <tmp> whatever its name
        live = Request("POST", uri, json.dumps(asking("run-2")).encode(), {})
    else:  # read as before: the home folder first, the entry's name counts (as it always did)
        live = Request("POST", uri, json.dumps(asking("run-1")).encode(), {})
    matcher(live, recorded)


def test_a_cassette_saved_through_vcrpy_is_written_the_new_way_whatever_was_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vcrpy does not say which requests it kept: a save computes every fingerprint again, and
    records the temp folder a body names, even when the same request came from a cassette that
    records none."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "scratch"))
    monkeypatch.setattr(fingerprints, "_LEGACY_TEMP", None)
    monkeypatch.setattr(fingerprints, "_TEMP_FOLDERS", None)
    body = {"content": f"read {tmp_path}/scratch/run-1/f.txt"}  # one key: sent in sorted order
    request = RecordedRequest(method="POST", uri="https://api.anthropic.com/v1/messages", body=body)
    response = RecordedResponse(status=200, kind=BodyKind.JSON, body={})
    legacy = dumps_cassette(Cassette(interactions=[Interaction(request, response)], temp_as_before=True))
    assert "temp:" not in legacy
    serializer = AgentReplaySerializer()
    saved = serializer.serialize(serializer.deserialize(legacy))
    assert f"temp: {tmp_path}/scratch" in saved
    assert not loads_cassette(saved, source_name="c.yaml").normalizer().legacy


def test_a_cassette_in_use_is_read_its_own_way_after_another_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nested cassettes, or several files merged into one: loading another does not change how
    the requests of one that records no temp folder are read."""
    home = _temp_folder_inside_home(tmp_path, monkeypatch, "scratch")
    uri = "https://api.anthropic.com/v1/messages"

    def cassette(text: str, *, as_before: bool) -> str:
        body = {"model": "m", "messages": [{"role": "user", "content": text}]}
        request = RecordedRequest(method="POST", uri=uri, headers={"content-type": "application/json"}, body=body)
        response = RecordedResponse(status=200, kind=BodyKind.JSON, body={})
        return dumps_cassette(Cassette(interactions=[Interaction(request, response)], temp_as_before=as_before))

    serializer = AgentReplaySerializer()
    outer = serializer.deserialize(cassette(f"read {home}/scratch/run-1/f.txt", as_before=True))
    serializer.deserialize(cassette(f"read {home}/scratch/run-9/g.txt", as_before=False))  # loaded while in use
    stored = outer["interactions"][0]["request"]
    matcher = FingerprintMatcher(serializer=serializer)
    live_body = {"model": "m", "messages": [{"role": "user", "content": f"read {home}/scratch/run-1/f.txt"}]}
    matcher(
        Request("POST", uri, json.dumps(live_body).encode(), {}),
        Request(stored["method"], stored["uri"], stored["body"], stored["headers"]),
    )
