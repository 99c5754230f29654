"""Live requests keyed a piece at a time (`replay.cassette.request_keys`): the fingerprint is always
the one the reference path gives (scrub the whole body, parse it, normalize it), or there is no
answer and the player takes that path."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from replay.cassette import load_cassette
from replay.cassette.fingerprints import Normalizer, fingerprint, parse_body
from replay.cassette.raw_keys import raw_body_keys
from replay.cassette.request_keys import RequestKeys
from replay.cassette.scrub import scrub_bytes
from replay.cassette.transport import CassettePlayer
from replay.redact.redactor import current_redactor
from tests.replay.redact.test_redact import CORPUS, ENVIRONMENT, PLANTED

LIBRARY = Path(__file__).resolve().parents[3] / "cassettes"
WORKSPACE = Path("/work/some-workspace")
METHOD, PATH = "POST", "/v1/messages"


def reference(body: bytes, normalizer: Normalizer) -> tuple[str, str]:
    """The fingerprint and normalized text as the reference path computes them."""
    parsed = parse_body(scrub_bytes(body))
    return fingerprint(METHOD, PATH, parsed, normalizer=normalizer), normalizer.body(parsed)


def compact(body: Any) -> bytes:
    """The bytes the SDK sends: compact JSON, UTF-8 kept, keys in the order given."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def test_every_library_request_keys_to_its_stored_fingerprint() -> None:
    raw_body_keys().clear()  # every body keyed from its text, none known by its bytes
    checked = 0
    for cassette_file in sorted(LIBRARY.glob("*/cassette.yaml")):
        cassette = load_cassette(cassette_file)
        keys = RequestKeys(cassette.normalizer())
        stored = cassette.fingerprints()  # checked against the file's fingerprints at load
        for number, interaction in enumerate(cassette.interactions, start=1):
            request = interaction.request
            fast = keys.key(request.method, request.path, request.body_bytes())
            assert fast is not None, f"{cassette_file.parent.name} #{number} took the slow path"
            assert fast.fingerprint == stored[number - 1], f"{cassette_file.parent.name} #{number}"
            assert fast.body.size() == len(fast.normalized)
            checked += 1
    assert checked >= 300


def test_a_body_is_kept_as_the_pieces_its_history_shares_and_reads_back_exactly() -> None:
    raw_body_keys().clear()
    normalizer = Normalizer.for_paths(workspace=WORKSPACE)
    keys = RequestKeys(normalizer)
    history = [{"role": "user", "content": f"Read {WORKSPACE}/notes.md and fix the failing test."}]
    sent = []
    for turn in range(3):
        body = compact({"model": "m", "max_tokens": 64, "messages": history})
        fast = keys.key(METHOD, PATH, body)
        assert fast is not None
        assert (fast.fingerprint, fast.normalized) == reference(body, normalizer)
        assert fast.body.size() == len(fast.normalized)
        sent.append(fast.body)
        history = [*history, {"role": "assistant", "content": f"Turn {turn}."}, {"role": "user", "content": "Go on."}]
    messages = [body.members[1] for body in sent]  # members in key order: max_tokens, messages, model
    assert all(type(elements) is tuple for elements in messages)
    # Every message a later request re-sends is the very string object the first one keyed.
    assert messages[2][0] is messages[1][0] is messages[0][0]
    assert messages[2][1] is messages[1][1]
    assert sent[2].members[0] is sent[0].members[0]


# ---------------------------------------------------------------------------------------------
# Generated bodies


_VARYING = st.sampled_from(
    [
        f"{WORKSPACE}/src/app.py",
        "/tmp/pytest-of-root/pytest-7/test_x0/file.txt",
        "3f2b8c1e-1111-4aaa-8bbb-0123456789ab",
        "2026-01-01T10:00:00.123Z",
        "2027-06-30 23:59:59+02:00",
        "took 12ms",
        "waited 1.5 s",
        "3 seconds",
        "é ü 漢字 🙂",
        'a "quoted" \\ back\nslash\ttab',
        "key: value",
        "",
    ]
)
_TEXT = st.lists(st.one_of(_VARYING, st.text(max_size=20)), max_size=4).map(" ".join)
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.floats(allow_nan=False), _TEXT)
_VALUE = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)),
    max_leaves=12,
)
_MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": _TEXT}),
    st.fixed_dictionaries({"role": st.just("user"), "content": st.lists(st.dictionaries(_TEXT, _VALUE, max_size=3))}),
    _VALUE,
)
_EXTRA = st.dictionaries(st.sampled_from(["model", "system", "tools", "max_tokens", "metadata", "stream"]), _VALUE)


@settings(max_examples=150, deadline=None)
@given(history=st.lists(_MESSAGE, min_size=1, max_size=6), extra=_EXTRA, messages_first=st.booleans())
@example(history=[{"role": "user", "content": "sk-ant-0"}], extra={}, messages_first=True)
def test_a_growing_history_keys_as_the_reference_path_does(
    history: list[Any], extra: dict[str, Any], messages_first: bool
) -> None:
    normalizer = Normalizer.for_paths(workspace=WORKSPACE)
    keys = RequestKeys(normalizer)
    # The loop re-sends its history: later requests are mostly pieces already seen.
    for length in range(1, len(history) + 1):
        messages = {"messages": history[:length]}
        body = compact({**messages, **extra} if messages_first else {**extra, **messages})
        fast = keys.key(METHOD, PATH, body)
        if scrub_bytes(body) != body:
            # A generated string can be a secret ("sk-ant-0"): only the slow path redacts it.
            assert fast is None
            continue
        assert fast is not None
        assert (fast.fingerprint, fast.normalized) == reference(body, normalizer)


# About 30 ms an example (every request keyed both ways): 60 a run, derandomized, in the suite;
# HYPOTHESIS_PROFILE=long draws 1,500 fresh ones.
@settings(max_examples=1_500 if os.environ.get("HYPOTHESIS_PROFILE") == "long" else 60, deadline=None)
@given(
    history=st.lists(_MESSAGE, min_size=1, max_size=5),
    requests=st.lists(st.tuples(_EXTRA, _EXTRA, st.integers(0, 5)), min_size=1, max_size=6),
)
def test_members_around_the_messages_changing_from_one_request_to_the_next_key_as_the_reference_path_does(
    history: list[Any], requests: list[tuple[dict[str, Any], dict[str, Any], int]]
) -> None:
    # Members before and after the list, each the last request's or not: the text around the
    # list is recognised as the last body's only where it is the same.
    normalizer = Normalizer.for_paths(workspace=WORKSPACE)
    keys = RequestKeys(normalizer)
    for before, after, length in requests:
        body = compact(
            {**before, "messages": history[: length + 1], **{k: v for k, v in after.items() if k not in before}}
        )
        fast = keys.key(METHOD, PATH, body)
        if fast is not None:
            assert (fast.fingerprint, fast.normalized) == reference(body, normalizer)
        else:
            assert scrub_bytes(body) != body


@settings(max_examples=100, deadline=None)
@given(body=_VALUE, ascii_only=st.booleans(), spaced=st.booleans())
def test_any_json_body_keys_as_the_reference_path_does_or_not_at_all(body: Any, ascii_only: bool, spaced: bool) -> None:
    normalizer = Normalizer.for_paths(workspace=WORKSPACE)
    separators = (", ", ": ") if spaced else (",", ":")
    data = json.dumps(body, ensure_ascii=ascii_only, separators=separators).encode("utf-8")
    fast = RequestKeys(normalizer).key(METHOD, PATH, data)
    if fast is not None:
        assert (fast.fingerprint, fast.normalized) == reference(data, normalizer)


# ---------------------------------------------------------------------------------------------
# Secrets: the fast path never keys a body the scrub would change


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    return ENVIRONMENT


def _bodies_holding(secret: str) -> list[bytes]:
    """``secret`` in a message, in a key, in a member, in an assignment, and next to ``aws key``
    one message before (the AWS secret pattern reaches across two messages)."""
    history: list[Any] = [{"role": "user", "content": "Read the config."}]
    return [
        compact({"model": "m", "messages": [*history, {"role": "assistant", "content": f"found {secret}"}]}),
        compact({"model": "m", "messages": [*history, {"role": "user", "content": [{secret: "x"}]}]}),
        compact({"model": "m", "system": f"token={secret}", "messages": history}),
        compact({"model": "m", "messages": [*history, {"role": "user", "content": f"AWS_SECRET_ACCESS_KEY={secret}"}]}),
        compact({"model": "m", "messages": [*history, "the aws key", secret]}),
    ]


@pytest.mark.parametrize("secret", [*PLANTED, CORPUS, *ENVIRONMENT.values()])
def test_a_body_the_scrub_changes_takes_the_slow_path(secret: str, credentials: dict[str, str]) -> None:
    normalizer = Normalizer()
    keys = RequestKeys(normalizer)
    redacted = 0
    for body in _bodies_holding(secret):
        fast = keys.key(METHOD, PATH, body)
        if scrub_bytes(body) != body:
            redacted += 1
            assert fast is None  # the reference path redacts it: the fast path leaves it to it
        else:  # a value a detector flags only in some context (AWS_SECRET_ACCESS_KEY=...)
            assert fast is not None
            assert (fast.fingerprint, fast.normalized) == reference(body, normalizer)
    assert redacted >= 1


def test_a_credential_set_after_a_piece_was_seen_is_still_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = RequestKeys(Normalizer())
    body = compact({"model": "m", "messages": [{"role": "user", "content": "value 7Hq2Lx9Vw4Rb8Nz3"}]})
    assert keys.key(METHOD, PATH, body) is not None
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "7Hq2Lx9Vw4Rb8Nz3")
    assert keys.key(METHOD, PATH, body) is None


def test_a_fresh_player_reuses_what_was_found_in_a_piece_only_under_the_same_redactor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw_body_keys().clear()  # keyed from its text each time, not known by its bytes
    body = compact({"model": "m", "messages": [{"role": "user", "content": "value 7Hq2Lx9Vw4Rb8Nz3 in a sentence"}]})
    first = RequestKeys(Normalizer()).key(METHOD, PATH, body)
    raw_body_keys().clear()
    again = RequestKeys(Normalizer()).key(METHOD, PATH, body)
    assert first is not None and again is not None
    assert (again.fingerprint, again.normalized) == (first.fingerprint, first.normalized)
    raw_body_keys().clear()
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "7Hq2Lx9Vw4Rb8Nz3")
    assert RequestKeys(Normalizer()).key(METHOD, PATH, body) is None


@settings(max_examples=200, deadline=None)
@given(
    text=st.lists(st.one_of(st.sampled_from([*PLANTED, "aws", "Bearer ", "sk-", "PRIVATE KEY"]), st.text()), max_size=4)
)
def test_the_raw_text_pre_check_never_misses_what_the_raw_detectors_find(text: list[str]) -> None:
    redactor = current_redactor()
    joined = " ".join(text)
    if redactor.detect_in_raw_text(joined):
        assert redactor.may_find_in_raw_text(joined)


# ---------------------------------------------------------------------------------------------
# The player


def test_the_player_logs_the_body_the_reference_path_reads() -> None:
    cassette = load_cassette(LIBRARY / "demo" / "cassette.yaml")
    normalizer = cassette.normalizer()  # live requests from the recording's own folders
    player = CassettePlayer(
        cassette.interactions,
        fingerprints=cassette.fingerprints(),
        recorded_normalizer=normalizer,
        normalizer=normalizer,
        strict=True,
    )
    for interaction in cassette.interactions:
        request = interaction.request
        player.match(request.method, request.path, request.body_bytes())
        parsed = parse_body(scrub_bytes(request.body_bytes()))
        assert player.log[-1].body == json.loads(normalizer.body(parsed))
    assert player.finish() == []
