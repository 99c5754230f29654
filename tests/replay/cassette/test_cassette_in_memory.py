"""What a loaded cassette costs in memory: event streams kept as the chunks a client reads and
parsed only when ``body`` is read, exactly as they were saved; the file never held whole; what a
loaded cassette holds, and its peak while loading, bounded by the file's size (tracemalloc,
not timing)."""

from __future__ import annotations

import dataclasses
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from replay.cassette import Cassette, CassetteError, load_cassette, loads_cassette, save_cassette
from replay.cassette._compiled import CACHE_ENV
from replay.cassette._source import FileChanged, FileSource
from replay.cassette.interaction import (
    BodyKind,
    EncodedEvents,
    FaultKind,
    Interaction,
    RecordedFault,
    RecordedRequest,
    RecordedResponse,
    SseEvent,
    encode_sse_event,
    encoded_event,
    encoded_raw_events,
)

URI = "https://api.anthropic.com/v1/messages"


def answer(turn: int, *, deltas: int = 6) -> list[SseEvent]:
    events = [
        SseEvent("message_start", {"type": "message_start", "message": {"id": f"msg_{turn:06d}", "usage": {}}}),
        SseEvent("content_block_start", {"type": "content_block_start", "index": 0}),
        SseEvent("ping", {"type": "ping"}),
    ]
    for part in range(deltas):
        text = f"Turn {turn}: reading module {part} next, then running the tests again. "
        delta = {"type": "text_delta", "text": text}
        events.append(SseEvent("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}))
    events.append(SseEvent("message_stop", {"type": "message_stop"}))
    return events


def sse(events: list[SseEvent], fault: RecordedFault | None = None) -> RecordedResponse:
    headers = {"content-type": "text/event-stream"}
    return RecordedResponse(status=200, headers=headers, kind=BodyKind.SSE, body=events, fault=fault)


def sessions(count: int) -> list[Interaction]:
    """Agent-loop traffic: sessions of five calls, each re-sending its history."""
    interactions = []
    for index in range(count):
        session, step = divmod(index, 5)
        history: list[dict[str, object]] = [{"role": "user", "content": f"Session {session}: fix test_{session}."}]
        for earlier in range(step):
            history.append({"role": "assistant", "content": f"Step {earlier} of session {session}: " + "x" * 200})
            history.append({"role": "user", "content": f"Result {earlier} of session {session}: " + "y" * 200})
        body = {"model": "claude-sonnet-4-6", "max_tokens": 1024, "stream": True, "messages": history}
        request = RecordedRequest(method="POST", uri=URI, headers={"content-type": "application/json"}, body=body)
        interactions.append(Interaction(request, sse(answer(index))))
    return interactions


def saved(tmp_path: Path, interactions: list[Interaction], name: str = "cassette.yaml") -> Path:
    path = tmp_path / name
    save_cassette(Cassette(interactions=interactions), path)
    return path


def stored_body(response: RecordedResponse) -> object:
    """What the response holds before anyone reads its ``body``."""
    return response.__dict__["_body"]


# ---------------------------------------------------------------------------------------------
# Events kept as chunks, parsed when read


def test_a_loaded_event_stream_is_kept_as_its_chunks_until_its_body_is_read(tmp_path: Path) -> None:
    original = sessions(2)
    loaded = load_cassette(saved(tmp_path, original)).interactions[1].response
    assert type(stored_body(loaded)) is EncodedEvents
    assert loaded.chunks() == [encode_sse_event(event) for event in original[1].response.body]
    assert type(stored_body(loaded)) is EncodedEvents, "replaying does not parse the events"
    assert loaded.body == original[1].response.body
    assert type(stored_body(loaded)) is list, "parsed once, then kept"


def test_an_event_stream_is_one_bytes_object_cut_into_the_same_chunks_at_every_replay(tmp_path: Path) -> None:
    original = sessions(2)
    loaded = load_cassette(saved(tmp_path, original)).interactions[1].response
    encoded = stored_body(loaded)
    expected = [encode_sse_event(event) for event in original[1].response.body]
    assert encoded.data == b"".join(expected)  # no bytes object per event is kept
    assert loaded.chunks() == expected
    assert loaded.chunks() == expected  # cut again, the same
    assert EncodedEvents.of([]).chunks == ()


def test_a_loaded_response_equals_and_replaces_like_the_one_recorded(tmp_path: Path) -> None:
    original = sessions(3)
    loaded = load_cassette(saved(tmp_path, original))
    assert loaded.interactions == original
    response = loaded.interactions[0].response
    changed = dataclasses.replace(response, headers={"content-type": "text/event-stream", "request-id": "req_1"})
    assert changed.body == original[0].response.body
    assert changed.chunks() == original[0].response.chunks()


def test_a_fault_cuts_the_chunks_of_an_event_stream_never_parsed(tmp_path: Path) -> None:
    events = answer(0)
    fault = RecordedFault(kind=FaultKind.DROPPED_CONNECTION, after_events=4)
    request = RecordedRequest(method="POST", uri=URI, body={"messages": []})
    loaded = load_cassette(saved(tmp_path, [Interaction(request, sse(events, fault))])).interactions[0].response
    assert loaded.chunks() == [encode_sse_event(event) for event in events[:4]]
    assert loaded.body_bytes() == b"".join(encode_sse_event(event) for event in events)
    assert type(stored_body(loaded)) is EncodedEvents
    assert loaded.body == events


@pytest.mark.parametrize(
    "event",
    [
        SseEvent("ping", '{"type": "ping"}'),  # text that reads as JSON
        SseEvent(None, "[DONE]"),
        SseEvent("count", 5),
        SseEvent("text", "two\nlines"),
        SseEvent("error", None),
    ],
    ids=["json-looking-text", "done-marker", "a-number", "two-lines", "null"],
)
def test_events_that_would_not_read_back_the_same_stay_parsed(tmp_path: Path, event: SseEvent) -> None:
    events = [SseEvent("message_start", {"type": "message_start"}), event]
    request = RecordedRequest(method="POST", uri=URI, body={"messages": []})
    loaded = load_cassette(saved(tmp_path, [Interaction(request, sse(events))])).interactions[0].response
    assert type(stored_body(loaded)) is list
    assert loaded.body == events
    assert loaded.chunks() == [encode_sse_event(e) for e in events]


def test_events_read_back_the_same_from_text_as_from_a_file(tmp_path: Path) -> None:
    path = saved(tmp_path, sessions(4))
    from_text = loads_cassette(path.read_text(encoding="utf-8"), source_name="c")
    from_file = load_cassette(path)
    assert from_text.interactions == from_file.interactions
    assert from_text.fingerprints() == from_file.fingerprints()


# ---------------------------------------------------------------------------------------------
# Memory, measured by tracemalloc (allocations, never time)


def traced_load(path: Path) -> tuple[Cassette, int, int]:
    """The cassette, what it holds once loaded, and the peak while loading (bytes)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        cassette = load_cassette(path)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return cassette, held - before, peak - before


@pytest.mark.parametrize("cache", ["off", "compiled"])
def test_a_loaded_cassette_holds_less_than_twice_its_file_and_loading_peaks_under_three_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: str
) -> None:
    path = saved(tmp_path, sessions(400))
    size = path.stat().st_size
    assert size > 300_000  # large enough to be compiled, and for fixed costs not to count
    if cache == "compiled":
        monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
        load_cassette(path)  # writes the compiled copy
    else:
        monkeypatch.setenv(CACHE_ENV, "off")
    cassette, held, peak = traced_load(path)
    assert len(cassette.interactions) == 400
    # Before event streams were kept as chunks and the file read twice instead of held, this
    # traffic held 2.9× its file and peaked at 5.8× (from the YAML); now 1.6× and 2.2×.
    assert held < 2 * size, f"holds {held / size:.2f}× the file"
    assert peak < 3 * size, f"peaks at {peak / size:.2f}× the file"


# ---------------------------------------------------------------------------------------------
# Read twice: a file changed in place between the reads is refused


def test_a_file_changed_in_place_between_the_two_reads_is_noticed(tmp_path: Path) -> None:
    path = saved(tmp_path, sessions(2))
    with path.open("rb") as handle:
        source = FileSource(handle)
        with path.open("r+b") as writer:  # the same file, not a renamed new one
            writer.seek(path.stat().st_size // 2)
            writer.write(b"#")
        reader = source.parse_input()
        while reader.read(4096):
            pass
        with pytest.raises(FileChanged):
            source.check_unchanged()


def test_a_file_replaced_by_renaming_while_it_loads_is_read_as_it_was_opened(tmp_path: Path) -> None:
    path = saved(tmp_path, sessions(2))
    expected = load_cassette(path)
    with path.open("rb") as handle:
        source = FileSource(handle)
        saved(tmp_path, sessions(1), name="other.yaml").replace(path)
        reader = source.parse_input()
        while reader.read(4096):
            pass
        source.check_unchanged()  # the open file is the old one: nothing changed for it
    assert len(expected.interactions) == 2


def test_a_large_file_the_full_loader_must_read_loads_from_its_text(tmp_path: Path) -> None:
    # A tag in the middle: libyaml has read part of the file when the lean path gives up, and
    # the full loader reads the whole text again (which must not count as a change).
    path = saved(tmp_path, sessions(100))
    text = path.read_text(encoding="utf-8")
    at = text.index("model: claude-sonnet-4-6", len(text) // 2)
    assert len(text) - at > 100_000
    path.write_text(text[:at] + "model: !!str claude-sonnet-4-6" + text[at + 24 :], encoding="utf-8")
    assert load_cassette(path).interactions == sessions(100)


def test_a_cassette_that_is_not_utf8_still_says_which_byte(tmp_path: Path) -> None:
    path = saved(tmp_path, sessions(1))
    data = path.read_bytes()
    path.write_bytes(data[:100] + b"\xff" + data[100:])
    with pytest.raises(CassetteError, match=r"is not UTF-8 text \(byte 100 cannot be decoded\)"):
        load_cassette(path)


def test_a_byte_order_mark_is_skipped_and_does_not_change_the_compiled_copys_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = saved(tmp_path, sessions(2))
    with_mark = tmp_path / "marked.yaml"
    with_mark.write_bytes("\ufeff".encode() + path.read_bytes())
    assert load_cassette(with_mark).interactions == load_cassette(path).interactions


@pytest.mark.parametrize(
    "raw",
    [
        [{"event": "ping", "data": {"type": "ping"}}, {"data": [1, "é", None]}, {"event": "", "data": {}}],
        [],
        [{"event": "ping", "data": {}}, {"event": "a\nb", "data": {}}],
        [{"event": "a\rb", "data": {}}],
        [{"event": 3, "data": {}}],
        [{"event": "message", "data": "plain text"}],
        [{"data": 1}],
        [{"event": "x", "data": {}, "id": "1"}],
        [{"event": "x", "data": {"text": "\ud800"}}],
        ["not a mapping"],
    ],
)
def test_events_as_a_document_holds_them_are_encoded_each_as_alone_or_not_at_all(raw: list[Any]) -> None:
    alone = [
        encoded_event(event.get("event"), event.get("data", ""))
        if type(event) is dict and event.keys() <= {"event", "data"}
        else None
        for event in raw
    ]
    encoded = encoded_raw_events(raw)
    if None in alone:
        assert encoded is None
    else:
        assert encoded is not None and list(encoded.chunks) == alone
