"""What changed between two recorded bundles: their ``session.json`` (settings, tools, seed),
their behaviour traces told in the loop's terms (`replay.trace.diff`) with each changed request
fingerprint explained from the request bodies in their cassettes, and, when the behaviour is the
same, their transcripts. ``diff_paths`` compares whatever two paths name: two bundles, two traces
or two transcripts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from replay.cassette import load_cassette
from replay.cassette.jsondiff import differing_paths
from replay.session.bundle import SESSION_FILE, Bundle, BundleError, load_bundle
from replay.storage.bundle_files import MAX_TRANSCRIPT_BYTES, read_capped_text
from replay.trace.behaviour import BehaviourTrace
from replay.trace.diff import Explain, diff_traces, diff_transcripts, explain_fingerprint_change
from replay.trace.trace_file import read_trace_file

__all__ = ["diff_bundles", "diff_paths"]


def diff_bundles(a: Bundle, b: Bundle) -> list[str]:
    """Two recorded bundles compared: their ``session.json`` (settings, tools, seed), their
    behaviour traces with each changed fingerprint explained from the cassettes' request
    bodies, and, when the behaviour is the same, their transcripts."""
    lines = _session_differences(a, b)
    trace_a, trace_b = _recorded_trace(a), _recorded_trace(b)
    trace_lines = diff_traces(trace_a, trace_b, explain=_cassette_explainer(a, b))
    lines.extend(trace_lines)
    if not trace_lines:
        lines.extend(
            diff_transcripts(
                a.recorded_transcript(),
                b.recorded_transcript(),
                a_name=str(a.transcript_path),
                b_name=str(b.transcript_path),
            )
        )
    return lines


def diff_paths(a: Path, b: Path) -> list[str]:
    """Compare two bundles (folders with session.json), two traces (``trace.json``) or two
    transcripts (``.jsonl``). Raises ``BundleError``/``ValueError``/``OSError`` on bad input."""
    kind_a, kind_b = _kind(a), _kind(b)
    if kind_a != kind_b:
        raise ValueError(f"Cannot compare {a} (a {kind_a}) with {b} (a {kind_b}): give two of the same kind.")
    if kind_a == "bundle":
        return diff_bundles(load_bundle(a), load_bundle(b))
    if kind_a == "trace":
        return diff_traces(read_trace_file(a), read_trace_file(b))
    texts = [
        read_capped_text(Path(p), limit=MAX_TRANSCRIPT_BYTES, remedy="check that it is a transcript") for p in (a, b)
    ]
    return diff_transcripts(*texts, a_name=str(a), b_name=str(b))


def _recorded_trace(bundle: Bundle) -> BehaviourTrace:
    trace = bundle.recorded_trace()
    if trace is None:
        raise BundleError(
            f"Bundle {bundle.path} has no trace.json to compare; write one with `replay run --update {bundle.path}`."
        )
    return trace


def _session_differences(a: Bundle, b: Bundle) -> list[str]:
    doc_a = json.loads(a.spec.to_json())
    doc_b = json.loads(b.spec.to_json())
    lines = []
    # Prompts are compared with the traces, in the loop's terms; everything else here.
    for document in (doc_a, doc_b):
        document.pop("prompts", None)
    for path in differing_paths(doc_a, doc_b, limit=10):
        lines.append(f"{SESSION_FILE}: {path} {_show(_value_at(doc_a, path))} → {_show(_value_at(doc_b, path))}.")
    return lines


def _cassette_explainer(a: Bundle, b: Bundle) -> Explain:
    cassette_a, cassette_b = load_cassette(a.cassette_path), load_cassette(b.cassette_path)
    bodies_a = _bodies(cassette_a.fingerprints(), [i.request.body for i in cassette_a.interactions])
    bodies_b = _bodies(cassette_b.fingerprints(), [i.request.body for i in cassette_b.interactions])
    normalizer_a, normalizer_b = cassette_a.normalizer(), cassette_b.normalizer()

    def explain(fingerprint_a: str, fingerprint_b: str) -> list[str]:
        if fingerprint_a not in bodies_a or fingerprint_b not in bodies_b:
            return []
        return explain_fingerprint_change(
            bodies_a[fingerprint_a], bodies_b[fingerprint_b], normalizer_a=normalizer_a, normalizer_b=normalizer_b
        )

    return explain


def _bodies(fingerprints: Sequence[str], bodies: Sequence[Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, body in zip(fingerprints, bodies, strict=True):
        found.setdefault(key, body)
    return found


def _value_at(document: Any, path: str) -> Any:
    """The value at a ``differing_paths`` path (``settings.context_window``, ``prompts[0]``)."""
    value = document
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        try:
            value = value[int(part[1:-1])] if part.startswith("[") else value[part]
        except (KeyError, IndexError, TypeError, ValueError):
            return None
    return value


def _kind(path: Path) -> str:
    if path.is_dir():
        if not (path / SESSION_FILE).is_file():
            raise BundleError(f"{path} is a folder without {SESSION_FILE}, so it is not a bundle.")
        return "bundle"
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist.")
    if path.suffix == ".jsonl":
        return "transcript"
    if path.suffix == ".json":
        return "trace"
    raise ValueError(f"{path} is neither a bundle folder, a trace (.json) nor a transcript (.jsonl).")


def _show(value: Any) -> str:
    """A value of ``session.json`` in a sentence: a string on one line and quoted, anything cut
    to 60 characters."""
    if isinstance(value, str):
        flat = " ".join(value.split())
        return json.dumps(flat if len(flat) <= 60 else flat[:57] + "...", ensure_ascii=False)
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."
