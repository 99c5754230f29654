"""Reading a bundle's text files as untrusted input: a size cap checked before reading, UTF-8
or a clear refusal, JSON nested too deeply refused instead of exhausting the stack, and the
recorded transcript checked line by line.

Every problem is a `BadFileError` whose message is one sentence naming the file; the bundle and
scenario loaders turn it into their own error types.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any, Final

__all__ = [
    "MAX_SCENARIO_BYTES",
    "MAX_SESSION_BYTES",
    "MAX_TRACE_BYTES",
    "MAX_TRANSCRIPT_BYTES",
    "BadFileError",
    "loads_json",
    "read_capped_text",
    "read_recorded_transcript",
]

_MIB: Final = 1024 * 1024
# session.json holds settings and prompts: kilobytes. A 16 MiB one is not a session file.
MAX_SESSION_BYTES: Final = 16 * _MIB
# A scenario scripts every answer, tool inputs included, so it may be large; still bounded.
MAX_SCENARIO_BYTES: Final = 64 * _MIB
# The transcript grows with the session like the cassette, so it gets the cassette's cap.
MAX_TRANSCRIPT_BYTES: Final = 512 * _MIB
MAX_TRACE_BYTES: Final = 64 * _MIB


class BadFileError(ValueError):
    """A file that cannot be read as what it should be; the message names it and the problem."""


def read_capped_text(path: Path, *, limit: int, remedy: str) -> str:
    """The UTF-8 text of the regular file ``path``, refused when it is over ``limit`` bytes
    (checked with stat before reading, and again while reading, in case it grows). ``remedy``
    ends the sentence: what the user should do about a file that is not text."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise BadFileError(f"{path} does not exist.") from None
    except OSError as err:
        raise BadFileError(f"{path} cannot be read ({err.strerror or err}).") from None
    if not stat.S_ISREG(info.st_mode):
        raise BadFileError(f"{path} is not a regular file, so it is not read.")
    if info.st_size > limit:
        raise BadFileError(f"{path} is {info.st_size} bytes, over the {_size(limit)} limit for this file; {remedy}.")
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as err:
        raise BadFileError(f"{path} cannot be read ({err.strerror or err}).") from None
    if len(data) > limit:
        raise BadFileError(f"{path} grew over the {_size(limit)} limit for this file while being read; {remedy}.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadFileError(
            f"{path} is not UTF-8 text (byte {err.start} cannot be decoded); it looks corrupt — {remedy}."
        ) from None


def loads_json(text: str, *, source: Path, remedy: str) -> Any:
    """The JSON value in ``text`` (the contents of ``source``)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise BadFileError(f"{source} is nested too deeply to be read; it looks corrupt — {remedy}.") from None
    except json.JSONDecodeError as err:
        raise BadFileError(
            f"{source} is not valid JSON ({err.msg} at line {err.lineno}, column {err.colno}); {remedy}."
        ) from None


def read_recorded_transcript(path: Path) -> str:
    """The text of a bundle's ``transcript.jsonl``, every line one complete JSON object.

    A live transcript may end in a torn line (a kill mid-write), and ``engine.transcript``
    skips one. A bundle's transcript is never written that way: recording writes it whole and
    swaps the bundle in, ``replay run --update`` replaces it atomically. So here a torn line,
    the last one included, is corruption and refused, with its line number."""
    remedy = "restore it from version control or re-record the bundle"
    text = read_capped_text(path, limit=MAX_TRANSCRIPT_BYTES, remedy=remedy)
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = "the last line" if number == len(lines) else f"line {number}"
        if number == len(lines):
            # No newline after it: the writer always ends a record with one.
            raise BadFileError(
                f"{path}: {where} ({number}) is cut off (no newline ends it); the transcript was cut short — {remedy}."
            )
        try:
            record = json.loads(line)
        except RecursionError:
            raise BadFileError(f"{path}: {where} is nested too deeply to be a transcript record; {remedy}.") from None
        except ValueError as err:
            raise BadFileError(f"{path}: {where} is not a complete JSON record ({err}); {remedy}.") from None
        if not isinstance(record, dict):
            raise BadFileError(
                f"{path}: {where} is a JSON {type(record).__name__}, not a JSON object (a transcript record); {remedy}."
            )
    return text


def _size(limit: int) -> str:
    return f"{limit // _MIB} MiB" if limit % _MIB == 0 else f"{limit} bytes"
