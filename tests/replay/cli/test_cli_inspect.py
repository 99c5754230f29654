"""``replay show``, ``replay diff`` and ``replay coverage``, through typer's CliRunner."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from engine import EngineSettings
from replay.cli.app import app
from replay.trace.request_cache import BreakCause
from tests.replay.bundle_helpers import (
    AUTOCOMPACT_TURNS,
    DONE,
    FAULT_TURNS,
    SMALL_CONTEXT,
    assert_bad_input,
    record_sync,
)
from tests.replay.trace.cache_traces import a_pass, a_trace, cache, usage

runner = CliRunner()
LARGE_CONTEXT = EngineSettings(context_window=200_000, max_output_tokens=1_000)
SYSTEM_BREAK = {"at": "system[0].text", "cause": BreakCause.SYSTEM_PROMPT_CHANGED}


def test_show_prints_the_recorded_trace_as_text(tmp_path: Path) -> None:
    bundle = record_sync(tmp_path / "compacts", AUTOCOMPACT_TURNS, settings=SMALL_CONTEXT)

    result = runner.invoke(app, ["show", str(bundle)])

    assert result.exit_code == 0, result.output
    trace_text, summary = result.stdout.split("\n\n", 1)
    assert trace_text + "\n" == (bundle / "trace.txt").read_text()
    assert "    compaction autocompact: boundary at 7012 tokens -> 39; summary " in result.stdout
    assert summary.startswith("cache: ") and "\ncost: " in summary


def test_show_prints_json_and_reads_a_trace_file(tmp_path: Path) -> None:
    bundle = record_sync(tmp_path / "hello", [DONE])

    as_json = runner.invoke(app, ["show", str(bundle), "--format", "json"])
    from_file = runner.invoke(app, ["show", str(bundle / "trace.json"), "-f", "json"])

    assert as_json.exit_code == 0 and from_file.exit_code == 0
    document = json.loads(as_json.stdout)
    summary = document.pop("summary")
    assert document == json.loads((bundle / "trace.json").read_text())
    assert set(summary) >= {"cache", "cost", "unexpected_breaks", "disagreements"}
    assert from_file.stdout == as_json.stdout


def test_show_ends_the_text_with_the_session_cache_and_cost(tmp_path: Path) -> None:
    trace = a_trace(
        [
            a_pass(1, cache(written=6_000, uncached=2_000), usage(written=6_000, uncached=2_000, output=100)),
            a_pass(
                2,
                cache(written=8_500, uncached=50, at="system[0].text", cause=BreakCause.SYSTEM_PROMPT_CHANGED),
                usage(read=6_000, written=2_500, uncached=50, output=40),
            ),
        ]
    )
    path = tmp_path / "trace.json"
    path.write_text(trace.dumps())

    result = runner.invoke(app, ["show", str(path)])

    assert result.exit_code == 0, result.output
    assert result.stdout.split("\n\n", 1)[1].splitlines() == [
        "cache: 0 read, 14,500 written, 2,050 uncached tokens (hit ratio 0%)",
        "cost: $0.0419 (from the reported usage)",  # $0.030000 + $0.011925
        "unexpected cache breaks: 1",
        "  prompt 1 pass 2: cache break at system[0].text (system prompt changed)",
        "disagreements with the reported usage: 1 request",
        "  prompt 1 pass 2: read 0 (audit) vs 6,000 (API)",
    ]


def test_show_compares_with_the_reported_usage_only_for_a_live_bundle(tmp_path: Path) -> None:
    # A fake-model bundle reports the scenario's usage (often pinned): no news about the API.
    bundle = record_sync(tmp_path / "hello", [DONE])
    trace = a_trace([a_pass(1, cache(written=6_000, uncached=2_000), usage(read=6_000, uncached=2_000))])
    (bundle / "trace.json").write_text(trace.dumps())
    assert "disagreements" not in runner.invoke(app, ["show", str(bundle)]).stdout

    session = json.loads((bundle / "session.json").read_text())
    (bundle / "session.json").write_text(json.dumps({**session, "live": True}))
    shown = runner.invoke(app, ["show", str(bundle)])

    assert shown.exit_code == 0, shown.output
    assert "disagreements with the reported usage: 1 request" in shown.stdout


def test_show_json_carries_each_request_cache_and_the_session_summary(tmp_path: Path) -> None:
    trace = a_trace([a_pass(1, cache(written=6_000, uncached=2_000), usage(written=6_000, uncached=2_000))])
    path = tmp_path / "trace.json"
    path.write_text(trace.dumps())

    document = json.loads(runner.invoke(app, ["show", str(path), "--format", "json"]).stdout)

    request = document["prompts"][0]["passes"][0]["requests"][0]
    assert request["cache"] == {
        "marks": 2,
        "prefix": 6_000,
        "read": 0,
        "written": 6_000,
        "uncached": 2_000,
        "break": None,
    }
    assert document["summary"]["cache"] == {
        "read": 0,
        "written": 6_000,
        "uncached": 2_000,
        "hit_ratio": 0.0,
        "requests": 1,
    }
    assert document["summary"]["cost"] == {"usd": 0.0285, "unpriced_models": [], "simulated": []}


def test_show_draws_the_passes_as_a_mermaid_state_diagram(tmp_path: Path) -> None:
    bundle = record_sync(tmp_path / "compacts", AUTOCOMPACT_TURNS, settings=SMALL_CONTEXT)

    result = runner.invoke(app, ["show", str(bundle), "--format", "mermaid"])

    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "stateDiagram-v2",
        '    state "prompt 1 pass 1: tool_use [Glob]" as p1_1_0',
        "    [*] --> p1_1_0: start",
        '    state "prompt 1 pass 2: end_turn" as p1_2_1',
        "    p1_1_0 --> p1_2_1: next_turn",
        "    p1_2_1 --> [*]: completed",
    ]


def test_show_with_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    bundle = record_sync(tmp_path / "hello", [DONE])
    assert_bad_input(runner.invoke(app, ["show", str(tmp_path / "nowhere")]), "nowhere")
    assert_bad_input(runner.invoke(app, ["show", str(tmp_path)]), "without session.json")
    assert_bad_input(runner.invoke(app, ["show", str(bundle / "transcript.jsonl")]), "is not a bundle or a trace file")
    (bundle / "trace.json").unlink()
    assert_bad_input(runner.invoke(app, ["show", str(bundle)]), "has no trace.json", "replay run --update")
    result = runner.invoke(app, ["show", str(bundle), "--format", "svg"])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_diff_of_a_bundle_with_itself_exits_0(tmp_path: Path) -> None:
    bundle = record_sync(tmp_path / "hello", [DONE])
    shutil.copytree(bundle, tmp_path / "copy")

    result = runner.invoke(app, ["diff", str(bundle), str(tmp_path / "copy")])

    assert result.exit_code == 0
    assert result.stdout == f"No differences between {bundle} and {tmp_path / 'copy'}.\n"


def test_diff_of_bundles_whose_prompt_differs_names_the_changed_request_field(tmp_path: Path) -> None:
    before = record_sync(tmp_path / "before", AUTOCOMPACT_TURNS, prompts=("list the files",))
    after = record_sync(tmp_path / "after", AUTOCOMPACT_TURNS, prompts=("list every file",))

    result = runner.invoke(app, ["diff", str(before), str(after)])

    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"What changed from {before} to {after}:"
    assert not any(line.startswith("  session.json") for line in lines)  # the prompt is told once, below
    assert '  prompt 1 text changed: "list the files" → "list every file".' in lines
    changed = [line for line in lines if "pass 1: request fingerprint changed" in line]
    assert len(changed) == 1 and changed[0].endswith("because messages[0].content[0].text changed.")


def test_diff_of_bundles_recorded_with_other_settings_names_the_setting_and_the_boundary(tmp_path: Path) -> None:
    small = record_sync(tmp_path / "small", AUTOCOMPACT_TURNS, settings=SMALL_CONTEXT)
    large = record_sync(tmp_path / "large", [AUTOCOMPACT_TURNS[0], DONE], settings=LARGE_CONTEXT)

    result = runner.invoke(app, ["diff", str(small), str(large)])

    assert result.exit_code == 1
    assert "  session.json: settings.context_window 20000 → 200000." in result.stdout
    assert "  autocompact boundary no longer happens (was before prompt 1 pass 2 at 7,012 tokens)." in result.stdout


def test_diff_of_two_traces_and_of_two_transcripts(tmp_path: Path) -> None:
    before = record_sync(tmp_path / "before", [DONE], prompts=("hi",))
    after = record_sync(tmp_path / "after", [DONE], prompts=("hello",))

    traces = runner.invoke(app, ["diff", str(before / "trace.json"), str(after / "trace.json")])
    transcripts = runner.invoke(app, ["diff", str(before / "transcript.jsonl"), str(after / "transcript.jsonl")])

    assert traces.exit_code == 1 and '  prompt 1 text changed: "hi" → "hello".' in traces.stdout
    assert transcripts.exit_code == 1
    assert '  -  "content": "hi",' in transcripts.stdout and '  +  "content": "hello",' in transcripts.stdout
    same = runner.invoke(app, ["diff", str(before / "trace.json"), str(before / "trace.json")])
    assert same.exit_code == 0


def test_diff_with_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    bundle = record_sync(tmp_path / "hello", [DONE])
    assert_bad_input(runner.invoke(app, ["diff", str(bundle), str(tmp_path / "nowhere")]), "nowhere does not exist")
    assert_bad_input(
        runner.invoke(app, ["diff", str(bundle), str(bundle / "transcript.jsonl")]), "Cannot compare", "same kind"
    )
    (tmp_path / "notes.txt").write_text("hi")
    assert_bad_input(runner.invoke(app, ["diff", str(tmp_path / "notes.txt"), str(tmp_path / "notes.txt")]), "neither")
    (bundle / "cassette.yaml").write_text("agent_replay_cassette: 1\ninteractions: [\n")
    other = record_sync(tmp_path / "other", [DONE])
    assert_bad_input(runner.invoke(app, ["diff", str(bundle), str(other)]), "cassette.yaml")


def test_coverage_prints_a_table_of_what_the_bundles_exercise(tmp_path: Path) -> None:
    record_sync(tmp_path / "compacts", AUTOCOMPACT_TURNS, settings=SMALL_CONTEXT)
    record_sync(tmp_path / "faults", FAULT_TURNS)

    result = runner.invoke(app, ["coverage", str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert "compaction tiers  tool_result_budget" in result.stdout
    assert "autocompact                  1        compacts" in result.stdout
    assert "terminals         completed                    2        compacts, faults" in result.stdout
    assert "No bundle exercises these transitions: collapse_drain_retry," in result.stdout


def test_coverage_json_lists_what_is_exercised_and_what_is_missing(tmp_path: Path) -> None:
    record_sync(tmp_path / "faults", FAULT_TURNS)

    result = runner.invoke(app, ["coverage", str(tmp_path), "--json"])

    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert document["exercised"]["faults"]["cassette dropped_connection"] == [str(tmp_path / "faults")]
    assert "fallback model" in document["missing"]["faults"]
    assert document["missing"]["transitions"][0] == "next_turn"


def test_coverage_with_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    assert_bad_input(runner.invoke(app, ["coverage", str(tmp_path / "nowhere")]), "nowhere does not exist")
    assert_bad_input(runner.invoke(app, ["coverage", str(tmp_path)]), "No bundles below")
    bundle = record_sync(tmp_path / "hello", [DONE])
    (bundle / "cassette.yaml").write_text("{")
    assert_bad_input(runner.invoke(app, ["coverage", str(tmp_path)]), "cassette.yaml")


def test_diff_tells_a_new_cache_break_and_the_cost_it_adds(tmp_path: Path) -> None:
    steady = [a_pass(1, cache(written=6_000), usage(written=6_000)), a_pass(2, cache(read=6_000), usage(read=6_000))]
    broken = [
        a_pass(1, cache(written=6_000), usage(written=6_000)),
        a_pass(2, cache(written=6_000, **SYSTEM_BREAK), usage(written=6_000)),
    ]
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(a_trace(steady).dumps())
    after.write_text(a_trace(broken).dumps())

    result = runner.invoke(app, ["diff", str(before), str(after)])

    assert result.exit_code == 1
    # Pass 2: 6,000 read at $0.30 per million → 6,000 written at $3.75 per million.
    assert "  prompt 1 pass 2: cache break at system[0].text (system prompt changed, unexpected) — cost +1150%." in (
        result.stdout.splitlines()
    )
