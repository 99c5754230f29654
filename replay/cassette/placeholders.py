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
        body: Any = [SseEvent(e.event, _in_value(e.data, replacements)) for e in response.body]
    elif response.kind in (BodyKind.JSON, BodyKind.TEXT):
        body = _in_value(response.body, replacements)
    else:
        body = response.body
    return Interaction(request, dataclasses.replace(response, body=body))


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
