"""The bundled scenario library, for the tests that go through all of it or through a few."""

from __future__ import annotations

from pathlib import Path

from replay.session.verify import find_bundles

LIBRARY = Path(__file__).resolve().parent.parent / "cassettes"
BUNDLES = find_bundles([LIBRARY])
# Three bundles whose scenarios set a session up in each way a scenario can: with settings: and
# session:, with session: only, and with settings: only.
SETUP_VARIETY = [
    LIBRARY / name
    for name in (
        "cache-break-from-changed-system-prompt",
        "interrupted-while-streaming",
        "model-fallback-after-overloads",
    )
]
