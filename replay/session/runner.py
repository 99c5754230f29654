"""Re-executing a bundle and judging it (``replay run``), and accepting its new behaviour
(``replay run --update``, `replay.session.bundle_update`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from replay.session.bundle import Bundle, load_bundle
from replay.session.judge import RunReport, Verdict, judge_bundle
from replay.storage.bundle_lock import reading_generation

__all__ = ["RunReport", "Verdict", "run_bundle"]


async def run_bundle(
    path: Path | Bundle,
    *,
    update: bool = False,
    wait: float = 0.0,
    on_wait: Callable[[int | None], None] | None = None,
) -> RunReport:
    """Re-execute the bundle at ``path`` and compare. Without ``update`` the run reads one
    generation of the bundle even while a writer swaps another in. With it, a drifted bundle is
    re-recorded from its first divergence and swapped in whole, under the bundle's writer lock
    (``wait`` and ``on_wait`` as for ``record_bundle``): see `update_bundle`. Bad input raises
    ``BundleError`` or ``CassetteError``."""
    folder = path.path if isinstance(path, Bundle) else Path(path)
    if update:
        # Imported here: an update records (the fake model, its server, the writer lock), which
        # a replay never does, and `replay verify` imports this module before its workers fork.
        from replay.session.bundle_update import update_bundle

        return await update_bundle(folder, wait=wait, on_wait=on_wait)
    with reading_generation(folder):
        return await judge_bundle(path if isinstance(path, Bundle) else load_bundle(folder))
