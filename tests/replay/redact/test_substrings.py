"""Looking for a few strings at once answers what looking for each in turn answers: for the
detectors' own hints, for the raw-text pre-check (`Redactor.may_find_in_raw_text`, against its
old definition, kept here as the specification) and for any strings at all.

Generated examples: ``HYPOTHESIS_PROFILE=long`` draws thirty times as many, fresh each run."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.redact import detectors
from replay.redact.detectors import PRIVATE_KEY_MARKERS, RAW_HINTS
from replay.redact.redactor import Redactor
from replay.redact.substrings import Substrings
from tests.replay.redact.test_redact import PLANTED

EXAMPLES = 3_000 if os.environ.get("HYPOTHESIS_PROFILE") == "long" else 100
# Few letters, so that generated strings overlap, share prefixes and hold one another.
_LETTERS = "abk-_İK\u0307"
_NEEDLES = st.lists(st.text(_LETTERS, max_size=5), max_size=6)
# Texts made of the hints and markers, cut and joined, in any case, with the letters that lower()
# turns into ASCII ones (the Kelvin sign into k, İ into i and a dot).
_PIECES = st.sampled_from([*RAW_HINTS, *PRIVATE_KEY_MARKERS, *PLANTED, "sk", "gh", "xo", "aki", "PRIVATE"])
_TEXTS = st.lists(
    st.one_of(_PIECES, _PIECES.map(str.upper), _PIECES.map(lambda piece: piece[1:]), st.text(_LETTERS + "SGHXPR ")),
    max_size=6,
).map("".join)


def may_find_in_raw_text(redactor: Redactor, text: str) -> bool:
    """`Redactor.may_find_in_raw_text` as it was first written, one scan a string."""
    lowered = text.lower()
    return (
        any(hint in lowered for hint in RAW_HINTS)
        or any(marker in text for marker in PRIVATE_KEY_MARKERS)
        or any(form in text for form in redactor.known_forms())
    )


@settings(max_examples=EXAMPLES, deadline=None)
@given(strings=_NEEDLES, text=st.text(_LETTERS, max_size=12))
def test_any_strings_are_found_where_looking_for_each_finds_one(strings: list[str], text: str) -> None:
    assert Substrings(strings).in_(text) is any(string in text for string in strings)


@settings(max_examples=EXAMPLES, deadline=None)
@given(text=_TEXTS)
def test_each_plugins_hints_are_found_where_looking_for_each_finds_one(text: str) -> None:
    lowered = text.lower()
    for (_, _, hints), together in zip(detectors._TOKEN_PLUGINS, detectors._PLUGIN_HINTS, strict=True):
        assert together.in_(lowered) is any(hint in lowered for hint in hints)


@settings(max_examples=EXAMPLES, deadline=None)
@given(text=_TEXTS, known=st.lists(st.sampled_from([*PLANTED, "sk-ant-known-value", "gho_known_value"]), max_size=3))
def test_the_raw_text_pre_check_answers_as_its_first_definition(text: str, known: list[str]) -> None:
    redactor = Redactor({value: f"known-{number}" for number, value in enumerate(known)})
    assert redactor.may_find_in_raw_text(text) is may_find_in_raw_text(redactor, text)


def test_strings_that_hold_one_another_or_nothing_are_found_as_each_would_be() -> None:
    assert Substrings(["sk-ant-", "sk-"]).in_("an sk-proj key")
    assert not Substrings(["sk-ant-", "sk-"]).in_("an s-k key")
    assert Substrings([""]).in_("") and not Substrings([]).in_("anything")
    assert Substrings(["ghp_", "gho_", "hooks.slack.com"]).in_("see hooks.slack.com/x")
    assert not Substrings(["ghp_", "gho_", "hooks.slack.com"]).in_("ghx_ hooks.slack.co")
