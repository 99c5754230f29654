"""Scrubbing: secrets never reach a cassette, volatile headers are dropped, and a scan finds what is left."""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from vcr.request import Request

from replay.cassette.interaction import BodyKind, Interaction, RecordedRequest, RecordedResponse, SseEvent
from replay.cassette.scrub import (
    RequestBodyScrub,
    keeps_request_header,
    keeps_response_header,
    scrub_bytes,
    scrub_interaction,
    scrub_interactions,
    scrub_text,
    scrub_vcr_request,
    scrub_vcr_response,
)
from replay.cassette.secret_scan import Finding, find_secrets
from replay.redact.kinds import SecretKind

KEY = "sk-ant-api03-Zx9_secret-KEY-0123456789abcdef"
OAUTH = "sk-ant-oat01-another_Secret-9876"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl"


def test_an_api_key_anywhere_in_a_text_is_redacted() -> None:
    text = f"key={KEY}; and again ({OAUTH})."
    assert scrub_text(text) == "key=[REDACTED:anthropic-api-key]; and again ([REDACTED:anthropic-api-key])."


def test_a_bearer_token_is_redacted_but_prose_about_bearer_tokens_is_not() -> None:
    assert scrub_text(f"Authorization: Bearer {JWT}") == "Authorization: Bearer [REDACTED:jwt]"
    assert scrub_text("bearer abc12345") == "bearer [REDACTED:bearer-token]"
    assert scrub_text("Send a Bearer token in the header.") == "Send a Bearer token in the header."


def test_scrubbing_is_idempotent() -> None:
    once = scrub_text(f"{KEY} Bearer {JWT}")
    assert scrub_text(once) == once


@pytest.mark.parametrize(
    "name",
    ["authorization", "X-Api-Key", "cookie", "set-cookie", "anthropic-organization-id", "proxy-authorization"],
)
def test_secret_headers_are_never_kept(name: str) -> None:
    assert not keeps_request_header(name)
    assert not keeps_response_header(name)


@pytest.mark.parametrize(
    "name",
    ["x-stainless-os", "X-Stainless-Retry-Count", "user-agent", "host", "content-length", "accept-encoding"],
)
def test_volatile_request_headers_are_dropped(name: str) -> None:
    assert not keeps_request_header(name)


@pytest.mark.parametrize(
    "name", ["date", "cf-ray", "x-envoy-upstream-service-time", "anthropic-ratelimit-tokens-reset", "via"]
)
def test_volatile_response_headers_are_dropped(name: str) -> None:
    assert not keeps_response_header(name)


@pytest.mark.parametrize("name", ["request-id", "retry-after", "x-should-retry", "content-type"])
def test_headers_the_sdk_reads_are_kept(name: str) -> None:
    assert keeps_response_header(name)


def test_scrub_interaction_removes_every_secret_from_headers_bodies_and_events() -> None:
    interaction = Interaction(
        RecordedRequest(
            method="POST",
            uri=f"https://api.example.com/v1/messages?key={KEY}",
            headers={"Authorization": f"Bearer {KEY}", "x-stainless-os": "Linux", "anthropic-version": "2026-10-21"},
            body={"messages": [{"role": "user", "content": f"my key is {KEY}", KEY: "as a key too"}]},
        ),
        RecordedResponse(
            status=200,
            headers={"set-cookie": "session=abc", "request-id": "req_1", "x-token": f"Bearer {JWT}"},
            kind=BodyKind.SSE,
            body=[SseEvent("content_block_delta", {"delta": {"text": f"echo {KEY}"}}), SseEvent("ping", KEY)],
        ),
    )

    scrubbed = scrub_interaction(interaction)

    assert scrubbed.request.headers == {"anthropic-version": "2026-10-21"}
    assert scrubbed.response.headers == {"request-id": "req_1", "x-token": "Bearer [REDACTED:jwt]"}
    text = repr(scrubbed)
    assert KEY not in text and JWT not in text
    assert "[REDACTED:anthropic-api-key]" in scrubbed.request.uri
    assert scrubbed.response.body[1] == SseEvent("ping", "[REDACTED:anthropic-api-key]")
    assert KEY in repr(interaction), "the input is left as it was"


@pytest.mark.parametrize("kind", [BodyKind.JSON, BodyKind.TEXT, BodyKind.BINARY])
def test_every_body_kind_is_scrubbed(kind: BodyKind) -> None:
    body = {
        BodyKind.JSON: {"error": {"message": f"bad key {KEY}"}},
        BodyKind.TEXT: f"bad key {KEY}",
        BodyKind.BINARY: base64.b64encode(b"\xff\xfe" + KEY.encode()).decode(),
    }[kind]
    response = RecordedResponse(status=401, kind=kind, body=body)

    scrubbed = scrub_interaction(Interaction(RecordedRequest(method="GET", uri="https://x/"), response)).response

    assert KEY.encode() not in scrubbed.body_bytes()
    assert b"[REDACTED:anthropic-api-key]" in scrubbed.body_bytes()


def test_a_cassettes_interactions_scrub_as_each_alone_though_each_string_is_redacted_once() -> None:
    # A session re-sends its history: the planted key is in every later request's strings.
    history: list[dict[str, str]] = []
    interactions = []
    for turn, said in enumerate(["hello", f"my key is {KEY}", "Bearer abc12345", "thanks"]):
        history = [*history, {"role": "user", "content": said}, {"role": "assistant", "content": f"reply {turn}"}]
        request = RecordedRequest(method="POST", uri="https://x/v1/messages", body={"messages": history})
        response = RecordedResponse(status=200, kind=BodyKind.JSON, body={"content": f"reply {turn} {said}"})
        interactions.append(Interaction(request, response))
    # The first request again, as a new recording parses it: equal strings, new objects.
    interactions.append(
        Interaction(
            replace(interactions[0].request, body=json.loads(json.dumps(interactions[0].request.body))),
            interactions[0].response,
        )
    )

    scrubbed = scrub_interactions(interactions)

    assert scrubbed == [scrub_interaction(interaction) for interaction in interactions]
    assert KEY not in repr(scrubbed) and "abc12345" not in repr(scrubbed)
    assert "[REDACTED:anthropic-api-key]" in repr(scrubbed[3].request.body)
    assert scrubbed[0].request.body is interactions[0].request.body, "a clean body is kept as it is"
    assert scrubbed[-1].request.body is interactions[-1].request.body, "and so is a clean body seen before"


def test_a_recorders_body_scrub_is_scrub_bytes_and_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    scrub_body = RequestBodyScrub()
    body = b'{"content": "' + KEY.encode() + b' and the project code ZEPHYR-ORCHARD-4471"}'
    assert scrub_body(body) == scrub_bytes(body)
    assert scrub_body(bytes(body)) == scrub_bytes(body), "the same body again, as vcrpy's copy of it"
    assert b"ZEPHYR" in scrub_body(body)

    monkeypatch.setenv("PROJECT_SECRET", "ZEPHYR-ORCHARD-4471")

    assert scrub_body(body) == scrub_bytes(body)
    assert b"ZEPHYR" not in scrub_body(body), "a credential set since is redacted from the same body"


def test_find_secrets_reports_line_column_and_kind_without_repeating_the_secret() -> None:
    text = "\n".join(
        [
            "clean line",
            f"  body: uses {KEY}",
            f"    - Bearer {JWT}",
            "    authorization:",
            "    Cookie: session=abc",
            "    x-api-key: REDACTED",
            "    sk-ant-REDACTED and Bearer REDACTED",
        ]
    )

    assert find_secrets(text) == [
        Finding(2, 14, SecretKind.ANTHROPIC_API_KEY),
        Finding(3, 14, SecretKind.JWT),
        Finding(4, 5, SecretKind.AUTH_HEADER),
        Finding(5, 5, SecretKind.COOKIE),
    ]


def test_find_secrets_reads_vcrpy_json_headers() -> None:
    text = '{\n    "headers": {\n        "authorization": [\n            "Bearer x"\n        ]\n    }\n}'
    assert find_secrets(text) == [Finding(3, 10, SecretKind.AUTH_HEADER)]


_token_alphabet = st.sampled_from("abcXYZ019_-.~+/")


@given(
    prefix=st.text(max_size=20),
    key=st.text(alphabet=st.sampled_from("abcXYZ019_-"), min_size=1, max_size=40),
    token=st.text(alphabet=_token_alphabet, min_size=20, max_size=40),
    suffix=st.text(max_size=20),
)
def test_after_scrub_text_a_scan_finds_no_key_and_no_token(prefix: str, key: str, token: str, suffix: str) -> None:
    text = f"{prefix} sk-ant-{key} {suffix} Bearer {token} {suffix}"
    kinds = {finding.kind for finding in find_secrets(scrub_text(text))}
    assert SecretKind.ANTHROPIC_API_KEY not in kinds
    assert SecretKind.BEARER_TOKEN not in kinds


# ---------------------------------------------------------------------------------------------
# vcrpy hooks


def test_the_vcrpy_request_hook_drops_secret_headers_and_scrubs_the_body() -> None:
    request = Request(
        "POST",
        "https://api.anthropic.com/v1/messages",
        f'{{"content": "{KEY}"}}'.encode(),
        {"Authorization": f"Bearer {KEY}", "X-Stainless-Lang": "python", "Content-Type": "application/json"},
    )

    scrubbed = scrub_vcr_request(request)

    assert dict(scrubbed.headers) == {"Content-Type": "application/json"}
    assert scrubbed.body == b'{"content": "[REDACTED:anthropic-api-key]"}'
    assert request.headers["Authorization"] == f"Bearer {KEY}", "vcrpy still sends the original request"


def test_the_vcrpy_response_hook_decodes_gzip_before_scrubbing() -> None:
    response = {
        "status": {"code": 200, "message": "OK"},
        "headers": {"Content-Encoding": ["gzip"], "Content-Length": ["99"], "Set-Cookie": ["a=b"], "request-id": ["r"]},
        "body": {"string": gzip.compress(f'{{"echo": "{KEY}"}}'.encode())},
    }

    scrubbed = scrub_vcr_response(response)

    assert scrubbed["headers"] == {"request-id": ["r"]}
    assert scrubbed["body"] == {"string": b'{"echo": "[REDACTED:anthropic-api-key]"}'}
    assert scrubbed["status"] == {"code": 200, "message": "OK"}
