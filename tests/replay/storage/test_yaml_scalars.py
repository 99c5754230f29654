"""The line reader's scalar checks answer what their patterns answer, for any text."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from replay.storage._yaml_scalars import PLAIN, SINGLE_QUOTED, is_plain, is_single_quoted

# The characters the patterns treat apart, Unicode spaces among them, and a few others.
TRICKY = st.text(st.sampled_from(" :#-'?,[]{}&*!|>\"%@`ax\xa0\u2000\u3000\x1c\x85\u2028\t"), max_size=12)
ANY_TEXT = TRICKY | st.text(max_size=12)


@given(ANY_TEXT)
@example("")
@example("-")
@example("- a")
@example("-a")
@example("-\xa0")
@example("a:")
@example("a:b")
@example("a: b")
@example("a #b")
@example("a#b")
@example("a ")
@example("\xa0a")
def test_is_plain_answers_what_the_plain_pattern_answers(text: str) -> None:
    assert is_plain(text) == (PLAIN.fullmatch(text) is not None)


@given(ANY_TEXT.map(lambda t: f"'{t}'") | ANY_TEXT)
@example("'")
@example("''")
@example("''''")
@example("'''")
@example("'a''b'")
@example("'a'b'")
def test_is_single_quoted_answers_what_the_single_quoted_pattern_answers(text: str) -> None:
    assert is_single_quoted(text) == (re.fullmatch(SINGLE_QUOTED, text) is not None)
