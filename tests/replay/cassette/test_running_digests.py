"""Digests taken up where the last body's left off (`replay.cassette.running_digests`): whatever
came before, each is the digest of the whole text, as `RawBodyKeys.digest` and
`digest_normalized` compute it."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.cassette.fingerprints import Normalizer, digest_normalized, fingerprint, parse_body
from replay.cassette.normalized_text import NormalizedText
from replay.cassette.raw_keys import RawBodyKeys, raw_body_keys
from replay.cassette.request_keys import RequestKeys
from replay.cassette.running_digests import FingerprintDigest, RawDigest
from replay.cassette.scrub import scrub_bytes

METHOD, PATH = "POST", "/v1/messages"
_ROUTES = st.sampled_from([("POST", "/v1/messages"), ("POST", "/v1/messages?beta=true"), ("GET", "/v1/models")])
_CHUNK = st.binary(max_size=12)


@settings(max_examples=200, deadline=None)
@given(
    start=_CHUNK,
    steps=st.lists(
        st.tuples(_ROUTES, st.integers(0, 40), _CHUNK, st.integers(-3, 60), st.booleans()), min_size=1, max_size=8
    ),
)
def test_a_raw_digest_is_the_whole_bodys_whatever_was_remembered_before(
    start: bytes, steps: list[tuple[tuple[str, str], int, bytes, int, bool]]
) -> None:
    digests = RawDigest()
    body = start
    for (method, path), kept, added, end, told in steps:
        body = body[:kept] + added  # mostly the last body again, then something new
        assert digests.digest(method, path, body) == RawBodyKeys.digest(method, path, body)
        if told:  # any end, off the body too: a guess is only ever a guess
            digests.remember(method, path, body, end)


_PIECES = st.sampled_from(['"a":1', '{"role":"user","content":"é"}', '{"x":[]}', '"max_tokens":5', "", "[1,2]"])


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            _ROUTES,
            st.lists(_PIECES, max_size=2),
            st.integers(0, 6),
            st.lists(_PIECES, max_size=3),
            st.lists(_PIECES, max_size=2),
            st.booleans(),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_a_fingerprint_is_the_whole_normalized_texts_whatever_came_before(
    steps: list[tuple[tuple[str, str], list[str], int, list[str], list[str], bool]],
) -> None:
    digests = FingerprintDigest()
    elements: tuple[str, ...] = ()
    for (method, path), before, kept, added, after, listed in steps:
        # The messages the last body sent (the very objects), then new ones.
        elements = elements[:kept] + tuple(added)
        members = (*before, elements, *after) if listed else (*before, *after)
        expected = digest_normalized(method, path, NormalizedText(members).text)
        found = digests.hexdigest(method, path, members)
        assert found == (expected if listed else None)


def test_a_history_whose_last_message_loses_its_cache_mark_keys_as_the_reference_path_does() -> None:
    raw_body_keys().clear()
    normalizer = Normalizer()
    keys = RequestKeys(normalizer)
    history: list[Any] = [{"role": "user", "content": "Fix the failing test."}]
    bodies, fingerprints = [], []
    for turn in range(6):
        marked = [*history[:-1], {**history[-1], "cache_control": {"type": "ephemeral"}}]
        body = json.dumps({"max_tokens": 64, "messages": marked, "model": "m"}, separators=(",", ":")).encode()
        fast = keys.key(METHOD, PATH, body)
        assert fast is not None
        assert fast.fingerprint == fingerprint(METHOD, PATH, parse_body(scrub_bytes(body)), normalizer=normalizer)
        bodies.append(body)
        fingerprints.append(fast.fingerprint)
        # Long messages: a body's digests are taken up only past a few kilobytes.
        said = f"Turn {turn}: " + "a line of the answer. " * 200
        history += [{"role": "assistant", "content": said}, {"role": "user", "content": "Go on."}]
    assert len(bodies[-1]) > 2 * 8_192
    # Sent again, known by their bytes (each digest taken up from a guessed place): the same keys.
    again = RequestKeys(normalizer)
    assert [again.key(METHOD, PATH, body).fingerprint for body in bodies] == fingerprints  # type: ignore[union-attr]
