"""The redactor's hint scans: one scan per string (as first written) against `Substrings` (the
strings of one first character in one scan), for ``Redactor.may_find_in_raw_text`` (every
hint, the two private-key markers, two known values' forms) and for the token plugins' hints
(``token_values`` runs a plugin only where one of its hints is).

Method
------
- Texts: a 1 KB JSON message (a Read result, the per-request replay path), and three of 10 MB: one
  JSON string of ``x`` (the large-session tests' tool input), the docs folder repeated (prose,
  not ASCII), the library's transcripts repeated (JSON lines). Each as it is and with the hints
  it holds taken out, so that every scan runs to the end (a text with a hint stops early).
- Both ways answer the same for every text (checked). Times are CPU time of this process
  (``time.process_time``), the two ways alternating; the table shows the median of the
  repetitions and old / new. PASS when the new way is at least as fast on every text.

Run: ``python bench/raw_text_hints.py [repetitions]``.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from replay.redact import detectors
from replay.redact.detectors import PRIVATE_KEY_MARKERS, RAW_HINTS
from replay.redact.redactor import Redactor

ROOT = Path(__file__).resolve().parents[1]
SIZE = 10_000_000
REDACTOR = Redactor({"sk-ant-api03-" + "Q" * 40: "anthropic-api-key", "7Hq2Lx9Vw4Rb8Nz3": "some-service-token"})


def old_may_find(text: str) -> bool:
    lowered = text.lower()
    return (
        any(hint in lowered for hint in RAW_HINTS)
        or any(marker in text for marker in PRIVATE_KEY_MARKERS)
        or any(form in text for form in REDACTOR.known_forms())
    )


def old_plugins(text: str) -> list[bool]:
    lowered = text.lower()
    return [any(hint in lowered for hint in hints) for _, _, hints in detectors._TOKEN_PLUGINS]


def new_plugins(text: str) -> list[bool]:
    lowered = text.lower()
    return [hints.in_(lowered) for hints in detectors._PLUGIN_HINTS]


def repeated(text: str) -> str:
    return (text * (SIZE // len(text) + 1))[:SIZE]


def texts() -> dict[str, str]:
    read = "".join(f"{n:6}\tline {n} of the module: return os.getcwd()\n" for n in range(1, 16))
    message = json.dumps(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": read}]}
    )
    docs = "".join(path.read_text() for path in sorted((ROOT / "docs").glob("*.md")))
    transcripts = "".join(path.read_text() for path in sorted((ROOT / "cassettes").glob("*/transcript.jsonl")))
    found = {
        "1 KB message": message,
        "10 MB of x": json.dumps({"content": "x" * SIZE}),
        "10 MB of docs": repeated(docs),
        "10 MB of transcripts": repeated(transcripts),
    }
    for name, text in list(found.items()):
        for hint in (*RAW_HINTS, *PRIVATE_KEY_MARKERS):
            text = text.replace(hint, "").replace(hint.upper(), "")
        found[f"{name}, no hint"] = text
    return found


def cpu(function: Callable[[str], object], text: str, calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        function(text)
    return (time.process_time() - start) / calls


def main(repetitions: int = 5) -> bool:
    """Print the table; whether every row passed."""
    passed = True
    print("| text | check | old (one scan a string) | new (`Substrings`) | old / new | |\n|---|---|---|---|---|---|")
    for name, text in texts().items():
        calls = 2_000 if len(text) < 10_000 else 1
        for check, old, new in (
            ("may_find_in_raw_text", old_may_find, REDACTOR.may_find_in_raw_text),
            ("token plugins' hints", old_plugins, new_plugins),
        ):
            assert old(text) == new(text), (name, check)
            pairs = [(cpu(old, text, calls), cpu(new, text, calls)) for _ in range(repetitions)]
            before, after = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
            ok = after <= before
            passed &= ok
            unit, scale = ("µs", 1e6) if calls > 1 else ("ms", 1e3)
            print(
                f"| {name} | {check} | {before * scale:.1f} {unit} | {after * scale:.1f} {unit} "
                f"| {before / after:.2f}× | {'PASS' if ok else 'FAIL'} |"
            )
    return passed


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
