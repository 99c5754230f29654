"""``replay scrub``: credentials left in cassettes and transcripts are found, and redacted in place,
atomically."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cassette import CassetteSource, load_cassette
from replay.cli.app import app
from replay.session.scrub_files import files_below
from tests.replay.bundle_helpers import assert_bad_input

runner = CliRunner()
REPO = Path(__file__).resolve().parents[3]
# Fakes shaped like the real thing: what a leak looks like, not a credential.
KEY = "sk-ant-api03-FAKEfake0123456789-notARealKey_AA"
TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl"

# A plain vcrpy cassette recorded without scrubbing filters.
VCRPY_CASSETTE = f"""\
interactions:
- request:
    body: '{{"max_tokens": 64, "messages": [{{"content": "hi", "role": "user"}}], "model": "claude-sonnet-4-5"}}'
    headers:
      authorization:
      - Bearer {TOKEN}
      x-api-key:
      - {KEY}
      content-type:
      - application/json
    method: POST
    uri: https://api.anthropic.com/v1/messages
  response:
    body:
      string: '{{"content": [{{"text": "Hello.", "type": "text"}}], "id": "msg_1", "model": "claude-sonnet-4-5",
        "role": "assistant", "stop_reason": "end_turn", "type": "message", "usage": {{"input_tokens": 5,
        "output_tokens": 2}}}}'
    headers:
      content-type:
      - application/json
      set-cookie:
      - session=abc123; Path=/
    status:
      code: 200
      message: OK
version: 1
"""

# A native cassette as a hand edit (or a writer without scrubbing) would leave it: secret
# headers inside the one-line header mapping, a key in a streamed answer.
NATIVE_CASSETTE = f"""\
# agent-replay cassette, format version 1 (see docs/cassettes.md)
agent_replay_cassette: 1
content:
  m-9017285104d1b249:
    content: hi
    role: user
interactions:
- request:
    method: POST
    uri: https://api.anthropic.com/v1/messages
    fingerprint: a2f7152d72d2b00b0a63777e69da633fb86d033c4a0693fa364c4656661d1137
    headers: {{anthropic-version: '2023-06-01', authorization: Bearer {TOKEN}, cookie: session=abc123}}
    body:
      max_tokens: 64
      messages:
        $refs: [m-9017285104d1b249]
      model: claude-sonnet-4-5
  response:
    status: 200
    headers: {{content-type: text/event-stream, request-id: req_1}}
    kind: sse
    events:
    - {{event: message_start, data: {{type: message_start}}}}
    - {{event: content_block_delta, data: {{delta: {{text: 'Your key is {KEY}', type: text_delta}}}}}}
# end of cassette
"""

TRANSCRIPT_RECORDS = [
    {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "Check the deploy script."}},
    {
        "type": "user",
        "uuid": "u2",
        "message": {"role": "user", "content": [{"type": "tool_result", "content": f"ANTHROPIC_API_KEY={KEY}"}]},
    },
    {
        "type": "assistant",
        "uuid": "a1",
        "message": {"role": "assistant", "content": f"Sent Bearer {TOKEN} to the API."},
    },
]


def at(text: str, needle: str) -> str:
    """``LINE:COL`` (1-based) of the first ``needle`` in ``text``."""
    before = text[: text.index(needle)]
    return f"{before.count(chr(10)) + 1}:{len(before) - (before.rfind(chr(10)) + 1) + 1}"


@pytest.fixture
def leaking(tmp_path: Path) -> Path:
    """A bundle-like folder with a leaking vcrpy cassette, native cassette and transcript."""
    folder = tmp_path / "leaky"
    folder.mkdir()
    (folder / "vcrpy.yaml").write_text(VCRPY_CASSETTE)
    (folder / "cassette.yaml").write_text(NATIVE_CASSETTE)
    (folder / "transcript.jsonl").write_text("".join(json.dumps(r) + "\n" for r in TRANSCRIPT_RECORDS))
    return folder


def test_check_reports_every_secret_as_file_line_column_kind_and_fails(leaking: Path) -> None:
    result = runner.invoke(app, ["scrub", "--check", str(leaking)])

    assert result.exit_code == 1, result.output
    native, transcript, vcrpy = leaking / "cassette.yaml", leaking / "transcript.jsonl", leaking / "vcrpy.yaml"
    assert result.stdout.splitlines() == [
        f"{native}:{at(NATIVE_CASSETTE, 'authorization: Bearer')}: auth_header",
        f"{native}:{at(NATIVE_CASSETTE, TOKEN)}: jwt",
        f"{native}:{at(NATIVE_CASSETTE, 'cookie')}: cookie",
        f"{native}:{at(NATIVE_CASSETTE, 'sk-ant-')}: anthropic-api-key",
        f"{transcript}:{at(transcript.read_text(), 'sk-ant-')}: anthropic-api-key",
        f"{transcript}:{at(transcript.read_text(), TOKEN)}: jwt",
        f"{vcrpy}:5:7: auth_header",
        f"{vcrpy}:6:16: jwt",
        f"{vcrpy}:7:7: auth_header",
        f"{vcrpy}:8:9: anthropic-api-key",
        f"{vcrpy}:21:7: cookie",
        f"11 secrets in 3 files (of 3 scanned). Run `replay scrub {leaking}` to redact them in place.",
    ]
    assert KEY not in result.output and TOKEN not in result.output


def test_scrub_redacts_in_place_and_the_check_then_passes(leaking: Path) -> None:
    result = runner.invoke(app, ["scrub", str(leaking)])

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"Scrubbed {leaking / 'cassette.yaml'}: 4 secrets redacted (rewritten as a native cassette).",
        f"Scrubbed {leaking / 'transcript.jsonl'}: 2 secrets redacted.",
        f"Scrubbed {leaking / 'vcrpy.yaml'}: 5 secrets redacted (rewritten as a native cassette).",
        "Scrubbed 3 of 3 files; no secrets left.",
    ]
    check = runner.invoke(app, ["scrub", "--check", str(leaking)])
    assert check.exit_code == 0, check.output
    assert check.stdout == f"No secrets in 3 files below {leaking}.\n"
    for path in leaking.iterdir():
        assert KEY not in path.read_text() and TOKEN not in path.read_text()


def test_a_scrubbed_cassette_still_loads_with_its_conversation(leaking: Path) -> None:
    before = {name: load_cassette(leaking / name) for name in ("cassette.yaml", "vcrpy.yaml")}

    assert runner.invoke(app, ["scrub", str(leaking)]).exit_code == 0

    for name, cassette in before.items():
        after = load_cassette(leaking / name)
        assert after.source is CassetteSource.NATIVE
        assert [i.request.body for i in after.interactions] == [i.request.body for i in cassette.interactions]
        assert after.interactions[0].response.status == 200
        assert not {"authorization", "x-api-key", "cookie", "set-cookie"} & set(after.interactions[0].request.headers)
    events = load_cassette(leaking / "cassette.yaml").interactions[0].response.body
    assert events[1].data["delta"]["text"] == "Your key is [REDACTED:anthropic-api-key]"


def test_a_scrubbed_transcript_changes_only_its_secrets(leaking: Path) -> None:
    assert runner.invoke(app, ["scrub", str(leaking / "transcript.jsonl")]).exit_code == 0

    lines = (leaking / "transcript.jsonl").read_text().splitlines()
    assert lines[0] == json.dumps(TRANSCRIPT_RECORDS[0])
    assert json.loads(lines[1])["message"]["content"][0]["content"] == "ANTHROPIC_API_KEY=[REDACTED:anthropic-api-key]"
    assert json.loads(lines[2])["message"]["content"] == "Sent Bearer [REDACTED:jwt] to the API."


def test_a_header_in_a_text_that_is_not_a_cassette_is_redacted_keeping_its_quotes(tmp_path: Path) -> None:
    dump = tmp_path / "request.json"
    dump.write_text('{\n  "cookie": "session=abc123",\n  "x-api-key": "abc",\n  "model": "m"\n}\n')
    http = tmp_path / "request.txt"
    http.write_text("POST /v1/messages HTTP/1.1\nCookie: session=abc123\n\n{}\n")

    result = runner.invoke(app, ["scrub", str(dump), str(http)])

    assert result.exit_code == 0, result.output
    assert dump.read_text() == '{\n  "cookie": "REDACTED",\n  "x-api-key": "REDACTED",\n  "model": "m"\n}\n'
    assert http.read_text() == "POST /v1/messages HTTP/1.1\nCookie: REDACTED\n\n{}\n"


def test_a_secret_the_rewrite_cannot_remove_is_listed_and_fails(tmp_path: Path) -> None:
    notes = tmp_path / "notes.yaml"  # not a cassette: its header's value is on the next line
    notes.write_text(f"headers:\n  cookie:\n  - session=abc123\n  x-api-key: {KEY}\n")

    result = runner.invoke(app, ["scrub", str(tmp_path)])

    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == [
        f"Scrubbed {notes}: 2 secrets redacted.",  # the key, and the x-api-key header it was
        f"{notes}:2:3: cookie is still there: scrub cannot redact it; edit that line by hand.",
        "Scrubbed 1 of 1 file; 1 secret still there (listed above).",
    ]
    assert notes.read_text() == "headers:\n  cookie:\n  - session=abc123\n  x-api-key: [REDACTED:anthropic-api-key]\n"


def test_a_clean_folder_is_left_untouched(tmp_path: Path) -> None:
    clean = tmp_path / "transcript.jsonl"
    clean.write_text('{"type": "user", "content": "Send a Bearer token in the header."}\n')
    before = clean.stat().st_mtime_ns

    result = runner.invoke(app, ["scrub", str(tmp_path)])

    assert result.exit_code == 0
    assert result.stdout == f"No secrets in 1 file below {tmp_path}; nothing changed.\n"
    assert clean.stat().st_mtime_ns == before


@pytest.mark.parametrize("name", ["cassette.yaml", "transcript.jsonl"])
def test_the_rewrite_is_atomic_a_failed_replace_leaves_the_original_and_no_temp_file(
    leaking: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = leaking / name
    original = target.read_bytes()

    def refuse(source: object, destination: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    result = runner.invoke(app, ["scrub", str(target)])

    assert_bad_input(
        result, f"{target} could not be written (No space left on device); the previous file, if any, is unchanged."
    )
    assert target.read_bytes() == original
    assert sorted(p.name for p in leaking.iterdir()) == ["cassette.yaml", "transcript.jsonl", "vcrpy.yaml"]


def test_hidden_files_and_folders_are_scanned_too(leaking: Path) -> None:
    # What a killed atomic write leaves, a workspace's .env and a repository's config can all
    # hold a secret; only a symbolic link (it may lead out of the bundle) is skipped.
    (leaking / ".cassette.yaml.a1b2c3.tmp").write_text(NATIVE_CASSETTE)
    (leaking / ".git").mkdir()
    (leaking / ".git" / "config").write_text(f"token = {KEY}\n")
    (leaking / ".env").write_text(f"ANTHROPIC_API_KEY={KEY}\n")
    (leaking / "outside").symlink_to("/etc/hostname")

    assert files_below([leaking]) == [
        leaking / ".cassette.yaml.a1b2c3.tmp",
        leaking / ".env",
        leaking / ".git" / "config",
        leaking / "cassette.yaml",
        leaking / "transcript.jsonl",
        leaking / "vcrpy.yaml",
    ]
    result = runner.invoke(app, ["scrub", "--check", str(leaking)])
    assert f"{leaking / '.env'}:1:19: anthropic-api-key" in result.stdout.splitlines()
    assert f"{leaking / '.git' / 'config'}:1:9: anthropic-api-key" in result.stdout.splitlines()


def test_a_file_that_is_not_utf8_text_is_scanned_as_latin1(tmp_path: Path) -> None:
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    (tmp_path / "notes.md").write_text("nothing to see\n")
    latin1 = tmp_path / "notes-latin1.txt"
    latin1.write_bytes(f"Cl\xe9 de l'API : {KEY}\n".encode("latin-1"))

    result = runner.invoke(app, ["scrub", "--check", str(tmp_path)])

    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == f"{latin1}:1:16: anthropic-api-key"
    assert runner.invoke(app, ["scrub", str(tmp_path)]).exit_code == 0
    assert latin1.read_bytes() == "Cl\xe9 de l'API : [REDACTED:anthropic-api-key]\n".encode("latin-1")
    assert (tmp_path / "logo.png").read_bytes() == b"\x89PNG\r\n\x1a\n\xff\xfe"


def test_a_missing_path_is_bad_input(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    for arguments in (["scrub", "--check", str(missing)], ["scrub", str(missing)]):
        assert_bad_input(
            runner.invoke(app, arguments),
            f"{missing} does not exist; give a bundle, a folder of bundles, a cassette or a transcript.",
        )


def test_a_path_that_is_neither_file_nor_folder_is_bad_input(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert_bad_input(
        runner.invoke(app, ["scrub", "--check", str(fifo)]),
        f"{fifo} is neither a file nor a folder, so it cannot be scanned; give a file or folder.",
    )


def test_a_folder_with_nothing_to_scan_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "link").symlink_to("/etc/hostname")
    assert_bad_input(
        runner.invoke(app, ["scrub", "--check", str(tmp_path)]),
        f"There are no files to scan below {tmp_path} (symbolic links are skipped).",
    )


def test_an_unreadable_file_is_bad_input(leaking: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = leaking / "transcript.jsonl"
    read_bytes = Path.read_bytes

    def unreadable(self: Path) -> bytes:
        if self == target:
            raise PermissionError(13, "Permission denied", str(self))
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", unreadable)
    assert_bad_input(
        runner.invoke(app, ["scrub", "--check", str(leaking)]),
        f"{target} cannot be read (Permission denied); check its permissions.",
    )


def test_no_path_is_a_usage_error() -> None:
    result = runner.invoke(app, ["scrub"])
    assert_bad_input(result, "Missing argument 'PATH...'", "replay scrub --help")


def test_the_help_has_an_example_and_the_exit_codes() -> None:
    result = runner.invoke(app, ["scrub", "--help"])
    assert result.exit_code == 0
    assert "replay scrub --check cassettes" in result.stdout
    assert "Exit codes: 0 nothing leaks, 1 secrets found (--check) or still there, 2 bad" in result.stdout


def test_the_bundled_cassettes_hold_no_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    # CI runs this: `replay scrub --check cassettes` from the repository root.
    monkeypatch.chdir(REPO)

    result = runner.invoke(app, ["scrub", "--check", "cassettes"])

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("No secrets in ") and "below cassettes." in result.stdout


def test_a_copied_bundle_with_a_planted_key_fails_the_check(tmp_path: Path) -> None:
    bundle = tmp_path / "demo"
    shutil.copytree(REPO / "cassettes" / "autocompact-boundary", bundle)
    transcript = bundle / "transcript.jsonl"
    lines = transcript.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace('"content":', f'"leak":"{KEY}","content":', 1)
    transcript.write_text("".join(lines))

    result = runner.invoke(app, ["scrub", "--check", str(bundle)])

    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == f"{transcript}:2:{lines[1].index('sk-ant-') + 1}: anthropic-api-key"
