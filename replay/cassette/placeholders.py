"""Folder paths in recorded bodies replaced by placeholders before a cassette is saved.

A session runs in a temp copy of its workspace, whose path changes on every run. Saving
``<workspace>`` and ``<session>`` instead of those paths makes a re-recorded cassette
byte-identical and keeps the machine's folders out of the file; matching is unaffected, since
fingerprints replace the same paths by the same placeholders.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from replay.cassette.interaction import BodyKind, Interaction, SseEvent

__all__ = ["Replacements", "folder_replacements", "path_replacements", "replace_paths"]

Replacements = Sequence[tuple[str, str]]


def path_replacements(*, workspace: Path | None, session_dir: Path | None) -> list[tuple[str, str]]:
    """(path, placeholder) pairs for the folders a session ran in, longest first, each also in
    its resolved and JSON-escaped forms."""
    folders = {"<workspace>": workspace, "<session>": session_dir}
    return folder_replacements({placeholder: path for placeholder, path in folders.items() if path is not None})


def folder_replacements(folders: Mapping[str, Path]) -> list[tuple[str, str]]:
    """(path, placeholder) pairs for ``folders`` (placeholder -> path), longest first, each also
    in its resolved and JSON-escaped forms."""
    pairs: set[tuple[str, str]] = set()
    for placeholder, path in folders.items():
        for variant in {str(path), os.path.realpath(path)}:
            pairs.add((variant, placeholder))
            pairs.add((json.dumps(variant)[1:-1], placeholder))
    return sorted(pairs, key=lambda pair: -len(pair[0]))


def replace_paths(interaction: Interaction, replacements: Replacements) -> Interaction:
    """``interaction`` with the paths in its request and response bodies replaced."""
    if not replacements:
        return interaction
    request = dataclasses.replace(interaction.request, body=_in_value(interaction.request.body, replacements))
    response = interaction.response
    if response.kind is BodyKind.SSE:
        body: Any = _in_events(response.body, replacements)
    elif response.kind in (BodyKind.JSON, BodyKind.TEXT):
        body = _in_value(response.body, replacements)
    else:
        body = response.body
    return Interaction(request, dataclasses.replace(response, body=body))


# The streamed deltas whose pieces join into one text, and the key of each one's piece.
_DELTA_PIECES = {"text_delta": "text", "input_json_delta": "partial_json", "thinking_delta": "thinking"}


def _in_events(events: Sequence[SseEvent], replacements: Replacements) -> list[SseEvent]:
    """The events with paths replaced, also where a path is split across a content block's
    deltas (a model streams a tool's input, and its text, in pieces): the placeholder then goes
    whole into the piece where the path began, and the pieces after it lose what it covered."""
    replaced = [SseEvent(event.event, _in_value(event.data, replacements)) for event in events]
    streams: dict[tuple[Any, str], list[int]] = {}
    for position, event in enumerate(replaced):
        data = event.data
        delta = data.get("delta") if isinstance(data, dict) and data.get("type") == "content_block_delta" else None
        key = _DELTA_PIECES.get(delta.get("type")) if isinstance(delta, dict) else None
        if key is not None and isinstance(delta.get(key), str):  # type: ignore[union-attr]
            streams.setdefault((data.get("index"), key), []).append(position)
    for (_, key), positions in streams.items():
        pieces = [replaced[p].data["delta"][key] for p in positions]
        new_pieces = _across_pieces(pieces, replacements)
        for position, old, new in zip(positions, pieces, new_pieces, strict=True):
            if new != old:
                data = replaced[position].data
                replaced[position] = SseEvent(replaced[position].event, {**data, "delta": {**data["delta"], key: new}})
    return replaced


def _across_pieces(pieces: list[str], replacements: Replacements) -> list[str]:
    """``pieces`` with every path that spans two or more of them replaced (a path inside one
    piece is replaced already), each piece boundary moved past the placeholder it fell in."""
    if len(pieces) < 2:
        return pieces
    joined = "".join(pieces)
    placeholders = dict(replacements)
    pattern = re.compile("|".join(re.escape(path) for path, _ in replacements if path))  # longest first
    spans = [(m.start(), m.end(), placeholders[m.group()]) for m in pattern.finditer(joined)]
    if not spans:
        return pieces
    parts, cursor = [], 0
    for start, end, placeholder in spans:
        parts += [joined[cursor:start], placeholder]
        cursor = end
    new_joined = "".join([*parts, joined[cursor:]])
    edges, boundary = [0], 0
    for piece in pieces[:-1]:
        boundary += len(piece)
        edges.append(_moved(boundary, spans))
    edges.append(len(new_joined))
    return [new_joined[edges[i] : edges[i + 1]] for i in range(len(pieces))]


def _moved(boundary: int, spans: list[tuple[int, int, str]]) -> int:
    """Where a piece boundary of the joined text falls once ``spans`` are replaced."""
    shift = 0
    for start, end, placeholder in spans:
        if end <= boundary:
            shift += len(placeholder) - (end - start)
        elif start < boundary:  # inside a path: right after its placeholder
            return start + shift + len(placeholder)
        else:
            break
    return boundary + shift


def _in_value(value: Any, replacements: Replacements) -> Any:
    if isinstance(value, str):
        for path, placeholder in replacements:
            if path in value:
                value = value.replace(path, placeholder)
        return value
    if isinstance(value, dict):
        return {k: _in_value(v, replacements) for k, v in value.items()}
    if isinstance(value, list):
        return [_in_value(v, replacements) for v in value]
    return value
