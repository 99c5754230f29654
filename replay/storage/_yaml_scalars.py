"""Whether one line's scalar is a plain or a single-quoted scalar as the line reader reads them.

The patterns say it exactly, but `re` steps through them a character at a time, alternatives and
look-arounds at each: a second per 10 MB scalar (a big tool input on one line). The functions
answer the same with a few substring searches, which run at memory speed; a property test holds
them to the patterns.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["PLAIN", "SINGLE_QUOTED", "is_plain", "is_single_quoted"]

# A plain scalar in block context, on one line: no indicator first ("-" only before a non-space),
# no ": " or " #" inside, no ":" or space last.
PLAIN: Final = re.compile(r"(?:[^\s\-?:,\[\]{}#&*!|>'\"%@`]|-(?=\S))(?:[^:#]|:(?=[^ ])|(?<! )#)*(?<![ :])")
SINGLE_QUOTED: Final = r"'(?:[^']|'')*'"
_INDICATORS: Final = frozenset("-?:,[]{}#&*!|>'\"%@`")


def is_plain(text: str) -> bool:
    """``PLAIN.fullmatch(text)`` is not None."""
    if not text:
        return False
    first = text[0]
    if first.isspace():
        return False
    if first in _INDICATORS and not (first == "-" and len(text) > 1 and not text[1].isspace()):
        return False
    # After the first character: a ":" only before a character other than a space (so never
    # last), a "#" only after one; and no space last.
    return ": " not in text and " #" not in text and text[-1] not in " :"


def is_single_quoted(text: str) -> bool:
    """``re.fullmatch(SINGLE_QUOTED, text)`` is not None: quotes round runs of other characters
    and of doubled quotes."""
    if len(text) < 2 or text[0] != "'" or text[-1] != "'":
        return False
    # Each run of quotes inside must be of even length: removing the pairs leaves none.
    return "'" not in text[1:-1].replace("''", "")
