"""Counterexample from the property suite (test_properties.py, invariant 5): a tool input answered
without streaming replays in another key order than it was recorded in.

Shrunk script: a stream dropped before its first event, then a turn calling Write with input
``{"file_path": ..., "content": ...}``. The engine retries the dropped stream without streaming,
so the Write arrives in a JSON body; the cassette stores JSON bodies with their keys sorted
(replay/cassette/_native.py, ``sorted_data(response.body)``), and the replay hands the engine
``{"content": ..., "file_path": ...}``. The transcript's tool_use line differs from the
recording's, byte for byte.
"""

from __future__ import annotations

from pathlib import Path

from replay.fake.scenario import Scenario
from replay.session.recording import record_bundle
from replay.session.session_run import replay_bundle

DROPPED_BEFORE_ANY_EVENT = {"fault": "drop_connection", "after_events": 0, "content": []}
WRITE = {"content": [{"tool_use": {"name": "Write", "input": {"file_path": "out/new.txt", "content": "new\n"}}}]}
DONE = {"content": [{"text": "Done."}]}


async def test_a_tool_input_answered_without_streaming_replays_in_its_recorded_key_order(tmp_path: Path) -> None:
    scenario = Scenario.from_list([DROPPED_BEFORE_ANY_EVENT, WRITE, DONE])
    bundle = await record_bundle(tmp_path / "bundle", prompts=["write the file"], scenario=scenario)
    recorded = bundle.transcript_path.read_text(encoding="utf-8")
    assert '"input":{"file_path":"out/new.txt","content":"new\\n"}' in recorded

    run = await replay_bundle(bundle)

    assert run.transcript == recorded
