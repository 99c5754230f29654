"""Replacing spans of a text that arrived in pieces (a streamed answer's deltas), keeping the
pieces: what replaces a span goes into the piece the span starts in, and the pieces it covers lose
its characters. ``"".join`` of the result is the whole text with the spans replaced."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["Span", "replace_in_pieces"]

# (start, end, replacement) in the joined text; spans do not overlap and come in order.
Span = tuple[int, int, str]


def replace_in_pieces(pieces: Sequence[str], spans: Sequence[Span]) -> list[str]:
    """``pieces`` with ``spans`` of their joined text replaced, as many pieces as before."""
    if not spans:
        return list(pieces)
    whole = "".join(pieces)
    result: list[str] = []
    start = 0
    for piece in pieces:
        end = start + len(piece)
        out: list[str] = []
        position = start
        for span_start, span_end, replacement in spans:
            if span_end <= position or span_start >= end:
                continue
            if span_start >= position:
                out.append(whole[position:span_start])
                out.append(replacement)
            position = max(position, min(span_end, end))
        out.append(whole[position:end])
        result.append("".join(out))
        start = end
    return result
