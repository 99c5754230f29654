"""Request fingerprints: what counts as the same request."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.cassette import fingerprints
from replay.cassette.fingerprints import (
    Normalizer,
    canonical_json,
    canonical_json_of_parsed,
    fingerprint,
    fingerprint_with_body,
    route_key,
)

BODY = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}


def test_key_order_does_not_change_the_fingerprint() -> None:
    reordered = {"messages": BODY["messages"], "max_tokens": 100, "model": "claude-sonnet-4-6"}
    assert fingerprint("POST", "/v1/messages", BODY) == fingerprint("post", "/v1/messages", reordered)


def test_method_path_and_body_each_change_it() -> None:
    base = fingerprint("POST", "/v1/messages", BODY)
    assert fingerprint("GET", "/v1/messages", BODY) != base
    assert fingerprint("POST", "/v1/messages/count_tokens", BODY) != base
    assert fingerprint("POST", "/v1/messages", {**BODY, "max_tokens": 101}) != base


def with_text(text: str) -> dict[str, Any]:
    return {**BODY, "messages": [{"role": "user", "content": text}]}


def test_uuids_timestamps_and_durations_are_placeholders() -> None:
    one = with_text("id 3f2b8c1e-1111-4aaa-8bbb-0123456789ab at 2026-01-01T10:00:00.123Z took 12ms")
    two = with_text("id 9a7d6e5f-2222-4ccc-9ddd-abcdefabcdef at 2027-06-30T23:59:59Z took 1.5 s")
    assert fingerprint("POST", "/v1/messages", one) == fingerprint("POST", "/v1/messages", two)


def test_the_workspace_and_temp_folders_are_placeholders(tmp_path: Path) -> None:
    first = Normalizer.for_paths(workspace=tmp_path / "a" / "workspace")
    second = Normalizer.for_paths(workspace=Path("/home/someone/projects/ws"))
    one = with_text(f"cat {tmp_path / 'a' / 'workspace'}/notes.md")
    two = with_text("cat /home/someone/projects/ws/notes.md")
    assert fingerprint("POST", "/p", one, normalizer=first) == fingerprint("POST", "/p", two, normalizer=second)
    assert Normalizer().text("/tmp/tmpab12cd/x.txt") == "<tmp>/x.txt"


def test_different_words_are_different_requests() -> None:
    assert fingerprint("POST", "/p", with_text("read notes.md")) != fingerprint("POST", "/p", with_text("read todo.md"))


texts = st.text(alphabet=st.sampled_from(list('ab12 -:.Tsm/"{}ZT0x')), max_size=60)


@settings(max_examples=300, deadline=None)
@given(st.lists(texts, max_size=6), texts, st.dictionaries(st.sampled_from(["system", "x", "tools"]), texts))
def test_normalizing_a_body_value_by_value_equals_normalizing_its_whole_text(
    messages: list[str], system: str, extra: dict[str, str]
) -> None:
    body = {
        **extra,
        "model": "m",
        "messages": [{"role": "user", "content": m * 20} for m in messages],
        "system": system * 30,
    }
    normalizer = Normalizer.for_paths(workspace=Path("/w/s"))
    assert normalizer.body(body) == normalizer.text(canonical_json(body))
    assert normalizer.body(body) == normalizer.body(body)  # and the cache changes nothing


def test_the_beta_true_query_parameter_is_left_out_and_every_other_one_counts() -> None:
    base = fingerprint("POST", "/v1/messages", BODY)
    assert fingerprint("POST", "/v1/messages?beta=true", BODY) == base
    assert fingerprint("POST", "/v1/messages?beta=true&limit=2", BODY) == fingerprint(
        "POST", "/v1/messages?limit=2", BODY
    )
    assert fingerprint("POST", "/v1/messages?limit=2", BODY) != base
    assert fingerprint("POST", "/v1/messages?beta=false", BODY) != base
    assert route_key("/v1/messages?a=1&beta=true&b=2") == "/v1/messages?a=1&b=2"


def test_a_path_without_beta_true_keeps_the_fingerprint_it_always_had() -> None:
    # Method, path and normalized body, as every stored fingerprint was computed.
    for path in ("/v1/messages", "/v1/messages?limit=2"):
        expected = hashlib.sha256(f"POST {path}\n".encode() + canonical_json(BODY).encode()).hexdigest()
        assert fingerprint("POST", path, BODY) == expected
    assert fingerprint("POST", "/v1/messages?beta=true", BODY, whole_query=True) != fingerprint(
        "POST", "/v1/messages", BODY
    )


def test_the_fingerprint_comes_with_the_body_it_read_parsed_with_its_placeholders(tmp_path: Path) -> None:
    normalizer = Normalizer.for_paths(workspace=tmp_path)
    body = {"model": "m", "messages": [{"role": "user", "content": f"read {tmp_path}/a.py"}]}
    key, read = fingerprint_with_body("POST", "/v1/messages", body, normalizer=normalizer)
    assert key == fingerprint("POST", "/v1/messages", body, normalizer=normalizer)
    assert read == {"model": "m", "messages": [{"role": "user", "content": "read <workspace>/a.py"}]}
    assert fingerprint_with_body("POST", "/v1/x", "plain text", normalizer=normalizer)[1] is None


_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_the_canonical_json_of_a_parsed_value_is_its_canonical_json(value: Any) -> None:
    parsed = json.loads(json.dumps(value))  # what a request body's parser hands over
    assert canonical_json_of_parsed(parsed) == canonical_json(parsed)
    if not (isinstance(value, float) and math.isnan(value)):
        assert canonical_json_of_parsed(parsed) == canonical_json(value)


_ASCII_TEXT = st.lists(
    st.one_of(
        st.sampled_from(["12ms", "3 s", "4\tms", "7\x1cs", "1.5 seconds", "9m", " s", "0"]),
        st.text(st.characters(max_codepoint=127), max_size=6),
    ),
    max_size=6,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(_ASCII_TEXT)
def test_in_ascii_text_the_duration_hint_is_found_where_the_unicode_one_is(text: str) -> None:
    # Normalizer.text looks for durations only where the hint is: in ASCII text a [0-9] hint
    # (cheaper than a Unicode digit test) must say yes exactly where the \d one does.
    ascii_hint, unicode_hint = fingerprints._ASCII_DURATION_HINT, fingerprints._DURATION_HINT
    assert (ascii_hint.search(text) is None) == (unicode_hint.search(text) is None)


def test_a_non_ascii_digit_still_makes_a_duration() -> None:
    assert Normalizer().text("took \u0663 ms") == "took <duration>"  # ARABIC-INDIC DIGIT THREE
