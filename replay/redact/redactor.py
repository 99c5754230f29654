"""One redaction pass for everything written into a bundle (cassette, transcript, session.json,
traces, scenario, workspace copy), and for the requests a replay fingerprints.

Two ways a secret is found:

- Known values. The values of the recording process's credential variables
  (``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN`` and every variable whose NAME contains KEY,
  TOKEN, SECRET, PASSWORD, CREDENTIAL or AUTH, or whose VALUE a detector below flags) are
  replaced wherever they occur, whatever tool output carried them. Values shorter than
  `MIN_SECRET_LENGTH` (8) characters are ignored: ``AUTH=1`` must not redact every "1".
- Patterns, from detect-secrets' plugins (AWS, GitHub, JWT, private key, Slack, Stripe, Base64
  and hex high entropy, keyword) plus this project's own for Anthropic and OpenAI keys and
  bearer tokens. The token plugins run on the raw text and on its decoded strings; the
  high-entropy and keyword plugins only on decoded strings (the strings of a JSON document or of
  each JSON line, and the other lines as they are), because on raw JSON a keyword value would
  run on past an escaped newline to the end of the string. A PEM private key is redacted as a
  whole block, BEGIN to END. Values shorter than 8 characters and values with a space in them
  (prose: "the secret: it was fine") are not taken from the keyword plugin; a keyword value is
  looked for only within 160 characters after its keyword.
- A streamed answer's deltas are redacted as one text (`Redactor.redact_pieces`).

A secret becomes a stable placeholder, ``[REDACTED:<kind>]`` (``[REDACTED:anthropic-api-key]``,
``[REDACTED:aws-access-key]``; a known value is named after its variable,
``[REDACTED:anthropic-auth-token]``): the same value always gives the same placeholder, so a
redacted request fingerprints the same on every run. Every form a value takes in a text is
replaced: as it is, JSON-escaped, and its UTF-8 bytes read as latin-1 (a file that is not UTF-8).

detect-secrets keeps global settings; nothing here reads or changes them. Its plugins are used
through ``analyze_string`` only (``analyze_line`` consults the settings and may call a plugin's
``verify``, which goes to the network), and the plugin instances hold no per-call state, so one
`Redactor` is safe to share between threads (and each xdist worker is its own process).
"""

from __future__ import annotations

import bisect
import json
import os
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from detect_secrets.filters.heuristic import is_potential_uuid, is_sequential_string, is_templated_secret
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.high_entropy_strings import (
    Base64HighEntropyString,
    HexHighEntropyString,
    HighEntropyStringsPlugin,
)
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import CONFIG_DENYLIST_REGEX_TO_GROUP, KeywordDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.stripe import StripeDetector

__all__ = [
    "CREDENTIAL_NAME_WORDS",
    "MIN_SECRET_LENGTH",
    "AnthropicKeyDetector",
    "BearerTokenDetector",
    "Detection",
    "OpenAIKeyDetector",
    "Redactor",
    "SecretKind",
    "current_redactor",
    "placeholder",
]

# Shorter values are never redacted: too common to be a credential, too likely to occur by chance.
MIN_SECRET_LENGTH: Final = 8
# An environment variable whose name holds one of these words holds a credential.
CREDENTIAL_NAME_WORDS: Final = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH")
_PLACEHOLDER_PREFIX: Final = "[REDACTED:"
# A detected token goes on over these characters (a JWT's signature, the rest of a GitHub token:
# some plugins report only the part their regex groups).
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-.+/=]*")
_TOKEN_CHAR = re.compile(r"[A-Za-z0-9_]")
# The extent of a PEM block (detect-secrets flags only its BEGIN line). Between BEGIN and END
# only what a key holds: base64, PEM headers (``Proc-Type: 4,ENCRYPTED``), line breaks real or
# JSON-escaped, and Read's line numbers; so a match never spans a JSON document's structure.
_PEM_BLOCK = re.compile(
    r"-----BEGIN (?P<label>[A-Z0-9 ]*)PRIVATE KEY(?: BLOCK)?-----"
    r"(?:(?:[A-Za-z0-9+/=\s:,.\-]|\\[nrt])*?-----END (?P=label)PRIVATE KEY(?: BLOCK)?-----"
    r"|(?:(?:\\[nrt]|\s)+(?:[0-9 ]|\\t|\t)*[A-Za-z0-9+/=]{16,})*)"
)
_CACHE_LIMIT: Final = 65_536
# A line that may be a JSON document (a transcript's records): its strings are scanned decoded.
_JSON_LINE = re.compile(r"^[ \t]*[\[{]", re.MULTILINE)


class SecretKind(StrEnum):
    """What was found: names the placeholder (``[REDACTED:<kind>]``) and a scan's report."""

    ANTHROPIC_API_KEY = "anthropic-api-key"
    OPENAI_API_KEY = "openai-api-key"
    AWS_ACCESS_KEY = "aws-access-key"
    GITHUB_TOKEN = "github-token"
    JWT = "jwt"
    PRIVATE_KEY = "private-key"
    SLACK_TOKEN = "slack-token"
    STRIPE_KEY = "stripe-key"
    BEARER_TOKEN = "bearer-token"
    HIGH_ENTROPY_STRING = "high-entropy-string"
    SECRET_KEYWORD = "secret-keyword"
    ENVIRONMENT_CREDENTIAL = "environment-credential"
    AUTH_HEADER = "auth_header"
    COOKIE = "cookie"


def placeholder(label: str) -> str:
    """The text a secret of kind (or variable) ``label`` becomes."""
    return f"{_PLACEHOLDER_PREFIX}{label}]"


# ---------------------------------------------------------------------------------------------
# The project's own plugins


class AnthropicKeyDetector(RegexBasedDetector):
    """Anthropic API keys, admin keys and OAuth tokens: ``sk-ant-...``."""

    secret_type = "Anthropic API Key"
    denylist = (re.compile(r"sk-ant-[A-Za-z0-9_\-]+"),)


class OpenAIKeyDetector(RegexBasedDetector):
    """OpenAI keys: project, service-account and admin keys (``sk-proj-...``) and the older
    ``sk-`` + 32 or more letters and digits."""

    secret_type = "OpenAI API Key"
    denylist = (
        re.compile(r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,}"),
        re.compile(r"(?<![A-Za-z0-9_\-])sk-[A-Za-z0-9]{32,}"),
    )


class BearerTokenDetector(RegexBasedDetector):
    """The token of ``Bearer <token>``: 8+ characters with a digit, or 20+ (so prose such as
    "a Bearer token" is left alone)."""

    secret_type = "Bearer Token"
    _token = r"[A-Za-z0-9._~+/\-]"
    denylist = (re.compile(rf"\bbearer\s+((?:(?={_token}*\d){_token}{{8,}}|{_token}{{20,}})=*)", re.IGNORECASE),)


# Most specific first: a value flagged by two plugins takes the first one's kind.
# Each with the lowercase substrings one of its matches must hold: a line with none of them is
# not run through the plugin's regexes (a substring test costs a fraction of a regex scan).
_TOKEN_PLUGINS: Final[tuple[tuple[BasePlugin, SecretKind, tuple[str, ...]], ...]] = (
    (AnthropicKeyDetector(), SecretKind.ANTHROPIC_API_KEY, ("sk-ant-",)),
    (OpenAIKeyDetector(), SecretKind.OPENAI_API_KEY, ("sk-",)),
    (AWSKeyDetector(), SecretKind.AWS_ACCESS_KEY, ("a3t", "abia", "acca", "akia", "asia", "aws")),
    (GitHubTokenDetector(), SecretKind.GITHUB_TOKEN, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    (SlackDetector(), SecretKind.SLACK_TOKEN, ("xox", "hooks.slack.com")),
    (StripeDetector(), SecretKind.STRIPE_KEY, ("k_live_",)),
    (JwtTokenDetector(), SecretKind.JWT, ("eyj",)),
    (BearerTokenDetector(), SecretKind.BEARER_TOKEN, ("bearer",)),
)
_PRIORITY: Final = {
    kind: rank
    for rank, kind in enumerate(
        (
            SecretKind.ENVIRONMENT_CREDENTIAL,
            *(kind for _, kind, _ in _TOKEN_PLUGINS),
            SecretKind.PRIVATE_KEY,
            SecretKind.SECRET_KEYWORD,
            SecretKind.HIGH_ENTROPY_STRING,
            SecretKind.AUTH_HEADER,
            SecretKind.COOKIE,
        )
    )
}
_PRIVATE_KEY_PLUGIN: Final = PrivateKeyDetector()
_KEYWORD_PLUGIN: Final = KeywordDetector()
# Every keyword of the plugin's denylist holds one of these.
_KEYWORD_HINT: Final = re.compile(r"key|pass|pwd|secret|contras")  # searched in lowercased text
_KEYWORD_WINDOW: Final = 160
_AFTER_KEYWORD: Final = re.compile(r"""\w{0,50}[\]'"]{0,2}\s*(?:[:=;]|['"`])""")
_BEFORE_KEYWORD: Final = re.compile(r"[!=]={1,2}\s*\w*$")
# detect-secrets' default limits; quoted strings only (the plugins' own rule).
_ENTROPY_PLUGINS: Final[tuple[HighEntropyStringsPlugin, ...]] = (
    Base64HighEntropyString(limit=4.5),
    HexHighEntropyString(limit=3.0),
)


@dataclass(frozen=True, order=True)
class Detection:
    """A secret found in a text: its value, its kind, and the label its placeholder carries
    (the kind, or for a known value its variable's name)."""

    value: str
    kind: SecretKind
    label: str

    @property
    def placeholder(self) -> str:
        """``[REDACTED:<label>]``."""
        return placeholder(self.label)


# ---------------------------------------------------------------------------------------------
# Detecting in one string


def _is_placeholder_like(value: str) -> bool:
    return _PLACEHOLDER_PREFIX in value or value.endswith("REDACTED")


def _usable(value: str) -> bool:
    return len(value) >= MIN_SECRET_LENGTH and not _is_placeholder_like(value)


def _token_values(text: str) -> Iterator[tuple[str, SecretKind]]:
    """The tokens in ``text`` (no token spans lines, so the whole text is scanned at once)."""
    lowered = text.lower()
    for plugin, kind, hints in _TOKEN_PLUGINS:
        if not any(hint in lowered for hint in hints):
            continue
        for reported in set(plugin.analyze_string(text)):
            yield from ((value, kind) for value in _whole_tokens(text, reported))


def _whole_tokens(line: str, reported: str) -> Iterator[str]:
    """Each occurrence of ``reported`` in ``line`` that starts a token, carried on to the
    token's end."""
    start = line.find(reported)
    while start >= 0:
        if start == 0 or not _TOKEN_CHAR.match(line[start - 1]) or not _TOKEN_CHAR.match(reported[:1]):
            tail = _TOKEN_TAIL.match(line, start + len(reported))
            end = tail.end() if tail else start + len(reported)
            value = line[start:end].rstrip(".")
            if _usable(value):
                yield value
        start = line.find(reported, start + 1)


def _keyword_windows(text: str) -> Iterator[str]:
    """Where the keyword plugin looks in ``text``: a short window of the line around each
    keyword (``password = value`` has its value close by). The plugin's regexes take the first
    match of what they are given, and backtrack over all of it: on whole lines they cost seconds
    a megabyte and find one assignment a line."""
    lowered = text.lower()
    for match in _KEYWORD_HINT.finditer(lowered):
        # Every form the plugin knows puts an assignment, a colon or a quote right after the
        # keyword's name, or a comparison right before it; without one, nothing to look at.
        if not _AFTER_KEYWORD.match(lowered, match.end()) and not _BEFORE_KEYWORD.search(
            lowered, max(0, match.start() - 40), match.start()
        ):
            continue
        line_start = lowered.rfind("\n", 0, match.start()) + 1
        line_end = lowered.find("\n", match.start())
        line_end = len(lowered) if line_end < 0 else line_end
        yield text[max(line_start, match.start() - 32) : min(line_end, match.end() + _KEYWORD_WINDOW)]


def _keyword_values(text: str) -> Iterator[str]:
    for window in _keyword_windows(text):
        for value in _KEYWORD_PLUGIN.analyze_string(window, CONFIG_DENYLIST_REGEX_TO_GROUP):
            value = value.strip()
            # A value with a space in it is prose ("The secret: it was fine"), not a credential.
            if _usable(value) and not any(ch.isspace() for ch in value) and not is_templated_secret(value):
                yield value


def _entropy_values(text: str) -> Iterator[str]:
    for plugin in _ENTROPY_PLUGINS:
        # Shannon entropy is at most log2(length): shorter strings cannot pass the limit.
        shortest = max(MIN_SECRET_LENGTH, int(2**plugin.entropy_limit))
        for value in plugin.analyze_string(text):
            if (
                len(value) >= shortest
                and not _is_placeholder_like(value)
                and plugin.calculate_shannon_entropy(value) > plugin.entropy_limit
                and not is_sequential_string(value)
                and not is_potential_uuid(value)
            ):
                yield value


def _private_key_blocks(text: str) -> Iterator[str]:
    """Every private key in ``text`` that detect-secrets' PrivateKeyDetector flags, whole: a PEM
    block BEGIN to END (newlines real or JSON-escaped, lines perhaps numbered as Read numbers
    them), or with no END the BEGIN line and the base64 lines after it; any other flagged key
    (PuTTY) from its marker to the end of the line."""
    if "PRIVATE KEY" not in text and "PuTTY" not in text:
        return
    if not any(True for _ in _PRIVATE_KEY_PLUGIN.analyze_string(text)):
        return
    blocks = [match.group() for match in _PEM_BLOCK.finditer(text)]
    yield from blocks
    if not blocks:
        for line in text.splitlines():
            marker = next(iter(_PRIVATE_KEY_PLUGIN.analyze_string(line)), None)
            if marker is not None:
                yield line[line.index(marker) :]


# ---------------------------------------------------------------------------------------------
# Where the decoded strings of a text are


def _decoded_strings(text: str) -> Iterator[str]:
    """The strings of ``text`` as a reader sees them: every string of a JSON document or of each
    JSON line, and the text itself for lines that are not JSON."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            yield from _json_strings(json.loads(text))
            return
        except (ValueError, RecursionError):
            pass
    if not _JSON_LINE.search(text):
        yield text  # plain text: scanned whole
        return
    plain: list[str] = []  # consecutive lines that are not JSON, scanned as one text
    for line in text.splitlines():
        candidate = line.strip()
        if candidate[:1] in ("{", "[") and candidate[-1:] in ("}", "]"):
            try:
                strings = list(_json_strings(json.loads(candidate)))
            except (ValueError, RecursionError):
                pass
            else:
                if plain:
                    yield "\n".join(plain)
                    plain = []
                yield from strings
                continue
        plain.append(line)
    if plain:
        yield "\n".join(plain)


def _json_strings(value: Any) -> Iterator[str]:
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, Mapping):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, (list, tuple)):
            pending.extend(item)


# ---------------------------------------------------------------------------------------------
# The redactor


class Redactor:
    """Finds and redacts secrets: the known values it was built with, and the patterns."""

    def __init__(self, known: Mapping[str, str] | None = None) -> None:
        # value -> the label of its placeholder
        self.known: dict[str, str] = {v: label for v, label in (known or {}).items() if _usable(v)}
        self._cache: dict[str, frozenset[Detection]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Redactor:
        """A redactor for the credentials of ``environ`` (the process environment by default)."""
        environ = os.environ if environ is None else environ
        known: dict[str, str] = {}
        for name in sorted(environ):
            value = environ[name]
            if not _usable(value) or value in known:
                continue
            if any(word in name.upper() for word in CREDENTIAL_NAME_WORDS) or _flagged(value):
                known[value] = name.lower().replace("_", "-")
        return cls(known)

    # -- finding ---------------------------------------------------------------------------

    def detect(self, text: str, *, binary: bool = False) -> list[Detection]:
        """Every secret in ``text``, each value once, longest first. In a ``binary`` text (a
        file with NUL bytes, read as latin-1) only known values, tokens and private keys are
        looked for: the keyword and entropy plugins would take random bytes for secrets."""
        found: dict[str, Detection] = {}

        def add(detection: Detection) -> None:
            # A value two plugins flag takes the more specific kind, whatever the scan order.
            old = found.get(detection.value)
            if old is None or _PRIORITY[detection.kind] < _PRIORITY[old.kind]:
                found[detection.value] = detection

        for value, label in self.known.items():
            if any(form in text for form in _forms(value)):
                add(Detection(value, SecretKind.ENVIRONMENT_CREDENTIAL, label))
        for value, kind in _token_values(text):
            add(Detection(value, kind, kind))
        for block in _private_key_blocks(text):
            add(Detection(block, SecretKind.PRIVATE_KEY, SecretKind.PRIVATE_KEY))
        for string in () if binary else _decoded_strings(text):
            for detection in self._detect_decoded(string):
                add(detection)
        return sorted(found.values(), key=lambda d: (-len(d.value), d.value))

    def _detect_decoded(self, string: str) -> frozenset[Detection]:
        def compute() -> set[Detection]:
            found = {Detection(v, k, k) for v, k in _token_values(string)}
            found.update(
                Detection(b, SecretKind.PRIVATE_KEY, SecretKind.PRIVATE_KEY) for b in _private_key_blocks(string)
            )
            found.update(
                Detection(v, SecretKind.SECRET_KEYWORD, SecretKind.SECRET_KEYWORD) for v in _keyword_values(string)
            )
            found.update(
                Detection(v, SecretKind.HIGH_ENTROPY_STRING, SecretKind.HIGH_ENTROPY_STRING)
                for v in _entropy_values(string)
            )
            return found

        return self._cached(("d", string), compute)

    def _cached(self, key: tuple[str, str], compute: Any) -> frozenset[Detection]:
        # A history is re-sent on every request: its strings are scanned once.
        cached = self._cache.get(key)  # type: ignore[arg-type]
        if cached is None:
            cached = frozenset(compute())
            with self._lock:
                if len(self._cache) >= _CACHE_LIMIT:
                    self._cache.clear()
                self._cache[key] = cached  # type: ignore[index]
        return cached

    # -- redacting -------------------------------------------------------------------------

    def redact_text(self, text: str, *, binary: bool = False) -> str:
        """``text`` with every secret replaced by its placeholder (``binary``: see `detect`)."""
        if not text:
            return text
        detections = self.detect(text, binary=binary)
        if not detections:
            return text
        return _replace_all(text, detections)

    def redact_pieces(self, pieces: Sequence[str]) -> list[str]:
        """``pieces`` of one text (the deltas of a streamed answer) redacted as the whole text
        is, a secret split across pieces included: each secret's placeholder goes to the piece it
        starts in, and the pieces it covers lose its characters. ``"".join`` of the result is
        `redact_text` of ``"".join(pieces)``; the number of pieces is kept."""
        whole = "".join(pieces)
        detections = self.detect(whole) if whole else []
        if not detections:
            return list(pieces)
        pattern, by_form = _pattern(detections)
        spans = [(m.start(), m.end(), by_form[m.group()]) for m in pattern.finditer(whole)]
        result: list[str] = []
        start = 0
        for piece in pieces:
            end = start + len(piece)
            out: list[str] = []
            position = start
            for span_start, span_end, replacement in spans:
                if span_end <= position or span_start >= end:
                    continue
                if span_start >= position:
                    out.append(whole[position:span_start])
                    out.append(replacement)
                position = max(position, min(span_end, end))
            out.append(whole[position:end])
            result.append("".join(out))
            start = end
        return result

    def redact_bytes(self, data: bytes) -> bytes:
        """``data`` redacted: as UTF-8 text, or else byte for byte as latin-1 (every byte is a
        character there, so what is not a secret comes back unchanged)."""
        binary = b"\x00" in data
        try:
            return self.redact_text(data.decode("utf-8"), binary=binary).encode("utf-8")
        except UnicodeDecodeError:
            return self.redact_text(data.decode("latin-1"), binary=binary).encode("latin-1")

    def redact_value(self, value: Any) -> Any:
        """A JSON value with every string (keys too) redacted: a copy, or the value itself when
        nothing in it is secret."""
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, Mapping):
            items = [(self.redact_value(k), self.redact_value(v)) for k, v in value.items()]
            if all(k is old_k and v is old_v for (k, v), (old_k, old_v) in zip(items, value.items(), strict=True)):
                return value
            return dict(items)
        if isinstance(value, list):
            redacted = [self.redact_value(item) for item in value]
            if all(new is old for new, old in zip(redacted, value, strict=True)):
                return value
            return redacted
        return value

    def locate(self, text: str, *, binary: bool = False) -> list[tuple[int, int, Detection]]:
        """Where each secret of ``text`` is: (1-based line, 1-based column, detection), in
        reading order; a value written in a form not found verbatim is placed at its first line."""
        located: set[tuple[int, int, Detection]] = set()
        starts = _line_starts(text)
        for detection in self.detect(text, binary=binary):
            offsets = [m.start() for form in _forms(detection.value) for m in re.finditer(re.escape(form), text)]
            if not offsets:
                head = detection.value.splitlines()[0] if detection.value.strip() else detection.value
                offsets = [m.start() for m in re.finditer(re.escape(head), text)] or [0]
            for offset in offsets:
                line = _line_of(starts, offset)
                located.add((line + 1, offset - starts[line] + 1, detection))
        return sorted(located, key=lambda item: (item[0], item[1], item[2].kind))


def _flagged(value: str) -> bool:
    """Whether a pattern plugin flags a whole environment value as a secret."""
    return any(True for _ in _token_values(value)) or any(True for _ in _private_key_blocks(value))


def _forms(value: str) -> tuple[str, ...]:
    """The ways ``value`` can be written in a text: as it is, JSON-escaped, and its UTF-8 bytes
    read as latin-1."""
    forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    try:
        forms.add(value.encode("utf-8").decode("latin-1"))
    except UnicodeError:  # pragma: no cover - every str encodes as UTF-8 except lone surrogates
        pass
    return tuple(sorted(forms, key=len, reverse=True))


def _replace_all(text: str, detections: Iterable[Detection]) -> str:
    pattern, by_form = _pattern(detections)
    return pattern.sub(lambda match: by_form[match.group()], text)


def _pattern(detections: Iterable[Detection]) -> tuple[re.Pattern[str], dict[str, str]]:
    by_form: dict[str, str] = {}
    for detection in detections:
        for form in _forms(detection.value):
            by_form.setdefault(form, detection.placeholder)
    # One pass, longest form first: a secret inside a longer one goes with the longer one.
    return re.compile("|".join(re.escape(form) for form in sorted(by_form, key=len, reverse=True))), by_form


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(match.end() for match in re.finditer(r"\r\n|\r|\n", text))
    return starts


def _line_of(starts: list[int], offset: int) -> int:
    return bisect.bisect_right(starts, offset) - 1


_CURRENT: dict[tuple[tuple[str, str], ...], Redactor] = {}
_CURRENT_LOCK = threading.Lock()


def current_redactor() -> Redactor:
    """The redactor for this process's environment as it is now (cached per environment, so a
    variable set later, by a test say, is known too)."""
    snapshot = tuple(sorted(os.environ.items()))
    redactor = _CURRENT.get(snapshot)
    if redactor is None:
        redactor = Redactor.from_environment(dict(snapshot))
        with _CURRENT_LOCK:
            if len(_CURRENT) > 16:
                _CURRENT.clear()
            _CURRENT[snapshot] = redactor
    return redactor
