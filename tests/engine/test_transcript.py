"""The transcript: JSON Lines written in queue order, read back whole or up to a torn last line."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from engine.transcript import (
    TornTranscriptWarning,
    TranscriptError,
    TranscriptWriter,
    read_transcript,
)

JsonDict = dict[str, Any]


def record(number: int) -> JsonDict:
    return {"type": "user", "uuid": f"uuid-{number}", "message": {"role": "user", "content": f"prompt {number}"}}


def write(path: Path, *records: JsonDict) -> None:
    writer = TranscriptWriter(path)
    for item in records:
        writer.enqueue(lambda item=item: item)
    writer.close()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "session" / "transcript.jsonl"


# --- writing ---------------------------------------------------------------------------------


def test_records_are_written_in_enqueue_order_on_flush(path: Path) -> None:
    writer = TranscriptWriter(path)
    for number in (3, 1, 2):
        writer.enqueue(lambda number=number: record(number))
    writer.flush()

    uuids = [json.loads(line)["uuid"] for line in path.read_text(encoding="utf-8").splitlines()]
    assert uuids == ["uuid-3", "uuid-1", "uuid-2"]


def test_each_record_is_one_json_object_on_its_own_line(path: Path) -> None:
    multi_line = {"type": "user", "message": {"role": "user", "content": "line one\nline two"}}
    write(path, multi_line, record(2))

    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == ""  # the file ends with a newline
    assert [json.loads(line) for line in lines[:-1]] == [multi_line, record(2)]


def test_nothing_is_written_before_flush(path: Path) -> None:
    writer = TranscriptWriter(path)
    writer.enqueue(lambda: record(1))
    assert not path.exists()


def test_a_record_is_built_at_flush_time(path: Path) -> None:
    # Late fields (a response's stop reason) must reach the line, so the record is built when written.
    source = {"type": "assistant", "stop_reason": None}
    writer = TranscriptWriter(path)
    writer.enqueue(lambda: dict(source))
    source["stop_reason"] = "end_turn"
    writer.flush()

    assert json.loads(path.read_text(encoding="utf-8")) == {"type": "assistant", "stop_reason": "end_turn"}


def test_later_flushes_append_to_the_file(path: Path) -> None:
    writer = TranscriptWriter(path)
    writer.enqueue(lambda: record(1))
    writer.flush()
    writer.enqueue(lambda: record(2))
    writer.close()

    assert read_transcript(path) == [record(1), record(2)]


def test_non_ascii_text_round_trips(path: Path) -> None:
    text = "Grüße, 世界 — ✓ 🚀"
    write(path, {"type": "user", "message": {"role": "user", "content": text}})

    assert text in path.read_text(encoding="utf-8")  # kept readable, not \u-escaped
    assert read_transcript(path) == [{"type": "user", "message": {"role": "user", "content": text}}]


# --- reading ---------------------------------------------------------------------------------


def test_a_complete_transcript_reads_back_every_record(path: Path) -> None:
    write(path, record(1), record(2), record(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_transcript(path) == [record(1), record(2), record(3)]


def test_a_torn_last_line_is_skipped_with_a_warning_and_every_earlier_record_is_kept(path: Path) -> None:
    write(path, record(1), record(2), record(3))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 10])  # the writer died in the middle of line 3

    with pytest.warns(TornTranscriptWarning, match="line.*3"):
        records = read_transcript(path)
    assert records == [record(1), record(2)]


def test_a_torn_line_in_a_multibyte_character_is_still_a_tear(path: Path) -> None:
    write(path, record(1), {"type": "user", "message": {"role": "user", "content": "ééééé"}})
    data = path.read_bytes()
    cut = data.rindex("é".encode()) + 1  # cut inside the two bytes of the last é
    path.write_bytes(data[:cut])

    with pytest.warns(TornTranscriptWarning):
        assert read_transcript(path) == [record(1)]


def test_a_bad_line_in_the_middle_is_an_error_naming_the_file_and_the_line(path: Path) -> None:
    write(path, record(1))
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"type": "user", "uuid": \n')
    write(path, record(3))

    with pytest.raises(TranscriptError) as raised:
        read_transcript(path)
    assert str(path) in str(raised.value)
    assert "line 2" in str(raised.value)


def test_a_line_that_is_json_but_not_an_object_is_an_error(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record(1)) + "\n[1, 2]\n" + json.dumps(record(3)) + "\n", encoding="utf-8")

    with pytest.raises(TranscriptError, match="line 2"):
        read_transcript(path)


def test_a_bad_last_line_that_ends_with_a_newline_is_an_error_not_a_tear(path: Path) -> None:
    # A newline means the write finished: the line is corrupt, not cut off.
    write(path, record(1))
    with path.open("a", encoding="utf-8") as handle:
        handle.write("not json\n")

    with pytest.raises(TranscriptError, match="line 2"):
        read_transcript(path)


def test_a_missing_transcript_is_an_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "transcript.jsonl"
    with pytest.raises(TranscriptError) as raised:
        read_transcript(missing)
    assert str(missing) in str(raised.value)


def test_an_empty_transcript_has_no_records(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    assert read_transcript(path) == []
