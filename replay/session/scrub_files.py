"""Secrets in files on disk: find them, and redact them in place (the library of ``replay scrub``).

Every file below the given paths is scanned, hidden ones included (a workspace's ``.env``, a
``.git/config`` holding a token in a remote's URL, the temp file an interrupted atomic write left
behind): only symbolic links are skipped, since one may lead out of the bundle (the file a link
inside names is scanned where it is). A file that is not UTF-8 is read as latin-1, every byte a
character, and scanned all the same; one with NUL bytes in it (binary) is scanned for known
credentials, tokens and private keys only. A text is scanned with
`replay.cassette.secret_scan.find_secrets`; a YAML or JSON file is also read as a document, so that a secret
header (``authorization``, ``x-api-key``, ``cookie``, ...) under a ``headers:`` mapping is found
wherever it sits on its line, as in a native cassette's one-line header mappings.

Redacting rewrites a leaking file atomically (`replay.storage.atomic.atomic_write_text`): a file that
loads as a cassette goes through `load_cassette` and `save_cassette`, which drop secret headers
and scrub every body; any other text through the redaction pass (`replay.redact.redactor`), then line by
line with secret header values replaced by ``REDACTED``, and written back in its own encoding.
What is left afterwards (a header whose value sits on the following lines of a file that is not
a cassette) is reported, never silently kept.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import yaml

from replay.cassette import CassetteError, load_cassette, save_cassette
from replay.cassette.scrub import REDACTED, SECRET_HEADERS
from replay.cassette.secret_scan import Finding, find_secrets
from replay.redact.kinds import SecretKind
from replay.redact.redactor import current_redactor
from replay.session.bundle_layout import SESSION_FILE
from replay.storage.atomic import atomic_write_text

__all__ = [
    "DOCUMENT_SUFFIXES",
    "FileFinding",
    "FileText",
    "ScanReport",
    "ScrubError",
    "ScrubReport",
    "ScrubbedFile",
    "files_below",
    "find_file_secrets",
    "scan_paths",
    "scrub_file",
    "scrub_paths",
]

# Files read as YAML/JSON documents too, and tried as cassettes when they leak.
DOCUMENT_SUFFIXES: Final = (".yaml", ".yml", ".json")
_HEADER_KINDS: Final = (SecretKind.AUTH_HEADER, SecretKind.COOKIE)
# Reading a document is only worth it when a secret header's name occurs in the text at all.
_SAFE_LOADER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_HEADER_NAME = re.compile("|".join(re.escape(name) for name in sorted(SECRET_HEADERS)), re.IGNORECASE)


class ScrubError(ValueError):
    """A path that cannot be scanned or scrubbed; the message names it and says what to do."""


@dataclass(frozen=True)
class FileFinding:
    """A secret in a file; prints as ``FILE:LINE:COL: kind`` (the secret itself never)."""

    path: Path
    line: int
    column: int
    kind: SecretKind

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.kind}"


@dataclass(frozen=True)
class ScanReport:
    """What a scan found: the findings in file order, and how many files it read."""

    findings: list[FileFinding]
    scanned: int


@dataclass(frozen=True)
class ScrubbedFile:
    """A file that leaked and was rewritten: how many secrets went, whether it was rewritten as a
    cassette, and what is still there."""

    path: Path
    redacted: int
    as_cassette: bool
    remaining: list[FileFinding]


@dataclass(frozen=True)
class ScrubReport:
    """What ``replay scrub`` changed, and what is left."""

    changed: list[ScrubbedFile]
    scanned: int

    @property
    def remaining(self) -> list[FileFinding]:
        return [finding for scrubbed in self.changed for finding in scrubbed.remaining]


# ---------------------------------------------------------------------------------------------
# Which files


def files_below(paths: Sequence[Path]) -> list[Path]:
    """Every file at or below ``paths``, each once, in path order. A path named explicitly is
    taken as it is; below a folder every file is, hidden ones too, symbolic links excepted.
    `ScrubError` for a path that does not exist or is not a file or folder."""
    found: dict[Path, None] = {}
    for path in paths:
        if not path.exists():
            raise ScrubError(f"{path} does not exist; give a bundle, a folder of bundles, a cassette or a transcript.")
        if path.is_dir():
            found.update(dict.fromkeys(_walk(path)))
        elif path.is_file():
            found[path] = None
        else:
            raise ScrubError(f"{path} is neither a file nor a folder, so it cannot be scanned; give a file or folder.")
    return list(found)


def _walk(folder: Path) -> Iterator[Path]:
    for child in sorted(folder.iterdir()):
        if child.is_symlink():
            continue
        if child.is_dir():
            yield from _walk(child)
        elif child.is_file():
            yield child


# ---------------------------------------------------------------------------------------------
# Finding


def find_file_secrets(path: Path, text: str, *, binary: bool = False) -> list[Finding]:
    """The secrets in ``text``, the contents of ``path``: `find_secrets`, plus secret headers
    of a YAML or JSON document wherever they sit on a line."""
    findings = set(find_secrets(text, binary=binary))
    if path.suffix.lower() in DOCUMENT_SUFFIXES and _HEADER_NAME.search(text):
        findings.update(_secret_headers(text))
    return sorted(findings, key=lambda f: (f.line, f.column, f.kind))


def _secret_headers(text: str) -> Iterator[Finding]:
    try:
        root = yaml.compose(text, Loader=_SAFE_LOADER)
    except (yaml.YAMLError, RecursionError, ValueError):
        return  # Not a document; the text scan has done what can be done.
    seen: set[int] = set()
    pending: list[yaml.Node] = [root] if root is not None else []
    while pending:
        node = pending.pop()
        if id(node) in seen:  # An alias is the same node again: walk it once.
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if _scalar(key).lower() == "headers" and isinstance(value, yaml.MappingNode):
                    yield from _secret_header_keys(value)
                pending.extend((key, value))
        elif isinstance(node, yaml.SequenceNode):
            pending.extend(node.value)


def _secret_header_keys(headers: yaml.MappingNode) -> Iterator[Finding]:
    for key, value in headers.value:
        name = _scalar(key).lower()
        if name in SECRET_HEADERS and not _redacted(value):
            quoted = 1 if isinstance(key, yaml.ScalarNode) and key.style in ('"', "'") else 0
            kind = SecretKind.COOKIE if "cookie" in name else SecretKind.AUTH_HEADER
            yield Finding(key.start_mark.line + 1, key.start_mark.column + 1 + quoted, kind)


def _scalar(node: yaml.Node) -> str:
    return node.value if isinstance(node, yaml.ScalarNode) else ""


def _redacted(node: yaml.Node) -> bool:
    if isinstance(node, yaml.SequenceNode):
        return bool(node.value) and all(_redacted(item) for item in node.value)
    # ``[REDACTED:kind]`` written plainly in YAML reads as a one-item list of ``REDACTED:kind``.
    return isinstance(node, yaml.ScalarNode) and (
        node.value.strip().endswith(REDACTED) or node.value.strip("[] ").startswith(f"{REDACTED}:")
    )


@dataclass(frozen=True)
class FileText:
    """A file's contents as text: decoded as UTF-8, or else as latin-1 (every byte a
    character, so it is written back byte for byte), and whether it holds NUL bytes."""

    text: str
    encoding: str
    binary: bool


def _read(path: Path) -> FileText:
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ScrubError(f"{path} cannot be read ({err.strerror or err}); check its permissions.") from None
    binary = b"\x00" in data
    try:
        return FileText(data.decode("utf-8"), "utf-8", binary)
    except UnicodeDecodeError:
        return FileText(data.decode("latin-1"), "latin-1", binary)


def scan_paths(paths: Sequence[Path]) -> ScanReport:
    """Scan every file at or below ``paths`` for secrets; nothing is changed."""
    findings: list[FileFinding] = []
    scanned = 0
    for path in files_below(paths):
        content = _read(path)
        scanned += 1
        findings.extend(_located(path, find_file_secrets(path, content.text, binary=content.binary)))
    return ScanReport(findings, scanned)


def _located(path: Path, findings: Iterable[Finding]) -> list[FileFinding]:
    return [FileFinding(path, f.line, f.column, f.kind) for f in findings]


# ---------------------------------------------------------------------------------------------
# Redacting


def scrub_paths(paths: Sequence[Path]) -> ScrubReport:
    """Redact the secrets of every leaking file at or below ``paths``, each rewritten atomically.
    `CassetteError` when a file cannot be written (that file is unchanged)."""
    changed: list[ScrubbedFile] = []
    scanned = 0
    for path in files_below(paths):
        content = _read(path)
        scanned += 1
        scrubbed = scrub_file(path, content)
        if scrubbed is not None:
            changed.append(scrubbed)
    return ScrubReport(changed, scanned)


def scrub_file(path: Path, content: FileText) -> ScrubbedFile | None:
    """Rewrite ``path`` (whose contents are ``content``) without its secrets; None when it has
    none (and is left untouched). What is left afterwards is read back and scanned again."""
    before = find_file_secrets(path, content.text, binary=content.binary)
    if not before:
        return None
    target = path.resolve()  # A symbolic link stays a link; the file it names is rewritten.
    with _rewriting(path):
        as_cassette = content.encoding == "utf-8" and _rewrite_as_cassette(path, target)
        if not as_cassette:
            atomic_write_text(target, _scrub_lines(content.text, binary=content.binary), encoding=content.encoding)
    after = _read(target)
    remaining = _located(path, find_file_secrets(path, after.text, binary=after.binary))
    return ScrubbedFile(path, len(before) - len(remaining), as_cassette, remaining)


@contextlib.contextmanager
def _rewriting(path: Path) -> Iterator[None]:
    """While a file of a bundle is rewritten, hold the bundle's writer lock (no other writer at
    once) and its generation (no reader sees the bundle half scrubbed)."""
    bundle = next((folder for folder in path.absolute().parents if (folder / SESSION_FILE).is_file()), None)
    if bundle is None:
        yield
        return
    # imported here: `replay scrub --check` never writes, and starts without filelock
    from replay.storage.bundle_lock import bundle_write_lock, swapping_generation

    with bundle_write_lock(bundle), swapping_generation(bundle):
        yield


def _rewrite_as_cassette(path: Path, target: Path) -> bool:
    if path.suffix.lower() not in DOCUMENT_SUFFIXES:
        return False
    try:
        cassette = load_cassette(target)
    except CassetteError:
        return False  # Not a cassette (session.json, a trace) or a broken one: scrubbed as text.
    # A plain vcrpy cassette comes back in the native format (vcrpy reads it through
    # register_with_vcr): the cassette writer is what knows how to drop every secret.
    save_cassette(cassette, target)
    return True


def _scrub_lines(text: str, *, binary: bool) -> str:
    # The whole text first (a private key spans lines; a JSON document is read as one), then
    # the secret header values line by line.
    lines = current_redactor().redact_text(text, binary=binary).splitlines(keepends=True)
    scrubbed = []
    for line in lines:
        content = line.rstrip("\r\n")
        scrubbed.append(_redact_header_value(content) + line[len(content) :])
    return "".join(scrubbed)


def _redact_header_value(line: str) -> str:
    """``line`` with the value of a secret header written on it (``Cookie: a=b``,
    ``"x-api-key": "..."``) replaced by ``REDACTED``, its quotes and trailing comma kept."""
    for finding in find_secrets(line):
        if finding.kind not in _HEADER_KINDS:
            continue
        colon = line.find(":", finding.column - 1)
        value = _redacted_value(line[colon + 1 :])
        if colon >= 0 and value is not None:
            return line[: colon + 1] + value
    return line


def _redacted_value(value: str) -> str | None:
    stripped = value.strip()
    comma = "," if stripped.endswith(",") else ""
    core = stripped.removesuffix(",").strip()
    if not core or core == "[":
        return None  # The value is on the lines that follow; left for the report.
    if core.startswith("[") and core.endswith("]"):
        quote = core[1] if core[1:2] in ('"', "'") else ""
        return f" [{quote}{REDACTED}{quote}]{comma}"
    quote = core[0] if core[0] in ('"', "'") else ""
    return f" {quote}{REDACTED}{quote}{comma}"
