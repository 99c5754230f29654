"""Snapshot testing of behaviour traces with syrupy.

``TraceSnapshotExtension`` stores a ``BehaviourTrace`` as its readable text form
(``render_text``, the same text a bundle keeps in ``trace.txt``), one file per assertion:
``__snapshots__/<test module>/<test name>.trace.txt`` beside the tests. A review of a changed
snapshot reads as a diff of what the loop did; ``pytest --snapshot-update`` accepts the change.

    def test_fix_todo(replay_engine, snapshot):
        ...
        assert replay_engine.trace() == snapshot(extension_class=TraceSnapshotExtension)

(The pytest plugin's ``trace_snapshot`` fixture is ``snapshot`` with this extension already set.)
"""

from __future__ import annotations

from typing import Any

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from replay.trace.behaviour import BehaviourTrace, render_text

__all__ = ["TraceSnapshotExtension", "serialize_trace"]


def serialize_trace(data: Any) -> str:
    """The snapshot text of ``data``, which must be a ``BehaviourTrace``; a clear ``TypeError``
    for anything else (a snapshot of some other object would not read as a trace)."""
    if isinstance(data, BehaviourTrace):
        return render_text(data)
    raise TypeError(
        f"A trace snapshot compares a BehaviourTrace, not {type(data).__name__}. "
        "Pass the trace itself: `replay_engine.trace()`, `(await replay_bundle(...)).trace`, "
        "or `session_run.behaviour(name, prompts)`."
    )


class TraceSnapshotExtension(SingleFileSnapshotExtension):
    """A syrupy extension writing a ``BehaviourTrace`` as ``<test name>.trace.txt``."""

    file_extension = "trace.txt"
    _write_mode = WriteMode.TEXT

    def serialize(self, data: Any, *, exclude: Any = None, include: Any = None, matcher: Any = None) -> str:
        # exclude/include filter properties of arbitrary objects; a trace's text form has none to
        # filter, so they are refused rather than silently ignored. (syrupy always passes a
        # matcher of its own; it has nothing to match in a trace either.)
        if exclude is not None or include is not None:
            raise TypeError("A trace snapshot takes no exclude or include: the whole trace is compared.")
        return serialize_trace(data)
