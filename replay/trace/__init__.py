"""What the loop did: behaviour traces drawn from a session's events and requests
(`behaviour`: `BehaviourTrace`, text and mermaid renderings), each request's prompt cache audited
from its body (`cache_audit`, into `request_cache.RequestCache`), their differences told in the
loop's terms (`diff`, with the compactions matched up in `compaction_diff`), and the syrupy
extension that snapshot-tests them (`snapshot`).

May import: `replay.cassette`, `replay.prompt_cache`, `engine`.
"""

from __future__ import annotations

from replay.lazy_exports import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "BehaviourTrace": "behaviour",
        "extract_trace": "behaviour",
        "render_text": "behaviour",
        "render_mermaid": "behaviour",
        "diff_traces": "diff",
        "TraceSnapshotExtension": "snapshot",
    },
)
