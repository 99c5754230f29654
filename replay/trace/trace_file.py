"""Reading a ``trace.json`` file: the trace, or one error that says which file and why it is not
one, for each caller to phrase (the JSON decoder's own wording is never shown)."""

from __future__ import annotations

import json
from pathlib import Path

from replay.storage.bundle_files import MAX_TRACE_BYTES, read_capped_text
from replay.trace.behaviour import BehaviourTrace, TraceFormatError, TraceProblem

__all__ = ["read_trace_file"]


def read_trace_file(path: Path) -> BehaviourTrace:
    """The behaviour trace in ``path``. A missing, unreadable or oversized file is a
    ``BadFileError``; anything that is not a trace this replay reads is a `TraceFormatError`
    naming the file."""
    text = read_capped_text(Path(path), limit=MAX_TRACE_BYTES, remedy="check that it is a behaviour trace")
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        raise TraceFormatError(TraceProblem.NOT_JSON, "it is not JSON", source=str(path)) from None
    except RecursionError:
        detail = "it is nested too deeply to be a behaviour trace"
        raise TraceFormatError(TraceProblem.NOT_A_TRACE, detail, source=str(path)) from None
    try:
        return BehaviourTrace.from_json(document)
    except TraceFormatError as exc:
        raise TraceFormatError(exc.problem, exc.detail, source=str(path)) from None
