"""``replay proxy``: record and replay any client over HTTP. `CassetteProxy` (`server`) is a
loopback server that a process in any language points ``ANTHROPIC_BASE_URL`` at: it answers
from a cassette, matching by the project's fingerprint, and in a recording mode forwards what
the cassette lacks to the upstream with ``httpx2``, streaming events through as they arrive and
recording them chunk for chunk, scrubbed, saved atomically. `wire` holds what goes on the wire
(events in the bytes a replay gives, recorded responses played back, faults included) and what
an exchange becomes in the cassette.

May import: `replay.cassette`, `replay.http`, `replay.redact`, `replay.storage` (and
`replay.loopback`). Never `replay.fake`, `replay.session` or anything above.
"""

from __future__ import annotations

from replay.lazy_exports import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "DEFAULT_UPSTREAM": "server",
        "MISS_STATUS": "server",
        "CassetteProxy": "server",
        "ProxyOutcome": "server",
        "ProxyRequest": "server",
    },
)
