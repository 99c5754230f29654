"""Requests keyed by the raw bytes of their body (`replay.cassette.raw_keys`): a body sent again
answers the fingerprint and normalized text the reference path gives it under the player's own
normalizer — the same folders or other ones — and a body the scrub would change is never kept."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.cassette import load_cassette
from replay.cassette.fingerprints import Normalizer
from replay.cassette.raw_keys import _roots_absent, raw_body_keys
from replay.cassette.request_keys import RequestKeys
from replay.cassette.scrub import scrub_bytes
from replay.cassette.transport import CassettePlayer
from replay.redact.redactor import current_redactor
from tests.replay.cassette.test_request_keys import _MESSAGE, LIBRARY, METHOD, PATH, _bodies_holding, compact, reference
from tests.replay.redact.test_redact import PLANTED

FOLDER_A = Path("/work/run-a/workspace")
FOLDER_B = Path("/work/run-b/workspace")


@pytest.fixture(autouse=True)
def no_keys_kept() -> Iterator[None]:
    raw_body_keys().clear()
    yield
    raw_body_keys().clear()


def kept(body: bytes, normalizer: Normalizer) -> tuple[str, str] | None:
    keys = raw_body_keys()
    found = keys.get(keys.digest(METHOD, PATH, body), body, normalizer, current_redactor())
    return None if found is None else (found[0], found[1].text)


def keyed(body: bytes, normalizer: Normalizer) -> tuple[str, str]:
    fast = RequestKeys(normalizer).key(METHOD, PATH, body)  # a fresh player's keys: nothing seen
    assert fast is not None
    return fast.fingerprint, fast.normalized


def body_naming(text: str) -> bytes:
    return compact({"model": "m", "messages": [{"role": "user", "content": text}]})


def test_a_body_sent_again_is_known_by_its_bytes_with_the_reference_key() -> None:
    normalizer = Normalizer.for_paths(workspace=FOLDER_A)
    body = body_naming(f"Read {FOLDER_A}/notes.md")
    assert kept(body, normalizer) is None
    first = keyed(body, normalizer)
    assert kept(body, normalizer) == first == reference(body, normalizer)
    assert keyed(body, normalizer) == first


def test_a_body_naming_the_run_folder_answers_only_a_player_in_that_folder() -> None:
    in_a, in_b = Normalizer.for_paths(workspace=FOLDER_A), Normalizer.for_paths(workspace=FOLDER_B)
    body = body_naming(f"Read {FOLDER_A}/notes.md")
    keyed(body, in_a)
    assert kept(body, in_b) is None
    # In another folder the same bytes are another request: the path is no longer the workspace.
    assert keyed(body, in_b) == reference(body, in_b) != reference(body, in_a)
    assert keyed(body, in_a) == reference(body, in_a)


def test_a_body_naming_no_run_folder_answers_a_player_in_any_folder() -> None:
    in_a, in_b = Normalizer.for_paths(workspace=FOLDER_A), Normalizer.for_paths(workspace=FOLDER_B)
    body = body_naming("Read notes.md in /tmp/pytest-7/x at 2026-01-01T10:00:00Z")
    keyed(body, in_a)
    assert kept(body, in_b) == reference(body, in_b)


@pytest.mark.parametrize("written", ["\\/work\\/run-b\\/workspace\\/notes.md", "\\u002fwork/run-b/workspace/n.md"])
def test_a_folder_written_with_escapes_is_not_taken_for_an_absent_one(written: str) -> None:
    in_a, in_b = Normalizer.for_paths(workspace=FOLDER_A), Normalizer.for_paths(workspace=FOLDER_B)
    body = b'{"model":"m","messages":[{"role":"user","content":"Read ' + written.encode() + b'"}]}'
    keyed(body, in_a)
    assert kept(body, in_b) is None
    assert keyed(body, in_b) == reference(body, in_b)
    assert "<workspace>" in reference(body, in_b)[1]


def _growing_bodies_with(written: str, where: str) -> list[bytes]:
    """Three requests of a session whose history grows, with ``written`` (raw JSON text, put in
    as it is) in the system prompt, in a tool, in the first message (re-sent by every later
    request) or in the last one."""
    mark = "@written@"
    system = f"Work in {mark}" if where == "system" else "Work here."
    tools = [{"name": "read", "description": f"Reads {mark}" if where == "tools" else "Reads."}]
    history: list[Any] = [{"role": "user", "content": f"Read {mark}" if where == "first" else "Read it."}]
    bodies = []
    for turn in range(3):
        last = turn == 2 and where == "last"
        history.append({"role": "assistant", "content": f"Turn {turn} in {mark}" if last else f"Turn {turn}."})
        body = compact({"model": "m", "system": system, "tools": tools, "messages": history})
        bodies.append(body.replace(mark.encode(), written.encode()))
        history.append({"role": "user", "content": "Go on."})
    return bodies


@pytest.mark.parametrize("where", ["system", "tools", "first", "last"])
@pytest.mark.parametrize("written", ["\\/work\\/run-b\\/workspace\\/notes.md", "\\u002fwork/run-b/workspace/n.md"])
def test_an_escaped_folder_anywhere_in_a_body_keyed_piece_by_piece_is_not_taken_for_an_absent_one(
    written: str, where: str
) -> None:
    # A player keys a session's later bodies from the pieces it has seen (the text around the
    # messages, the messages re-sent): whether a body holds an escape comes from its pieces.
    in_a, in_b = Normalizer.for_paths(workspace=FOLDER_A), Normalizer.for_paths(workspace=FOLDER_B)
    bodies = _growing_bodies_with(written, where)
    keys = RequestKeys(in_a)
    for body in bodies:
        assert keys.key(METHOD, PATH, body) is not None
    for body in bodies:
        assert kept(body, in_a) == reference(body, in_a)
        if written.encode() in body:  # kept with run a's folders only: an escape may hide run b's
            assert kept(body, in_b) is None
        else:
            assert kept(body, in_b) == reference(body, in_b)
        assert keyed(body, in_b) == reference(body, in_b)
    assert "<workspace>" in reference(bodies[-1], in_b)[1]


def test_a_body_without_escapes_keyed_piece_by_piece_answers_a_player_in_any_folder() -> None:
    in_a, in_b = Normalizer.for_paths(workspace=FOLDER_A), Normalizer.for_paths(workspace=FOLDER_B)
    bodies = _growing_bodies_with("notes.md\\n(line two)", "first")
    keys = RequestKeys(in_a)
    for body in bodies:
        assert keys.key(METHOD, PATH, body) is not None
    assert [kept(body, in_b) for body in bodies] == [reference(body, in_b) for body in bodies]


def test_a_body_whose_messages_key_is_written_with_an_escape_is_keyed_the_slow_way() -> None:
    # The text around the pieces is then not plain: nothing says an escape is in the body.
    in_a, in_b = Normalizer.for_paths(workspace=FOLDER_A), Normalizer.for_paths(workspace=FOLDER_B)
    body = b'{"model":"m","mess\\u0061ges":[{"role":"user","content":"hi"}]}'
    assert RequestKeys(in_a).key(METHOD, PATH, body) is None
    assert kept(body, in_a) is None and kept(body, in_b) is None
    assert reference(body, in_a) == reference(body, in_b)  # what the slow path gives it


@pytest.mark.parametrize("secret", PLANTED)
def test_a_body_the_scrub_changes_is_never_kept(secret: str) -> None:
    normalizer = Normalizer()
    redacted = [body for body in _bodies_holding(secret) if scrub_bytes(body) != body]
    assert redacted
    for body in redacted:
        for _ in range(2):  # sent again: still scrubbed on the slow path, never known by its bytes
            assert RequestKeys(normalizer).key(METHOD, PATH, body) is None
            assert kept(body, normalizer) is None


def test_a_credential_set_after_a_body_was_kept_is_still_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    body = body_naming("value 7Hq2Lx9Vw4Rb8Nz3")
    keyed(body, Normalizer())
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "7Hq2Lx9Vw4Rb8Nz3")
    assert kept(body, Normalizer()) is None
    assert RequestKeys(Normalizer()).key(METHOD, PATH, body) is None


_FOLDER_TEXT = st.sampled_from(
    [f"{FOLDER_A}/a.py", f"{FOLDER_B}/b.py", "\\/work\\/run-b\\/workspace", "plain text", "é 🙂", 'a "q" \\ \n']
)


@settings(max_examples=100, deadline=None)
@given(
    history=st.lists(st.one_of(_MESSAGE, _FOLDER_TEXT.map(lambda t: {"role": "user", "content": t})), max_size=5),
    ascii_only=st.booleans(),
)
def test_any_body_replayed_in_two_folders_keys_as_the_reference_path_does(history: list[Any], ascii_only: bool) -> None:
    raw_body_keys().clear()
    body = json.dumps({"model": "m", "messages": history}, ensure_ascii=ascii_only, separators=(",", ":")).encode()
    for normalizer in (Normalizer.for_paths(workspace=FOLDER_A), Normalizer.for_paths(workspace=FOLDER_B)):
        for _ in range(2):
            fast = RequestKeys(normalizer).key(METHOD, PATH, body)
            if fast is not None:
                assert (fast.fingerprint, fast.normalized) == reference(body, normalizer)


def test_a_library_session_replayed_twice_in_other_folders_logs_the_stored_fingerprints(tmp_path: Path) -> None:
    cassette = load_cassette(LIBRARY / "long-session-crosses-autocompact-twice" / "cassette.yaml")
    for run in ("first", "second"):
        workspace, session_dir = tmp_path / run / "workspace", tmp_path / run / "session"
        live = Normalizer.for_paths(workspace=workspace, session_dir=session_dir)
        # A player that keys every request (told no request sent again: see test_sent_again).
        player = CassettePlayer(
            cassette.interactions,
            fingerprints=cassette.fingerprints(),
            recorded_normalizer=cassette.normalizer(),
            normalizer=live,
            strict=True,
        )
        for interaction in cassette.interactions:
            request = interaction.request
            body = request.body_bytes()
            assert (kept(body, live) is not None) is (run == "second")
            player.match(request.method, request.path, body)
        assert [entry.fingerprint for entry in player.log] == cassette.fingerprints()
        assert player.finish() == []


_ROOT_PARTS = st.sampled_from(["/tmp/run", "/tmp/runs", "/work", "/w", "workspace", "session", "/", "a"])


@settings(max_examples=300, deadline=None)
@given(
    roots=st.lists(st.lists(_ROOT_PARTS, min_size=1, max_size=3).map("".join), max_size=3),
    body=st.lists(st.one_of(_ROOT_PARTS, st.sampled_from(['"', "\\n", "\\/", "x"])), max_size=8).map("".join),
)
def test_a_root_is_looked_for_in_a_body_only_where_what_the_roots_share_is(roots: list[str], body: str) -> None:
    # Roots are looked for only where the start they share is: never a root missed.
    normalizer = Normalizer(tuple((root, "<root>") for root in roots))
    data = body.encode()
    assert _roots_absent(normalizer, data, escaped=False) == (not any(root.encode() in data for root in roots))
