"""Cassettes recorded by others: plain vcrpy (YAML and JSON, every body shape vcrpy writes) and
pydantic-ai's ``parsed_body`` style load with all their bodies, and each real-API-shaped
recording replays through ``CassetteTransport`` under the current SDK exactly as serving its
bytes directly does. A field the reader does not know is refused, naming the file and the field."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from replay.cassette import CassetteError, CassetteSource, load_cassette
from replay.cassette.interaction import BodyKind
from replay.cassette.transport import CassettePlayer, CassetteTransport, SyncCassetteTransport
from tests.replay.cassette.foreign_corpus import CASES, Call, Case, CorpusFormat

KEY = "sk-ant-test"
SOURCES = {
    CorpusFormat.VCRPY_YAML: CassetteSource.VCRPY_YAML,
    CorpusFormat.VCRPY_JSON: CassetteSource.VCRPY_JSON,
    CorpusFormat.PARSED_BODY_YAML: CassetteSource.VCRPY_YAML,
}


def served_directly(case: Case) -> httpx2.MockTransport:
    """The API's bytes for ``case``, compression and all, whatever the request."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(case.status, headers=case.response_headers(), content=case.wire_body())

    return httpx2.MockTransport(handle)


async def sdk_outcome(
    case: Case, sync_transport: httpx2.BaseTransport, async_transport: httpx2.AsyncBaseTransport
) -> dict[str, Any]:
    """What the SDK makes of the answer: the message (and every streamed event), or the error."""
    client = anthropic.Anthropic(api_key=KEY, max_retries=0, http_client=httpx2.Client(transport=sync_transport))
    async_client = anthropic.AsyncAnthropic(
        api_key=KEY, max_retries=0, http_client=httpx2.AsyncClient(transport=async_transport)
    )
    try:
        if case.call is Call.CREATE:
            return {"message": client.messages.create(**case.params).model_dump()}
        if case.call is Call.BETA_CREATE:
            return {"message": client.beta.messages.create(**case.params).model_dump()}
        if case.call is Call.STREAM:
            with client.messages.stream(**case.params) as stream:
                events = [event.model_dump() for event in stream]
                return {"events": events, "message": stream.get_final_message().model_dump()}
        async with async_client.messages.stream(**case.params) as async_stream:
            events = [event.model_dump() async for event in async_stream]
            return {"events": events, "message": (await async_stream.get_final_message()).model_dump()}
    except anthropic.APIStatusError as err:
        return {"error": type(err).__name__, "status": err.status_code, "body": err.body}
    finally:
        client.close()
        await async_client.close()


@pytest.mark.parametrize("corpus", list(CorpusFormat), ids=str)
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
async def test_each_recording_replays_exactly_as_serving_its_bytes_does(corpus: CorpusFormat, case: Case) -> None:
    cassette = load_cassette(corpus.path)
    player = CassettePlayer.from_cassette(cassette)

    replayed = await sdk_outcome(case, SyncCassetteTransport(player), CassetteTransport(player))
    direct = await sdk_outcome(case, served_directly(case), served_directly(case))

    assert replayed == direct
    assert [entry.matched for entry in player.log] == [True]
    # anthropic 2.x sends no ?beta=true; the recording has it, and it still matches.
    assert player.log[0].path == "/v1/messages"


def test_the_corpus_covers_what_real_recordings_hold() -> None:
    wire = b"".join(case.body for case in CASES)
    for shape in (
        b'"signature_delta"',
        b'"redacted_thinking"',
        b'"server_tool_use"',
        b'"web_search_tool_result"',
        b'"citations_delta"',
        b'"mcp_tool_use"',
        b'"mcp_tool_result"',
        b'"pause_turn"',
        b'"overloaded_error"',
        b'"cache_creation_input_tokens": 1536',
        b'"cache_read_input_tokens": 1536',
    ):
        assert shape in wire, shape
    assert {case.encoding for case in CASES} == {None, "gzip", "br"}
    assert sum(case.query == "?beta=true" for case in CASES) == len(CASES) - 1


@pytest.mark.parametrize("corpus", list(CorpusFormat), ids=str)
def test_every_format_loads_every_body_as_data(corpus: CorpusFormat) -> None:
    cassette = load_cassette(corpus.path)

    assert cassette.source is SOURCES[corpus]
    assert [json.loads(i.request.body_bytes()) for i in cassette.interactions] == [
        json.loads(case.request_body()) for case in CASES
    ]
    assert [i.response.kind for i in cassette.interactions] == [
        BodyKind.SSE if case.call in (Call.STREAM, Call.ASYNC_STREAM) else BodyKind.JSON for case in CASES
    ]
    assert [i.response.body for i in cassette.interactions if i.response.kind is BodyKind.JSON] == [
        json.loads(case.body) for case in CASES if case.content_type == "application/json"
    ]
    assert all("content-encoding" not in i.response.headers for i in cassette.interactions)


# ---------------------------------------------------------------------------------------------
# Every body shape vcrpy writes


def vcrpy_yaml(request_body: str, response: str) -> str:
    return f"""interactions:
- request:
    body: {request_body}
    headers:
      content-type:
      - application/json
    method: POST
    uri: http://127.0.0.1:8080/v1/messages
  response:
{response}
version: 1
"""


JSON_HEADERS = """    headers:
      content-type:
      - application/json"""
ANSWER = '{"type": "message", "id": "msg_1"}'


@pytest.mark.parametrize(
    ("request_body", "response"),
    [
        pytest.param(
            f"'{json.dumps({'model': 'm'})}'",
            f"    body:\n      string: '{ANSWER}'\n{JSON_HEADERS}\n    status:\n      code: 200\n      message: OK",
            id="string-bodies",
        ),
        pytest.param(
            f"!!binary |\n      {base64.b64encode(json.dumps({'model': 'm'}).encode()).decode()}",
            f"    body:\n      string: !!binary |\n        {base64.b64encode(ANSWER.encode()).decode()}\n"
            f"{JSON_HEADERS}\n    status:\n      code: 200\n      message: OK",
            id="binary-bodies",
        ),
        pytest.param(
            "null",
            f"    body: '{ANSWER}'\n{JSON_HEADERS}\n    status:\n      code: 200\n      message: OK",
            id="null-request-and-bare-string-response",
        ),
        pytest.param(
            f"'{json.dumps({'model': 'm'})}'",
            f"    content: '{ANSWER}'\n    http_version: HTTP/1.1\n{JSON_HEADERS}\n    status_code: 200",
            id="older-httpx-shape",
        ),
        pytest.param(
            f"'{json.dumps({'model': 'm'})}'",
            f"    body:\n      string: '{ANSWER}'\n{JSON_HEADERS}\n    status:\n      code: 200\n      message: OK\n"
            "    url: http://127.0.0.1:8080/v1/messages",
            id="aiohttp-url",
        ),
    ],
)
def test_every_body_shape_vcrpy_writes_loads(tmp_path: Path, request_body: str, response: str) -> None:
    path = tmp_path / "shapes.yaml"
    path.write_text(vcrpy_yaml(request_body, response), encoding="utf-8")

    [interaction] = load_cassette(path).interactions

    assert interaction.request.body in ({"model": "m"}, None)
    assert (interaction.response.kind, interaction.response.body) == (BodyKind.JSON, json.loads(ANSWER))


def test_an_empty_response_body_is_an_empty_body(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text(
        vcrpy_yaml(
            "null", "    body:\n      string: ''\n    headers: {}\n    status:\n      code: 204\n      message: ''"
        ),
        encoding="utf-8",
    )

    [interaction] = load_cassette(path).interactions

    assert (interaction.response.status, interaction.response.kind) == (204, BodyKind.EMPTY)


# ---------------------------------------------------------------------------------------------
# Fields the reader does not know


def edited_corpus(tmp_path: Path, edit: Any) -> Path:
    document = json.loads(CorpusFormat.VCRPY_JSON.path.read_text(encoding="utf-8"))
    edit(document)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("edit", "where", "field"),
    [
        (lambda d: d.update(recorded_with="VCR 6.0.1"), "the top level", "recorded_with"),
        (lambda d: d["interactions"][1].update(recorded_at="2025-01-01"), "interactions[1]", "recorded_at"),
        (lambda d: d["interactions"][2]["request"].update(parsed_bdy={}), "interactions[2].request", "parsed_bdy"),
        (lambda d: d["interactions"][0]["response"].update(json_body={}), "interactions[0].response", "json_body"),
        (
            lambda d: d["interactions"][0]["response"]["status"].update(reason="OK"),
            "interactions[0].response.status",
            "reason",
        ),
        (
            lambda d: d["interactions"][0]["response"]["body"].update(encoding="UTF-8"),
            "interactions[0].response.body",
            "encoding",
        ),
    ],
)
def test_an_unknown_field_is_refused_naming_the_file_and_the_field(
    tmp_path: Path, edit: Any, where: str, field: str
) -> None:
    path = edited_corpus(tmp_path, edit)

    with pytest.raises(CassetteError) as raised:
        load_cassette(path)

    message = str(raised.value)
    assert message.startswith(f"{path} is invalid at {where}: has the unknown field '{field}'")
    assert message.count("\n") == 0


def test_a_body_beside_a_parsed_body_is_refused(tmp_path: Path) -> None:
    text = CorpusFormat.PARSED_BODY_YAML.path.read_text(encoding="utf-8")
    path = tmp_path / "both.yaml"
    path.write_text(text.replace("    parsed_body:\n", "    body: '{}'\n    parsed_body:\n", 1), encoding="utf-8")

    with pytest.raises(CassetteError, match=r"both\.yaml is invalid at interactions\[0\]\.request: has both a body"):
        load_cassette(path)
