"""What the redaction pass costs: its throughput over the bundle library, and what it adds to
replaying the library.

Method
------
1. **Throughput**: every file of every bundle below ``cassettes/`` is read once; a fresh
   ``Redactor`` (no known values) redacts each text (cold: nothing cached), then the same
   redactor redacts them all again (warm: every line and decoded string already scanned, as for
   a history re-sent on every request). Megabytes per second of text, best of ``--repeat``.
2. **Replay**: ``replay_bundle`` over every bundle of the library, in process, once with the
   redaction pass and once with it replaced by a redactor that finds nothing (the modules that
   use it are patched), interleaved ``--repeat`` times; the table reports the median total and
   the difference. The library holds no secret, so both runs do the same work apart from the
   scanning itself.

Run: ``python bench/redaction_cost.py --repeat 3``
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import replay.cassette.scrub
import replay.cassette.secret_scan
import replay.redact.files
import replay.session.scrub_files
import replay.session.session_run
from replay.redact.kinds import Detection
from replay.redact.redactor import Redactor
from replay.session.bundle import load_bundle
from replay.session.session_run import replay_bundle

LIBRARY = Path(__file__).resolve().parents[1] / "cassettes"


class _FindsNothing(Redactor):
    """A redactor that scans nothing: the baseline."""

    def detect(self, text: str, *, binary: bool = False) -> list[Detection]:
        return []


@contextmanager
def _without_redaction() -> Iterator[None]:
    nothing = _FindsNothing()
    modules = (
        replay.cassette.scrub,
        replay.cassette.secret_scan,
        replay.session.session_run,
        replay.session.scrub_files,
        replay.redact.files,
    )
    saved = [module.current_redactor for module in modules]
    for module in modules:
        module.current_redactor = lambda: nothing  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for module, original in zip(modules, saved, strict=True):
            module.current_redactor = original  # type: ignore[attr-defined]


def _texts() -> list[str]:
    return [
        path.read_bytes().decode("utf-8", "replace")
        for path in sorted(LIBRARY.rglob("*"))
        if path.is_file() and not path.is_symlink()
    ]


def _throughput(texts: list[str], repeat: int) -> tuple[float, float]:
    megabytes = sum(len(text.encode("utf-8")) for text in texts) / 1e6
    cold, warm = [], []
    for _ in range(repeat):
        redactor = Redactor()
        started = time.perf_counter()
        for text in texts:
            redactor.redact_text(text)
        cold.append(time.perf_counter() - started)
        started = time.perf_counter()
        for text in texts:
            redactor.redact_text(text)
        warm.append(time.perf_counter() - started)
    return megabytes / min(cold), megabytes / min(warm)


async def _replay_library() -> float:
    bundles = [load_bundle(path.parent) for path in sorted(LIBRARY.glob("*/session.json"))]
    started = time.perf_counter()
    for bundle in bundles:
        await replay_bundle(bundle, strict=False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()

    texts = _texts()
    size = sum(len(text.encode("utf-8")) for text in texts) / 1e6
    cold, warm = _throughput(texts, options.repeat)
    print(f"Library: {len(texts)} files, {size:.2f} MB")
    print(f"{'redaction throughput':<32}{'MB/s':>10}")
    print(f"{'  cold (nothing cached)':<32}{cold:>10.1f}")
    print(f"{'  warm (lines cached)':<32}{warm:>10.1f}")

    with_pass, without = [], []
    for _ in range(options.repeat):
        with_pass.append(asyncio.run(_replay_library()))
        with _without_redaction():
            without.append(asyncio.run(_replay_library()))
    on, off = statistics.median(with_pass), statistics.median(without)
    print()
    print(f"{'replaying the library':<32}{'median s':>10}")
    print(f"{'  with the redaction pass':<32}{on:>10.2f}")
    print(f"{'  with a redactor finding nothing':<32}{off:>10.2f}")
    print(f"{'  added by redaction':<32}{on - off:>10.2f}  ({(on / off - 1) * 100:+.0f}%)")


if __name__ == "__main__":
    main()
