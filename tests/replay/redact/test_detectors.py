"""The detectors' cheap checks (`replay.redact.detectors`) find exactly what running the
detect-secrets plugins without them finds: a keyword window none of whose denylisted keywords
is there is not handed to the keyword plugin, a text without a quote is not handed to the
high-entropy plugins (they read quoted strings only), and a text without any token plugin's
hint to none of them (`raw_hint_in`, one pattern for a short text, a test per hint for a long
one)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from replay.redact import detectors
from replay.redact.detectors import RAW_HINTS, entropy_values, keyword_values, raw_hint_in, token_values
from replay.redact.redactor import _environment_credentials

EXAMPLES = 3_000 if os.environ.get("HYPOTHESIS_PROFILE") == "long" else 100

# Pieces that make keywords, near-keywords, assignments, quotes and the characters a
# case-insensitive match treats specially (``ſ`` is ``s``, ``ı`` is ``i``, ``K`` is ``k``).
_PIECES = st.sampled_from(
    [
        "api_key", "API_KEY", "apikey", "key_0", "event['key_0']", "keypass", "key_pass", "db_pass",
        "password", "PassWord", "passwd", "pwd", "secret", "SECRET", "contraseña", "CONTRASEÑA",
        "contrasena", "ſecret", "apı_key", "Kelvin_\u212aey", "private_key", "client_key",
        " = ", "=", ": ", ":", "==", "!==", " ", "\n", "\t", "'", '"', "`", ";", ",", "]",
        "hunter2hunter2", "s3cr3t-V4lue_xyz", "abcdefghij0123456789ABCDEFGHIJ+/=", "deadbeef" * 4,
        "x", "0",
    ]
)  # fmt: skip
_TEXTS = st.lists(_PIECES, max_size=14).map("".join)


def _keyword_values_without_the_check(text: str) -> Iterator[str]:
    """`keyword_values` as it was before the denylist check: the plugin on every window."""
    for window in detectors._keyword_windows(text):
        for value in detectors._KEYWORD_PLUGIN.analyze_string(window, detectors.CONFIG_DENYLIST_REGEX_TO_GROUP):
            value = value.strip()
            if (
                detectors.worth_redacting(value)
                and not any(ch.isspace() for ch in value)
                and not detectors.is_templated_secret(value)
            ):
                yield value


def _entropy_values_without_the_check(text: str) -> Iterator[str]:
    """`entropy_values` as it was before the quote check."""
    for plugin in detectors._ENTROPY_PLUGINS:
        shortest = max(detectors.MIN_SECRET_LENGTH, int(2**plugin.entropy_limit))
        for value in plugin.analyze_string(text):
            if (
                len(value) >= shortest
                and not detectors.is_placeholder_like(value)
                and plugin.calculate_shannon_entropy(value) > plugin.entropy_limit
                and not detectors.is_sequential_string(value)
                and not detectors.is_potential_uuid(value)
            ):
                yield value


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(text=_TEXTS)
@example(text="password = 'hunter2hunter2'")
@example(text="event['key_0'] + 0")
@example(text="ſecret = 's3cr3t-V4lue_xyz'")
@example(text="'s3cr3t-V4lue_xyz' == db_password")
def test_the_keyword_plugin_finds_the_same_with_the_denylist_check(text: str) -> None:
    assert list(keyword_values(text)) == list(_keyword_values_without_the_check(text))


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(text=_TEXTS)
@example(text="token = 'abcdefghij0123456789ABCDEFGHIJ+/='")
@example(text='"deadbeefdeadbeefdeadbeefdeadbeef"')
@example(text="abcdefghij0123456789ABCDEFGHIJ+/= unquoted")
def test_the_entropy_plugins_find_the_same_with_the_quote_check(text: str) -> None:
    assert list(entropy_values(text)) == list(_entropy_values_without_the_check(text))


def test_a_code_key_that_is_no_credential_is_not_handed_to_the_keyword_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    # ``event['key_0']`` is a keyword hint with a quote after it, but no denylisted keyword.
    handed: list[str] = []
    real = detectors._KEYWORD_PLUGIN.analyze_string

    def spy(window: str, *args: object) -> Iterator[str]:
        handed.append(window)
        return real(window, *args)

    monkeypatch.setattr(detectors._KEYWORD_PLUGIN, "analyze_string", spy)
    assert list(keyword_values("return event['key_0'] + 0")) == []
    assert handed == []
    assert list(keyword_values("password = 'hunter2hunter2'")) == ["hunter2hunter2"]
    assert handed


_HINTED = st.lists(
    st.one_of(
        st.sampled_from([*RAW_HINTS, "sk", "-ant", "gh", "_", "ey", "j", "hooks.slack", ".com", "x" * 150]), _PIECES
    ),
    max_size=12,
).map("".join)


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(text=_HINTED)
@example(text="x" * 199 + "sk-")
@example(text="x" * 200 + "sk-ant-")
@example(text="x" * 300 + "hooks.slack.co")
def test_a_raw_hint_is_found_as_a_test_per_hint_finds_it(text: str) -> None:
    lowered = text.lower()
    assert raw_hint_in(lowered) == any(hint in lowered for hint in RAW_HINTS)


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(text=_HINTED)
@example(text="Authorization: Bearer abcdefgh12345678")
@example(text="key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789")
def test_the_token_plugins_find_the_same_with_the_hint_gate(text: str) -> None:
    lowered = text.lower()
    without_the_gate = [
        (value, kind)
        for plugin, kind, hints in detectors._TOKEN_PLUGINS
        if any(hint in lowered for hint in hints)
        for reported in set(plugin.analyze_string(text))
        for value in detectors._whole_tokens(text, reported)
    ]
    assert sorted(token_values(text)) == sorted(without_the_gate)


def _environment_credentials_one_by_one(environ: dict[str, str]) -> dict[str, str]:
    """`environment_credentials` as it was before the hints were looked for in all values at once."""
    known: dict[str, str] = {}
    for name in sorted(environ):
        value = environ[name]
        if not detectors.worth_redacting(value) or value in known:
            continue
        if any(word in name.upper() for word in detectors.CREDENTIAL_NAME_WORDS) or detectors._flagged(value):
            known[value] = name.lower().replace("_", "-")
    return known


_PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234567890abcdef\n-----END RSA PRIVATE KEY-----"
_VALUES = st.lists(
    st.sampled_from(
        [
            *RAW_HINTS,
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
            "ghp_" + "a1B2" * 9,
            "AKIAIOSFODNN7EXAMPLE",
            _PRIVATE_KEY,
            "PuTTY-User-Key-File-2: ssh-rsa",
            "PRIVATE",
            " KEY",
            "/usr/local/bin:/usr/bin",
            "en_US.UTF-8",
            "xterm-256color",
            "ΣΑΣ",
            "İstanbul",
            "\n",
            "-",
            "x" * 120,
        ]
    ),
    max_size=4,
).map("".join)
_NAMES = st.sampled_from(["PATH", "LANG", "TERM", "HOME", "MY_TOKEN", "db_password", "Auth_Header", "X", "Y", "Z"])


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(environ=st.dictionaries(_NAMES, _VALUES, max_size=8))
@example(environ={"A": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789", "B": "plain value here"})
@example(environ={"A": "x" * 40 + "sk", "B": "-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"})
@example(environ={"KEYFILE": _PRIVATE_KEY, "OTHER": _PRIVATE_KEY})
@example(environ={"X": _PRIVATE_KEY, "Y": "en_US.UTF-8"})
@example(environ={"X": "PuTTY-User-Key-File-2: ssh-rsa " + "x" * 40})
def test_the_environment_s_credentials_are_found_as_one_value_at_a_time_finds_them(environ: dict[str, str]) -> None:
    assert detectors.environment_credentials(environ) == _environment_credentials_one_by_one(environ)


# Bytes an environment entry may hold (no NUL; a name no ``=``), some of them not UTF-8.
_RAW_NAMES = st.binary(min_size=1, max_size=12).map(lambda b: b.replace(b"\0", b"_").replace(b"=", b"_"))
_RAW_VALUES = st.binary(max_size=40).map(lambda b: b.replace(b"\0", b"\xff"))


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    environ=st.dictionaries(_NAMES, _VALUES, max_size=8),
    raw=st.dictionaries(_RAW_NAMES, st.one_of(_RAW_VALUES, _VALUES.map(os.fsencode)), max_size=4),
)
@example(environ={"PATH": "/usr/bin:/bin"}, raw={})
@example(environ={"MY_TOKEN": "abcdefgh12345678"}, raw={})
@example(environ={"X": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"}, raw={})
@example(environ={"X": "PuTTY-User-Key-File-2: ssh-rsa " + "x" * 40}, raw={})
@example(environ={}, raw={b"A\xc3": b"\xa9" + b"x" * 20, b"\xff\xfe_TOKEN": b"value\xe2\x82-12345678"})
def test_the_environment_as_the_os_holds_it_gives_the_credentials_its_decoded_entries_give(
    environ: dict[str, str], raw: dict[bytes, bytes]
) -> None:
    entries = {**{os.fsencode(name): os.fsencode(value) for name, value in environ.items()}, **raw}
    decoded = {os.fsdecode(name): os.fsdecode(value) for name, value in entries.items()}  # as os.environ reads
    assert _environment_credentials(tuple(sorted(entries.items()))) == detectors.environment_credentials(decoded)
