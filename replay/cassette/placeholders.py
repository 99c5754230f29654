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
from replay.cassette.scrub import delta_streams
from replay.redact.pieces import replace_in_pieces

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


def _in_events(events: Sequence[SseEvent], replacements: Replacements) -> list[SseEvent]:
    """The events with paths replaced, also where a path is split across a content block's
    deltas (a model streams a tool's input, and its text, in pieces): the placeholder then goes
    whole into the piece where the path began, and the pieces after it lose what it covered."""
    replaced = [SseEvent(event.event, _in_value(event.data, replacements)) for event in events]
    placeholders = dict(replacements)
    pattern = re.compile("|".join(re.escape(path) for path, _ in replacements if path))  # longest first
    for (_, key), positions in delta_streams(replaced).items():
        if len(positions) < 2:
            continue
        pieces = [replaced[p].data["delta"][key] for p in positions]
        spans = [(m.start(), m.end(), placeholders[m.group()]) for m in pattern.finditer("".join(pieces))]
        for position, old, new in zip(positions, pieces, replace_in_pieces(pieces, spans), strict=True):
            if new != old:
                data = replaced[position].data
                replaced[position] = SseEvent(replaced[position].event, {**data, "delta": {**data["delta"], key: new}})
    return replaced


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
