"""vcrpy's cassette shape <-> `Interaction`.

vcrpy keeps a request as ``{method, uri, body, headers: {name: [values]}}`` and a response as
``{status: {code, message}, headers: {name: [values]}, body: {string: bytes}}`` (older httpx
cassettes: ``{status_code, headers, content}``). Going in, bodies become data: a JSON request
body its parsed value; a response body events (``text/event-stream``), JSON
(``application/json``), text (UTF-8) or base64 (anything else), after undoing a
``content-encoding``. Going out, bodies become bytes again. A response may carry
``x_agent_replay_fault`` (`FAULT_KEY`), the fault that cut it short; vcrpy ignores it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any, Final

from replay.cassette._content import FormatProblem
from replay.cassette.content_encoding import ContentEncodingError, decode_content_encoding
from replay.cassette.interaction import (
    BodyKind,
    FaultKind,
    Interaction,
    RecordedFault,
    RecordedRequest,
    RecordedResponse,
    parse_sse,
)

__all__ = [
    "FAULT_KEY",
    "VCRPY_FORMAT_VERSION",
    "interactions_from_vcr_objects",
    "interactions_from_vcrpy",
    "interactions_to_vcrpy",
    "is_vcrpy_shape",
]

FAULT_KEY: Final = "x_agent_replay_fault"
VCRPY_FORMAT_VERSION: Final = 1


def is_vcrpy_shape(document: Any) -> bool:
    """Whether ``document`` has vcrpy's top level: ``version`` and ``interactions``."""
    return isinstance(document, Mapping) and "interactions" in document and "version" in document


def interactions_from_vcrpy(document: Mapping[str, Any]) -> list[Interaction]:
    """The interactions of a vcrpy cassette dict (version already checked). Raises `FormatProblem`."""
    raw_interactions = document["interactions"]
    if not isinstance(raw_interactions, list):
        raise FormatProblem("interactions", "must be a list")
    interactions: list[Interaction] = []
    for index, raw in enumerate(raw_interactions):
        where = f"interactions[{index}]"
        if not isinstance(raw, Mapping) or not isinstance(raw.get("request"), Mapping):
            raise FormatProblem(where, "must be a mapping with a request and a response")
        if not isinstance(raw.get("response"), Mapping):
            raise FormatProblem(where, "must be a mapping with a request and a response")
        request = _request_from_vcrpy(raw["request"], f"{where}.request")
        response = _response_from_vcrpy(raw["response"], f"{where}.response")
        interactions.append(Interaction(request, response))
    return interactions


def interactions_from_vcr_objects(requests: Sequence[Any], responses: Sequence[Mapping[str, Any]]) -> list[Interaction]:
    """The interactions of vcrpy's in-memory cassette: its ``vcr.request.Request`` objects and
    response dicts (what a persister's ``save_cassette`` receives). Raises `FormatProblem`."""
    interactions = [
        {
            "request": {
                "method": request.method,
                "uri": request.uri,
                "body": getattr(request, "body_bytes", request.body),
                "headers": {name: [value] for name, value in request.headers.items()},
            },
            "response": response,
        }
        for request, response in zip(requests, responses, strict=True)
    ]
    return interactions_from_vcrpy({"interactions": interactions})


def interactions_to_vcrpy(interactions: list[Interaction]) -> list[dict[str, Any]]:
    """vcrpy's ``interactions`` list for ``interactions``: every body as bytes."""
    converted = []
    for interaction in interactions:
        request, response = interaction.request, interaction.response
        vcr_response: dict[str, Any] = {
            "status": {"code": response.status, "message": _reason(response.status)},
            "headers": {name: [value] for name, value in response.headers.items()},
            "body": {"string": response.body_bytes()},
        }
        if response.fault is not None:
            vcr_response[FAULT_KEY] = {
                "kind": response.fault.kind.value,
                "after_events": response.fault.after_events,
                "after_bytes": response.fault.after_bytes,
            }
        vcr_request = {
            "method": request.method,
            "uri": request.uri,
            "body": request.body_bytes().decode("utf-8"),
            "headers": {name: [value] for name, value in request.headers.items()},
        }
        converted.append({"request": vcr_request, "response": vcr_response})
    return converted


# ---------------------------------------------------------------------------------------------
# Requests


def _request_from_vcrpy(raw: Mapping[str, Any], where: str) -> RecordedRequest:
    method, uri = raw.get("method"), raw.get("uri")
    if not isinstance(method, str) or not isinstance(uri, str):
        raise FormatProblem(where, "must have a method and a uri, both strings")
    body = raw.get("body")
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            raise FormatProblem(
                f"{where}.body",
                "is binary (not UTF-8); cassettes hold JSON or text request bodies",
                "send the request body as JSON or UTF-8 text, or leave that request out of the cassette",
            ) from None
    if body is not None and not isinstance(body, str):
        raise FormatProblem(f"{where}.body", f"must be text or bytes, not {type(body).__name__}")
    return RecordedRequest(
        method=method,
        uri=uri,
        headers=_headers_from_vcrpy(raw.get("headers", {}), f"{where}.headers"),
        body=_request_body(body),
    )


def _request_body(text: str | None) -> Any:
    if not text:
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    # Only objects and arrays count as JSON: a body "123" or "\"hi\"" re-encoded from its parsed
    # value could lose its exact text.
    return parsed if isinstance(parsed, (dict, list)) else text


def _headers_from_vcrpy(raw: Any, where: str) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        raise FormatProblem(where, "must map header names to lists of values")
    headers: dict[str, str] = {}
    for name, values in raw.items():
        values = [values] if isinstance(values, str) else values
        if not isinstance(name, str) or not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise FormatProblem(where, f"header {name!r} must have a list of string values")
        headers[name.lower()] = ", ".join(values)
    return headers


# ---------------------------------------------------------------------------------------------
# Responses


def _response_from_vcrpy(raw: Mapping[str, Any], where: str) -> RecordedResponse:
    if "status_code" in raw:  # vcrpy's older httpx shape
        status, body = raw.get("status_code"), raw.get("content")
    else:
        status_field = raw.get("status")
        status = status_field.get("code") if isinstance(status_field, Mapping) else None
        body_field = raw.get("body")
        body = body_field.get("string") if isinstance(body_field, Mapping) else body_field
    if not isinstance(status, int) or isinstance(status, bool):
        raise FormatProblem(f"{where}.status", "must have an integer code")
    headers = _headers_from_vcrpy(raw.get("headers", {}), f"{where}.headers")
    data = body.encode("utf-8") if isinstance(body, str) else body
    if data is not None and not isinstance(data, bytes):
        raise FormatProblem(f"{where}.body", f"must be text or bytes, not {type(data).__name__}")
    encoding = headers.pop("content-encoding", None)
    if encoding and data:
        try:
            data = decode_content_encoding(data, encoding)
        except ContentEncodingError as err:
            raise FormatProblem(where, err.problem, err.remedy) from None
        headers.pop("content-length", None)
    fault = _fault_from_vcrpy(raw.get(FAULT_KEY), f"{where}.{FAULT_KEY}")
    kind, stored = _classify_body(data or b"", headers.get("content-type", ""), fault)
    return RecordedResponse(status=status, headers=headers, kind=kind, body=stored, fault=fault)


def _classify_body(data: bytes, content_type: str, fault: RecordedFault | None) -> tuple[BodyKind, Any]:
    """The body as data, losslessly: a kind is used only when it gives back what was received."""
    if not data:
        return BodyKind.EMPTY, None
    media_type = content_type.split(";")[0].strip().lower()
    exact_bytes = fault is not None and fault.after_bytes is not None  # the cut must land on the same byte
    if media_type == "text/event-stream" and not exact_bytes:
        events = parse_sse(data)
        # Without a fault, the events must account for the whole body; a trailing event cut by
        # a recorded fault is expected (the fault replays the cut).
        if events is not None and (fault is not None or _ends_with_complete_event(data)):
            return BodyKind.SSE, events
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return BodyKind.BINARY, base64.b64encode(data).decode("ascii")
    if (media_type == "application/json" or media_type.endswith("+json")) and not exact_bytes:
        try:
            return BodyKind.JSON, json.loads(text)
        except ValueError:
            pass
    return BodyKind.TEXT, text


def _ends_with_complete_event(data: bytes) -> bool:
    tail = data.replace(b"\r\n", b"\n").rsplit(b"\n\n", 1)
    return len(tail) == 2 and not tail[1].strip()


def _fault_from_vcrpy(raw: Any, where: str) -> RecordedFault | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise FormatProblem(where, "must be a mapping with kind, after_events and after_bytes")
    try:
        kind = FaultKind(raw.get("kind"))
    except ValueError:
        raise FormatProblem(where, f"has the unknown fault kind {raw.get('kind')!r}") from None
    counts = {key: raw.get(key) for key in ("after_events", "after_bytes")}
    for key, value in counts.items():
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise FormatProblem(f"{where}.{key}", "must be a non-negative integer")
    return RecordedFault(kind=kind, **counts)


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""
