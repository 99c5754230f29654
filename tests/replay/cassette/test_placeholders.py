"""Folder paths in recorded bodies become placeholders before a cassette is saved — also where a
model streamed the path in pieces — and placeholders become this run's paths when played."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replay.cassette.interaction import BodyKind, Interaction, RecordedRequest, RecordedResponse, SseEvent
from replay.cassette.placeholders import folder_replacements, replace_paths

WORKSPACE = "/tmp/run-1/workspace"
TO_PLACEHOLDER = [(WORKSPACE, "<workspace>")]


def delta(kind: str, key: str, piece: str, index: int = 0) -> SseEvent:
    return SseEvent(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": kind, key: piece}}
    )


def streamed(*events: SseEvent) -> Interaction:
    return Interaction(
        RecordedRequest(method="POST", uri="https://api.anthropic.com/v1/messages", body={"messages": []}),
        RecordedResponse(status=200, headers={}, kind=BodyKind.SSE, body=list(events)),
    )


def pieces(interaction: Interaction) -> list[Any]:
    return [next(iter(v for k, v in e.data["delta"].items() if k != "type")) for e in interaction.response.body]


def test_a_path_split_across_a_tool_inputs_deltas_becomes_one_placeholder() -> None:
    recorded = streamed(
        delta("input_json_delta", "partial_json", '{"file_path": "/tmp/ru'),
        delta("input_json_delta", "partial_json", "n-1/work"),
        delta("input_json_delta", "partial_json", 'space/notes.md"}'),
    )

    stored = replace_paths(recorded, TO_PLACEHOLDER)

    assert pieces(stored) == ['{"file_path": "<workspace>', "", '/notes.md"}']
    played = replace_paths(stored, [("<workspace>", "/tmp/run-2/elsewhere")])
    assert "".join(pieces(played)) == '{"file_path": "/tmp/run-2/elsewhere/notes.md"}'


def test_text_deltas_of_two_blocks_are_joined_block_by_block() -> None:
    recorded = streamed(
        delta("text_delta", "text", "See /tmp/run-1/", index=0),
        delta("text_delta", "text", "no path here", index=1),
        delta("text_delta", "text", "workspace/a.md and /tmp/run-1/workspace/b.md", index=0),
    )

    assert pieces(replace_paths(recorded, TO_PLACEHOLDER)) == [
        "See <workspace>",
        "no path here",
        "/a.md and <workspace>/b.md",
    ]


def test_pieces_that_only_look_alike_across_blocks_are_left_alone() -> None:
    recorded = streamed(
        delta("text_delta", "text", "/tmp/run-1/", index=0),
        delta("text_delta", "text", "workspace", index=1),
    )

    assert pieces(replace_paths(recorded, TO_PLACEHOLDER)) == ["/tmp/run-1/", "workspace"]


def test_each_folder_is_replaced_as_given_resolved_and_json_escaped() -> None:
    pairs = folder_replacements({"<workspace>": Path('/tmp/a "quoted" dir')})

    assert ('/tmp/a "quoted" dir', "<workspace>") in pairs
    assert ('/tmp/a \\"quoted\\" dir', "<workspace>") in pairs
    assert [len(path) for path, _ in pairs] == sorted((len(path) for path, _ in pairs), reverse=True)
