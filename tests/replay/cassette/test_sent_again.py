"""A live request whose body is the next recorded request's, as data, is answered as that request
sent again (`replay.cassette.sent_again`): with the fingerprint and the logged body the keyed path
gives it, whatever its key order or escapes, in any folder, under any home or credentials — and
its log never holds a secret."""

from __future__ import annotations

import inspect
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.cassette import Cassette, fingerprints, load_cassette, save_cassette
from replay.cassette._io import _FOOTER, _HEADER
from replay.cassette._native import encode_native
from replay.cassette.fingerprints import Normalizer, home_folder
from replay.cassette.interaction import BodyKind, Interaction, RecordedRequest, RecordedResponse
from replay.cassette.normalized_text import NormalizedText
from replay.cassette.raw_keys import raw_body_keys
from replay.cassette.sent_again import KeyedOnRead
from replay.cassette.transport import CassetteMismatchError, CassettePlayer, LoggedRequest
from replay.storage.strict_yaml import dump_yaml
from tests.replay.cassette.test_request_keys import LIBRARY, compact, reference
from tests.replay.redact.test_redact import PASSWORD

URI = "https://api.anthropic.com/v1/messages"
RECORDED = Path("/work/recorded-run/workspace")
LIVE = Path("/work/live-run/workspace")
CREDENTIAL = ("SOME_SERVICE_TOKEN", "7Hq2Lx9Vw4Rb8Nz3")


def stored_body(entry: LoggedRequest) -> Any:
    """What a log entry holds before anyone reads its body."""
    return inspect.getattr_static(LoggedRequest, "body").stored(entry)


def session(messages: list[Any]) -> list[dict[str, Any]]:
    """The bodies of a session that re-sends its history: one request per message."""
    return [{"model": "m", "max_tokens": 10, "messages": messages[: n + 1]} for n in range(len(messages))]


def _interactions(bodies: list[dict[str, Any]]) -> list[Interaction]:
    return [
        Interaction(
            RecordedRequest(method="POST", uri=URI, body=body),
            RecordedResponse(status=200, kind=BodyKind.JSON, body={"n": n}),
        )
        for n, body in enumerate(bodies)
    ]


def saved_and_loaded(bodies: list[dict[str, Any]], folder: Path, **recorded_paths: str) -> Cassette:
    path = folder / "cassette.yaml"
    save_cassette(Cassette(interactions=_interactions(bodies), recorded_paths=recorded_paths), path)
    return load_cassette(path)


def hostile_cassette(bodies: list[dict[str, Any]], folder: Path) -> Cassette:
    """A cassette written by another tool, without our scrub, and loaded."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "hostile.yaml"
    path.write_text(_HEADER + dump_yaml(encode_native(Cassette(interactions=_interactions(bodies)))) + _FOOTER)
    return load_cassette(path)


def client_order(value: Any) -> Any:
    """``value`` with every object's keys in reverse order: a client's order, not the stored one."""
    if isinstance(value, dict):
        return {key: client_order(value[key]) for key in reversed(value)}
    if isinstance(value, list):
        return [client_order(item) for item in value]
    return value


def as_sent(body: Any, *, ascii_only: bool = False) -> bytes:
    """The bytes a client sends for a recorded body: its own key order, compact JSON."""
    return json.dumps(client_order(body), ensure_ascii=ascii_only, separators=(",", ":")).encode()


def outcome(
    player: CassettePlayer, cassette: Cassette, kinds: list[type] | None = None, *, ascii_only: bool = False
) -> list[Any]:
    """What the player answers each recorded body, sent again in order as a client sends it:
    the logged fingerprint and body, or that it matched nothing. ``kinds``: gets what each
    logged body was before it was read."""
    answers: list[Any] = []
    for interaction in cassette.interactions:
        request = interaction.request
        try:
            player.match(request.method, request.path, as_sent(request.body, ascii_only=ascii_only))
        except CassetteMismatchError:
            answers.append("no match")
            continue
        if kinds is not None:
            kinds.append(type(stored_body(player.log[-1])))
        answers.append((player.log[-1].fingerprint, player.log[-1].body))
    return answers


def keyed_player(cassette: Cassette, workspace: Path, session_dir: Path | None = None) -> CassettePlayer:
    """A player that keys every request from its text (the fingerprints' home not given), in
    the folders `CassettePlayer.from_cassette` would use."""
    return CassettePlayer(
        cassette.interactions,
        fingerprints=cassette.fingerprints(),
        recorded_normalizer=cassette.normalizer(),
        normalizer=cassette.replay_normalizer(workspace=workspace, session_dir=session_dir),
    )


def test_every_library_request_sent_again_in_another_folder_plays_as_keyed(tmp_path: Path) -> None:
    raw_body_keys().clear()
    answered = 0
    for cassette_file in sorted(LIBRARY.glob("*/cassette.yaml")):
        cassette = load_cassette(cassette_file)
        workspace, session_dir = tmp_path / cassette_file.parent.name / "workspace", tmp_path / "session"
        player = CassettePlayer.from_cassette(cassette, workspace=workspace, session_dir=session_dir)
        kinds: list[type] = []
        assert outcome(player, cassette, kinds) == outcome(keyed_player(cassette, workspace, session_dir), cassette)
        assert [entry.fingerprint for entry in player.log] == cassette.fingerprints()
        answered += kinds.count(KeyedOnRead)
    assert answered > 300  # most library requests are known by their bytes


TEXTS = st.sampled_from(
    [
        "plain text",
        "é 🙂 \u2028 tab\t",
        'a "quoted" \\ back\nslash',
        f"Read {RECORDED}/notes.md",
        f"Read {LIVE}/notes.md",
        "Read /work/recorded-run/workspacex/n.md",
        "\\/work\\/recorded-run\\/workspace",
        "HOME/.config",
        "token 7Hq2Lx9Vw4Rb8Nz3 here",
        "at 2026-01-01T10:00:00Z in /tmp/pytest-7/x",
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(TEXTS, min_size=1, max_size=4),
    credential_later=st.booleans(),
    home_moves=st.booleans(),
    ascii_only=st.booleans(),
)
def test_any_session_plays_as_the_keyed_path_plays_it(
    texts: list[str], credential_later: bool, home_moves: bool, ascii_only: bool
) -> None:
    """Recorded in one folder, replayed in another; a credential of the replay's environment may
    be in the recording (it was not one when recorded), and the home folder may move between
    loading and replaying: whatever the body holds, the answers are the keyed path's."""
    raw_body_keys().clear()
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        home = home_folder()
        messages = [{"role": "user", "content": text.replace("HOME", home)} for text in texts]
        cassette = saved_and_loaded(session(messages), Path(folder), workspace=str(RECORDED))
        if credential_later:
            patch.setenv(*CREDENTIAL)
        if home_moves:
            patch.setenv("HOME", "/work/another-home")
        player = CassettePlayer.from_cassette(cassette, workspace=LIVE)
        answers = outcome(player, cassette, ascii_only=ascii_only)
        assert answers == outcome(keyed_player(cassette, LIVE), cassette, ascii_only=ascii_only)


def test_a_request_naming_the_recording_folder_is_not_taken_for_the_recorded_one(tmp_path: Path) -> None:
    # Recorded, the folder was the workspace; here it is just a path: another request.
    bodies = session([{"role": "user", "content": f"Read {RECORDED}/a.py"}])
    cassette = saved_and_loaded(bodies, tmp_path, workspace=str(RECORDED))
    player = CassettePlayer.from_cassette(cassette, workspace=LIVE)
    with pytest.raises(CassetteMismatchError):
        player.match("POST", "/v1/messages", as_sent(bodies[0]))


def test_after_a_request_with_other_bytes_the_player_keys_every_request(tmp_path: Path) -> None:
    bodies = session([{"role": "user", "content": "one"}, {"role": "user", "content": "two"}])
    cassette = saved_and_loaded(bodies, tmp_path)
    player = CassettePlayer.from_cassette(cassette)
    other = json.dumps(bodies[0], separators=(", ", ": ")).encode()  # the same request, other bytes
    player.match("POST", "/v1/messages", other)
    player.match("POST", "/v1/messages", compact(bodies[1]))
    # The first goes the slow path (not compact JSON), the second is keyed from its text.
    assert [type(stored_body(entry)) for entry in player.log] == [dict, NormalizedText]
    assert [entry.fingerprint for entry in player.log] == cassette.fingerprints()


def test_a_secret_in_a_recording_never_reaches_the_log(tmp_path: Path) -> None:
    """A hostile cassette holds a password in clear (edited in after the recording's scrub): the
    request that sends it again plays by its bytes, and the body its log gives is scrubbed."""
    secret = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": f'password = "{PASSWORD}"'}]}
    cassette = hostile_cassette([secret], tmp_path)
    body = cassette.interactions[0].request.body_bytes()
    assert PASSWORD.encode() in body
    player = CassettePlayer.from_cassette(cassette)
    player.match("POST", "/v1/messages", body)
    entry = player.log[0]
    assert type(stored_body(entry)) is KeyedOnRead
    assert entry.fingerprint == cassette.fingerprints()[0]
    logged = json.dumps(entry.body)
    assert PASSWORD not in logged
    assert entry.body == json.loads(reference(body, Normalizer())[1])


def test_without_the_home_its_fingerprints_were_computed_under_a_player_keys_every_request(
    tmp_path: Path,
) -> None:
    cassette = saved_and_loaded(session([{"role": "user", "content": "hello"}]), tmp_path)
    player = keyed_player(cassette, LIVE)  # given fingerprints, not the home they were computed under
    player.match("POST", "/v1/messages", as_sent(cassette.interactions[0].request.body))
    assert type(stored_body(player.log[0])) is NormalizedText


def test_a_credential_spanning_two_messages_is_found_as_the_keyed_path_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A credential of this environment written across two messages' texts (its form holds the
    characters between them) keeps the body off its recorded fingerprint, as keying it would."""
    cassette = saved_and_loaded(
        session([{"role": "user", "content": "first Kx7"}, {"role": "user", "content": "Vb9 second"}]), tmp_path
    )
    monkeypatch.setenv("SOME_SERVICE_TOKEN", 'Kx7"},{"role":"user","content":"Vb9')  # as a client sends them
    answers = outcome(CassettePlayer.from_cassette(cassette), cassette)
    assert answers == outcome(keyed_player(cassette, LIVE), cassette)
    assert answers[1] == "no match"


# A recorded body holding the number 1 as a member and inside a message, and how it is sent.
_HOLDING_ONE = {
    "model": "m",
    "max_tokens": 1,
    "stop_sequences": ["x", 1],
    "metadata": {"n": 1},
    "messages": [{"role": "user", "content": [{"type": "text", "n": 1}]}],
}
_MESSAGE_ONE = b'"messages":[{"role":"user","content":[{"type":"text","n":1}]}]'
_SENT_HOLDING = {
    "member": b'{"model":"m","max_tokens":%s,"stop_sequences":["x",1],"metadata":{"n":1},' + _MESSAGE_ONE + b"}",
    "list member": b'{"model":"m","max_tokens":1,"stop_sequences":["x",%s],"metadata":{"n":1},' + _MESSAGE_ONE + b"}",
    "object member": b'{"model":"m","max_tokens":1,"stop_sequences":["x",1],"metadata":{"n":%s},' + _MESSAGE_ONE + b"}",
    "message": b'{"model":"m","max_tokens":1,"stop_sequences":["x",1],"metadata":{"n":1},'
    b'"messages":[{"role":"user","content":[{"type":"text","n":%s}]}]}',
}


@pytest.mark.parametrize("where", sorted(_SENT_HOLDING))
@pytest.mark.parametrize("sent", ["true", "1.0", "1", '"1"'])
def test_a_value_equal_in_python_but_not_in_json_is_another_request(tmp_path: Path, where: str, sent: str) -> None:
    """``1 == 1.0 == True`` in Python: a body is the recorded one only when its JSON text is."""
    cassette = saved_and_loaded([_HOLDING_ONE], tmp_path)
    body = _SENT_HOLDING[where] % sent.encode()
    answers = []
    for player in (CassettePlayer.from_cassette(cassette), keyed_player(cassette, LIVE)):
        try:
            player.match("POST", "/v1/messages", body)
            answers.append(player.log[-1].fingerprint)
        except CassetteMismatchError:
            answers.append("no match")
    assert answers[0] == answers[1] == (cassette.fingerprints()[0] if sent == "1" else "no match")


@pytest.mark.parametrize("ascii_only", [False, True])
def test_a_recording_folder_written_with_escapes_is_still_found(tmp_path: Path, ascii_only: bool) -> None:
    """The recording's folder, named with a non-ASCII character, in a message a client sends
    with that character escaped: another request here (the folder is not this run's), as keyed."""
    folder = "/work/récit/workspace"
    bodies = session([{"role": "user", "content": f"Read {folder}/a.py"}])
    cassette = saved_and_loaded(bodies, tmp_path, workspace=folder)
    answers = outcome(CassettePlayer.from_cassette(cassette, workspace=LIVE), cassette, ascii_only=ascii_only)
    assert answers == outcome(keyed_player(cassette, LIVE), cassette, ascii_only=ascii_only) == ["no match"]


@pytest.mark.parametrize("ascii_only", [False, True])
@pytest.mark.parametrize("as_list", [False, True])
def test_a_recording_folder_in_a_member_written_with_escapes_is_still_found(
    tmp_path: Path, ascii_only: bool, as_list: bool
) -> None:
    """The same for a member (the system prompt, a string or a list of blocks) the session
    re-sends unchanged."""
    folder = "/work/récit/workspace"
    system: Any = f"You work in {folder}."
    if as_list:
        system = [{"type": "text", "text": system}]
    bodies = [{"system": system, **body} for body in session([{"role": "user", "content": "hi"}, "ok"])]
    cassette = saved_and_loaded(bodies, tmp_path, workspace=folder)
    answers = outcome(CassettePlayer.from_cassette(cassette, workspace=LIVE), cassette, ascii_only=ascii_only)
    assert answers == outcome(keyed_player(cassette, LIVE), cassette, ascii_only=ascii_only) == ["no match"] * 2


def test_a_credential_in_a_members_key_is_found_as_the_keyed_path_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = {"model": "m", f"metadata_{CREDENTIAL[1]}": 1, "messages": [{"role": "user", "content": "hi"}]}
    cassette = saved_and_loaded([body], tmp_path)
    monkeypatch.setenv(*CREDENTIAL)
    answers = outcome(CassettePlayer.from_cassette(cassette), cassette)
    assert answers == outcome(keyed_player(cassette, LIVE), cassette) == ["no match"]


def test_a_credential_form_only_the_sent_bytes_hold_is_found_as_the_keyed_path_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The credential's value is the text of a JSON escape; a client that escapes non-ASCII
    characters sends that text for the recording's "é"."""
    cassette = saved_and_loaded(session([{"role": "user", "content": "I like café-7Hq2Lx9Vw4"}]), tmp_path)
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "caf\\u00e9-7Hq2Lx9Vw4")
    answers = outcome(CassettePlayer.from_cassette(cassette), cassette, ascii_only=True)
    assert answers == outcome(keyed_player(cassette, LIVE), cassette, ascii_only=True) == ["no match"]


def test_a_logged_body_read_later_is_the_one_of_the_moment_it_was_matched(tmp_path: Path) -> None:
    """The home folder moves and a credential appears between the match and the read of the log
    (a test's patches undone before its trace is taken): the body is the keyed path's, which
    keyed it when it was matched."""
    token = "Zq8Wm3Lp0Tx7Vb4K"
    bodies = [{"model": "m", "messages": [{"role": "user", "content": f"read /work/proj/notes.md, {token}"}]}]
    cassette = saved_and_loaded(bodies, tmp_path)
    logged = []
    for player in (CassettePlayer.from_cassette(cassette), keyed_player(cassette, LIVE)):
        player.match("POST", "/v1/messages", as_sent(bodies[0]))
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HOME", "/work/proj")
            patch.setenv(CREDENTIAL[0], token)
            logged.append(json.dumps(player.log[0].body))
    assert logged[0] == logged[1]
    assert "/work/proj/notes.md" in logged[0] and token in logged[0]


def test_a_key_repeated_in_a_message_plays_as_the_keyed_path_plays_it(tmp_path: Path) -> None:
    """A message that repeats a key holds, in the value the parser drops, text the recording
    does not: a password there, whose value is also in the kept one, is not scrubbed by the keyed
    path either (it scrubs the data the text parses to)."""
    kept = f"{PASSWORD} is it"
    body = {"model": "m", "messages": [{"role": "user", "content": kept}]}
    cassette = saved_and_loaded([body], tmp_path)
    dropped, kept_text = json.dumps(f'password = "{PASSWORD}"').encode(), json.dumps(kept).encode()
    sent = b'{"model":"m","messages":[{"role":"user","content":%s,"content":%s}]}' % (dropped, kept_text)
    assert json.loads(sent) == body
    answers = []
    for player in (CassettePlayer.from_cassette(cassette), keyed_player(cassette, LIVE)):
        player.match("POST", "/v1/messages", sent)
        answers.append((player.log[0].fingerprint, player.log[0].body))
    assert answers[0] == answers[1]
    assert answers[0][0] == cassette.fingerprints()[0]


def test_a_secret_the_raw_text_detectors_find_in_the_sent_text_is_found(tmp_path: Path) -> None:
    """What a raw-text detector finds depends on the text's layout: an AWS secret's pattern
    reaches from "aws ... key" in one string to the value in the next, in the client's key order
    and not in the cassette's (sorted); and a token in a value the parser drops. Both are found
    in the text the client sent, as the keyed path finds them, and never logged."""
    secret = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY12"
    token = "sk-ant-api03-Q7mW2xR9tL4vB8nK"
    aws = [{"role": "user", "content": [{"text": "my aws key", "a": secret}]}]
    aws_cassette = hostile_cassette([{"model": "m", "messages": aws}], tmp_path / "aws")
    token_message = [{"role": "user", "content": f"id abc{token}"}]
    token_cassette = hostile_cassette([{"model": "m", "messages": token_message}], tmp_path / "token")
    repeated = b'{"model":"m","messages":[{"role":"user","content":"%s","content":"id abc%s"}]}'
    cases = [
        # The client's order puts "text" before "a": the pattern reaches the value there.
        (aws_cassette, as_sent(aws_cassette.interactions[0].request.body)),
        (token_cassette, repeated % (token.encode(), token.encode())),
    ]
    for cassette, sent in cases:
        logged = []
        for player in (CassettePlayer.from_cassette(cassette), keyed_player(cassette, LIVE)):
            with pytest.raises(CassetteMismatchError):
                player.match("POST", "/v1/messages", sent)
            logged.append(json.dumps(player.log[0].body))
        assert logged[0] == logged[1]
        assert secret not in logged[0] and token not in logged[0]


@pytest.mark.parametrize("sent", ["Infinity", "1e999", "NaN", '"Infinity"'])
def test_a_member_holding_infinity_or_nan_plays_as_the_keyed_path_plays_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sent: str
) -> None:
    """The scanner takes ``Infinity`` and ``NaN``, which the plain check does not look for: an
    infinity is equal only to an infinity (written alike), a NaN to no other NaN; a credential
    spelled ``Infinity`` is in the raw text all the same."""
    body = {"model": "m", "metadata": {"limits": [float("inf")]}, "messages": [{"role": "user", "content": "hi"}]}
    cassette = saved_and_loaded([body], tmp_path)
    sent_body = b'{"model":"m","metadata":{"limits":[%s]},"messages":[{"role":"user","content":"hi"}]}' % sent.encode()
    for credential in (None, "Infinity"):
        if credential is not None:
            monkeypatch.setenv("SOME_SERVICE_TOKEN", credential)
        answers = []
        for player in (CassettePlayer.from_cassette(cassette), keyed_player(cassette, LIVE)):
            try:
                player.match("POST", "/v1/messages", sent_body)
                answers.append((player.log[-1].fingerprint, player.log[-1].body))
            except CassetteMismatchError:
                answers.append("no match")
        assert answers[0] == answers[1]


def test_a_recording_folder_in_a_plain_members_key_is_found(tmp_path: Path) -> None:
    folder = str(RECORDED)
    body = {"model": "m", "metadata": {f"{folder}/a.py": "x"}, "messages": [{"role": "user", "content": "hi"}]}
    cassette = saved_and_loaded([body], tmp_path, workspace=folder)
    answers = outcome(CassettePlayer.from_cassette(cassette, workspace=LIVE), cassette)
    assert answers == outcome(keyed_player(cassette, LIVE), cassette) == ["no match"]


@pytest.mark.parametrize(
    ("records_temp", "dropped"), [(True, ()), (False, ("temp:",)), (False, ("temp:", "home:", "recorded_paths:"))]
)
def test_a_temp_folder_inside_home_is_logged_as_the_keyed_path_logs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, records_temp: bool, dropped: tuple[str, ...]
) -> None:
    """TMPDIR inside HOME: a cassette that records no temp folder reads its entries as before,
    one that does as ``<tmp>``; a request sent again is logged as the keyed path logs it."""
    monkeypatch.setenv("HOME", "/home/ana")
    monkeypatch.setattr(tempfile, "tempdir", "/home/ana/tmp")
    monkeypatch.setattr(fingerprints, "_LEGACY_TEMP", None)
    monkeypatch.setattr(fingerprints, "_TEMP_FOLDERS", None)
    bodies = session([{"role": "user", "content": "notes in /home/ana/tmp/run-a/notes.md"}, "ok"])
    cassette = saved_and_loaded(bodies, tmp_path)
    path = tmp_path / "cassette.yaml"
    assert "  temp: /home/ana/tmp\n" in path.read_text()
    if not records_temp:  # as written before the temp folder was recorded: no key, no stored fingerprints
        lines = path.read_text().splitlines(keepends=True)
        path.write_text("".join(line for line in lines if not line.lstrip().startswith((*dropped, "fingerprint:"))))
        cassette = load_cassette(path)
        assert "temp" not in cassette.recorded_paths
    kinds: list[type] = []
    told = outcome(CassettePlayer.from_cassette(cassette, workspace=LIVE), cassette, kinds)
    # Without the recorded home among its folders, the body is told sent again, not keyed.
    assert (KeyedOnRead in kinds) is ("home:" in dropped)
    answers = told
    assert answers == outcome(keyed_player(cassette, LIVE), cassette)
    # Before: the home folder first, then the usual /tmp's entries (``<home>`` + ``/tmp/run-a``).
    expected = "notes in <tmp>/notes.md" if records_temp else "notes in <home><tmp>/notes.md"
    assert answers[0][1]["messages"][0]["content"] == expected
