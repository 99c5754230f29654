"""Finding secrets in one text: the detectors the redaction pass (`replay.redact.redactor`) runs.

Two ways a secret is found:

- Known values. The values of the recording process's credential variables
  (``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN`` and every variable whose NAME contains KEY,
  TOKEN, SECRET, PASSWORD, CREDENTIAL or AUTH, or whose VALUE a detector below flags:
  `environment_credentials`) are replaced wherever they occur, whatever tool output carried
  them. Values shorter than `MIN_SECRET_LENGTH` (8) characters are ignored: ``AUTH=1`` must not
  redact every "1".
- Patterns, from detect-secrets' plugins (AWS, GitHub, JWT, private key, Slack, Stripe, Base64
  and hex high entropy, keyword) plus this project's own for Anthropic and OpenAI keys and
  bearer tokens. The token plugins run on the raw text and on its decoded strings; the
  high-entropy and keyword plugins only on decoded strings (`decoded_strings`: the strings of a
  JSON document or of each JSON line, and the other lines as they are), because on raw JSON a
  keyword value would run on past an escaped newline to the end of the string. A PEM private
  key is found as a whole block, BEGIN to END. Values shorter than 8 characters and values with
  a space in them (prose: "the secret: it was fine") are not taken from the keyword plugin; a
  keyword value is looked for only within 160 characters after its keyword.

detect-secrets keeps global settings; nothing here reads or changes them. Its plugins are used
through ``analyze_string`` only (``analyze_line`` consults the settings and may call a plugin's
``verify``, which goes to the network), and the plugin instances hold no per-call state, so
they are safe to share between threads (and each xdist worker is its own process).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from replay.redact.deferred_requests import requests_deferred
from replay.redact.kinds import MIN_SECRET_LENGTH, SecretKind, is_placeholder_like, worth_redacting
from replay.redact.substrings import Substrings

# detect-secrets imports `requests` only for verifying secrets online, which this never does.
with requests_deferred():
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
    from detect_secrets.plugins.keyword import CONFIG_DENYLIST_REGEX_TO_GROUP, DENYLIST, KeywordDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.stripe import StripeDetector

# Importing detect-secrets turns on logging.captureWarnings(True) (its logger does), which sends every
# later warning of the process to logging: pytest's warning capture, for one, then sees none. Off again
# (a program that wants warnings logged turns it on after importing this).
logging.captureWarnings(False)

__all__ = [
    "CREDENTIAL_NAME_WORDS",
    "PRIORITY",
    "PRIVATE_KEY_MARKERS",
    "RAW_HINTS",
    "AnthropicKeyDetector",
    "BearerTokenDetector",
    "OpenAIKeyDetector",
    "decoded_strings",
    "entropy_values",
    "environment_credentials",
    "keyword_values",
    "may_hold_credentials",
    "private_key_blocks",
    "raw_hint_in",
    "token_values",
]

# An environment variable whose name holds one of these words holds a credential.
CREDENTIAL_NAME_WORDS: Final = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH")
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
# A line that may be a JSON document (a transcript's records): its strings are scanned decoded.
_JSON_LINE = re.compile(r"^[ \t]*[\[{]", re.MULTILINE)

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
# The same hints, each plugin's looked for together (`Substrings`: the six AWS hints cost one scan).
_PLUGIN_HINTS: Final = tuple(Substrings(hints) for _, _, hints in _TOKEN_PLUGINS)
# Every hint of every token plugin, and the markers `private_key_blocks` needs: a text holding none
# of them gives no token and no private key.
RAW_HINTS: Final = tuple(sorted({hint for _, _, hints in _TOKEN_PLUGINS for hint in hints}))
# Whether a text holds a hint is asked of every string scanned: a short one is read once by one
# pattern of every hint, a long one by `Substrings` (a pattern per first character, led by what
# its hints share: it jumps from one occurrence to the next, where the one pattern tries every
# position).
_RAW_HINT: Final = re.compile("|".join(re.escape(hint) for hint in RAW_HINTS))
_RAW_HINTS: Final = Substrings(RAW_HINTS)
_SHORT_TEXT: Final = 200
PRIVATE_KEY_MARKERS: Final = ("PRIVATE KEY", "PuTTY")
_KEY_MARKERS: Final = Substrings(PRIVATE_KEY_MARKERS)
# When two kinds claim a value, the lower rank wins.
PRIORITY: Final = {
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
# Every regex of the plugin's (`CONFIG_DENYLIST_REGEX_TO_GROUP`) holds the denylist's alternation,
# case-insensitive but for one that is stricter: a window none of whose keywords is there (code's
# ``event['key_0']``) is not handed to it. Searched, case-sensitive, in a lowercased ASCII window,
# where the two agree (a case-insensitive pattern also takes ``ſ`` for ``s``, ``ı`` for ``i``...).
_DENYLISTED: Final = re.compile("|".join(DENYLIST))
_AFTER_KEYWORD: Final = re.compile(r"""\w{0,50}[\]'"]{0,2}\s*(?:[:=;]|['"`])""")
_BEFORE_KEYWORD: Final = re.compile(r"[!=]={1,2}\s*\w*$")
# detect-secrets' default limits; quoted strings only (the plugins' own rule).
_ENTROPY_PLUGINS: Final[tuple[HighEntropyStringsPlugin, ...]] = (
    Base64HighEntropyString(limit=4.5),
    HexHighEntropyString(limit=3.0),
)


# ---------------------------------------------------------------------------------------------
# Detecting in one string


def raw_hint_in(lowered: str) -> bool:
    """Whether one of `RAW_HINTS` is in the lowercased text ``lowered``."""
    if len(lowered) < _SHORT_TEXT:
        return _RAW_HINT.search(lowered) is not None
    return _RAW_HINTS.in_(lowered)


def token_values(text: str) -> Iterator[tuple[str, SecretKind]]:
    """The tokens in ``text`` (no token spans lines, so the whole text is scanned at once)."""
    lowered = text.lower()
    if not raw_hint_in(lowered):
        return  # no plugin's hint: none would run
    for (plugin, kind, _), hints in zip(_TOKEN_PLUGINS, _PLUGIN_HINTS, strict=True):
        if not hints.in_(lowered):
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
            if worth_redacting(value):
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


def keyword_values(text: str) -> Iterator[str]:
    for window in _keyword_windows(text):
        if window.isascii() and _DENYLISTED.search(window.lower()) is None:
            continue  # the plugin would find nothing (see `_DENYLISTED`)
        for value in _KEYWORD_PLUGIN.analyze_string(window, CONFIG_DENYLIST_REGEX_TO_GROUP):
            value = value.strip()
            # A value with a space in it is prose ("The secret: it was fine"), not a credential.
            if worth_redacting(value) and not any(ch.isspace() for ch in value) and not is_templated_secret(value):
                yield value


def entropy_values(text: str) -> Iterator[str]:
    if "'" not in text and '"' not in text:
        return  # the plugins read quoted strings only (their regex: a quote, the charset, the quote)
    for plugin in _ENTROPY_PLUGINS:
        # Shannon entropy is at most log2(length): shorter strings cannot pass the limit.
        shortest = max(MIN_SECRET_LENGTH, int(2**plugin.entropy_limit))
        for value in plugin.analyze_string(text):
            if (
                len(value) >= shortest
                and not is_placeholder_like(value)
                and plugin.calculate_shannon_entropy(value) > plugin.entropy_limit
                and not is_sequential_string(value)
                and not is_potential_uuid(value)
            ):
                yield value


def private_key_blocks(text: str) -> Iterator[str]:
    """Every private key in ``text`` that detect-secrets' PrivateKeyDetector flags, whole: a PEM
    block BEGIN to END (newlines real or JSON-escaped, lines perhaps numbered as Read numbers
    them), or with no END the BEGIN line and the base64 lines after it; any other flagged key
    (PuTTY) from its marker to the end of the line."""
    if not _KEY_MARKERS.in_(text):
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


def decoded_strings(text: str) -> Iterator[str]:
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
        # What json.loads builds is told by its exact type first (an ABC check costs more).
        kind = type(item)
        if kind is str:
            yield item
        elif kind is dict:
            pending.extend(item.keys())
            pending.extend(item.values())
        elif kind is list:
            pending.extend(item)
        elif kind in _JSON_SCALARS:
            continue
        elif isinstance(item, str):
            yield item
        elif isinstance(item, Mapping):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, (list, tuple)):
            pending.extend(item)


_JSON_SCALARS: Final = frozenset({int, float, bool, type(None)})


# ---------------------------------------------------------------------------------------------
# Credentials in the environment


def environment_credentials(environ: Mapping[str, str]) -> dict[str, str]:
    """The credential values of ``environ``, each with the label of its placeholder (its
    variable's name, ``anthropic-api-key``): variables named like a credential
    (`CREDENTIAL_NAME_WORDS`), and any whose whole value a token or private-key detector flags."""
    candidates = [(name, value) for name in sorted(environ) if worth_redacting(value := environ[name])]
    # The detectors' hints looked for in all the values at once: most environments hold none,
    # and then no value needs looking at one by one (a hint in a value is in the values joined).
    joined = "\n".join(value for _, value in candidates)
    any_flagged = raw_hint_in(joined.lower()) or _KEY_MARKERS.in_(joined)
    known: dict[str, str] = {}
    for name, value in candidates:
        if value in known:
            continue
        if _CREDENTIAL_NAME.search(name.upper()) or (any_flagged and _flagged(value)):
            known[value] = name.lower().replace("_", "-")
    return known


def may_hold_credentials(names: str, values: str) -> bool:
    """Whether `environment_credentials` may find anything in an environment whose names, joined
    by NULs, are ``names`` and whose values so joined are ``values``. False means it finds
    nothing: no name holds one of `CREDENTIAL_NAME_WORDS` and no value a detector's hint (none
    of which holds a NUL, so none is found across two names or two values)."""
    return bool(_CREDENTIAL_NAME.search(names.upper())) or raw_hint_in(values.lower()) or _KEY_MARKERS.in_(values)


_CREDENTIAL_NAME: Final = re.compile("|".join(map(re.escape, CREDENTIAL_NAME_WORDS)))


def _flagged(value: str) -> bool:
    """Whether a pattern plugin flags a whole environment value as a secret."""
    return any(True for _ in token_values(value)) or any(True for _ in private_key_blocks(value))
