"""``replay run`` and ``replay verify``: re-executing bundles, through typer's CliRunner."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from replay.cli.app import app
from replay.cli.run import cache_break_line
from replay.fake.model import FakeModel
from replay.fake.scenario import Scenario
from replay.fake.server import FakeModelServer
from replay.session.demo import DEMO_DIR, DEMO_PROMPT
from replay.session.recording import record_bundle
from replay.session.runner import run_bundle
from replay.trace.behaviour import render_text
from replay.trace.cache_summary import BreakReport
from replay.trace.request_cache import BreakCause, CacheBreak
from tests.replay.bundle_helpers import (
    AUTOCOMPACT_TURNS,
    DONE,
    SMALL_CONTEXT,
    assert_bad_input,
    edit_settings,
    record_sync,
)

runner = CliRunner()


def test_run_on_a_freshly_recorded_bundle_matches_and_exits_0(tmp_path: Path) -> None:
    bundle = record_sync(tmp_path / "hello", [DONE])

    result = runner.invoke(app, ["run", str(bundle)])

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"MATCH {bundle} (1 pass, ")


def test_run_names_the_autocompact_boundary_that_no_longer_happens_and_exits_1(tmp_path: Path) -> None:
    bundle = record_sync(tmp_path / "compacts", AUTOCOMPACT_TURNS, settings=SMALL_CONTEXT)
    assert runner.invoke(app, ["run", str(bundle)]).exit_code == 0
    edit_settings(bundle, context_window=200_000)  # the threshold is now far above 7,000 tokens

    result = runner.invoke(app, ["run", str(bundle)])

    assert result.exit_code == 1, result.output
    assert f"DRIFT {bundle}" in result.stdout
    assert "  autocompact boundary no longer happens (was before prompt 1 pass 2 at 7,012 tokens)." in result.stdout
    assert "  prompt 1 pass 2: request fingerprint changed" in result.stdout
    assert "(not in the cassette)" in result.stdout
    assert "  prompt 1 terminal changed: completed → model_error." in result.stdout
    assert "  prompt 1: No recorded interaction matches request 2" in result.stdout


def test_run_names_the_request_field_a_changed_setting_changed(tmp_path: Path) -> None:
    bundle = record_sync(tmp_path / "hello", [DONE])
    edit_settings(bundle, max_output_tokens=4_000)

    result = runner.invoke(app, ["run", str(bundle)])

    assert result.exit_code == 1
    assert "  prompt 1 pass 1: model call changed: answer end_turn → harness; max_tokens 8000 → 4000." in result.stdout
    assert "Nearest: #1 POST /v1/messages, 1 messages (not played yet) — differs at max_tokens." in result.stdout


def test_run_reports_every_bundle_and_exits_with_the_worst_verdict(tmp_path: Path) -> None:
    same = record_sync(tmp_path / "same", [DONE])
    drifted = record_sync(tmp_path / "drifted", AUTOCOMPACT_TURNS, settings=SMALL_CONTEXT)
    edit_settings(drifted, context_window=200_000)

    result = runner.invoke(app, ["run", str(same), str(drifted)])

    assert result.exit_code == 1
    assert f"MATCH {same}" in result.stdout and f"DRIFT {drifted}" in result.stdout


def test_run_json_prints_one_report_per_bundle(tmp_path: Path) -> None:
    bundle = record_sync(tmp_path / "hello", [DONE])

    result = runner.invoke(app, ["run", str(bundle), "--json"])

    assert result.exit_code == 0
    (report,) = json.loads(result.stdout)
    assert report["verdict"] == "match" and report["differences"] == []
    assert report["trace"]["prompts"][0]["terminal"] == "completed"


def test_run_update_accepts_new_behaviour_the_cassette_still_answers(tmp_path: Path) -> None:
    bundle = record_sync(tmp_path / "hello", [DONE])
    (bundle / "trace.json").unlink()  # e.g. recorded before traces existed

    updated = runner.invoke(app, ["run", str(bundle), "--update"])

    assert updated.exit_code == 0, updated.output
    assert f"UPDATED {bundle}" in updated.stdout
    assert (bundle / "trace.json").is_file()
    assert runner.invoke(app, ["run", str(bundle)]).exit_code == 0


def test_run_update_rerecords_from_the_first_divergence_says_what_it_kept_and_then_matches(tmp_path: Path) -> None:
    bundle = record_sync(tmp_path / "compacts", AUTOCOMPACT_TURNS, settings=SMALL_CONTEXT)
    edit_settings(bundle, context_window=200_000)  # no autocompact: the second request differs

    updated = runner.invoke(app, ["run", str(bundle), "--update"])

    assert updated.exit_code == 0, updated.output
    assert updated.stdout.startswith(
        f"UPDATED {bundle}: kept 1, re-recorded 1, pruned 2 interaction(s); replay run now matches.\n"
    )
    assert "  autocompact boundary no longer happens" in updated.stdout  # what was accepted
    again = runner.invoke(app, ["run", str(bundle)])
    assert again.exit_code == 0 and again.stdout.startswith(f"MATCH {bundle}")


LIBRARY_DEMO = Path(__file__).resolve().parents[3] / "cassettes" / "demo"


def _session(bundle: Path, **changes: object) -> None:
    document = json.loads((bundle / "session.json").read_text())
    for key, value in changes.items():
        if key in document["settings"]:
            document["settings"][key] = value
        else:
            document[key] = value
    (bundle / "session.json").write_text(json.dumps(document, indent=2))


@pytest.mark.parametrize(
    ("drift", "counts"),
    [
        (lambda b: _session(b, max_turns=1), "kept 1, re-recorded 0, pruned 2"),
        (lambda b: _session(b, prompts=["List the open TODOs."]), "kept 0, re-recorded 3, pruned 3"),
        (lambda b: (b / "workspace" / "config.toml").write_text("strict = true\n"), "kept 1, re-recorded 2, pruned 2"),
        (lambda b: _session(b, tools=["Read", "Write", "Edit", "Bash", "Glob"]), "kept 0, re-recorded 3, pruned 3"),
    ],
    ids=["settings", "prompt", "workspace-file", "tool-removed"],
)
def test_run_update_then_run_matches_for_a_settings_prompt_or_tool_drift(
    tmp_path: Path, drift: Any, counts: str
) -> None:
    bundle = Path(shutil.copytree(LIBRARY_DEMO, tmp_path / "demo"))
    drift(bundle)
    assert runner.invoke(app, ["run", str(bundle)]).exit_code == 1

    updated = runner.invoke(app, ["run", str(bundle), "--update"])

    assert updated.exit_code == 0, updated.output
    assert updated.stdout.startswith(f"UPDATED {bundle}: {counts} interaction(s); replay run now matches.\n")
    again = runner.invoke(app, ["run", str(bundle)])
    assert again.exit_code == 0 and again.stdout.startswith(f"MATCH {bundle}"), again.output


def test_run_update_json_carries_the_counts(tmp_path: Path) -> None:
    bundle = record_sync(tmp_path / "compacts", AUTOCOMPACT_TURNS, settings=SMALL_CONTEXT)
    edit_settings(bundle, max_turns=1)  # the loop stops after its first call

    result = runner.invoke(app, ["run", str(bundle), "--update", "--json"])

    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.stdout)
    assert report["updated"] is True
    assert report["rewrite"] == {"kept": 1, "rerecorded": 0, "pruned": 2}
    (matched,) = json.loads(runner.invoke(app, ["run", str(bundle), "--json"]).stdout)
    assert matched["verdict"] == "match" and matched["rewrite"] is None


def test_run_update_of_a_live_bundle_that_needs_the_api_without_a_key_exits_2_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeModelServer(FakeModel(Scenario.from_list([DONE]))) as server:  # standing in for the API
        asyncio.run(record_bundle(tmp_path / "live", prompts=["hi"], api_key="sk-ant-test", base_url=server.url))
    bundle = tmp_path / "live"
    session = json.loads((bundle / "session.json").read_text())
    (bundle / "session.json").write_text(json.dumps({**session, "prompts": ["hello"]}))
    before = {p: p.read_bytes() for p in bundle.rglob("*") if p.is_file()}
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    result = runner.invoke(app, ["run", str(bundle), "--update"])

    assert_bad_input(result, f"Cannot update the live bundle {bundle}: request 1 differs", "ANTHROPIC_API_KEY")
    assert {p: p.read_bytes() for p in bundle.rglob("*") if p.is_file()} == before


def test_run_on_a_missing_bundle_exits_2_with_one_line(tmp_path: Path) -> None:
    assert_bad_input(runner.invoke(app, ["run", str(tmp_path / "nowhere")]), "nowhere does not exist")


def test_run_on_a_corrupt_cassette_exits_2_with_one_line_naming_it(tmp_path: Path) -> None:
    bundle = record_sync(tmp_path / "hello", [DONE])
    (bundle / "cassette.yaml").write_text("agent_replay_cassette: 1\ninteractions: [\n")

    assert_bad_input(runner.invoke(app, ["run", str(bundle)]), "cassette.yaml", "re-record")


def test_run_on_a_corrupt_session_file_exits_2(tmp_path: Path) -> None:
    bundle = record_sync(tmp_path / "hello", [DONE])
    (bundle / "session.json").write_text("{")

    assert_bad_input(runner.invoke(app, ["run", str(bundle)]), "session.json is not valid JSON")


def test_run_without_a_bundle_is_a_usage_error() -> None:
    result = runner.invoke(app, ["run"])
    assert result.exit_code == 2 and "Traceback" not in result.output


async def test_the_trace_text_is_the_same_across_runs_and_folders_and_reads_well(tmp_path: Path) -> None:
    bundle = tmp_path / "first" / "review"
    await record_bundle(
        bundle, prompts=[DEMO_PROMPT], scenario=DEMO_DIR / "scenario.yaml", workspace=DEMO_DIR / "workspace"
    )
    recorded = (bundle / "trace.txt").read_text()
    here = await run_bundle(bundle)
    moved = shutil.move(bundle, tmp_path / "second" / "elsewhere" / "review-moved")
    there = await run_bundle(Path(moved))

    assert here.matched and there.matched
    assert render_text(here.trace) == render_text(there.trace) == recorded
    lines = recorded.splitlines()
    assert lines[0] == "session: review"
    assert lines[1] == f'prompt 1: "{DEMO_PROMPT}"'
    assert "  pass 1: start" in lines
    assert "    tools batch 1 (concurrent): Read success, Read success, Grep success" in lines
    assert "  pass 2: next_turn" in lines
    assert "    tools batch 1 (serial): Write success" in lines
    assert lines[-1] == "  terminal: completed"


async def test_recording_the_same_session_in_two_folders_gives_the_same_trace_text(tmp_path: Path) -> None:
    for folder in ("one", "two"):
        await record_bundle(
            tmp_path / folder / "review",
            prompts=[DEMO_PROMPT],
            scenario=DEMO_DIR / "scenario.yaml",
            workspace=DEMO_DIR / "workspace",
        )
    assert (tmp_path / "one" / "review" / "trace.txt").read_text() == (
        tmp_path / "two" / "review" / "trace.txt"
    ).read_text()


def test_verify_with_two_jobs_re_executes_every_bundle_and_prints_a_table(tmp_path: Path) -> None:
    record_sync(tmp_path / "suite" / "hello", [DONE])
    record_sync(tmp_path / "suite" / "nested" / "compacts", AUTOCOMPACT_TURNS, settings=SMALL_CONTEXT)

    result = runner.invoke(app, ["verify", str(tmp_path / "suite"), "--jobs", "2"])

    assert result.exit_code == 0, result.output
    for header in ("bundle", "verdict", "passes", "requests", "seconds"):
        assert header in result.stdout
    assert result.stdout.count("MATCH") == 2
    assert "2 bundle(s): 2 match, 0 drift, 0 error." in result.stdout


def test_verify_searches_cassettes_by_default_and_exits_1_on_drift(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_sync(tmp_path / "cassettes" / "hello", [DONE])
    drifted = record_sync(tmp_path / "cassettes" / "compacts", AUTOCOMPACT_TURNS, settings=SMALL_CONTEXT)
    edit_settings(drifted, context_window=200_000)
    monkeypatch.chdir(tmp_path)

    result = runner.invoke(app, ["verify"])

    assert result.exit_code == 1, result.output
    assert "2 bundle(s): 1 match, 1 drift, 0 error." in result.stdout
    assert "DRIFT cassettes/compacts:" in result.stdout
    assert "autocompact boundary no longer happens" in result.stdout


def test_verify_json_prints_the_summaries(tmp_path: Path) -> None:
    record_sync(tmp_path / "hello", [DONE])

    result = runner.invoke(app, ["verify", str(tmp_path), "--json"])

    assert result.exit_code == 0
    (summary,) = json.loads(result.stdout)
    assert summary["verdict"] == "match" and summary["passes"] == 1 and summary["requests"] == 1


def test_verify_with_a_corrupt_bundle_exits_2_and_still_judges_the_others(tmp_path: Path) -> None:
    record_sync(tmp_path / "good", [DONE])
    bad = record_sync(tmp_path / "bad", [DONE])
    (bad / "cassette.yaml").write_text("not: [a cassette\n")

    result = runner.invoke(app, ["verify", str(tmp_path)])

    assert result.exit_code == 2
    assert "1 match, 0 drift, 1 error." in result.stdout
    assert_bad_input(result, "cassette.yaml")


def test_verify_with_no_bundles_or_a_missing_folder_or_bad_jobs_exits_2(tmp_path: Path) -> None:
    assert_bad_input(runner.invoke(app, ["verify", str(tmp_path)]), "No bundles below", "session.json")
    assert_bad_input(runner.invoke(app, ["verify", str(tmp_path / "nowhere")]), "nowhere does not exist")
    assert_bad_input(runner.invoke(app, ["verify", str(tmp_path), "--jobs", "0"]), "--jobs must be 1 or more")


LIBRARY = Path(__file__).resolve().parents[3] / "cassettes"


def test_run_fail_on_cache_break_exits_0_on_a_bundle_with_no_unexpected_break(tmp_path: Path) -> None:
    bundle = tmp_path / "pre-tool-hook-stops-the-loop"
    shutil.copytree(LIBRARY / bundle.name, bundle)

    result = runner.invoke(app, ["run", str(bundle), "--fail-on-cache-break"])
    as_json = runner.invoke(app, ["run", str(bundle), "--fail-on-cache-break", "--json"])

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"MATCH {bundle} ") and "CACHE BREAK" not in result.stdout
    assert as_json.exit_code == 0
    (report,) = json.loads(as_json.stdout)
    assert report["unexpected_cache_breaks"] == []


def test_a_cache_break_line_names_the_bundle_the_pass_the_path_and_the_cause() -> None:
    found = BreakReport("prompt 1 pass 3", CacheBreak(path="system[0].text", cause=BreakCause.SYSTEM_PROMPT_CHANGED))
    assert cache_break_line(Path("cassettes/x"), found) == (
        "CACHE BREAK cassettes/x prompt 1 pass 3: system[0].text (system prompt changed)"
    )


def test_verify_fail_on_cache_break_exits_0_when_no_bundle_breaks_the_cache(tmp_path: Path) -> None:
    record_sync(tmp_path / "hello", [DONE])

    result = runner.invoke(app, ["verify", str(tmp_path), "--fail-on-cache-break", "--json"])

    assert result.exit_code == 0, result.output
    (summary,) = json.loads(result.stdout)
    assert summary["cache_breaks"] == []


def test_run_fail_on_cache_break_exits_1_on_the_changed_system_prompt_and_names_the_break(tmp_path: Path) -> None:
    bundle = tmp_path / "cache-break-from-changed-system-prompt"
    shutil.copytree(LIBRARY / bundle.name, bundle)

    plain = runner.invoke(app, ["run", str(bundle)])
    failing = runner.invoke(app, ["run", str(bundle), "--fail-on-cache-break"])

    assert plain.exit_code == 0, plain.output  # the break is recorded behaviour: it matches
    assert failing.exit_code == 1, failing.output
    assert failing.stdout.splitlines()[1:] == [
        f"CACHE BREAK {bundle} prompt 2 pass 1: system[0].text (system prompt changed)"
    ]


def test_verify_fail_on_cache_break_passes_expected_breaks_and_fails_on_the_unexpected_one(tmp_path: Path) -> None:
    # An idle gap past the TTL, a microcompact after an hour and compactions break the cache as
    # the loop means to; only the changed system prompt is the loop's (or its user's) mistake.
    expected = ("cache-expires-after-idle", "microcompact-after-an-hour", "autocompact-boundary")
    for name in expected:
        shutil.copytree(LIBRARY / name, tmp_path / "expected" / name)
    shutil.copytree(LIBRARY / "cache-break-from-changed-system-prompt", tmp_path / "all" / "broken")
    shutil.copytree(tmp_path / "expected", tmp_path / "all" / "expected")

    passing = runner.invoke(app, ["verify", str(tmp_path / "expected"), "--fail-on-cache-break"])
    failing = runner.invoke(app, ["verify", str(tmp_path / "all"), "--fail-on-cache-break"])

    assert passing.exit_code == 0, passing.output
    assert failing.exit_code == 1, failing.output
    assert [line for line in failing.stdout.splitlines() if line.startswith("CACHE BREAK")] == [
        f"CACHE BREAK {tmp_path / 'all' / 'broken'} prompt 2 pass 1: system[0].text (system prompt changed)"
    ]


def test_update_rewrites_the_trace_files_of_a_bundle_recorded_before_the_cache_audit(tmp_path: Path) -> None:
    bundle = tmp_path / "demo"
    shutil.copytree(LIBRARY / "demo", bundle)
    (bundle / "trace.txt").write_text(
        "".join(line for line in (LIBRARY / "demo" / "trace.txt").open() if "cache:" not in line)
    )

    updated = runner.invoke(app, ["run", "--update", str(bundle)])

    assert updated.exit_code == 0, updated.output
    assert updated.stdout.splitlines() == [
        f"UPDATED {bundle}: its trace files are rewritten; replay run now matches.",
        "  trace.json and trace.txt rewritten in this replay's form of the trace (the cassette and the transcript "
        "already matched).",
    ]
    assert (bundle / "trace.txt").read_bytes() == (LIBRARY / "demo" / "trace.txt").read_bytes()
