"""The fake model over real HTTP on loopback, so the unmodified SDK (or curl) can talk to it.

`FakeModelServer` is an `HttpServer` (``replay.http``: binding, the background thread or the
current loop, keep-alive, reading requests and framing answers on ``h11``) that answers from a
`FakeModel`: the API-key check, JSON with Content-Length, SSE with ``Transfer-Encoding:
chunked`` one chunk per event, a scripted dropped connection, which closes the socket
without the terminating zero-length chunk so the client sees a real incomplete body, and a
scripted reset, a TCP reset before any byte of the response.

``POST /reset`` starts the scenario again; with ``restart_per_conversation=True`` so does every
request that starts a new conversation (its ``messages`` hold no assistant turn, and do not
open with a compaction's summary) after a complete answer, so one server serves an agent run
after run (``replay serve``). A retry after a scripted fault is not a new conversation: the
fault's retry gets the next turn; nor is the history a compaction leaves behind, nor a request
a matched turn accepts (a client's title query, say).

    with FakeModelServer(FakeModel(load_scenario("scenario.yaml"))) as server:
        client = anthropic.Anthropic(api_key="sk-ant-test", base_url=server.url, max_retries=0)
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any, Final

from engine.compact import SUMMARY_PREAMBLE
from replay.fake.faults import ErrorType
from replay.fake.model import FakeModel, FakeResponse, ScenarioExhaustedError
from replay.fake.sse import error_body
from replay.http.connection import BadRequest, Request, ResponseWriter, UnsendableResponse
from replay.http.server import HttpServer
from replay.loopback import is_loopback

__all__ = ["RESET_PATH", "AuthStyle", "FakeModelServer", "error_response"]

logger = logging.getLogger(__name__)

RESET_PATH: Final = "/reset"
_BAD_REQUEST_TYPES: Final = {413: ErrorType.REQUEST_TOO_LARGE}


class AuthStyle(StrEnum):
    """How a request presented its API key (the server accepts any key)."""

    BEARER = "bearer"
    X_API_KEY = "x-api-key"
    NONE = "none"


class FakeModelServer(HttpServer):
    """Serves a FakeModel over HTTP/1.1 on loopback: in a background thread (`start`) or in the current loop."""

    label = "The fake model server"

    def __init__(
        self,
        fake_model: FakeModel,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        require_auth: bool = True,
        allow_remote: bool = False,
        restart_per_conversation: bool = False,
        on_request: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(host=host, port=port)
        if not allow_remote and not is_loopback(host):
            raise ValueError(
                f"FakeModelServer serves only loopback addresses (127.0.0.1, ::1, localhost), not {host!r}: "
                "the fake model checks no keys. Pass allow_remote=True to serve another address anyway."
            )
        self.fake_model = fake_model
        self.require_auth = require_auth
        self.restart_per_conversation = restart_per_conversation
        self.on_request = on_request
        """Called with one line per request answered (``replay serve --log``)."""
        self.auth_styles: Counter[AuthStyle] = Counter()
        """How many requests presented each auth style."""

    async def handle(self, request: Request, response: ResponseWriter) -> None:
        started = time.monotonic()
        if request.method.upper() == "POST" and request.path.split("?", 1)[0] == RESET_PATH:
            self.fake_model.reset()
            note = "scenario restarted"
            answer = FakeResponse(status=204, headers=[])
        else:
            note = self._restart_if_new_conversation(request)
            answer = self._answer(request)
        if self.on_request is not None:
            on_request = self.on_request

            def log_request() -> None:
                # Before the answer's last bytes go out: a client that has its answer finds the line.
                elapsed = (time.monotonic() - started) * 1000
                played = f"turn {self.fake_model.turns_played}/{len(self.fake_model.scenario.turns)}"
                tail = f" ({note})" if note else ""
                status = "reset" if answer.reset else answer.status
                on_request(f"{request.method} {request.path} {status} {elapsed:.0f} ms {played}{tail}")

            response.before_complete = log_request
        await _send(response, answer)

    def bad_request_response(self, bad: BadRequest) -> tuple[list[tuple[str, str]], bytes]:
        error_type = _BAD_REQUEST_TYPES.get(bad.status, ErrorType.INVALID_REQUEST_ERROR)
        answer = error_response(bad.status, error_type, bad.message)
        return answer.headers, b"".join(answer.chunks)

    def _restart_if_new_conversation(self, request: Request) -> str:
        if not (self.restart_per_conversation and self.fake_model.last_turn_was_answer):
            return ""
        if request.method.upper() != "POST" or request.path.split("?", 1)[0] != "/v1/messages":
            return ""
        body = _parse_body(request.body)
        if body is None or not _starts_a_conversation(body):
            return ""
        if self.fake_model.matched_turn_for(body) is not None:
            # A client's side query (a title, say) looks like a new conversation; a turn matched
            # for it answers it within the current one.
            return ""
        self.fake_model.reset()
        return "new conversation: scenario restarted"

    def _answer(self, request: Request) -> FakeResponse:
        style = _auth_style(request.headers)
        self.auth_styles[style] += 1
        if style is AuthStyle.NONE and self.require_auth:
            message = (
                "The fake model server needs an API key: send `Authorization: Bearer <key>` or `x-api-key: <key>` "
                "(any key is accepted), or start the server with require_auth=False."
            )
            return error_response(401, ErrorType.AUTHENTICATION_ERROR, message)
        path = request.path
        try:
            return self.fake_model.respond(request.method, path, request.headers, request.body)
        except ScenarioExhaustedError as exc:
            logger.warning("Answered %s %s with 500: %s", request.method, path, exc)
            return error_response(500, ErrorType.API_ERROR, str(exc))
        except Exception as exc:
            logger.exception("The fake model failed to answer %s %s; answered 500.", request.method, path)
            message = f"The fake model failed to answer {request.method} {path}: {type(exc).__name__}: {exc}"
            return error_response(500, ErrorType.API_ERROR, message)


async def _send(response: ResponseWriter, answer: FakeResponse) -> None:
    """One chunk per SSE event, flushed as it goes; a scripted drop cuts the body; a scripted
    reset sends nothing."""
    if answer.reset:
        await response.reset()
        return
    streamed = answer.drop_after or _is_event_stream(answer.headers)
    body = b"".join(answer.chunks)
    try:
        await response.start(answer.status, answer.headers, length=None if streamed else len(body))
    except UnsendableResponse as exc:
        logger.error("Cannot send the fake model's response: %s", exc)
        failed = error_response(500, ErrorType.API_ERROR, f"The fake model's response cannot be sent: {exc}")
        await response.send(failed.status, failed.headers, b"".join(failed.chunks))
        return
    for chunk in answer.chunks if streamed else [body]:
        await response.write(chunk)
    if answer.drop_after:
        await response.drop()  # no terminating chunk: the client sees an incomplete body
    else:
        await response.end()


def error_response(status: int, error_type: ErrorType, message: str) -> FakeResponse:
    """An error the server itself makes; `x-should-retry: false` keeps clients from retrying it."""
    body = json.dumps(error_body(error_type, message), separators=(",", ":"), ensure_ascii=False).encode()
    headers = [("content-type", "application/json"), ("x-should-retry", "false")]
    return FakeResponse(status=status, headers=headers, chunks=[body])


def _parse_body(body: bytes) -> dict[str, Any] | None:
    try:
        request: Any = json.loads(body)
    except ValueError:
        return None
    return request if isinstance(request, dict) else None


def _starts_a_conversation(request: Mapping[str, Any]) -> bool:
    messages = request.get("messages")
    if not isinstance(messages, list):
        return False
    if any(isinstance(message, dict) and message.get("role") == "assistant" for message in messages):
        return False
    # After a compaction the history is the summary (and what follows): the same conversation.
    return not (messages and _first_text(messages[0]).startswith(SUMMARY_PREAMBLE))


def _first_text(message: object) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    first = content[0] if isinstance(content, list) and content else None
    text = first.get("text") if isinstance(first, dict) else None
    return text if isinstance(text, str) else ""


def _auth_style(headers: Mapping[str, str]) -> AuthStyle:
    scheme, _, key = headers.get("authorization", "").strip().partition(" ")
    if scheme.lower() == "bearer" and key.strip():
        return AuthStyle.BEARER
    if headers.get("x-api-key", "").strip():
        return AuthStyle.X_API_KEY
    return AuthStyle.NONE


def _is_event_stream(headers: list[tuple[str, str]]) -> bool:
    return any(
        name.lower() == "content-type" and value.lower().startswith("text/event-stream") for name, value in headers
    )
