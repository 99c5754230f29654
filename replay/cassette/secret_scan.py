"""Finding the secrets left in a saved file, for ``replay scrub --check``: what the redaction pass
finds, located by line and column, and secret header lines (``authorization: ...``) whose value
is not redacted. A `Finding` never repeats the secret, so a report can be printed safely."""

from __future__ import annotations

import re
from dataclasses import dataclass

from replay.cassette.scrub import REDACTED
from replay.redact.kinds import SecretKind
from replay.redact.redactor import current_redactor

__all__ = ["Finding", "find_secrets"]

# A header name used as a key at the start of a line: YAML (`authorization:`, `- cookie:`),
# JSON (`"authorization": [`) or a raw HTTP dump (`Authorization: Bearer ...`).
_HEADER_LINE = re.compile(
    r"""^\s*(?:-\s*)?["']?(?P<name>authorization|proxy-authorization|x-api-key|anthropic-organization-id|"""
    r"""cookie|set-cookie)["']?\s*:(?P<value>.*)$""",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Finding:
    """A secret left in a text: where (1-based line and column) and what kind. The secret itself
    is not repeated, so a report can be printed safely."""

    line: int
    column: int
    kind: SecretKind


def find_secrets(text: str, *, binary: bool = False) -> list[Finding]:
    """Every secret left in ``text`` (a saved cassette, say), in reading order: what the
    redaction pass finds, and secret header lines (``authorization: ...``) not yet redacted."""
    findings = {
        Finding(line, column, detection.kind)
        for line, column, detection in current_redactor().locate(text, binary=binary)
    }
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER_LINE.match(line)
        if header is not None and not _is_redacted(header.group("value")):
            kind = SecretKind.COOKIE if "cookie" in header.group("name").lower() else SecretKind.AUTH_HEADER
            findings.add(Finding(number, header.start("name") + 1, kind))
    return sorted(findings, key=lambda f: (f.line, f.column, f.kind))


def _is_redacted(value: str) -> bool:
    # An empty value (or a bare `[`) means the value is on the next lines: YAML and JSON lists.
    value = value.strip().strip("[],'\"").strip()
    return bool(value) and (value.endswith(REDACTED) or value.startswith("REDACTED:"))
