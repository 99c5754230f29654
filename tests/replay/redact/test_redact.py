"""Redaction: no planted secret reaches any byte of a bundle, the placeholders are stable, and the
bundle still replays MATCH.

The corpus holds one fake of every kind (realistic in shape so the detectors flag it, but not a
credential), planted in a file the model reads, in ``workspace/.env``, in a hidden folder, in a
latin-1 file, and in the recording process's environment (echoed by Bash, read from
``/proc/$PPID/environ``, written into the prompt and the model's own words).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from replay.cli.app import app
from replay.fake.scenario import Scenario
from replay.redact.kinds import MIN_SECRET_LENGTH
from replay.redact.redactor import Redactor, current_redactor
from replay.session.recording import record_bundle
from replay.session.runner import Verdict, run_bundle

runner = CliRunner()
REPO = Path(__file__).resolve().parents[3]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


# One fake of every kind detect-secrets (and our own plugins) know.
AWS_KEY_ID = "AKIAZ7QXW3RM4PLKT2VB"
AWS_SECRET = "q8Vt3nR5xK2mW9pL7sD4fG6hJ1zX0cB8vN3mQ5rT"
GITHUB_TOKEN = "ghp_9fK2mX7qR4tL8wZ3vB6nJ1pS5dG0hY2cA4eQ"
OPENAI_KEY = "sk-proj-Xr4T9mK2pL7qW3zN8vB5sD1fG6hJ0cY4eR2tU9iO"
JWT = ".".join(
    (
        _b64url(b'{"alg":"HS256","typ":"JWT"}'),
        _b64url(b'{"sub":"planted-corpus","iat":1700000000}'),
        "Hq3vT8mZ2xL5wR9pK4sN7bY1cF6dG0jA3eU8iO5tW2q",
    )
)
PEM_BODY = (
    "MIIEowIBAAKCAQEAx7Qm3vR9sT2wK8pL4nZ6yB1cD5fG0hJ3kM7qW9eR2tY4uI6o",
    "P8aS1dF3gH5jK7lZ9xC2vB4nM6qW8eR0tY2uI4oP6aS8dF0gH2jK4lZ6xC8vB0nM",
    "Zq8Xw4Rt7Yu2Io5Pa9Sd3Fg6Hj1Kl4Zx7Cv0Bn3Mq6We9Rt2Yu5Io8Pa1Sd4Fg7H",
)
PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(PEM_BODY) + "\n-----END RSA PRIVATE KEY-----"
SLACK_TOKEN = "xoxb-1234567890123-1234567890123-Zq8Xw4Rt7Yu2Io5Pa9Sd3Fg6"
STRIPE_KEY = "sk_live_51Hq8ZtK2mX7qR4tL8wZ3vB6nJ"
ANTHROPIC_KEY = "sk-ant-api03-Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5Nm7Qw9Er1Ty3-AAAA"
PASSWORD = "Zx9#qLm2$Vr7!Tp4@Wk8"

CORPUS = f"""\
AWS_ACCESS_KEY_ID={AWS_KEY_ID}
AWS_SECRET_ACCESS_KEY={AWS_SECRET}
GITHUB_TOKEN={GITHUB_TOKEN}
OPENAI_API_KEY={OPENAI_KEY}
SESSION_JWT={JWT}
SLACK_BOT_TOKEN={SLACK_TOKEN}
STRIPE_SECRET_KEY={STRIPE_KEY}
CLAUDE_KEY={ANTHROPIC_KEY}
PASSWORD={PASSWORD}
{PEM}
"""
PLANTED = (
    AWS_KEY_ID,
    AWS_SECRET,
    GITHUB_TOKEN,
    OPENAI_KEY,
    JWT,
    *PEM_BODY,
    SLACK_TOKEN,
    STRIPE_KEY,
    ANTHROPIC_KEY,
    PASSWORD,
)

# The recording process's credentials: one a detector knows, two only their names give away.
ENVIRONMENT = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-EnvKey7Hq2Lx9Vw4Rb8Nz3Kd6Fm1Tc5Yp0Gs-BBBB",
    "ANTHROPIC_AUTH_TOKEN": "authtok.7Hq2Lx9Vw4Rb8Nz3Kd6Fm1Tc5",
    "MY_ANTHROPIC_CREDENTIAL": "cred.4Pz8Qm2Xv6Lw9Tr3Yb7Nk1Hd5",
}
ECHO_ENVIRONMENT = (
    "env | grep -E 'ANTHROPIC|CREDENTIAL' | sort; "
    "tr '\\0' '\\n' < /proc/$PPID/environ | grep -E 'ANTHROPIC|CREDENTIAL' | sort; true"
)


def _workspace(root: Path) -> Path:
    workspace = root / "source-workspace"
    (workspace / ".config" / "hidden").mkdir(parents=True)
    (workspace / "deploy-notes.txt").write_text(CORPUS)
    (workspace / ".env").write_text(CORPUS)
    (workspace / ".config" / "hidden" / "credentials.ini").write_text(CORPUS)
    (workspace / "latin1-notes.txt").write_bytes(("Clé de déploiement\n" + CORPUS).encode("latin-1"))
    (workspace / "readme.md").write_text("Nothing secret here.\n")
    return workspace


def _turns(*, echo_environment: bool) -> list[dict[str, object]]:
    tools: list[dict[str, object]] = [
        {"tool_use": {"name": "Read", "input": {"file_path": "deploy-notes.txt"}}},
        {"tool_use": {"name": "Read", "input": {"file_path": ".env"}}},
        {"tool_use": {"name": "Read", "input": {"file_path": "latin1-notes.txt"}}},
    ]
    if echo_environment:
        tools.append({"tool_use": {"name": "Bash", "input": {"command": ECHO_ENVIRONMENT}}})
    spoken = " ".join(ENVIRONMENT.values())
    return [
        {"content": [{"text": "Reading the deploy notes."}, *tools]},
        {
            "content": [
                {"text": f"The notes hold {GITHUB_TOKEN}; your variables are {spoken}."},
                {"tool_use": {"name": "Write", "input": {"file_path": "copy.txt", "content": CORPUS + spoken}}},
            ]
        },
        {"content": [{"text": "Done."}]},
    ]


def _prompt() -> str:
    return f"Check the deploy notes. My key is {ENVIRONMENT['ANTHROPIC_API_KEY']} and {PASSWORD=}."


def _every_byte(folder: Path) -> list[tuple[Path, bytes]]:
    files = []
    for root, _, names in os.walk(folder):
        for name in names:
            path = Path(root) / name
            if not path.is_symlink():
                files.append((path, path.read_bytes()))
    return files


def _leaks(folder: Path) -> list[str]:
    values = [*PLANTED, *ENVIRONMENT.values()]
    forms = {form for value in values for form in (value, json.dumps(value)[1:-1])}
    return [
        f"{path.relative_to(folder)} holds {value[:12]}..."
        for path, data in _every_byte(folder)
        for value in forms
        if value.encode("utf-8") in data
    ]


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    return ENVIRONMENT


# ---------------------------------------------------------------------------------------------
# The whole bundle


async def _record_leaky_session(tmp_path: Path, *, echo_environment: bool) -> Path:
    """Record the planted corpus's session into ``tmp_path``; ``echo_environment``: its Bash
    prints the environment and the parent's /proc environ too."""
    out = tmp_path / "leaky-session"
    await record_bundle(
        out,
        prompts=[_prompt()],
        scenario=Scenario.from_list(_turns(echo_environment=echo_environment)),
        workspace=_workspace(tmp_path),
    )
    return out


async def test_no_planted_secret_reaches_any_byte_of_a_recorded_bundle(
    tmp_path: Path, credentials: dict[str, str]
) -> None:
    out = await _record_leaky_session(tmp_path, echo_environment=True)

    assert _leaks(out) == []
    # The secrets did flow through the session and were redacted, not lost on the way.
    everything = b"".join(data for _, data in _every_byte(out)).decode("latin-1")
    for kind in ("anthropic-api-key", "anthropic-auth-token", "my-anthropic-credential", "github-token"):
        assert f"[REDACTED:{kind}]" in everything, kind
    for hidden in (".env", ".config/hidden/credentials.ini", "latin1-notes.txt"):
        assert "[REDACTED:private-key]" in (out / "workspace" / hidden).read_bytes().decode("latin-1")
    assert (out / "workspace" / "latin1-notes.txt").read_bytes().startswith("Clé de déploiement\n".encode("latin-1"))
    assert (out / "workspace" / "readme.md").read_text() == "Nothing secret here.\n"


async def test_a_redacted_bundle_replays_match(tmp_path: Path, credentials: dict[str, str]) -> None:
    out = await _record_leaky_session(tmp_path, echo_environment=True)

    report = await run_bundle(out)

    assert report.verdict is Verdict.MATCH, report.differences


async def test_a_redacted_bundle_replays_match_where_the_secrets_are_not_set(
    tmp_path: Path, credentials: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the workspace, the prompt and the model carried is redacted in the bundle itself, so
    # a machine without the credentials replays it the same (a Bash echoing the environment would
    # differ there whatever the redaction, so it is left out here).
    out = await _record_leaky_session(tmp_path, echo_environment=False)
    for name in ENVIRONMENT:
        monkeypatch.delenv(name)

    report = await run_bundle(out)

    assert report.verdict is Verdict.MATCH, report.differences
    assert _leaks(out) == []


def test_replay_record_through_the_command_line_leaks_nothing_even_from_proc_environ(tmp_path: Path) -> None:
    # A separate process, so the credentials are in its exec environment: what
    # /proc/$PPID/environ shows the Bash tool, whatever environment the tool itself is given.
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(yaml.safe_dump({"version": 1, "turns": _turns(echo_environment=True)}))
    out = tmp_path / "bundle"
    env = {**os.environ, **ENVIRONMENT}
    process = subprocess.run(
        [
            sys.executable,
            "-c",
            "from replay.cli.app import app; app()",
            "record",
            "--scenario",
            str(scenario),
            "--workspace",
            str(_workspace(tmp_path)),
            "--prompt",
            _prompt(),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )

    assert process.returncode == 0, process.stderr
    assert _leaks(out) == []
    transcript = (out / "transcript.jsonl").read_text()
    assert "[REDACTED:anthropic-auth-token]" in transcript


# ---------------------------------------------------------------------------------------------
# replay scrub over an unscrubbed copy of the corpus


def _unscrubbed_bundle(root: Path) -> Path:
    bundle = root / "unscrubbed"
    shutil.copytree(_workspace(root), bundle / "workspace")
    records = [
        {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "content": CORPUS}]}},
        {"type": "assistant", "message": {"role": "assistant", "content": f"Found {ANTHROPIC_KEY}."}},
    ]
    (bundle / "transcript.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return bundle


def test_scrub_check_names_every_planted_secret_and_scrub_leaves_none(tmp_path: Path) -> None:
    bundle = _unscrubbed_bundle(tmp_path)

    check = runner.invoke(app, ["scrub", "--check", str(bundle)])

    assert check.exit_code == 1, check.output
    reported = {line.rsplit(": ", 1)[1] for line in check.stdout.splitlines()[:-1]}
    assert {
        "aws-access-key",
        "secret-keyword",
        "github-token",
        "openai-api-key",
        "jwt",
        "slack-token",
        "stripe-key",
        "anthropic-api-key",
        "private-key",
    } <= reported
    by_file = {line.split(":", 1)[0] for line in check.stdout.splitlines()[:-1]}
    workspace = bundle / "workspace"
    assert {
        str(workspace / ".env"),
        str(workspace / ".config" / "hidden" / "credentials.ini"),
        str(workspace / "latin1-notes.txt"),
        str(workspace / "deploy-notes.txt"),
        str(bundle / "transcript.jsonl"),
    } <= by_file
    env_lines = [line for line in check.stdout.splitlines() if line.startswith(f"{workspace / '.env'}:")]
    assert env_lines == [
        f"{workspace / '.env'}:1:19: aws-access-key",
        f"{workspace / '.env'}:2:23: secret-keyword",
        f"{workspace / '.env'}:3:14: github-token",
        f"{workspace / '.env'}:4:16: openai-api-key",
        f"{workspace / '.env'}:5:13: jwt",
        f"{workspace / '.env'}:6:17: slack-token",
        f"{workspace / '.env'}:7:19: stripe-key",
        f"{workspace / '.env'}:8:12: anthropic-api-key",
        f"{workspace / '.env'}:9:10: secret-keyword",
        f"{workspace / '.env'}:10:1: private-key",
    ]
    for value in PLANTED:
        assert value not in check.output

    scrub = runner.invoke(app, ["scrub", str(bundle)])

    assert scrub.exit_code == 0, scrub.output
    assert scrub.stdout.splitlines()[-1].endswith("no secrets left.")
    assert _leaks(bundle) == []
    assert runner.invoke(app, ["scrub", "--check", str(bundle)]).exit_code == 0
    assert (bundle / "workspace" / "latin1-notes.txt").read_bytes().startswith("Clé".encode("latin-1"))


# ---------------------------------------------------------------------------------------------
# The redactor itself


def test_the_same_value_always_gets_the_same_placeholder() -> None:
    redactor = Redactor({"tok.4Pz8Qm2Xv6Lw9Tr3": "my-service-token"})
    text = f"a tok.4Pz8Qm2Xv6Lw9Tr3 b {GITHUB_TOKEN} c tok.4Pz8Qm2Xv6Lw9Tr3 {GITHUB_TOKEN}"

    redacted = redactor.redact_text(text)

    assert redacted == (
        "a [REDACTED:my-service-token] b [REDACTED:github-token] c [REDACTED:my-service-token] [REDACTED:github-token]"
    )
    assert redactor.redact_text(redacted) == redacted, "redaction is idempotent"
    assert Redactor({"tok.4Pz8Qm2Xv6Lw9Tr3": "my-service-token"}).redact_text(text) == redacted


def test_a_json_escaped_value_is_redacted_too() -> None:
    value = 'pa"ss\\word-7Hq2Lx9V'
    redactor = Redactor({value: "db-password"})
    document = json.dumps({"output": f"DB={value}\nPEM={PEM}"})

    redacted = redactor.redact_text(document)

    assert json.loads(redacted) == {"output": "DB=[REDACTED:db-password]\nPEM=[REDACTED:private-key]"}


def test_a_json_value_is_redacted_in_every_string_keys_too_and_shared_where_nothing_is_secret() -> None:
    redactor = Redactor({"tok.4Pz8Qm2Xv6Lw9Tr3": "my-service-token"})
    clean = {"role": "user", "content": [{"type": "text", "text": "nothing to hide"}]}
    value = {
        "messages": [clean, {"role": "user", "content": f"use {GITHUB_TOKEN}"}],
        "tok.4Pz8Qm2Xv6Lw9Tr3": ["x", 1, None, True, 2.5],
        "after": [clean],
    }
    memo: dict[str, str | None] = {}

    redacted = redactor.redact_value(value, memo)

    assert redacted == {
        "messages": [clean, {"role": "user", "content": "use [REDACTED:github-token]"}],
        "[REDACTED:my-service-token]": ["x", 1, None, True, 2.5],
        "after": [clean],
    }
    assert list(redacted) == ["messages", "[REDACTED:my-service-token]", "after"], "keys keep their order"
    assert redacted["messages"][0] is clean and redacted["after"] is value["after"], "what holds no secret is shared"
    assert value["messages"][1]["content"] == f"use {GITHUB_TOKEN}", "the value itself is left as it was"
    assert redactor.redact_value(clean) is clean
    assert memo["nothing to hide"] is None and memo[f"use {GITHUB_TOKEN}"] == "use [REDACTED:github-token]"


def test_credential_variables_are_known_by_name_or_by_value_and_short_values_are_ignored() -> None:
    redactor = Redactor.from_environment(
        {
            "ANTHROPIC_AUTH_TOKEN": "authtok.7Hq2Lx9Vw4Rb8",
            "MY_ANTHROPIC_CREDENTIAL": "cred.4Pz8Qm2Xv6Lw9",
            "DEPLOY_HOOK": GITHUB_TOKEN,  # its name says nothing, its value does
            "AUTH": "1",  # too short: every "1" would go
            "HOME": "/home/someone/projects",
        }
    )

    assert redactor.known == {
        "authtok.7Hq2Lx9Vw4Rb8": "anthropic-auth-token",
        "cred.4Pz8Qm2Xv6Lw9": "my-anthropic-credential",
        GITHUB_TOKEN: "deploy-hook",
    }
    assert redactor.redact_text("AUTH=1 in /home/someone/projects") == "AUTH=1 in /home/someone/projects"
    assert MIN_SECRET_LENGTH == 8


def test_current_redactor_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LATE_SECRET", "late.9Kd6Fm1Tc5Yp0")
    assert current_redactor().redact_text("x late.9Kd6Fm1Tc5Yp0") == "x [REDACTED:late-secret]"
    monkeypatch.delenv("LATE_SECRET")
    assert current_redactor().redact_text("x late.9Kd6Fm1Tc5Yp0") == "x late.9Kd6Fm1Tc5Yp0"


def test_our_own_fields_and_prose_are_not_taken_for_secrets() -> None:
    redactor = Redactor()
    ours = {
        "type": "thinking",
        "signature": "EqQBCkgIARABGAIiQGjFlqZ8wA2lTJ9y0vP3rNfK7mXb5sC1dE6gH4iJ8kL0",
        "uuid": "2f1c9a4e-8b7d-4f3a-9c2e-5d6b7a8c9d0e",
        "fingerprint": "a2f7152d72d2b00b0a63777e69da633fb86d033c4a0693fa364c4656661d1137",
        "text": "The secret: it was fine. Send a Bearer token. api_key = 'hello world'",
    }
    text = json.dumps(ours)
    assert redactor.redact_text(text) == text


def test_a_binary_file_keeps_its_bytes_but_loses_its_tokens() -> None:
    redactor = Redactor()
    data = b"\x89PNG\x00\x01'QmFzZTY0SGlnaEVudHJvcHlTdHJpbmdYeVo5OTk='\x00" + GITHUB_TOKEN.encode() + b"\xff\x00"

    redacted = redactor.redact_bytes(data)

    assert redacted == data.replace(GITHUB_TOKEN.encode(), b"[REDACTED:github-token]")


def test_one_redactor_is_safe_to_share_between_threads() -> None:
    redactor = Redactor()
    texts = [f"line {n}: {CORPUS}" for n in range(40)]
    expected = [Redactor().redact_text(text) for text in texts]
    results: dict[int, str] = {}

    def work(index: int) -> None:
        results[index] = redactor.redact_text(texts[index])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert [results[n] for n in range(len(texts))] == expected
    assert all(value not in "".join(expected) for value in PLANTED)


def test_a_secret_split_across_streamed_pieces_is_redacted_whole() -> None:
    redactor = Redactor()
    text = f"Your token is {GITHUB_TOKEN}, keep it safe."
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]

    redacted = redactor.redact_pieces(pieces)

    assert len(redacted) == len(pieces)
    assert "".join(redacted) == redactor.redact_text(text) == "Your token is [REDACTED:github-token], keep it safe."
    assert not any(piece and piece in GITHUB_TOKEN and len(piece) > 3 for piece in redacted)
