"""Judging a re-executed bundle against its recording: did the loop do what it did when the
session was recorded?

The bundle's prompts are resubmitted to a fresh engine wired to its cassette, with the tools
really running in a temp copy of its workspace. The new transcript and behaviour trace are
compared with the recorded ones; a difference is reported in the loop's terms, a changed tool
result first (it is usually the cause of what follows).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from replay.cassette.rewrite import RewriteCounts
from replay.session.bundle import TRACE_JSON_FILE, Bundle
from replay.session.session_run import replay_bundle
from replay.trace.behaviour import BehaviourTrace
from replay.trace.diff import diff_traces, diff_transcripts

__all__ = ["RunReport", "Verdict", "judge_bundle"]

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_MISS = "No recorded interaction matches"
_NEAREST = re.compile(r"^  #\d+ .* — differs at ")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z")


class Verdict(StrEnum):
    MATCH = "match"
    DRIFT = "drift"


@dataclass
class RunReport:
    """The outcome of re-executing one bundle."""

    bundle: Path
    verdict: Verdict
    # What differs, in the loop's terms, ready to print (empty on a match).
    differences: list[str] = field(default_factory=list)
    trace: BehaviourTrace | None = None
    recorded_trace: BehaviourTrace | None = None
    updated: bool = False
    seconds: float = 0.0
    # After an update: how many interactions were kept, re-recorded and pruned.
    rewrite: RewriteCounts | None = None

    @property
    def matched(self) -> bool:
        return self.verdict is Verdict.MATCH

    def to_json(self) -> dict[str, Any]:
        return {
            "bundle": str(self.bundle),
            "verdict": self.verdict.value,
            "differences": self.differences,
            "updated": self.updated,
            "rewrite": self.rewrite.to_json() if self.rewrite is not None else None,
            "seconds": round(self.seconds, 3),
            "trace": self.trace.to_json() if self.trace is not None else None,
        }


async def judge_bundle(bundle: Bundle) -> RunReport:
    """Re-execute ``bundle`` offline and compare what it did with its recording. Bad input
    raises ``BundleError`` or ``CassetteError``."""
    started = time.perf_counter()
    recorded_trace = bundle.recorded_trace()
    # Checked before anything runs: a corrupt transcript is bad input, not drift.
    recorded_transcript = bundle.recorded_transcript()
    run = await replay_bundle(bundle, strict=False)
    session = recorded_trace.session if recorded_trace is not None else bundle.path.name
    trace = run.behaviour(session, bundle.spec.prompts)

    differences: list[str] = []
    new_transcript, old_transcript = run.transcript, recorded_transcript
    if bundle.spec.live:
        # A live recording's uuids and times are the real ones: compare what they stand for.
        new_transcript, old_transcript = _stable(new_transcript), _stable(old_transcript)
    differences.extend(_tool_result_differences(old_transcript, new_transcript))
    if recorded_trace is None:
        differences.append(f"{bundle.path / TRACE_JSON_FILE} is missing: nothing to compare the behaviour with.")
    else:
        differences.extend(diff_traces(recorded_trace, trace))
    differences.extend(_cassette_misses(run.results))
    if run.unplayed:
        listed = ", ".join(f"#{i + 1}" for i in run.unplayed[:10])
        differences.append(f"{len(run.unplayed)} recorded interaction(s) were never requested: {listed}.")
    if new_transcript != old_transcript:
        differences.extend(diff_transcripts(old_transcript, new_transcript))
    return RunReport(
        bundle=bundle.path,
        verdict=Verdict.MATCH if not differences else Verdict.DRIFT,
        differences=differences,
        trace=trace,
        recorded_trace=recorded_trace,
        seconds=time.perf_counter() - started,
    )


def _cassette_misses(results: list[Any]) -> list[str]:
    """A request the cassette had no answer for, with the field the nearest recorded request
    differs at (from the miss message), so the drift names its cause."""
    lines = []
    for number, result in enumerate(results, start=1):
        text = str(getattr(result, "result", "") or "")
        if not (getattr(result, "is_error", False) and text.startswith(_MISS)):
            continue
        first, *rest = text.splitlines()
        nearest = next((line.strip() for line in rest if _NEAREST.match(line)), None)
        lines.append(f"prompt {number}: {first}" + (f" Nearest: {nearest}." if nearest else ""))
    return lines


def _stable(transcript: str) -> str:
    """Uuids numbered in order of appearance and timestamps blanked."""
    seen: dict[str, str] = {}

    def number(match: re.Match[str]) -> str:
        return seen.setdefault(match.group(0), f"<uuid-{len(seen) + 1}>")

    return _TIMESTAMP.sub("<timestamp>", _UUID.sub(number, transcript))


def _tool_result_differences(old: str, new: str) -> list[str]:
    """A tool result that changed between the recording and this run, named by tool_use."""
    old_results, names = _tool_results(old)
    new_results, new_names = _tool_results(new)
    names.update(new_names)
    lines = []
    for tool_use_id, before in old_results.items():
        after = new_results.get(tool_use_id)
        if after is not None and after != before:
            lines.append(
                f"tool result changed: {names.get(tool_use_id, 'a tool')} call {tool_use_id} returned "
                f"{_excerpt(after)} (recorded: {_excerpt(before)})"
            )
    return lines


def _tool_results(transcript: str) -> tuple[dict[str, str], dict[str, str]]:
    results: dict[str, str] = {}
    names: dict[str, str] = {}
    for line in transcript.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        content = (record.get("message") or {}).get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_use":
                names[block["id"]] = block.get("name", "?")
            elif block.get("type") == "tool_result":
                value = block.get("content")
                results[block["tool_use_id"]] = value if isinstance(value, str) else json.dumps(value)
    return results, names


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return json.dumps(flat if len(flat) <= 60 else flat[:57] + "...", ensure_ascii=False)
