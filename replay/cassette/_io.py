"""Reading and writing cassette files: format detection, clear errors, atomic writes."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import Any, Final

import yaml

from replay.cassette._compiled import (
    MIN_COMPILED_BYTES,
    Compiled,
    compiled_folder,
    read_compiled,
    write_compiled,
)
from replay.cassette._content import FormatProblem
from replay.cassette._model import CASSETTE_FORMAT_VERSION, MAX_CASSETTE_BYTES, Cassette, CassetteError, CassetteSource
from replay.cassette._native import (
    FORMAT_MARKER,
    compact_interaction,
    decode_native,
    encode_native,
    interaction_from_line,
)
from replay.cassette._source import HEAD, FileChanged, FileSource, NotUtf8, Source, TextSource
from replay.cassette._vcrpy import VCRPY_FORMAT_VERSION, interactions_from_vcrpy, is_vcrpy_shape
from replay.cassette.scrub import scrub_interactions
from replay.collector import collector_paused
from replay.storage.atomic import FileWriteError, atomic_write_text
from replay.storage.strict_yaml import AliasRefusedError, DuplicateKeyError, dump_yaml, load_yaml_data, yaml_problem

__all__ = ["dumps_cassette", "load_cassette", "loads_cassette", "render_cassette", "save_cassette"]

_HEADER: Final = f"# agent-replay cassette, format version {CASSETTE_FORMAT_VERSION} (see docs/cassettes.md)\n"
# The last line of every native file: a file that fails to load and lacks it was cut short.
_FOOTER: Final = "# end of cassette\n"
_CONTENT_KEY = re.compile(r"^[mts]-[0-9a-f]+$")
# A native cassette names itself in its first lines: the header comment or the format marker key.
_NATIVE_START = re.compile(rf"^(?:# agent-replay cassette\b|{FORMAT_MARKER}\s*:)", re.MULTILINE)
_RESTORE: Final = "restore it from version control or re-record it"


# ---------------------------------------------------------------------------------------------
# Reading


def load_cassette(path: str | PathLike[str]) -> Cassette:
    """The cassette in ``path``: native, or a plain vcrpy cassette (YAML or JSON)."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise CassetteError(str(path), "does not exist; record it first with record mode once or all.") from None
    except OSError as err:
        raise _unreadable(path, err) from None
    if not path.is_file():
        raise CassetteError(str(path), "is not a file; point to the cassette file itself.")
    if size > MAX_CASSETTE_BYTES:
        raise CassetteError(str(path), f"is {size} bytes, over the {_limit()} limit; check that it is a cassette.")
    try:
        with path.open("rb") as handle:
            try:
                source = FileSource(handle)
            except NotUtf8:
                source = None
            if source is not None:
                with collector_paused():
                    cassette = _loads_cassette(source, str(path))
                cassette.path = path
                return cassette
    except FileChanged:
        raise CassetteError(str(path), "changed while it was being read; load it again.") from None
    except OSError as err:
        raise _unreadable(path, err) from None
    try:
        path.read_bytes().decode("utf-8-sig")  # not UTF-8: where, in the words of the decoder
    except UnicodeDecodeError as err:
        raise CassetteError(
            str(path), f"is not UTF-8 text (byte {err.start} cannot be decoded); it looks corrupt — {_RESTORE}."
        ) from None
    except OSError as err:
        raise _unreadable(path, err) from None
    raise CassetteError(str(path), "changed while it was being read; load it again.")


def loads_cassette(text: str, *, source_name: str) -> Cassette:
    """The cassette in ``text``; ``source_name`` names it in errors."""
    with collector_paused():
        return _loads_cassette(TextSource(text), source_name)


def _is_blank(source: Source) -> bool:
    return not source.head().strip() and not source.text().strip()


def _starts_like_json(source: Source) -> bool:
    head = source.head().lstrip() or (source.text().lstrip() if source.size > HEAD else "")
    return head.startswith(("{", "["))


def _loads_cassette(source: Source, source_name: str) -> Cassette:
    size = source.size
    if size > MAX_CASSETTE_BYTES:
        raise CassetteError(source_name, f"is over the {_limit()} limit; check that it is a cassette.")
    if _is_blank(source):
        raise CassetteError(source_name, "is empty; record it again with record mode once or all.")
    # The end line first, before parsing: a native file cut between two interactions still
    # parses, and would replay as a shorter session instead of being refused.
    native = _NATIVE_START.search(source.head()) is not None
    if native:
        _check_end_line(source, source_name)
    digest = source.digest() if size >= MIN_COMPILED_BYTES else ""
    compiled = read_compiled(size, digest) if digest else None
    if compiled is not None:
        cassette = _from_compiled(compiled)
        if cassette is not None:
            return cassette
    document, parsed_as, json_data = _parse(source, source_name)
    try:
        if isinstance(document, Mapping) and FORMAT_MARKER in document:
            _check_end_line(source, source_name)
            _check_native_version(document[FORMAT_MARKER], source_name)
            lines: list[str] | None = [] if digest and compiled_folder() is not None else None
            head = {key: value for key, value in document.items() if key != "interactions"}
            cassette = decode_native(document, json_data=json_data, compiled_lines=lines)
            cassette.source = CassetteSource.NATIVE
            if lines is not None:
                write_compiled(size, digest, head, lines, cassette.computed_fingerprints)
            return cassette
        if is_vcrpy_shape(document):
            _check_vcrpy_version(document["version"], source_name)
            metadata = document.get("metadata") or {}
            return Cassette(
                interactions=interactions_from_vcrpy(document),
                source=parsed_as,
                metadata=dict(metadata) if isinstance(metadata, Mapping) else {},
            )
    except FormatProblem as problem:
        raise CassetteError(
            source_name, f"is invalid at {problem.where}: {problem.problem}; {problem.remedy}."
        ) from None
    raise CassetteError(
        source_name,
        f"is neither an agent-replay cassette (no '{FORMAT_MARKER}:' key) nor a vcrpy cassette "
        "(no 'version:' and 'interactions:' keys); check that the path names a cassette.",
    )


def _from_compiled(compiled: Compiled) -> Cassette | None:
    # A copy is only ever written after its YAML loaded; one that does not decode now was
    # damaged or tampered with, and the YAML decides.
    head = compiled.head
    if head.get(FORMAT_MARKER) != CASSETTE_FORMAT_VERSION or "interactions" in head:
        return None
    try:
        cassette = decode_native(
            head,
            json_data=True,
            compiled=True,
            fingerprints=compiled.fingerprints,
            interactions=(interaction_from_line(line) for line in compiled.lines()),
            count=compiled.count,
        )
    except Exception:  # whatever a bad copy raises, the YAML is read instead
        return None
    if not compiled.intact() or len(cassette.interactions) != compiled.count:
        return None
    cassette.source = CassetteSource.NATIVE
    return cassette


def _parse(source: Source, source_name: str) -> tuple[Any, CassetteSource, bool]:
    # The document, the format it was read as, and whether it is known to hold JSON values only.
    if _starts_like_json(source):
        try:
            return json.loads(source.text()), CassetteSource.VCRPY_JSON, False
        except RecursionError:
            raise CassetteError(source_name, f"nests its data too deeply to be a cassette; {_RESTORE}.") from None
        except json.JSONDecodeError as err:
            raise CassetteError(
                source_name,
                f"is not valid JSON ({err.msg} at line {err.lineno}, column {err.colno}); "
                f"it looks truncated or corrupt — {_RESTORE}.",
            ) from None
    try:
        document, json_data = load_yaml_data(
            source.parse_input, items=("interactions", compact_interaction), whole_text=source.text
        )
        source.check_unchanged()
        return document, CassetteSource.VCRPY_YAML, json_data
    except AliasRefusedError as err:
        raise CassetteError(
            source_name,
            f"uses a YAML alias ({yaml_problem(err)}), which a cassette never contains and which could expand "
            "without bound; write the data out in full or re-record it.",
        ) from None
    except DuplicateKeyError as err:
        if isinstance(err.key, str) and _CONTENT_KEY.match(err.key):
            raise CassetteError(
                source_name,
                f"has two different bodies under the content key {err.key} ({yaml_problem(err)}), a content-key "
                "collision or a bad merge; re-record the cassette.",
            ) from None
        raise CassetteError(
            source_name, f"has a {yaml_problem(err)} with different values; keep one of them or {_RESTORE}."
        ) from None
    except yaml.constructor.ConstructorError as err:
        raise CassetteError(
            source_name,
            f"uses a YAML tag that safe loading refuses ({yaml_problem(err)}); a cassette holds plain data "
            "only — re-record it.",
        ) from None
    except yaml.YAMLError as err:
        raise CassetteError(
            source_name, f"is not valid YAML ({yaml_problem(err)}); it looks truncated or corrupt — {_RESTORE}."
        ) from None
    except RecursionError:
        raise CassetteError(source_name, f"nests its data too deeply to be a cassette; {_RESTORE}.") from None


def _check_end_line(source: Source, source_name: str) -> None:
    if not source.stripped_tail().endswith(_FOOTER.strip()):
        raise CassetteError(
            source_name,
            f"is truncated: it does not end with the line {_FOOTER.strip()!r} that ends every agent-replay "
            f"cassette, so interactions may be missing; {_RESTORE}.",
        )


def _check_native_version(version: Any, source_name: str) -> None:
    if version == CASSETTE_FORMAT_VERSION and isinstance(version, int) and not isinstance(version, bool):
        return
    if isinstance(version, int) and not isinstance(version, bool):
        raise CassetteError(
            source_name,
            f"is format version {version}; this replay reads version {CASSETTE_FORMAT_VERSION} — upgrade "
            "agent-replay or re-record.",
        )
    raise CassetteError(
        source_name,
        f"has {FORMAT_MARKER}: {version!r}, which is not a format version; "
        f"expected {FORMAT_MARKER}: {CASSETTE_FORMAT_VERSION}.",
    )


def _check_vcrpy_version(version: Any, source_name: str) -> None:
    if version != VCRPY_FORMAT_VERSION or isinstance(version, bool):
        raise CassetteError(
            source_name,
            f"is a vcrpy cassette of format version {version!r}; agent-replay reads vcrpy's version "
            f"{VCRPY_FORMAT_VERSION} — re-record it with a current vcrpy.",
        )


# ---------------------------------------------------------------------------------------------
# Writing


def dumps_cassette(cassette: Cassette) -> str:
    """The native YAML text of ``cassette``, scrubbed: the same interactions give the same text."""
    return render_cassette(cassette, str(cassette.path) if cassette.path is not None else "the cassette")


def save_cassette(cassette: Cassette, path: str | PathLike[str]) -> None:
    """Write ``cassette`` (scrubbed) to ``path`` atomically: the old file stays whole until the
    new one is complete on disk."""
    path = Path(path)
    try:
        atomic_write_text(path, render_cassette(cassette, str(path)))
    except FileWriteError as err:
        raise CassetteError(err.source, err.problem) from None


def render_cassette(cassette: Cassette, source_name: str) -> str:
    """`dumps_cassette`, naming the file ``source_name`` in errors."""
    scrubbed = Cassette(
        interactions=scrub_interactions(cassette.interactions),
        recorded_paths=dict(cassette.recorded_paths),
        metadata=dict(cassette.metadata),
        temp_as_before=cassette.temp_as_before,
    )
    try:
        document = encode_native(scrubbed)
        _check_plain_data(document)
        return _HEADER + dump_yaml(document) + _FOOTER
    except FormatProblem as problem:
        raise CassetteError(
            source_name, f"cannot be written: {problem.where}: {problem.problem}; {problem.remedy}."
        ) from None
    except (TypeError, ValueError, yaml.YAMLError) as err:
        raise CassetteError(
            source_name,
            f"cannot be written: a recorded body holds a value that is not JSON data ({err}); nothing was written.",
        ) from None


def _check_plain_data(document: Any) -> None:
    # What the safe loader refuses (bytes, tuples, objects) must not be written either.
    pending = [document]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif item is not None and not isinstance(item, (str, int, float, bool)):
            raise TypeError(f"{type(item).__name__} {item!r:.40}")


def _unreadable(path: Path, err: OSError) -> CassetteError:
    return CassetteError(str(path), f"cannot be read ({err.strerror}); check the path and its permissions.")


def _limit() -> str:
    mib = 1024 * 1024
    return f"{MAX_CASSETTE_BYTES // mib} MiB" if MAX_CASSETTE_BYTES % mib == 0 else f"{MAX_CASSETTE_BYTES} bytes"
