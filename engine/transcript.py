"""The transcript: JSON Lines, one message a line, in one ordered write queue.

Records are queued in the order messages happen and written at flush points the session
chooses (before every model request and at the end of a turn), so what a line says never
depends on timing. A reader skips a torn last line (a crash mid-write) with a warning and
loses nothing before it.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

__all__ = ["TornTranscriptWarning", "TranscriptError", "TranscriptWriter", "read_transcript"]

JsonDict = dict[str, Any]


class TranscriptError(Exception):
    """A transcript that cannot be read (named, with the line and the problem)."""


class TornTranscriptWarning(UserWarning):
    """The last line of a transcript was cut off mid-write and was skipped."""


# ``json.dumps`` with these options builds this very encoder on every call: build it once.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dump_record(record: JsonDict) -> str:
    """One transcript line: compact JSON, key order as built, UTF-8 kept readable."""
    return _ENCODER.encode(record) + "\n"


class TranscriptWriter:
    """Appends records to a JSONL file through one ordered queue."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._queue: list[Callable[[], JsonDict]] = []
        self._file: IO[str] | None = None

    def enqueue(self, record: Callable[[], JsonDict]) -> None:
        """Queue a record, built when it is written (so late fields such as a response's stop
        reason are in it)."""
        self._queue.append(record)

    def flush(self) -> None:
        """Write every queued record, in order, in one append."""
        if not self._queue:
            return
        text = "".join(dump_record(build()) for build in self._queue)
        self._queue.clear()
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(text)
        # Flushed to the OS, not fsynced: a killed process loses nothing that was flushed,
        # and an fsync per turn would cost more than the turn itself against a replay.
        self._file.flush()

    def close(self) -> None:
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None


def read_transcript(path: Path) -> list[JsonDict]:
    """Every record of a transcript. A torn last line is skipped with a warning; a bad line
    anywhere else is an error that names the file and the line."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TranscriptError(f"Cannot read transcript {path}: {exc.strerror or exc}.") from exc
    lines = data.split(b"\n")
    records: list[JsonDict] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        is_last = number == len(lines) or (number == len(lines) - 1 and not lines[-1])
        try:
            record = json.loads(raw.decode("utf-8"))
            if not isinstance(record, dict):
                raise ValueError("a line is not a JSON object")
        except (UnicodeDecodeError, ValueError) as exc:
            if is_last and not data.endswith(b"\n"):
                warnings.warn(
                    f"{path}: the last line ({number}) is incomplete (the writer stopped mid-line) and was skipped.",
                    TornTranscriptWarning,
                    stacklevel=2,
                )
                break
            raise TranscriptError(f"{path}: line {number} is not a valid transcript record: {exc}.") from exc
        records.append(record)
    return records
