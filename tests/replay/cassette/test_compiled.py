"""Compiled cassettes: a large cassette's checked JSON copy in the cache folder loads exactly as
its YAML does, is never used once the YAML or the loader changed, and a damaged or hostile copy
is ignored without a word: the YAML is read instead."""

from __future__ import annotations

import gc
import hashlib
import json
from pathlib import Path

import pytest

from replay.cassette import Cassette, CassetteError, load_cassette, save_cassette
from replay.cassette._compiled import CACHE_ENV, MIN_COMPILED_BYTES, compiled_folder, text_digest
from replay.cassette.interaction import BodyKind, Interaction, RecordedRequest, RecordedResponse, SseEvent

URI = "https://api.anthropic.com/v1/messages"


def large_session(turns: int = 4) -> list[Interaction]:
    """A session whose cassette is over the compiling threshold (a long tool result)."""
    source = "\n".join(f"line {n}: {'x' * 60}" for n in range(MIN_COMPILED_BYTES // 60))
    history: list[dict[str, object]] = [{"role": "user", "content": source}]
    interactions = []
    for turn in range(turns):
        body = {"model": "claude-sonnet-4-6", "stream": True, "messages": list(history)}
        events = [
            SseEvent("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"text": f"t{turn}"}}),
            SseEvent("message_stop", {"type": "message_stop"}),
        ]
        response = RecordedResponse(
            status=200, headers={"content-type": "text/event-stream"}, kind=BodyKind.SSE, body=events
        )
        interactions.append(Interaction(RecordedRequest(method="POST", uri=URI, body=body), response))
        history += [{"role": "assistant", "content": f"answer {turn}"}, {"role": "user", "content": f"more {turn}"}]
    return interactions


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    return folder / "cassettes"


@pytest.fixture
def cassette_path(tmp_path: Path) -> Path:
    path = tmp_path / "bundle" / "cassette.yaml"
    path.parent.mkdir()
    save_cassette(Cassette(interactions=large_session(), recorded_paths={"workspace": "/work/w"}), path)
    assert path.stat().st_size > MIN_COMPILED_BYTES
    return path


def copy_of(path: Path, cache_dir: Path) -> Path:
    return cache_dir / f"{text_digest(path.read_text(encoding='utf-8'))}.json"


def yaml_load(path: Path, monkeypatch: pytest.MonkeyPatch) -> Cassette:
    with monkeypatch.context() as patch:
        patch.setenv(CACHE_ENV, "off")
        return load_cassette(path)


def assert_same(a: Cassette, b: Cassette) -> None:
    assert a == b
    assert a.fingerprints() == b.fingerprints()
    assert [i.request.body_bytes() for i in a.interactions] == [i.request.body_bytes() for i in b.interactions]
    assert [i.response.body_bytes() for i in a.interactions] == [i.response.body_bytes() for i in b.interactions]


def rewrite_copy(copy: Path, edit_header: object = None, payload: bytes | None = None) -> None:
    """Replace a copy's header or payload, keeping its checksum right (what a hostile writer could do)."""
    header_line, _, old_payload = copy.read_bytes().partition(b"\n")
    header = json.loads(header_line)
    payload = old_payload if payload is None else payload
    header["payload_sha256"] = hashlib.sha256(payload).hexdigest()
    if callable(edit_header):
        edit_header(header)
    copy.write_bytes(json.dumps(header).encode() + b"\n" + payload)


def test_a_large_cassette_is_compiled_on_first_load_and_loads_the_same_from_the_copy(
    cassette_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = load_cassette(cassette_path)
    copy = copy_of(cassette_path, cache_dir)
    assert copy.is_file()
    assert not any(p.name.endswith(".json") for p in cassette_path.parent.iterdir()), "never next to the cassette"
    assert list(cache_dir.glob("*.tmp")) == [], "written through a renamed temp file"
    second = load_cassette(cassette_path)
    assert_same(first, second)
    assert_same(second, yaml_load(cassette_path, monkeypatch))
    assert second.path == cassette_path


def test_an_edited_cassette_never_meets_its_old_copy(
    cassette_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_cassette(cassette_path)
    old_copy = copy_of(cassette_path, cache_dir)
    text = cassette_path.read_text(encoding="utf-8")
    assert "{text: t0}" in text
    cassette_path.write_text(text.replace("{text: t0}", "{text: t-zero}"), encoding="utf-8")
    edited = load_cassette(cassette_path)
    assert edited.interactions[0].response.body[0].data["delta"]["text"] == "t-zero"
    assert old_copy.is_file() and copy_of(cassette_path, cache_dir) != old_copy


def test_a_copy_made_for_other_text_or_by_other_code_is_not_used(
    cassette_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = load_cassette(cassette_path)
    copy = copy_of(cassette_path, cache_dir)
    lie = b"\n".join(copy.read_bytes().split(b"\n")[1:3])  # the document's head and its first interaction
    for stale in ("source_sha256", "code", "compiled_format"):
        rewrite_copy(copy, lambda header, key=stale: header.__setitem__(key, "other"), lie)
        assert_same(load_cassette(cassette_path), expected)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # cut short
        lambda data: data.replace(b'"t1"', b'"t9"'),  # a byte changed, the checksum not updated
        lambda data: b"\x00\xff garbage",
        lambda data: b"",
        lambda data: b"[1, 2]\n{}",
    ],
    ids=["truncated", "changed", "garbage", "empty", "not-a-header"],
)
def test_a_damaged_copy_is_ignored_and_the_yaml_read(
    damage: object, cassette_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = load_cassette(cassette_path)
    copy = copy_of(cassette_path, cache_dir)
    copy.write_bytes(damage(copy.read_bytes()))  # type: ignore[operator]
    assert_same(load_cassette(cassette_path), expected)


HEAD = b'{"agent_replay_cassette": 1}'
REQUEST = b'"request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages"}'


def with_events(events: bytes) -> bytes:
    return HEAD + b"\n{" + REQUEST + b', "response": {"status": 200, "kind": "sse", "events": ' + events + b"}}"


@pytest.mark.parametrize(
    "payload",
    [
        HEAD + b'\n{"request": 5}',
        HEAD + b"\n\n",
        b'{"agent_replay_cassette": 1, "interactions": [{"request": 5}]}',
        b'{"agent_replay_cassette": 2}',
        b"[]",
        b'"text"',
        b"[" * 100_000 + b"]" * 100_000,
        HEAD + b"\n" + b"[" * 100_000 + b"]" * 100_000,
        with_events(b'{"$chunks": ["event: ping\\ndata: not json\\n\\n"]}'),
        with_events(b'{"$chunks": ["data: {}\\n\\nevent: two in one\\ndata: {}\\n\\n"]}'),
        with_events(b'{"$chunks": [5]}'),
        with_events(b'{"$chunks": "data: {}\\n\\n"}'),
        with_events(b'{"$chunks": [], "$more": 1}'),
    ],
    ids=[
        "bad-request",
        "empty-line",
        "interactions-in-the-head",
        "other-version",
        "list",
        "string",
        "deep",
        "deep-interaction",
        "chunk-not-an-encoded-event",
        "two-events-in-one-chunk",
        "chunk-not-text",
        "chunks-not-a-list",
        "chunks-and-more",
    ],
)
def test_a_hostile_copy_with_a_right_checksum_falls_back_to_the_yaml_without_an_error(
    payload: bytes, cassette_path: Path, cache_dir: Path
) -> None:
    expected = load_cassette(cassette_path)
    rewrite_copy(copy_of(cassette_path, cache_dir), payload=payload)
    assert_same(load_cassette(cassette_path), expected)


@pytest.mark.parametrize("count", [3, 5, -1, "4"])
def test_a_copy_whose_header_miscounts_its_interactions_is_not_used(
    count: object, cassette_path: Path, cache_dir: Path
) -> None:
    expected = load_cassette(cassette_path)
    rewrite_copy(copy_of(cassette_path, cache_dir), lambda header: header.__setitem__("interactions", count))
    assert_same(load_cassette(cassette_path), expected)


def test_a_copy_holds_each_event_stream_as_the_chunks_a_client_reads(cassette_path: Path, cache_dir: Path) -> None:
    expected = load_cassette(cassette_path)
    lines = copy_of(cassette_path, cache_dir).read_bytes().split(b"\n")
    assert len(lines) == 2 + len(expected.interactions)  # the header, the document's head, one per interaction
    first = json.loads(lines[2])
    assert first["response"]["events"] == {"$chunks": [c.decode() for c in expected.interactions[0].response.chunks()]}


def test_fingerprints_computed_under_another_home_are_recomputed(
    cassette_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = load_cassette(cassette_path)
    copy = copy_of(cassette_path, cache_dir)
    elsewhere = {"fingerprint_env": ["/home/else", "/tmp"], "fingerprints": ["0" * 64] * 4}
    rewrite_copy(copy, lambda header: header.update(elsewhere))
    assert load_cassette(cassette_path).fingerprints() == expected.fingerprints()


def test_a_cassette_that_does_not_load_is_not_compiled_and_still_names_its_file(
    cassette_path: Path, cache_dir: Path
) -> None:
    text = cassette_path.read_text(encoding="utf-8")
    cassette_path.write_text(text.replace("  m-", "  x-", 1), encoding="utf-8")
    with pytest.raises(CassetteError, match=rf"^{cassette_path} is invalid at content\[x-"):
        load_cassette(cassette_path)
    assert not cache_dir.exists() or list(cache_dir.iterdir()) == []


def test_small_cassettes_are_not_compiled(tmp_path: Path, cache_dir: Path) -> None:
    path = tmp_path / "small.yaml"
    save_cassette(Cassette(interactions=large_session(turns=1)[:0]), path)
    load_cassette(path)
    assert not cache_dir.exists()


def test_compiling_can_be_turned_off(cassette_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, "off")
    assert compiled_folder() is None
    load_cassette(cassette_path)  # nothing written anywhere, nothing raised


def test_an_unwritable_cache_folder_costs_nothing_but_the_copy(
    cassette_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(CACHE_ENV, str(blocker))
    assert load_cassette(cassette_path).interactions


def test_the_default_folder_is_the_users_cache_not_the_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
    assert compiled_folder() == Path("/somewhere/cache/agent-replay/cassettes")


# ---------------------------------------------------------------------------------------------
# The collector is paused while loading


def test_the_collector_is_back_on_after_a_load_that_raises(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("agent_replay_cassette: 1\ninteractions: [\n", encoding="utf-8")
    assert gc.isenabled()
    with pytest.raises(CassetteError):
        load_cassette(path)
    assert gc.isenabled()


def test_a_load_leaves_a_paused_collector_paused(cassette_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, "off")
    gc.disable()
    try:
        load_cassette(cassette_path)
        assert not gc.isenabled()
    finally:
        gc.enable()
