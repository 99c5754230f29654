"""Accepting new behaviour (``run_bundle(update=True)``): a drifted bundle is re-recorded from its
first divergence and converges — the next run is a MATCH — and the splice is exactly what a
full re-recording of the same session gives."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from replay.cassette import load_cassette
from replay.fake.model import FakeModel
from replay.fake.scenario import Scenario
from replay.fake.server import FakeModelServer
from replay.session.bundle import BundleError, load_bundle
from replay.session.recording import record_bundle
from replay.session.runner import Verdict, run_bundle

LIBRARY = Path(__file__).resolve().parents[3] / "cassettes"
BUNDLE_FILES = ("cassette.yaml", "transcript.jsonl", "trace.json", "trace.txt", "session.json", "scenario.yaml")


def library_copy(tmp_path: Path, name: str = "demo") -> Path:
    return Path(shutil.copytree(LIBRARY / name, tmp_path / name))


def edit_session(bundle: Path, edit: Callable[[dict], None]) -> None:
    """Change session.json as a user would: load, edit, write it back."""
    path = bundle / "session.json"
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def fewer_turns(bundle: Path) -> None:
    edit_session(bundle, lambda d: d["settings"].update(max_turns=1))


def another_prompt(bundle: Path) -> None:
    edit_session(bundle, lambda d: d.update(prompts=["List the open TODOs in notes.md."]))


def a_file_the_model_reads_changes(bundle: Path) -> None:
    (bundle / "workspace" / "notes.md").write_text("# Release notes draft\n\n- TODO: nothing else.\n")


def grep_removed(bundle: Path) -> None:
    edit_session(bundle, lambda d: d.update(tools=[t for t in d["tools"] if t != "Grep"]))


def files(bundle: Path) -> dict[str, bytes]:
    return {str(p.relative_to(bundle)): p.read_bytes() for p in sorted(bundle.rglob("*")) if p.is_file()}


# The demo makes three requests: three reads at once, a write, the answer.
@pytest.mark.parametrize(
    ("drift", "kept", "rerecorded", "pruned"),
    [
        (fewer_turns, 1, 0, 2),  # the loop stops after its first call: nothing new, two pruned
        (another_prompt, 0, 3, 3),  # the first request differs
        (a_file_the_model_reads_changes, 1, 2, 2),  # the request after the reads differs
        (grep_removed, 0, 3, 3),  # the tools of the first request differ
    ],
)
async def test_update_rerecords_from_the_first_divergence_and_the_next_run_matches(
    tmp_path: Path, drift: Callable[[Path], None], kept: int, rerecorded: int, pruned: int
) -> None:
    bundle = library_copy(tmp_path)
    drift(bundle)
    assert (await run_bundle(bundle)).verdict is Verdict.DRIFT

    report = await run_bundle(bundle, update=True)

    assert report.updated and report.rewrite is not None
    assert report.rewrite.to_json() == {"kept": kept, "rerecorded": rerecorded, "pruned": pruned}
    assert len(load_cassette(bundle / "cassette.yaml").interactions) == kept + rerecorded
    again = await run_bundle(bundle)
    assert again.verdict is Verdict.MATCH, again.differences
    assert [p.name for p in tmp_path.iterdir()] == ["demo"]  # no staging folder or lock left


@pytest.mark.parametrize("drift", [fewer_turns, another_prompt, a_file_the_model_reads_changes])
async def test_the_update_is_byte_identical_to_a_full_rerecording_of_the_same_session(
    tmp_path: Path, drift: Callable[[Path], None]
) -> None:
    bundle = library_copy(tmp_path / "updated")
    drift(bundle)
    await run_bundle(bundle, update=True)

    spec = load_bundle(bundle).spec
    full = tmp_path / "full" / "demo"
    await record_bundle(
        full,
        prompts=spec.prompts,
        scenario=bundle / "scenario.yaml",
        workspace=bundle / "workspace",
        settings=spec.settings,
        seed=spec.seed,
        options=spec.options,
    )

    assert files(bundle) == files(full)


async def test_a_bundle_that_matches_is_not_touched(tmp_path: Path) -> None:
    bundle = library_copy(tmp_path)
    before, inode = files(bundle), bundle.stat().st_ino

    report = await run_bundle(bundle, update=True)

    assert report.verdict is Verdict.MATCH and not report.updated and report.rewrite is None
    assert files(bundle) == before and bundle.stat().st_ino == inode


def without_the_cache_audit(bundle: Path) -> None:
    """The bundle's trace files as a replay before the cache audit wrote them."""
    trace = json.loads((bundle / "trace.json").read_text())
    for prompt in trace["prompts"]:
        for entry in prompt["before"]:
            entry.pop("cache", None)
        for trace_pass in prompt["passes"]:
            trace_pass["model_call"].pop("usage", None)
            for request in trace_pass["requests"]:
                request.pop("cache", None)
    (bundle / "trace.json").write_text(json.dumps(trace, indent=2, ensure_ascii=False) + "\n")
    text = (bundle / "trace.txt").read_text().splitlines(keepends=True)
    (bundle / "trace.txt").write_text("".join(line for line in text if not line.lstrip().startswith("cache")))


async def test_a_bundle_whose_trace_predates_the_cache_audit_gains_it_and_keeps_its_recording(
    tmp_path: Path,
) -> None:
    current = files(LIBRARY / "demo")
    bundle = library_copy(tmp_path)
    without_the_cache_audit(bundle)
    assert (await run_bundle(bundle)).verdict is Verdict.MATCH  # an older trace is not drift

    report = await run_bundle(bundle, update=True)

    assert report.verdict is Verdict.MATCH and report.updated and report.rewrite is None
    assert report.differences == [
        "trace.json and trace.txt rewritten in this replay's form of the trace (the cassette and the transcript "
        "already matched)."
    ]
    assert files(bundle) == current
    assert [p.name for p in tmp_path.iterdir()] == ["demo"]  # no staging folder or lock left


async def test_the_bundles_own_files_are_kept_and_only_the_recording_is_rewritten(tmp_path: Path) -> None:
    bundle = library_copy(tmp_path)
    another_prompt(bundle)
    before = files(bundle)

    await run_bundle(bundle, update=True)

    after = files(bundle)
    kept = [name for name in before if name.startswith("workspace/") or name in ("session.json", "scenario.yaml")]
    assert {name: after[name] for name in kept} == {name: before[name] for name in kept}
    assert all(after[name] != before[name] for name in ("cassette.yaml", "transcript.jsonl", "trace.json"))


async def test_a_secret_planted_in_the_bundle_since_its_recording_never_reaches_the_updated_bundle(
    tmp_path: Path,
) -> None:
    anthropic_key = "sk-ant-api03-" + "Zx9" * 30 + "AA"
    aws_secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    bundle = library_copy(tmp_path)
    (bundle / "workspace" / "notes.md").write_text(f"# Notes\n- TODO: rotate {anthropic_key}\n")
    (bundle / "workspace" / ".env").write_text(f"AWS_SECRET_ACCESS_KEY={aws_secret}\n")
    edit_session(bundle, lambda d: d.update(prompts=[f"Use the key {anthropic_key} to review notes.md."]))

    report = await run_bundle(bundle, update=True)

    assert report.updated
    for name, data in files(bundle).items():
        for secret in (anthropic_key, aws_secret, anthropic_key[:40]):
            assert secret.encode() not in data, f"{name} holds a planted secret"
    assert (await run_bundle(bundle)).verdict is Verdict.MATCH


async def test_a_session_that_is_not_deterministic_is_not_updated_and_nothing_is_written(tmp_path: Path) -> None:
    # Each run reads new random bytes: the re-recorded bundle cannot replay to a MATCH.
    random_read = {"tool_use": {"name": "Bash", "input": {"command": "od -An -N16 -tx1 /dev/urandom"}}}
    turns = [{"content": [random_read]}, {"content": [{"text": "Done."}]}]
    bundle = tmp_path / "random"
    await record_bundle(bundle, prompts=["read some noise"], scenario=Scenario.from_list(turns))
    before = files(bundle)

    report = await run_bundle(bundle, update=True)

    assert report.verdict is Verdict.DRIFT and not report.updated
    assert report.differences[-1].startswith("Not updated: the re-recorded bundle does not replay to a MATCH (")
    assert files(bundle) == before
    assert [p.name for p in tmp_path.iterdir()] == ["random"]  # no staging folder or lock left


async def test_a_bundle_without_its_scenario_can_prune_but_not_record(tmp_path: Path) -> None:
    bundle = library_copy(tmp_path)
    (bundle / "scenario.yaml").unlink()
    another_prompt(bundle)
    before = files(bundle)

    with pytest.raises(BundleError) as refused:
        await run_bundle(bundle, update=True)

    assert str(refused.value) == (
        f"Cannot update the bundle {bundle}: request 1 differs from its cassette, and recording from there needs "
        "its scenario.yaml, which is missing; restore it, or re-record the bundle. Nothing was written."
    )
    assert files(bundle) == before
    edit_session(
        bundle, lambda d: d.update(prompts=json.loads((LIBRARY / "demo" / "session.json").read_text())["prompts"])
    )
    fewer_turns(bundle)
    report = await run_bundle(bundle, update=True)
    assert report.rewrite is not None and report.rewrite.to_json() == {"kept": 1, "rerecorded": 0, "pruned": 2}


async def test_a_scenario_that_runs_out_while_updating_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    bundle = library_copy(tmp_path)
    scenario = bundle / "scenario.yaml"
    # The demo's last turn (the answer after the write) is gone: re-recorded from request 1, the
    # session needs it.
    text = scenario.read_text()
    scenario.write_text(text[: text.rindex("  - content:")])
    another_prompt(bundle)
    before = files(bundle)

    with pytest.raises(BundleError) as refused:
        await run_bundle(bundle, update=True)

    message = str(refused.value)
    assert message.startswith(f"{scenario} ran out of turns: it has 2 turns, but request 3 to the model needed turn 3")
    assert message.endswith(f"Nothing was written to {bundle}.")
    assert files(bundle) == before
    assert [p.name for p in tmp_path.iterdir()] == ["demo"]


# --- live bundles -------------------------------------------------------------------------------

ANSWER = {"content": [{"text": "Hello."}]}


@pytest.fixture
def live_bundle(tmp_path: Path) -> Path:
    """A live bundle of two prompts, recorded against a fake model server on loopback standing in
    for the API."""
    bundle = tmp_path / "live"
    with FakeModelServer(FakeModel(Scenario.from_list([ANSWER, ANSWER]))) as server:
        asyncio.run(record_bundle(bundle, prompts=["hi", "hi again"], api_key="sk-ant-test-key", base_url=server.url))
    return bundle


def test_a_live_bundle_that_needs_the_api_without_a_key_is_refused_and_untouched(
    live_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    edit_session(live_bundle, lambda d: d.update(prompts=["hi", "something else"]))
    before = files(live_bundle)

    with pytest.raises(BundleError) as refused:
        asyncio.run(run_bundle(live_bundle, update=True))

    assert str(refused.value) == (
        f"Cannot update the live bundle {live_bundle}: request 2 differs from its cassette, and recording from "
        "there needs the real API; set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another endpoint). "
        "Nothing was written."
    )
    assert files(live_bundle) == before


def test_a_live_bundle_that_only_prunes_needs_no_key(live_bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    edit_session(live_bundle, lambda d: d.update(prompts=["hi"]))

    report = asyncio.run(run_bundle(live_bundle, update=True))

    assert report.rewrite is not None and report.rewrite.to_json() == {"kept": 1, "rerecorded": 0, "pruned": 1}
    assert asyncio.run(run_bundle(live_bundle)).verdict is Verdict.MATCH


def test_a_live_bundle_with_a_key_records_from_its_divergence_against_the_api(
    live_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edit_session(live_bundle, lambda d: d.update(prompts=["hi", "something else"]))
    with FakeModelServer(FakeModel(Scenario.from_list([ANSWER]))) as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        report = asyncio.run(run_bundle(live_bundle, update=True))
        sent = api.fake_model.requests

    assert report.rewrite is not None and report.rewrite.to_json() == {"kept": 1, "rerecorded": 1, "pruned": 1}
    assert len(sent) == 1 and "something else" in json.dumps(sent[0].json["messages"][-1])  # the first was kept
    assert asyncio.run(run_bundle(live_bundle)).verdict is Verdict.MATCH
