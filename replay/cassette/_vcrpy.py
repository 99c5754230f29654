"""vcrpy's cassette shape <-> `Interaction`.

vcrpy keeps a request as ``{method, uri, body, headers: {name: [values]}}`` and a response as
``{status: {code, message}, headers: {name: [values]}, body: {string: bytes}}`` (older httpx
cassettes: ``{status_code, http_version, headers, content}``; aiohttp and tornado add the
response's ``url``). A body is text, ``!!binary`` bytes, ``null`` or, in a response, ``{string:
...}`` holding one of those. pydantic-ai's serializer stores a JSON body as data under
``parsed_body`` instead of ``body``, request and response alike. Going in, bodies become data: a
JSON request body its parsed value; a response body events (``text/event-stream``), JSON
(``application/json``), text (UTF-8) or base64 (anything else), after undoing a
``content-encoding``. Going out, bodies become bytes again. A response may carry
``x_agent_replay_fault`` (`FAULT_KEY`), the fault that cut it short; vcrpy ignores it. Any other
key is refused by name: a field this reader does not know is never dropped silently.
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
# pydantic-ai's vcrpy serializer: a JSON body as data, in place of ``body``.
PARSED_BODY_KEY: Final = "parsed_body"

_TOP_KEYS: Final = ("version", "interactions", "metadata")
_INTERACTION_KEYS: Final = ("request", "response")
_REQUEST_KEYS: Final = ("method", "uri", "body", "headers", PARSED_BODY_KEY)
_RESPONSE_KEYS: Final = ("status", "headers", "body", "url", PARSED_BODY_KEY, FAULT_KEY)
_OLD_HTTPX_RESPONSE_KEYS: Final = ("status_code", "http_version", "headers", "content", "url", FAULT_KEY)
_STATUS_KEYS: Final = ("code", "message")
_BODY_KEYS: Final = ("string",)
_UNKNOWN_REMEDY: Final = (
    "this reader knows vcrpy's and pydantic-ai's cassette fields only; remove that field or convert the cassette"
)


def is_vcrpy_shape(document: Any) -> bool:
    """Whether ``document`` has vcrpy's top level: ``version`` and ``interactions``."""
    return isinstance(document, Mapping) and "interactions" in document and "version" in document


def interactions_from_vcrpy(document: Mapping[str, Any]) -> list[Interaction]:
    """The interactions of a vcrpy cassette dict (version already checked). Raises `FormatProblem`."""
    _check_keys(document, _TOP_KEYS, "the top level")
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
        _check_keys(raw, _INTERACTION_KEYS, where)
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
    _check_keys(raw, _REQUEST_KEYS, where)
    method, uri = raw.get("method"), raw.get("uri")
    if not isinstance(method, str) or not isinstance(uri, str):
        raise FormatProblem(where, "must have a method and a uri, both strings")
    headers = _headers_from_vcrpy(raw.get("headers", {}), f"{where}.headers")
    if PARSED_BODY_KEY in raw:
        body = _parsed_body(raw, where)
        parsed = raw[PARSED_BODY_KEY]
        # Objects and arrays stay data, as a parsed JSON body does; any other value stays its text.
        return RecordedRequest(
            method=method, uri=uri, headers=headers, body=parsed if isinstance(parsed, (dict, list)) else body
        )
    body = _body_string(raw.get("body"), f"{where}.body")
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            raise FormatProblem(
                f"{where}.body",
                "is binary (not UTF-8); cassettes hold JSON or text request bodies",
                "send the request body as JSON or UTF-8 text, or leave that request out of the cassette",
            ) from None
    return RecordedRequest(method=method, uri=uri, headers=headers, body=_request_body(body))


def _body_string(body: Any, where: str) -> str | bytes | None:
    """A body field's text or bytes: ``"..."``, ``!!binary``, ``null`` or ``{string: ...}``."""
    if isinstance(body, Mapping):
        _check_keys(body, _BODY_KEYS, where)
        body = body.get("string")
        where = f"{where}.string"
    if body is not None and not isinstance(body, (str, bytes)):
        raise FormatProblem(where, f"must be text or bytes, not {type(body).__name__}")
    return body


def _parsed_body(raw: Mapping[str, Any], where: str) -> str:
    """The JSON text of pydantic-ai's ``parsed_body``, which stands in for ``body``."""
    if raw.get("body") is not None:
        raise FormatProblem(
            where,
            f"has both a body and a {PARSED_BODY_KEY}, so which one was sent is unclear",
            "keep only one of them, or re-record the cassette",
        )
    try:
        return json.dumps(raw[PARSED_BODY_KEY], ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as err:
        raise FormatProblem(f"{where}.{PARSED_BODY_KEY}", f"is not JSON data ({err})") from None


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
        _check_keys(raw, _OLD_HTTPX_RESPONSE_KEYS, where)
        status, body = raw.get("status_code"), _body_string(raw.get("content"), f"{where}.content")
    else:
        _check_keys(raw, _RESPONSE_KEYS, where)
        status_field = raw.get("status")
        if isinstance(status_field, Mapping):
            _check_keys(status_field, _STATUS_KEYS, f"{where}.status")
        status = status_field.get("code") if isinstance(status_field, Mapping) else None
        if PARSED_BODY_KEY in raw:
            body = _parsed_body(raw, where)
        else:
            body = _body_string(raw.get("body"), f"{where}.body")
    if not isinstance(status, int) or isinstance(status, bool):
        raise FormatProblem(f"{where}.status", "must have an integer code")
    headers = _headers_from_vcrpy(raw.get("headers", {}), f"{where}.headers")
    data = body.encode("utf-8") if isinstance(body, str) else body
    encoding = headers.pop("content-encoding", None)
    if PARSED_BODY_KEY in raw:
        # The parsed body is the decoded JSON already: no compression left to undo.
        headers.pop("content-length", None)
    elif encoding and data:
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


def _check_keys(raw: Mapping[Any, Any], known: tuple[str, ...], where: str) -> None:
    unknown = [key for key in raw if key not in known]
    if unknown:
        raise FormatProblem(
            where, f"has the unknown field {unknown[0]!r} (the fields read here: {', '.join(known)})", _UNKNOWN_REMEDY
        )


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""
