"""The native cassette format: exact round trips, content stored once, linear growth, stable bytes, atomic saves."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest
import vcr.serialize
from hypothesis import given, settings
from hypothesis import strategies as st
from vcr.request import Request
from vcr.serializers import yamlserializer

import replay.cassette._io as cassette_io
from replay.cassette import (
    Cassette,
    CassetteError,
    CassetteSource,
    dumps_cassette,
    load_cassette,
    loads_cassette,
    save_cassette,
)
from replay.cassette._vcrpy import interactions_to_vcrpy
from replay.cassette.fingerprints import Normalizer, fingerprint
from replay.cassette.interaction import (
    BodyKind,
    FaultKind,
    Interaction,
    RecordedFault,
    RecordedRequest,
    RecordedResponse,
    SseEvent,
)
from replay.cassette.secret_scan import find_secrets
from replay.storage.strict_yaml import load_yaml

URI = "https://api.anthropic.com/v1/messages"
JSON_HEADERS = {"anthropic-version": "2026-10-21", "content-type": "application/json"}
SYSTEM = "You are a careful coding agent. Work in the workspace, read before you edit, and run the tests."
TOOLS = [
    {"name": name, "description": f"The {name} tool.", "input_schema": {"type": "object", "properties": {}}}
    for name in ("Read", "Edit", "Bash")
]


def request(messages: Any, **extra: Any) -> RecordedRequest:
    body = {"model": "claude-sonnet-4-6", "max_tokens": 8000, "system": SYSTEM, "tools": TOOLS, "messages": messages}
    return RecordedRequest(method="POST", uri=URI, headers=JSON_HEADERS, body={**body, **extra})


def sse_response(text: str, *, fault: RecordedFault | None = None) -> RecordedResponse:
    events = [
        SseEvent("message_start", {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 9}}}),
        SseEvent("content_block_start", {"type": "content_block_start", "index": 0}),
        SseEvent("ping", {"type": "ping"}),
        SseEvent("content_block_delta", {"type": "content_block_delta", "delta": {"type": "text_delta", "text": text}}),
        SseEvent("message_stop", {"type": "message_stop"}),
    ]
    return RecordedResponse(
        status=200, headers={"content-type": "text/event-stream", "request-id": "req_1"}, kind=BodyKind.SSE,
        body=events, fault=fault,
    )  # fmt: skip


def agent_session(turns: int) -> list[Interaction]:
    """A tool-using session: every request re-sends the whole, growing history."""
    history: list[Any] = [{"role": "user", "content": "Fix the failing test in tests/test_app.py."}]
    interactions = []
    for turn in range(turns):
        interactions.append(Interaction(request(list(history)), sse_response(f"Turn {turn}: reading the next file.")))
        tool_id = f"toolu_{turn:04d}"
        history.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Turn {turn}: reading the next file."},
                    {"type": "tool_use", "id": tool_id, "name": "Read", "input": {"path": f"src/module_{turn}.py"}},
                ],
            }
        )
        source = "\n".join(f"def function_{turn}_{n}(x):\n    return x + {n}" for n in range(8))
        history.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": source}]}
        )
    return interactions


def roundtrip(interactions: list[Interaction], **cassette: Any) -> list[Interaction]:
    text = dumps_cassette(Cassette(interactions=interactions, **cassette))
    return loads_cassette(text, source_name="test.yaml").interactions


# ---------------------------------------------------------------------------------------------
# Round trips


@pytest.mark.parametrize(
    "response",
    [
        sse_response("Hello!"),
        RecordedResponse(status=200, headers={"content-type": "application/json"}, kind=BodyKind.JSON,
                         body={"id": "msg_1", "content": [{"type": "text", "text": "Hi\nthere"}], "usage": None}),
        RecordedResponse(status=529, kind=BodyKind.JSON,
                         body={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        RecordedResponse(status=200, headers={"content-type": "text/plain"}, kind=BodyKind.TEXT,
                         body="line one\nline two with trailing space \n\ttab\n"),
        RecordedResponse(status=200, kind=BodyKind.BINARY, body=base64.b64encode(bytes(range(256))).decode()),
        RecordedResponse(status=204, kind=BodyKind.EMPTY),
        sse_response("cut", fault=RecordedFault(kind=FaultKind.DROPPED_CONNECTION, after_events=2)),
        RecordedResponse(status=200, kind=BodyKind.TEXT, body="partial body",
                         fault=RecordedFault(kind=FaultKind.DROPPED_CONNECTION, after_bytes=7)),
        RecordedResponse(status=200, kind=BodyKind.SSE, body=[SseEvent(None, "raw text\nover two lines")]),
        RecordedResponse(status=0, kind=BodyKind.EMPTY, fault=RecordedFault(kind=FaultKind.CONNECTION_FAILED)),
    ],
    ids=["sse", "json", "json-error", "text", "binary", "empty", "sse-fault", "text-fault", "sse-unnamed-text",
         "no-response"],
)  # fmt: skip
def test_every_response_kind_round_trips_exactly(response: RecordedResponse) -> None:
    interactions = [Interaction(request([{"role": "user", "content": "hi"}]), response)]

    assert roundtrip(interactions) == interactions


def test_requests_without_a_json_body_round_trip() -> None:
    interactions = [
        Interaction(RecordedRequest(method="GET", uri="https://api.anthropic.com/v1/models"), sse_response("x")),
        Interaction(RecordedRequest(method="POST", uri=URI, body="plain text body"), sse_response("y")),
        Interaction(RecordedRequest(method="POST", uri=URI, body=[1, 2, 3]), sse_response("z")),
    ]

    assert roundtrip(interactions) == interactions


def test_a_whole_agent_session_round_trips_and_keeps_its_fingerprints() -> None:
    interactions = agent_session(12)
    workspace = "/work/sessions/demo/workspace"

    loaded = loads_cassette(
        dumps_cassette(Cassette(interactions=interactions, recorded_paths={"workspace": workspace})),
        source_name="demo.yaml",
    )

    assert loaded.interactions == interactions
    assert loaded.source is CassetteSource.NATIVE
    assert loaded.recorded_paths == {"workspace": workspace}
    normalizer = Normalizer.for_paths(workspace=Path(workspace))
    assert loaded.fingerprints() == [
        fingerprint("POST", "/v1/messages", i.request.body, normalizer=normalizer) for i in interactions
    ]


def test_numbers_equal_in_python_keep_their_own_fingerprints() -> None:
    # 0.0 == -0.0 == False and 1 == 1.0 == True in Python; not in a fingerprint.
    values = [0.0, -0.0, 0, False, 1, 1.0, True, 0.0]
    interactions = [Interaction(request([], temperature=v), sse_response("ok")) for v in values]
    loaded = loads_cassette(dumps_cassette(Cassette(interactions=interactions)), source_name="zeros.yaml")
    assert loaded.fingerprints() == [fingerprint("POST", "/v1/messages", i.request.body) for i in interactions]
    assert len(set(loaded.fingerprints())) == 7


def test_a_body_whose_values_look_like_references_round_trips() -> None:
    tricky = request({"$refs": ["m-0000000000000000"]}, tools={"$ref": "t-1"}, system={"$x": 1})

    assert roundtrip([Interaction(tricky, sse_response("ok"))]) == [Interaction(tricky, sse_response("ok"))]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=("Cs",))),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(st.characters(blacklist_categories=("Cs",)), max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(messages=st.lists(json_values, max_size=5), response_body=json_values, text=st.text())
def test_any_json_data_and_any_text_round_trip(messages: list[Any], response_body: Any, text: str) -> None:
    interactions = [
        Interaction(request(messages), RecordedResponse(status=200, kind=BodyKind.JSON, body=response_body)),
        Interaction(request([*messages, text]), RecordedResponse(status=200, kind=BodyKind.TEXT, body=text)),
    ]

    assert roundtrip(interactions) == interactions


# ---------------------------------------------------------------------------------------------
# Content stored once


def test_messages_are_stored_once_and_later_requests_extend_earlier_ones() -> None:
    text = dumps_cassette(Cassette(interactions=agent_session(3)))
    document = load_yaml(text)

    bodies = [i["request"]["body"] for i in document["interactions"]]
    assert set(bodies[0]["messages"]) == {"$refs"}
    assert bodies[1]["messages"]["$extends"] == 0
    assert len(bodies[1]["messages"]["$then"]) == 2
    assert bodies[2]["messages"]["$extends"] == 1
    assert all(body["tools"] == bodies[0]["tools"] and set(body["tools"]) == {"$ref"} for body in bodies)
    assert set(bodies[0]["system"]) == {"$ref"}
    # 5 distinct messages (1 prompt + 2 per finished turn), one tools list, one system prompt.
    assert sorted(key[:2] for key in document["content"]) == ["m-"] * 5 + ["s-", "t-"]


def test_a_retry_with_the_same_history_extends_it_by_nothing() -> None:
    session = agent_session(2)
    retried = [session[0], session[1], session[1]]

    document = load_yaml(dumps_cassette(Cassette(interactions=retried)))

    assert document["interactions"][2]["request"]["body"]["messages"] == {"$extends": 1, "$then": []}


def test_after_compaction_a_request_that_extends_nothing_lists_its_references() -> None:
    session = agent_session(3)
    compacted = request([{"role": "user", "content": "Summary of the session so far."}])

    document = load_yaml(dumps_cassette(Cassette(interactions=[*session, Interaction(compacted, sse_response("."))])))

    assert set(document["interactions"][3]["request"]["body"]["messages"]) == {"$refs"}


def _native_size(interactions: list[Interaction]) -> int:
    return len(dumps_cassette(Cassette(interactions=interactions)).encode())


def _vcrpy_size(interactions: list[Interaction]) -> int:
    converted = interactions_to_vcrpy(interactions)
    cassette_dict = {
        "requests": [Request(**i["request"]) for i in converted],
        "responses": [i["response"] for i in converted],
    }
    return len(vcr.serialize.serialize(cassette_dict, yamlserializer).encode())


def test_a_long_session_grows_linearly_where_vcrpy_grows_quadratically() -> None:
    # Measured on this synthetic session: native 100 turns 180,636 B,
    # 200 turns 362,725 B (ratio 2.01); vcrpy's yaml 3,227,715 B and 12,784,165 B (ratio 3.96).
    # At 200 turns the native file is 35x smaller.
    session = agent_session(200)

    native_ratio = _native_size(session) / _native_size(session[:100])
    vcrpy_ratio = _vcrpy_size(session) / _vcrpy_size(session[:100])

    assert native_ratio < 2.3
    assert vcrpy_ratio > 3


# ---------------------------------------------------------------------------------------------
# Stable bytes, recorded paths


def test_the_same_interactions_always_give_the_same_bytes() -> None:
    session = agent_session(5)
    # Equal data with keys in another order, in other objects.
    reordered = [
        Interaction(
            RecordedRequest(
                method=i.request.method,
                uri=i.request.uri,
                headers=dict(reversed(list(i.request.headers.items()))),
                body=dict(reversed(list(i.request.body.items()))),
            ),
            i.response,
        )
        for i in session
    ]

    assert dumps_cassette(Cassette(interactions=session)) == dumps_cassette(Cassette(interactions=reordered))


def test_a_session_recorded_in_one_folder_has_the_fingerprints_of_the_same_session_in_another(tmp_path: Path) -> None:
    def session_in(workspace: str) -> list[Interaction]:
        prompt = {"role": "user", "content": f"Read {workspace}/src/app.py"}
        return [Interaction(request([prompt]), sse_response("ok"))]

    first = Cassette(interactions=session_in("/home/a/ws"), recorded_paths={"workspace": "/home/a/ws"})
    second = Cassette(interactions=session_in("/srv/b/ws"), recorded_paths={"workspace": "/srv/b/ws"})
    save_cassette(first, tmp_path / "a.yaml")
    save_cassette(second, tmp_path / "b.yaml")

    assert load_cassette(tmp_path / "a.yaml").fingerprints() == load_cassette(tmp_path / "b.yaml").fingerprints()


def test_a_body_that_mentions_the_home_folder_records_it_so_another_machine_verifies_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = os.path.expanduser("~")
    interactions = [Interaction(request([{"role": "user", "content": f"see {home}/notes.txt"}]), sse_response("ok"))]
    text = dumps_cassette(Cassette(interactions=interactions))

    monkeypatch.setenv("HOME", "/home/someone-else")
    loaded = loads_cassette(text, source_name="moved.yaml")

    assert loaded.recorded_paths == {"home": home}
    assert loaded.interactions == interactions


def test_home_is_not_recorded_when_it_appears_only_inside_the_recorded_folders() -> None:
    workspace = os.path.join(os.path.expanduser("~"), "projects", "demo")
    interactions = [Interaction(request([{"role": "user", "content": f"cd {workspace}/src"}]), sse_response("ok"))]

    loaded = loads_cassette(
        dumps_cassette(Cassette(interactions=interactions, recorded_paths={"workspace": workspace})), source_name="c"
    )

    assert loaded.recorded_paths == {"workspace": workspace}


# ---------------------------------------------------------------------------------------------
# Saving: scrubbed and atomic

KEY = "sk-ant-api03-LiveKey_0123456789-abcdefABCDEF"


def test_a_saved_file_holds_no_secret(tmp_path: Path) -> None:
    secret_request = RecordedRequest(
        method="POST",
        uri=URI,
        headers={**JSON_HEADERS, "authorization": f"Bearer {KEY}", "x-api-key": KEY, "user-agent": "Anthropic/2"},
        body={"messages": [{"role": "user", "content": f"my key is {KEY}"}], "system": f"key {KEY}"},
    )
    leaky = RecordedResponse(
        status=200, headers={"set-cookie": "s=1", "content-type": "text/event-stream"}, kind=BodyKind.SSE,
        body=[SseEvent("content_block_delta", {"delta": {"text": f"you said {KEY}"}})],
    )  # fmt: skip
    path = tmp_path / "cassette.yaml"

    save_cassette(Cassette(interactions=[Interaction(secret_request, leaky)]), path)

    data = path.read_bytes()
    assert b"sk-ant-api03" not in data and KEY.encode() not in data
    assert b"user-agent" not in data and b"set-cookie" not in data
    assert find_secrets(data.decode()) == []


def test_saving_replaces_the_file_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "cassette.yaml"

    save_cassette(Cassette(interactions=agent_session(1)), path)
    save_cassette(Cassette(interactions=agent_session(2)), path)

    assert len(load_cassette(path).interactions) == 2
    assert sorted(p.name for p in path.parent.iterdir()) == ["cassette.yaml"]


def _fail(*args: object, **kwargs: object) -> None:
    raise OSError(28, "No space left on device")


@pytest.mark.parametrize("target", ["replace", "fsync"])
def test_a_failed_save_leaves_the_old_file_whole_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    path = tmp_path / "cassette.yaml"
    save_cassette(Cassette(interactions=agent_session(1)), path)
    before = path.read_bytes()
    monkeypatch.setattr(os, target, _fail)

    with pytest.raises(CassetteError, match=r"cassette\.yaml could not be written \(No space left on device\)"):
        save_cassette(Cassette(interactions=agent_session(3)), path)

    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["cassette.yaml"]


def test_a_write_cut_short_mid_file_leaves_the_old_file_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cassette.yaml"
    save_cassette(Cassette(interactions=agent_session(1)), path)
    before = path.read_bytes()
    real_fdopen = os.fdopen

    class HalfWriter:
        def __init__(self, fd: int, mode: str) -> None:
            self._file = real_fdopen(fd, mode)

        def __enter__(self) -> HalfWriter:
            return self

        def __exit__(self, *exc: object) -> None:
            self._file.close()

        def write(self, data: bytes) -> None:
            self._file.write(data[: len(data) // 2])
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fdopen", HalfWriter)

    with pytest.raises(CassetteError, match="the previous file, if any, is unchanged"):
        save_cassette(Cassette(interactions=agent_session(4)), path)

    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["cassette.yaml"]


def test_a_failure_while_serializing_touches_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cassette.yaml"
    save_cassette(Cassette(interactions=agent_session(1)), path)
    before = path.read_bytes()

    def broken_dump(data: object) -> str:
        raise RuntimeError("emitter crashed")

    monkeypatch.setattr(cassette_io, "dump_yaml", broken_dump)

    with pytest.raises(RuntimeError):
        save_cassette(Cassette(interactions=agent_session(2)), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["cassette.yaml"]


def test_the_example_in_the_docs_is_a_valid_cassette() -> None:
    docs = (Path(__file__).parents[3] / "docs" / "cassettes.md").read_text(encoding="utf-8")
    example = docs.split("```yaml\n", 1)[1].split("```", 1)[0]

    cassette = loads_cassette(example, source_name="docs/cassettes.md")

    assert [i.response.status for i in cassette.interactions] == [200, 200, 529]
    assert cassette.interactions[1].response.fault == RecordedFault(kind=FaultKind.DROPPED_CONNECTION, after_events=2)
    assert cassette.interactions[2].request.body["messages"] == cassette.interactions[1].request.body["messages"]
