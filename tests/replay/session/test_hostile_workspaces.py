"""A recorded session that makes its workspace hostile (a FIFO, a 3 GB sparse file, a file that
never ends within Read's scan) records without hanging, tells the model why, and replays MATCH."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import yaml

from tests import forked

MAKE_HOSTILE = (
    "mkfifo pipe && truncate -s 3G sparse.img && "
    "{ printf 'first line\\n'; head -c 9000 /dev/zero | tr '\\0' .; printf '\\n'; } > endless.log && "
    "truncate -s 3G endless.log && printf 'a needle\\n' > small.txt"
)


def test_a_fifo_and_3_gb_files_made_by_bash_are_read_safely_when_recorded_and_replayed(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    reads = [
        {"tool_use": {"name": "Read", "input": {"file_path": "pipe"}}},
        {"tool_use": {"name": "Read", "input": {"file_path": "sparse.img", "limit": 1}}},
        {"tool_use": {"name": "Read", "input": {"file_path": "endless.log", "limit": 1}}},
        {"tool_use": {"name": "Grep", "input": {"pattern": "needle", "output_mode": "content"}}},
        {"tool_use": {"name": "Glob", "input": {"pattern": "*"}}},
    ]
    scenario.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "name": "hostile-workspace",
                "prompts": ["Look around."],
                "turns": [
                    {"content": [{"tool_use": {"name": "Bash", "input": {"command": MAKE_HOSTILE}}}]},
                    {"content": reads},
                    {"content": [{"text": "Done."}]},
                ],
            }
        )
    )
    bundle = tmp_path / "bundle"
    # Both in another process (forked: see ``tests.forked``) with a guard: a blocking open of the
    # FIFO would otherwise hang the suite for ever instead of failing it.
    script = textwrap.dedent(
        f"""
        import asyncio
        from pathlib import Path
        from replay.session.runner import run_bundle
        from replay.session.recording import record_bundle
        asyncio.run(record_bundle(Path({str(bundle)!r}), scenario=Path({str(scenario)!r})))
        print(asyncio.run(run_bundle(Path({str(bundle)!r}))).verdict.value)
        """
    )
    done = forked.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=True)

    assert done.stdout.split() == ["match"]
    results = [
        block["content"]
        for line in (bundle / "transcript.jsonl").read_text().splitlines()
        if isinstance(content := json.loads(line).get("message", {}).get("content"), list)
        for block in content
        if block.get("type") == "tool_result"
    ]
    assert results[1:] == [
        "Cannot read pipe: it is a FIFO (named pipe), not a regular file; Read shows regular files only.",
        "Cannot read sparse.img: it is a binary file (it contains NUL bytes); Read shows text files only.",
        "     1\tfirst line\n\n(Showing lines 1-1; Read looks at the first 64 MiB of a file only, and this one "
        "goes on past it. Use Bash (e.g. `tail -c`) to see the rest.)",
        "small.txt:1:a needle\n\n(Files over 16 MiB were searched in their first 16 MiB only: endless.log.)",
        ".keep\nendless.log\nsmall.txt\nsparse.img",  # no pipe: Glob lists regular files
    ]
