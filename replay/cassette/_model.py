"""The in-memory cassette, its error, and the normalizer its fingerprints use."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Final

from replay.cassette.fingerprints import Normalizer, fingerprint, replaying
from replay.cassette.interaction import Interaction

__all__ = [
    "CASSETTE_FORMAT_VERSION",
    "MAX_CASSETTE_BYTES",
    "RECORDED_PATH_KEYS",
    "TEMP_KEYS",
    "Cassette",
    "CassetteError",
    "CassetteSource",
]

CASSETTE_FORMAT_VERSION: Final = 1
# A cassette of a long session is a few MiB; anything near this limit is not a cassette.
MAX_CASSETTE_BYTES: Final = 512 * 1024 * 1024
# workspace and session: the folders the session ran in. home, temp and temp_resolved: the home
# and temp folders (the latter also resolved, when it is a link) of the machine that computed the
# stored fingerprints (the normalizer replaces them), so they recompute the same on any other
# machine, whatever its HOME and TMPDIR. Each is optional: a cassette without temp is read
# under the reading process's temp folder, as before the key existed.
RECORDED_PATH_KEYS: Final = ("workspace", "session", "home", "temp", "temp_resolved")
TEMP_KEYS: Final = ("temp", "temp_resolved")


class CassetteError(ValueError):
    """A cassette cannot be read or written. The message is one sentence: the file, the problem
    and what to do; ``source`` and ``problem`` hold its two halves."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source} {problem}")
        self.source = source
        self.problem = problem

    def for_source(self, source: str) -> CassetteError:
        """The same problem, told about another name for the file."""
        return CassetteError(source, self.problem)


class CassetteSource(StrEnum):
    """The format a cassette was read from."""

    NATIVE = "native"
    VCRPY_YAML = "vcrpy_yaml"
    VCRPY_JSON = "vcrpy_json"


@dataclass
class Cassette:
    """Recorded interactions in the order they happened, and where the session ran."""

    interactions: list[Interaction] = field(default_factory=list)
    # RECORDED_PATH_KEYS -> absolute path; used to normalize fingerprints.
    recorded_paths: dict[str, str] = field(default_factory=dict)
    path: Path | None = None
    source: CassetteSource = CassetteSource.NATIVE
    # vcrpy's cassette metadata, kept as it is.
    metadata: dict[str, Any] = field(default_factory=dict)
    # Fingerprints the loader already computed (to check the stored ones): not computed twice.
    computed_fingerprints: list[str] | None = field(default=None, repr=False, compare=False)
    # The home folder they were computed under (`home_folder`, which the normalizer replaces).
    fingerprints_home: str | None = field(default=None, repr=False, compare=False)
    # Continues a cassette that records no temp folder (new episodes, a rewrite): saved without
    # one too, its requests read as before (`Normalizer.legacy`), as the kept ones were keyed.
    temp_as_before: bool = field(default=False, repr=False, compare=False)

    def normalizer(self) -> Normalizer:
        """The normalizer of the recording: its workspace, session folder and home."""
        return normalizer_for(self.recorded_paths)

    def replay_normalizer(self, *, workspace: Path | None = None, session_dir: Path | None = None) -> Normalizer:
        """The normalizer of a run that replays this cassette in ``workspace`` and ``session_dir``:
        those folders, this process's temp folder and the recording's (see `replaying`)."""
        return replaying(Normalizer.for_paths(workspace=workspace, session_dir=session_dir), self.normalizer())

    def fingerprints(self) -> list[str]:
        """Each interaction's request fingerprint, under `normalizer`."""
        if self.computed_fingerprints is not None and len(self.computed_fingerprints) == len(self.interactions):
            return list(self.computed_fingerprints)
        normalizer = self.normalizer()
        return [
            fingerprint(i.request.method, i.request.path, i.request.body, normalizer=normalizer)
            for i in self.interactions
        ]


def normalizer_for(recorded_paths: dict[str, str]) -> Normalizer:
    """`Normalizer.for_paths` of the recorded folders, plus the recorded home as ``<home>`` and
    the entries of the recorded temp folder as ``<tmp>`` (without one: this process's)."""
    workspace, session = recorded_paths.get("workspace"), recorded_paths.get("session")
    base = Normalizer.for_paths(
        workspace=Path(workspace) if workspace else None,
        session_dir=Path(session) if session else None,
    )
    # Taken as written, never resolved here: a link's target on this machine is not the recording's.
    temp = tuple(recorded_paths[key] for key in TEMP_KEYS if recorded_paths.get(key)) or None
    home = recorded_paths.get("home")
    roots = base.roots
    if home and home != "/":
        # Longest first, as for_paths orders them, so a workspace inside home keeps its placeholder.
        roots = tuple(sorted((*base.roots, (home, "<home>")), key=lambda root: -len(root[0])))
    # Without a recorded temp folder: read as it was written before there was one (`legacy`).
    return Normalizer(roots, temp=temp, legacy=temp is None)
