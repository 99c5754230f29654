"""Bad cassettes: every problem is one CassetteError sentence naming the file, the problem and what to do."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import pytest

import replay.cassette._content as content_module
import replay.cassette._io as cassette_io
from replay.cassette import Cassette, CassetteError, dumps_cassette, load_cassette, loads_cassette, save_cassette
from replay.cassette.fingerprints import fingerprint
from replay.cassette.interaction import BodyKind, Interaction, RecordedRequest, RecordedResponse, SseEvent

URI = "https://api.anthropic.com/v1/messages"


def session(turns: int = 3) -> list[Interaction]:
    history: list[dict[str, str]] = []
    interactions = []
    for turn in range(turns):
        history = [*history, {"role": "user", "content": f"question {turn}"}]
        body = {"model": "claude-sonnet-4-6", "messages": list(history)}
        response = RecordedResponse(
            status=200, kind=BodyKind.SSE, body=[SseEvent("message_stop", {"type": "message_stop"})]
        )
        interactions.append(Interaction(RecordedRequest(method="POST", uri=URI, body=body), response))
        history = [*history, {"role": "assistant", "content": f"answer {turn}"}]
    return interactions


@pytest.fixture
def good_text() -> str:
    return dumps_cassette(Cassette(interactions=session()))


def write(tmp_path: Path, text: str | bytes, name: str = "cassette.yaml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def message_of(path: Path) -> str:
    with pytest.raises(CassetteError) as caught:
        load_cassette(path)
    message = str(caught.value)
    assert message.startswith(str(path)), "the message names the file first"
    assert message.endswith("."), "the message is one sentence"
    assert isinstance(caught.value, ValueError)
    return message


def test_a_missing_cassette_says_to_record_it_first(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    assert message_of(path) == f"{path} does not exist; record it first with record mode once or all."


def test_an_empty_file_says_to_record_it_again(tmp_path: Path) -> None:
    assert "is empty; record it again" in message_of(write(tmp_path, "  \n"))


def test_a_file_that_is_not_utf8_is_called_corrupt(tmp_path: Path) -> None:
    assert "is not UTF-8 text (byte 0 cannot be decoded); it looks corrupt" in message_of(write(tmp_path, b"\xff\xfe"))


def test_a_file_that_is_not_yaml_is_reported_with_its_line_and_column(tmp_path: Path) -> None:
    message = message_of(write(tmp_path, "interactions: [\n  {a: 1\n"))
    assert "is not valid YAML (" in message
    assert "at line 3, column 1); it looks truncated or corrupt — restore it" in message


def test_a_broken_json_file_is_reported_as_json(tmp_path: Path) -> None:
    message = message_of(write(tmp_path, '{"version": 1, "interactions": [', "c.json"))
    assert "is not valid JSON (Expecting value at line 1, column 33); it looks truncated or corrupt" in message


def test_a_cassette_cut_inside_a_line_is_truncated(tmp_path: Path, good_text: str) -> None:
    path = write(tmp_path, good_text[: good_text.rindex("{event:") + 12])
    assert message_of(path) == (
        f"{path} is truncated: it does not end with the line '# end of cassette' that ends every agent-replay "
        "cassette, so interactions may be missing; restore it from version control or re-record it."
    )


def test_a_cassette_cut_between_lines_is_truncated(tmp_path: Path, good_text: str) -> None:
    cut = good_text[: good_text.rindex("  response:")]
    assert "is truncated: it does not end with the line '# end of cassette'" in message_of(write(tmp_path, cut))


def test_a_cassette_cut_after_a_whole_interaction_is_truncated_though_it_parses(tmp_path: Path, good_text: str) -> None:
    cut = good_text[: good_text.rindex("\n- request:") + 1]
    assert len(loads_cassette(cut + "# end of cassette\n", source_name="c").interactions) == 2  # it parses

    assert "is truncated: it does not end with the line '# end of cassette'" in message_of(write(tmp_path, cut))


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9, 0.999])
def test_a_cassette_cut_at_any_byte_is_truncated(tmp_path: Path, good_text: str, keep: float) -> None:
    cut = good_text.encode()[: int(len(good_text.encode()) * keep)].decode(errors="ignore")
    assert "is truncated" in message_of(write(tmp_path, cut))


def test_a_native_cassette_in_json_without_its_end_line_is_truncated(tmp_path: Path) -> None:
    path = write(tmp_path, '{"agent_replay_cassette": 1, "content": {}, "interactions": []}', "c.json")
    assert "is truncated" in message_of(path)


def test_a_newer_format_version_says_to_upgrade_or_re_record(tmp_path: Path, good_text: str) -> None:
    path = write(tmp_path, good_text.replace("agent_replay_cassette: 1", "agent_replay_cassette: 2"))
    assert message_of(path) == (
        f"{path} is format version 2; this replay reads version 1 — upgrade agent-replay or re-record."
    )


def test_an_old_vcrpy_version_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps({"version": 0, "interactions": []}), "c.json")
    assert "is a vcrpy cassette of format version 0; agent-replay reads vcrpy's version 1" in message_of(path)


def test_a_file_that_is_neither_format_says_so(tmp_path: Path) -> None:
    message = message_of(write(tmp_path, "name: hello\nturns: []\n"))
    assert "is neither an agent-replay cassette (no 'agent_replay_cassette:' key) nor a vcrpy cassette" in message


def test_a_reference_to_a_missing_message_points_nowhere(tmp_path: Path, good_text: str) -> None:
    first_key = good_text.split("$refs: [", 1)[1].split("]", 1)[0]
    path = write(tmp_path, good_text.replace(f"$refs: [{first_key}]", "$refs: [m-00000000deadbeef]"))
    assert (
        "is invalid at interactions[0].request.body.messages: the reference 'm-00000000deadbeef' points nowhere"
        in message_of(path)
    )


def test_extends_must_name_an_earlier_interaction(tmp_path: Path, good_text: str) -> None:
    path = write(tmp_path, good_text.replace("$extends: 1", "$extends: 7"))
    assert (
        "is invalid at interactions[2].request.body.messages: $extends 7 does not name an earlier interaction"
        in message_of(path)
    )


def test_a_content_entry_edited_by_hand_no_longer_matches_its_key(tmp_path: Path, good_text: str) -> None:
    path = write(tmp_path, good_text.replace("content: question 1", "content: question one"))
    message = message_of(path)
    assert "is invalid at content[m-" in message
    assert "the key does not match the hash of its value" in message


def test_a_fingerprint_that_disagrees_with_its_body_names_the_interaction(tmp_path: Path, good_text: str) -> None:
    edited = good_text.split("\n")
    model_lines = [n for n, line in enumerate(edited) if "model: claude-sonnet-4-6" in line]
    edited[model_lines[1]] = edited[model_lines[1]].replace("claude-sonnet-4-6", "claude-opus-4-6")
    message = message_of(write(tmp_path, "\n".join(edited)))
    assert "is invalid at interactions[1]: the fingerprint index disagrees with its bodies (stored" in message
    assert "delete that fingerprint line to accept the edit." in message
    # It records no temp folder: this process's TMPDIR may be the cause too, and is named.
    assert f"or this process's TMPDIR ({tempfile.gettempdir()}) is not the recording's;" in message


def test_a_cassette_that_records_its_temp_folder_does_not_blame_tmpdir(tmp_path: Path) -> None:
    text = dumps_cassette(Cassette(interactions=session(), recorded_paths={"temp": "/tmp/recorded-here"}))
    assert "temp: /tmp/recorded-here" in text
    edited = text.split("\n")
    model_lines = [n for n, line in enumerate(edited) if "model: claude-sonnet-4-6" in line]
    edited[model_lines[1]] = edited[model_lines[1]].replace("claude-sonnet-4-6", "claude-opus-4-6")
    message = message_of(write(tmp_path, "\n".join(edited)))
    assert "the fingerprint index disagrees with its bodies" in message
    assert "TMPDIR" not in message


def test_a_beta_true_fingerprint_stored_before_the_query_was_normalized_still_loads(tmp_path: Path) -> None:
    interaction = session(1)[0]
    beta = Interaction(
        RecordedRequest(method="POST", uri=f"{URI}?beta=true", body=interaction.request.body), interaction.response
    )
    text = dumps_cassette(Cassette(interactions=[beta]))
    current = fingerprint("POST", "/v1/messages?beta=true", beta.request.body)
    older = fingerprint("POST", "/v1/messages?beta=true", beta.request.body, whole_query=True)
    assert f"fingerprint: {current}" in text

    cassette = load_cassette(write(tmp_path, text.replace(current, older)))

    assert cassette.fingerprints() == [current]
    assert "disagrees" in message_of(write(tmp_path, text.replace(current, "a" * 64), name="edited.yaml"))


def test_two_different_bodies_under_one_content_key_are_a_collision(tmp_path: Path, good_text: str) -> None:
    key = good_text.split("$refs: [", 1)[1].split("]", 1)[0]
    duplicate = f"  {key}:\n    content: something else\n    role: user\n"
    path = write(tmp_path, good_text.replace("content:\n", f"content:\n{duplicate}", 1))
    message = message_of(path)
    assert f"has two different bodies under the content key {key} (duplicate key '{key}' at line" in message
    assert "a content-key collision or a bad merge; re-record the cassette." in message


def test_a_content_key_collision_while_saving_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(content_module, "content_key", lambda prefix, canonical: f"{prefix}0")
    path = tmp_path / "cassette.yaml"

    with pytest.raises(CassetteError, match=r"cannot be written: content\[m-0\]: two different values have this"):
        save_cassette(Cassette(interactions=session()), path)
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


ALIAS_BOMB = """\
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


def test_an_alias_bomb_is_refused(tmp_path: Path) -> None:
    message = message_of(write(tmp_path, ALIAS_BOMB))
    assert "uses a YAML alias (an alias to the node at line " in message
    assert "which a cassette never contains and which could expand without bound; write the data out in full" in message


def test_even_one_alias_in_a_real_cassette_is_refused(tmp_path: Path, good_text: str) -> None:
    aliased = good_text.replace("interactions:\n", "interactions:\n- &first\n", 1)
    aliased = aliased.replace("- &first\n- request:", "- &first\n  request:", 1)
    aliased = aliased.removesuffix("# end of cassette\n") + "- *first\n# end of cassette\n"
    assert "uses a YAML alias" in message_of(write(tmp_path, aliased))


def test_python_tags_are_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "agent_replay_cassette: 1\ncontent: !!python/object/apply:os.system ['echo pwned']\n# end of cassette\n",
    )
    assert "uses a YAML tag that safe loading refuses" in message_of(path)


def test_a_file_over_the_size_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cassette_io, "MAX_CASSETTE_BYTES", 1024)
    path = write(tmp_path, "#" * 2048)
    assert message_of(path) == f"{path} is 2048 bytes, over the 1024 bytes limit; check that it is a cassette."


def test_the_default_size_limit_is_512_mib() -> None:
    assert cassette_io.MAX_CASSETTE_BYTES == 512 * 1024 * 1024


def test_a_malformed_entry_is_named_by_its_place(tmp_path: Path, good_text: str) -> None:
    path = write(tmp_path, good_text.replace("kind: sse", "kind: video", 1))
    assert message_of(path) == (
        f"{path} is invalid at interactions[0].response.kind: is 'video'; expected one of empty, sse, json, text, "
        "binary; fix that entry, or re-record the cassette."
    )


def test_loads_names_the_source_it_is_given() -> None:
    with pytest.raises(CassetteError, match=r"^fixture:cassette is empty"):
        loads_cassette("", source_name="fixture:cassette")


def test_a_brotli_body_without_brotli_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("replay.cassette.content_encoding._brotli", None)  # as on a machine without the brotli package
    cassette = {
        "version": 1,
        "interactions": [
            {
                "request": {"method": "GET", "uri": URI, "body": None, "headers": {}},
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"Content-Encoding": ["br"], "Content-Type": ["application/json"]},
                    "body": {"string": "\u001b\u0003\u0000"},
                },
            }
        ],
    }
    message = message_of(write(tmp_path, json.dumps(cassette), "c.json"))
    assert "is invalid at interactions[0].response: its body is brotli-compressed and the 'brotli' package" in message
    assert "install it (pip install brotli) to read this cassette." in message


def test_a_corrupt_gzip_body_is_named(tmp_path: Path) -> None:
    corrupt = gzip.compress(b'{"a": 1}')[:-6]
    yaml_text = (
        "version: 1\ninteractions:\n- request: {method: GET, uri: 'https://x/', body: null, headers: {}}\n"
        "  response:\n    status: {code: 200, message: OK}\n    headers: {Content-Encoding: [gzip]}\n"
        f"    body: {{string: !!binary '{__import__('base64').b64encode(corrupt).decode()}'}}\n"
    )
    assert "its gzip body is corrupt" in message_of(write(tmp_path, yaml_text))
