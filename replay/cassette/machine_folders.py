"""The folders of the recording machine that its stored fingerprints depend on, recorded with them.

Fingerprints replace the home folder with ``<home>`` and an entry of the temp folder (the folder
right under it, which varies per run) with ``<tmp>``. Both are the machine's: $HOME and $TMPDIR.
When a request body mentions one of them outside the session's own folders, the cassette records
it (``recorded_paths`` ``home``; ``temp``, and ``temp_resolved`` when the temp folder is a link),
so that the stored fingerprints recompute the same, and the recorded temp folder's entries still
become ``<tmp>``, on a machine with another home or TMPDIR. A cassette whose bodies mention
neither records neither, and is written as it always was.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from enum import Enum

from replay.cassette._model import TEMP_KEYS, Cassette, normalizer_for
from replay.cassette.fingerprints import Normalizer, canonical_json, temp_folders, temp_paths

__all__ = ["with_machine_folders"]


def with_machine_folders(cassette: Cassette) -> dict[str, str]:
    """``cassette``'s recorded paths, plus this machine's home and temp folders when a request
    body mentions them (a recorded one is kept: the kept interactions were fingerprinted under it).
    The bodies are read once, one at a time: a long session's re-sent history is large."""
    paths = dict(cassette.recorded_paths)
    home = os.path.expanduser("~")
    wanted = {
        _Folder.HOME: "home" not in paths and home not in ("", "/"),
        _Folder.TEMP: not cassette.temp_as_before and not any(key in paths for key in TEMP_KEYS),
    }
    if not any(wanted.values()):
        return paths
    normalizer = normalizer_for(paths)
    # Mentioned outside the recorded folders: a workspace inside home or inside the temp folder
    # keeps its own placeholder; but a folder the temp folder lies in (TMPDIR=~/tmp) is replaced
    # after it, as the normalizer does.
    # This process's temp folders as given and resolved (a recorded one: the recording's).
    temp_roots = Normalizer(temp=normalizer.temp or temp_folders()).temp_roots()
    outside_temp = [
        (root, placeholder)
        for root, placeholder in normalizer.roots
        if not any(temp_root.startswith(root.rstrip("/") + "/") for temp_root in temp_roots)
    ]
    entries = temp_paths(temp_folders())
    for text in _texts(cassette):
        if wanted[_Folder.HOME] and home in text and home in _replaced(text, normalizer.roots):
            paths["home"] = home
            wanted[_Folder.HOME] = False
        if wanted[_Folder.TEMP] and entries.search(text) and entries.search(_replaced(text, outside_temp)):
            paths.update(zip(TEMP_KEYS, temp_folders(), strict=False))  # as given, then resolved
            wanted[_Folder.TEMP] = False
        if not any(wanted.values()):
            break
    return paths


class _Folder(Enum):
    HOME = "home"
    TEMP = "temp"


def _replaced(text: str, roots: Sequence[tuple[str, str]]) -> str:
    for root, placeholder in roots:
        text = text.replace(root, placeholder)
    return text


def _texts(cassette: Cassette) -> Iterator[str]:
    for interaction in cassette.interactions:
        body = interaction.request.body
        yield "" if body is None else body if isinstance(body, str) else canonical_json(body)
