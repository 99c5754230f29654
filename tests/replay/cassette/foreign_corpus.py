"""A small corpus of real-API-shaped recordings, written for this project from the Messages API's
documented shapes (no other project's cassettes): each case is one SDK call, the request body
the SDK sends for it, and the exact bytes the API answers with.

The same interactions are stored three ways under ``foreign/``, as other tools write them:
plain vcrpy YAML and JSON (rendered with vcrpy's own serializers) and pydantic-ai's style (JSON
bodies as data under ``parsed_body``, its header filtering, literal blocks for multi-line text).
Run ``python -m tests.replay.cassette.foreign_corpus`` to write the three files again.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Final

import brotli
import yaml
from vcr.request import Request
from vcr.serialize import serialize
from vcr.serializers import jsonserializer, yamlserializer

FOLDER: Final = Path(__file__).parent / "foreign"
MODEL: Final = "claude-sonnet-4-5"
API: Final = "https://api.anthropic.com"


class CorpusFormat(StrEnum):
    VCRPY_YAML = "vcrpy.yaml"
    VCRPY_JSON = "vcrpy.json"
    PARSED_BODY_YAML = "parsed_body.yaml"

    @property
    def path(self) -> Path:
        return FOLDER / f"messages.{self.value}"


class Call(StrEnum):
    """How the test makes the request through the SDK."""

    CREATE = "create"
    STREAM = "stream"
    ASYNC_STREAM = "async_stream"
    BETA_CREATE = "beta_create"


@dataclass(frozen=True)
class Case:
    name: str
    call: Call
    params: dict[str, Any]  # the keyword arguments of the SDK call
    status: int
    content_type: str
    body: bytes  # the decoded body, as the API sends it before any content-encoding
    query: str = "?beta=true"
    encoding: str | None = None  # gzip or br: the wire body is compressed
    extra_headers: dict[str, str] = field(default_factory=dict)

    @property
    def uri(self) -> str:
        return f"{API}/v1/messages{self.query}"

    def request_body(self) -> bytes:
        body = {key: value for key, value in self.params.items() if key != "betas"}
        if self.call in (Call.STREAM, Call.ASYNC_STREAM):
            body["stream"] = True
        return json.dumps(body).encode()

    def wire_body(self) -> bytes:
        compress: dict[str | None, Callable[[bytes], bytes]] = {
            None: lambda data: data,
            "gzip": lambda data: gzip.compress(data, mtime=0),
            "br": brotli.compress,
        }
        return compress[self.encoding](self.body)

    def response_headers(self) -> dict[str, str]:
        headers = {"content-type": self.content_type, "request-id": f"req_011C{self.name[:12]}", **self.extra_headers}
        if self.encoding:
            headers["content-encoding"] = self.encoding
        return headers


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _usage(**counts: Any) -> dict[str, Any]:
    return {
        "input_tokens": 12,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 1,
        "service_tier": "standard",
        **counts,
    }


def _message(content: list[dict[str, Any]], stop_reason: str, **usage: Any) -> dict[str, Any]:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": _usage(**usage),
    }


def _start(**usage: Any) -> dict[str, Any]:
    message = _message([], "end_turn", **usage)
    message["stop_reason"] = None
    return {"type": "message_start", "message": message}


def _block(index: int, block: dict[str, Any], *deltas: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": index, "content_block": block},
        *({"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def _end(stop_reason: str, **usage: Any) -> list[dict[str, Any]]:
    return [
        {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": usage},
        {"type": "message_stop"},
    ]


SYSTEM_CACHED: Final = [
    {"type": "text", "text": "You answer questions about prime numbers.", "cache_control": {"type": "ephemeral"}}
]
WEB_SEARCH_TOOL: Final = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
SEARCH_RESULT: Final = {
    "type": "web_search_result",
    "url": "https://en.wikipedia.org/wiki/Prime_number",
    "title": "Prime number - Wikipedia",
    "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2M",
    "page_age": "2 days ago",
}
CITATION: Final = {
    "type": "web_search_result_location",
    "url": SEARCH_RESULT["url"],
    "title": SEARCH_RESULT["title"],
    "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm",
    "cited_text": "A prime number is a natural number greater than 1 that is not a product of two smaller ones.",
}


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


CASES: Final = (
    Case(
        name="thinking_stream",
        call=Call.STREAM,
        params={
            "model": MODEL,
            "max_tokens": 16000,
            "thinking": {"type": "enabled", "budget_tokens": 10000},
            "system": SYSTEM_CACHED,
            "messages": _user("Is 1013 prime?"),
        },
        status=200,
        content_type="text/event-stream; charset=utf-8",
        body=sse(
            _start(input_tokens=3, cache_creation_input_tokens=1536),
            {"type": "ping"},
            *_block(
                0,
                {"type": "thinking", "thinking": "", "signature": ""},
                {"type": "thinking_delta", "thinking": "Check the primes up to 31: "},
                {"type": "thinking_delta", "thinking": "none divides 1013.\n"},
                {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
            ),
            *_block(1, {"type": "text", "text": ""}, {"type": "text_delta", "text": "Yes, 1013 is prime."}),
            *_end("end_turn", output_tokens=91),
        ),
    ),
    Case(
        name="redacted_thinking",
        call=Call.CREATE,
        params={
            "model": MODEL,
            "max_tokens": 16000,
            "thinking": {"type": "enabled", "budget_tokens": 10000},
            "system": SYSTEM_CACHED,
            "messages": _user("ANTHROPIC_MAGIC_STRING_TRIGGER_REDACTED_THINKING Is 1013 prime?"),
        },
        status=200,
        content_type="application/json",
        body=json.dumps(
            _message(
                [
                    {
                        "type": "redacted_thinking",
                        "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr",
                    },
                    {"type": "text", "text": "1013 is prime."},
                ],
                "end_turn",
                cache_read_input_tokens=1536,
                output_tokens=55,
            )
        ).encode(),
    ),
    Case(
        name="web_search_stream",
        call=Call.ASYNC_STREAM,
        params={"model": MODEL, "max_tokens": 1024, "tools": [WEB_SEARCH_TOOL], "messages": _user("Define a prime.")},
        status=200,
        content_type="text/event-stream; charset=utf-8",
        body=sse(
            _start(input_tokens=2150),
            *_block(
                0,
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB",
                    "name": "web_search",
                    "input": {},
                },
                {"type": "input_json_delta", "partial_json": '{"query": "prime '},
                {"type": "input_json_delta", "partial_json": 'number definition"}'},
            ),
            *_block(
                1,
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB",
                    "content": [SEARCH_RESULT],
                },
            ),
            *_block(
                2,
                {"type": "text", "text": "", "citations": []},
                {"type": "citations_delta", "citation": CITATION},
                {"type": "text_delta", "text": "A prime has exactly two divisors."},
            ),
            *_end("end_turn", output_tokens=120, server_tool_use={"web_search_requests": 1}),
        ),
    ),
    Case(
        name="mcp_tool_use",
        call=Call.BETA_CREATE,
        params={
            "model": MODEL,
            "max_tokens": 1024,
            "messages": _user("Which tools does the primes server have?"),
            "mcp_servers": [{"type": "url", "url": "https://mcp.example.com/sse", "name": "primes"}],
            "betas": ["mcp-client-2025-04-04"],
        },
        status=200,
        content_type="application/json",
        body=json.dumps(
            _message(
                [
                    {
                        "type": "mcp_tool_use",
                        "id": "mcptoolu_01Xy5cRdGcVt3YtqLJ3vwVQ5",
                        "name": "is_prime",
                        "server_name": "primes",
                        "input": {"n": 1013},
                    },
                    {
                        "type": "mcp_tool_result",
                        "tool_use_id": "mcptoolu_01Xy5cRdGcVt3YtqLJ3vwVQ5",
                        "is_error": False,
                        "content": [{"type": "text", "text": "true"}],
                    },
                    {"type": "text", "text": "The server says 1013 is prime."},
                ],
                "end_turn",
                output_tokens=80,
            )
        ).encode(),
    ),
    Case(
        name="pause_turn",
        call=Call.CREATE,
        query="",
        params={"model": MODEL, "max_tokens": 1024, "tools": [WEB_SEARCH_TOOL], "messages": _user("Search long.")},
        status=200,
        content_type="application/json",
        encoding="gzip",
        body=json.dumps(
            _message(
                [
                    {
                        "type": "server_tool_use",
                        "id": "srvtoolu_01AbCdEf",
                        "name": "web_search",
                        "input": {"query": "twin primes"},
                    },
                    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01AbCdEf", "content": [SEARCH_RESULT]},
                ],
                "pause_turn",
                output_tokens=40,
                server_tool_use={"web_search_requests": 1},
            )
        ).encode(),
    ),
    Case(
        name="overloaded",
        call=Call.CREATE,
        params={"model": MODEL, "max_tokens": 1024, "messages": _user("Is 7 prime?")},
        status=529,
        content_type="application/json",
        encoding="br",
        body=json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).encode(),
        extra_headers={"x-should-retry": "true"},
    ),
)


# ---------------------------------------------------------------------------------------------
# Rendering the three files


def _vcrpy_dict(case: Case, *, compressed: bool) -> tuple[Request, dict[str, Any]]:
    headers = case.response_headers()
    if not compressed:
        headers.pop("content-encoding", None)
    request = Request(
        "POST",
        case.uri,
        case.request_body(),
        {"anthropic-version": "2023-06-01", "content-type": "application/json"},
    )
    response = {
        "status": {"code": case.status, "message": "OK" if case.status == 200 else ""},
        "headers": {name: [value] for name, value in headers.items()},
        "body": {"string": case.wire_body() if compressed else case.body},
    }
    return request, response


def render_vcrpy(*, as_json: bool) -> str:
    # vcrpy's JSON serializer cannot hold bytes: a JSON cassette is recorded with
    # decode_compressed_response, so its bodies are stored decoded.
    pairs = [_vcrpy_dict(case, compressed=not as_json) for case in CASES]
    cassette = {"requests": [request for request, _ in pairs], "responses": [response for _, response in pairs]}
    return serialize(cassette, jsonserializer if as_json else yamlserializer)


class _LiteralDumper(yaml.SafeDumper):
    pass


def _text(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|" if "\n" in data else None)


_LiteralDumper.add_representer(str, _text)
_DROPPED_HEADERS: Final = ("anthropic-", "x-", "request-id", "date", "server", "user-agent", "cf-")


def render_parsed_body() -> str:
    """pydantic-ai's shape: bodies decoded, JSON bodies as data, vendor headers filtered out."""
    interactions = []
    for case in CASES:
        request, response = _vcrpy_dict(case, compressed=False)
        parts: dict[str, Any] = {}
        for kind, data, body in (
            ("request", request._to_dict(), request.body),
            ("response", response, case.body),
        ):
            headers = {name.lower(): values for name, values in data["headers"].items()}
            data["headers"] = {name: v for name, v in headers.items() if not name.startswith(_DROPPED_HEADERS)}
            if data["headers"].get("content-type", [""])[0].startswith("application/json"):
                del data["body"]
                data["parsed_body"] = json.loads(body)
            elif kind == "response":
                data["body"] = {"string": case.body.decode()}
            parts[kind] = data
        interactions.append(parts)
    return yaml.dump({"interactions": interactions, "version": 1}, Dumper=_LiteralDumper, allow_unicode=True, width=120)


def write_corpus() -> None:
    FOLDER.mkdir(exist_ok=True)
    CorpusFormat.VCRPY_YAML.path.write_text(render_vcrpy(as_json=False), encoding="utf-8")
    CorpusFormat.VCRPY_JSON.path.write_text(render_vcrpy(as_json=True), encoding="utf-8")
    CorpusFormat.PARSED_BODY_YAML.path.write_text(render_parsed_body(), encoding="utf-8")


if __name__ == "__main__":
    write_corpus()
