"""Recording small bundles for the command-line, diff and coverage specifications."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine import EngineSettings
from replay.fake.scenario import Scenario
from replay.session.recording import record_bundle
from tests import forked

DONE = {"content": [{"text": "Done."}]}
SUMMARY = {"content": [{"text": "Summary: we listed the files."}]}
# Effective window 19,000 (20,000 − 1,000 output): autocompact at 6,000 tokens.
SMALL_CONTEXT = EngineSettings(context_window=20_000, max_output_tokens=1_000)


def glob_turn(input_tokens: int) -> dict[str, Any]:
    return {
        "content": [{"text": "looking"}, {"tool_use": {"name": "Glob", "input": {"pattern": "*"}}}],
        "usage": {"input_tokens": input_tokens, "output_tokens": 10},
    }


# A tool call that brings the context over the threshold, the summary, the answer.
AUTOCOMPACT_TURNS = [glob_turn(7_000), SUMMARY, DONE]
FAULT_TURNS: list[dict[str, Any]] = [
    {"fault": "http_error", "status": 529, "error_type": "overloaded_error", "message": "Overloaded"},
    {"fault": "stream_error", "after_events": 2, "error_type": "overloaded_error", "content": [{"text": "partial"}]},
    {"fault": "drop_connection", "after_events": 3, "content": [{"text": "partial"}]},
    DONE,
]


async def record(
    out: Path,
    turns: list[dict[str, Any]],
    *,
    prompts: tuple[str, ...] = ("list the files",),
    settings: EngineSettings | None = None,
    files: dict[str, str] | None = None,
) -> Path:
    """Record a fake-model bundle at ``out`` whose workspace holds ``files``."""
    workspace = out.parent / f".{out.name}-workspace"
    workspace.mkdir(parents=True)
    for name, text in (files or {"a.txt": "a\n"}).items():
        (workspace / name).write_text(text)
    await record_bundle(
        out, prompts=list(prompts), scenario=Scenario.from_list(turns), workspace=workspace, settings=settings
    )
    return out


def record_sync(out: Path, turns: list[dict[str, Any]], **options: Any) -> Path:
    """``record`` for a synchronous test (the command line runs its own event loop)."""
    return asyncio.run(record(out, turns, **options))


def edit_settings(bundle: Path, **settings: Any) -> None:
    """Change engine settings in a bundle's session.json, as a user editing it would."""
    path = bundle / "session.json"
    document = json.loads(path.read_text())
    document["settings"].update(settings)
    path.write_text(json.dumps(document, indent=2))


def assert_bad_input(result: Any, *fragments: str) -> None:
    """Exit code 2 with one clear line on stderr that names ``fragments``, and no traceback."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


_HOLDER = """
import sys
from pathlib import Path
from replay.storage.bundle_lock import bundle_write_lock
with bundle_write_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


@contextmanager
def held_by_another_process(bundle: Path) -> Iterator[int]:
    """Another process (forked from this one) holds the writer lock of ``bundle`` for the block;
    gives its pid."""
    holder = forked.Popen(
        [sys.executable, "-c", _HOLDER, str(bundle)],
        cwd=Path(__file__).resolve().parents[2],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield holder.pid
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
