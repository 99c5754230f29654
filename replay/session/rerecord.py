"""Re-recording a bundle from its scenario and comparing it, byte for byte, with the committed
one: the whole record path (fake server, vcrpy, scrubbing, the cassette writer, the engine) is
deterministic exactly when every re-recorded file is identical."""

from __future__ import annotations

import filecmp
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from replay.session.bundle import BUNDLE_FILES, SCENARIO_FILE, WORKSPACE_DIR, BundleError, load_bundle
from replay.session.recording import record_bundle
from replay.storage.bundle_lock import reading_generation
from replay.storage.stale_folders import ScratchKind, scratch_prefix

__all__ = ["RerecordReport", "rerecord_bundle"]


@dataclass
class RerecordReport:
    """Which files of a re-recorded bundle differ from the committed ones (none: identical)."""

    bundle: Path
    differing: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differing


async def rerecord_bundle(path: Path, *, replace: bool = False) -> RerecordReport:
    """Record the bundle at ``path`` again from its ``scenario.yaml`` into a temp folder and
    compare every file (all read from one generation of the bundle); with ``replace``, the
    committed bundle is then replaced by the new one (under its writer lock)."""
    with tempfile.TemporaryDirectory(prefix=scratch_prefix(ScratchKind.RERECORD)) as temp:
        with reading_generation(Path(path)):
            bundle = load_bundle(path)
            scenario = bundle.path / SCENARIO_FILE
            if bundle.spec.live or not scenario.is_file():
                raise BundleError(
                    f"{bundle.path} was recorded live (it has no {SCENARIO_FILE}): it cannot be re-recorded."
                )
            fresh = Path(temp) / bundle.path.name
            await record_bundle(
                fresh,
                prompts=bundle.spec.prompts,
                scenario=scenario,
                workspace=bundle.path / WORKSPACE_DIR,
                settings=bundle.spec.settings,
                seed=bundle.spec.seed,
                options=bundle.spec.options,
            )
            report = RerecordReport(bundle.path, _differing(bundle.path, fresh))
        if replace and not report.identical:
            await record_bundle(
                bundle.path,
                prompts=bundle.spec.prompts,
                scenario=scenario,
                workspace=fresh / WORKSPACE_DIR,
                settings=bundle.spec.settings,
                seed=bundle.spec.seed,
                options=bundle.spec.options,
            )
    return report


def _differing(old: Path, new: Path) -> list[str]:
    """Relative paths of the bundle's files that differ, or exist on one side only."""
    old_files, new_files = _bundle_files(old), _bundle_files(new)
    differing = sorted(str(p) for p in old_files ^ new_files)
    for relative in sorted(old_files & new_files):
        if not filecmp.cmp(old / relative, new / relative, shallow=False):
            differing.append(str(relative))
    return sorted(differing)


def _bundle_files(root: Path) -> set[Path]:
    """The files a recording writes: the top-level bundle files and the workspace."""
    files = {p.relative_to(root) for p in (root / WORKSPACE_DIR).rglob("*") if p.is_file()}
    files.update(Path(name) for name in BUNDLE_FILES if (root / name).is_file())
    return files
