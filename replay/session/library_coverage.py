"""Which of the loop's behaviours a set of bundles exercises (``replay coverage``): the seven
transitions, the ten terminals, the compaction tiers and the fault kinds — and which none does.

Transitions, terminals, compactions, retries, fallbacks and withheld errors come from each
bundle's recorded trace (``trace.json``); faults the cassette replays (HTTP error statuses, a
connection dropped or never answered, an ``error`` event mid-stream) come from its cassette.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import CompactionTier, FallbackKind, ModelErrorKind, Terminal, Transition
from replay.cassette import load_cassette
from replay.cassette.interaction import BodyKind, FaultKind, Interaction
from replay.session.bundle import load_bundle
from replay.session.verify import find_bundles
from replay.trace.behaviour import BehaviourTrace

__all__ = ["CATEGORIES", "BundleCoverage", "CoverageReport", "coverage", "render_table"]

TRANSITIONS, TERMINALS, COMPACTION_TIERS, FAULTS = "transitions", "terminals", "compaction_tiers", "faults"
CATEGORIES = (TRANSITIONS, TERMINALS, COMPACTION_TIERS, FAULTS)

_RETRIED = (
    ModelErrorKind.OVERLOADED,
    ModelErrorKind.RATE_LIMITED,
    ModelErrorKind.SERVER_ERROR,
    ModelErrorKind.REQUEST_TIMEOUT,
    ModelErrorKind.CONFLICT,
    ModelErrorKind.CONNECTION_DROPPED,
    ModelErrorKind.CONNECTION_FAILED,
)
_WITHHELD = (ModelErrorKind.PROMPT_TOO_LONG, ModelErrorKind.MEDIA_TOO_LARGE, ModelErrorKind.MAX_OUTPUT_TOKENS)
# Cassette faults by kind; each HTTP error status seen is listed besides ("cassette http 529").
_CASSETTE_FAULTS = ("http_error", "stream_error", FaultKind.DROPPED_CONNECTION.value, FaultKind.CONNECTION_FAILED.value)

KNOWN: dict[str, tuple[str, ...]] = {
    TRANSITIONS: tuple(t.value for t in Transition),
    TERMINALS: tuple(t.value for t in Terminal),
    COMPACTION_TIERS: tuple(t.value for t in CompactionTier),
    FAULTS: (
        *(f"retry {k.value}" for k in _RETRIED),
        *(f"fallback {k.value}" for k in FallbackKind),
        *(f"withheld {k.value}" for k in _WITHHELD),
        *(f"cassette {k}" for k in _CASSETTE_FAULTS),
    ),
}


@dataclass
class BundleCoverage:
    """What one bundle exercises, by category (each a sorted list of names)."""

    bundle: Path
    exercised: dict[str, list[str]] = field(default_factory=dict)
    has_trace: bool = True


@dataclass
class CoverageReport:
    """What the bundles below some folders exercise, per bundle and in total."""

    bundles: list[BundleCoverage] = field(default_factory=list)

    def exercised_by(self, category: str) -> dict[str, list[str]]:
        """Each name of ``category`` (the known ones first, in their order, then any other seen)
        and the bundles that exercise it (possibly none)."""
        names: dict[str, list[str]] = {name: [] for name in KNOWN[category]}
        for bundle in self.bundles:
            for name in bundle.exercised.get(category, []):
                names.setdefault(name, []).append(str(bundle.bundle))
        return names

    def missing(self, category: str) -> list[str]:
        """The names of ``category`` that no bundle exercises."""
        return [name for name, bundles in self.exercised_by(category).items() if not bundles]

    def to_json(self) -> dict[str, Any]:
        return {
            "bundles": [
                {"bundle": str(b.bundle), "has_trace": b.has_trace, **{c: b.exercised.get(c, []) for c in CATEGORIES}}
                for b in self.bundles
            ],
            "exercised": {c: {n: bs for n, bs in self.exercised_by(c).items() if bs} for c in CATEGORIES},
            "missing": {c: self.missing(c) for c in CATEGORIES},
        }


def coverage(paths: Iterable[Path]) -> CoverageReport:
    """The coverage of every bundle at or below ``paths``. Raises ``BundleError``/``CassetteError``
    on a bundle that cannot be read, ``FileNotFoundError`` on a path that does not exist."""
    report = CoverageReport()
    for path in find_bundles(paths):
        report.bundles.append(bundle_coverage(path))
    return report


def bundle_coverage(path: Path) -> BundleCoverage:
    """What the bundle at ``path`` exercises."""
    bundle = load_bundle(path)
    trace = bundle.recorded_trace()
    exercised: dict[str, set[str]] = {category: set() for category in CATEGORIES}
    if trace is not None:
        _from_trace(trace, exercised)
    for interaction in load_cassette(bundle.cassette_path).interactions:
        exercised[FAULTS].update(_cassette_faults(interaction))
    return BundleCoverage(
        bundle=path,
        exercised={category: _ordered(category, names) for category, names in exercised.items()},
        has_trace=trace is not None,
    )


def _from_trace(trace: BehaviourTrace, exercised: dict[str, set[str]]) -> None:
    for prompt in trace.prompts:
        if prompt.terminal:
            exercised[TERMINALS].add(prompt.terminal)
        exercised[COMPACTION_TIERS].update(str(e["tier"]) for e in prompt.before if "failed" not in e)
    for _, trace_pass in trace.passes():
        if trace_pass.transition:
            exercised[TRANSITIONS].add(trace_pass.transition)
        exercised[COMPACTION_TIERS].update(str(e["tier"]) for e in trace_pass.compactions if "failed" not in e)
        exercised[FAULTS].update(f"retry {r.get('error')}" for r in trace_pass.retries)
        exercised[FAULTS].update(f"fallback {f.get('fallback')}" for f in trace_pass.fallbacks)
        exercised[FAULTS].update(f"withheld {w}" for w in trace_pass.withheld)


def _cassette_faults(interaction: Interaction) -> set[str]:
    response = interaction.response
    faults = set()
    if response.fault is not None:
        faults.add(f"cassette {response.fault.kind.value}")
    if response.status >= 400:
        faults.update({"cassette http_error", f"cassette http {response.status}"})
    if response.kind is BodyKind.SSE and any(event.event == "error" for event in response.body):
        faults.add("cassette stream_error")
    return faults


def _ordered(category: str, names: set[str]) -> list[str]:
    known = [name for name in KNOWN[category] if name in names]
    return known + sorted(names - set(known))


def render_table(report: CoverageReport) -> str:
    """A plain-text table: per category, each name, how many bundles exercise it and which;
    then what no bundle exercises."""
    rows: list[tuple[str, str, str, str]] = []
    for category in CATEGORIES:
        for name, bundles in report.exercised_by(category).items():
            label = category.replace("_", " ")
            rows.append((label, name, str(len(bundles)) if bundles else "-", _names(bundles) or "none"))
    header = ("category", "name", "bundles", "exercised by")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(3)]
    lines = [_row(header, widths), _row((*("-" * w for w in widths), "-" * 12), widths)]
    previous = None
    for row in rows:
        shown = row if row[0] != previous else ("", *row[1:])
        previous = row[0]
        lines.append(_row(shown, widths))
    lines.append("")
    lines.append(f"{len(report.bundles)} bundle(s).")
    for category in CATEGORIES:
        missing = report.missing(category)
        if missing:
            lines.append(f"No bundle exercises these {category.replace('_', ' ')}: {', '.join(missing)}.")
    without = [str(b.bundle) for b in report.bundles if not b.has_trace]
    if without:
        lines.append(f"Without trace.json (only cassette faults counted): {', '.join(without)}.")
    return "\n".join(lines) + "\n"


def _names(bundles: list[str]) -> str:
    names = [Path(b).name for b in bundles]
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _row(cells: tuple[str, ...], widths: list[int]) -> str:
    return "  ".join(cell.ljust(width) for cell, width in zip(cells[:3], widths, strict=True)) + "  " + cells[3]
