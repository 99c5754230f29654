"""A session carrying megabytes (a 10 MB tool input) records a cassette linear in its content and
replays MATCH with memory bounded by a small multiple of that cassette."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

from replay.session.recording import record_bundle

CONTENT_BYTES = 10_000_000


def test_a_10_mb_tool_input_records_linearly_and_replays_match_in_bounded_memory(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    write = {"name": "Write", "input": {"file_path": "big.txt", "content": "x" * CONTENT_BYTES}}
    scenario.write_text(
        # libyaml's emitter: PyYAML's own scans a 10 MB scalar a character at a time (4 s).
        yaml.dump(
            {
                "version": 1,
                "name": "ten-megabyte-input",
                "prompts": ["Write the big file."],
                "turns": [
                    # Scripted usage: an estimate from 10 MB of input would trigger a compaction.
                    {"content": [{"tool_use": write}], "usage": {"input_tokens": 100, "output_tokens": 30}},
                    {"content": [{"text": "Done."}], "usage": {"input_tokens": 200, "output_tokens": 3}},
                ],
            },
            Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
        )
    )
    bundle = tmp_path / "bundle"

    asyncio.run(record_bundle(bundle, scenario=scenario))

    # The input travels twice (the answer's stream, then the next request's history): with
    # 24-character deltas it was 14 bytes of cassette per byte of content.
    cassette_bytes = (bundle / "cassette.yaml").stat().st_size
    assert cassette_bytes < 3 * CONTENT_BYTES
    results = [
        block
        for line in (bundle / "transcript.jsonl").read_text().splitlines()
        if isinstance(content := json.loads(line).get("message", {}).get("content"), list)
        for block in content
        if block.get("type") == "tool_result"
    ]
    assert [r["content"] for r in results] == [
        "InputValidationError: the input is 10,000,036 bytes of JSON; "
        "tool inputs are limited to 1,048,576 bytes (1 MiB)."
    ]

    # Peak memory of a fresh process, not time: it replayed in 7.2 GB when the cassette was 144 MB.
    replay = textwrap.dedent(
        f"""
        import asyncio, resource
        from pathlib import Path
        from replay.session.runner import run_bundle
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        report = asyncio.run(run_bundle(Path({str(bundle)!r})))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(report.verdict.value, (peak - base) * 1024)
        """
    )
    done = subprocess.run([sys.executable, "-c", replay], capture_output=True, text=True, timeout=900, check=True)
    verdict, growth_bytes = done.stdout.split()
    assert verdict == "match"
    assert int(growth_bytes) < 10 * cassette_bytes
