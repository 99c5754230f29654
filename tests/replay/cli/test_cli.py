"""The ``replay`` command line, through typer's CliRunner."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from replay.cli.app import app
from replay.session.demo import DEMO_DIR

runner = CliRunner()


def test_demo_prints_the_conversation_and_the_trace_and_exits_0() -> None:
    result = runner.invoke(app, ["demo"])

    assert result.exit_code == 0, result.output
    assert "user: Review notes.md" in result.output
    assert "tool batch (concurrent): Read, Read, Grep" in result.output
    assert "tool batch (serial): Write" in result.output
    assert "pass 2: next_turn" in result.output
    assert "terminal: completed" in result.output
    assert "3 API calls" in result.output


def test_demo_never_changes_the_bundled_workspace() -> None:
    before = sorted(p.name for p in (DEMO_DIR / "workspace").iterdir())
    runner.invoke(app, ["demo"])
    assert sorted(p.name for p in (DEMO_DIR / "workspace").iterdir()) == before
    assert not (DEMO_DIR / "workspace" / "SUMMARY.md").exists()


def test_demo_with_a_malformed_scenario_says_which_file_and_exits_2(tmp_path: Path) -> None:
    (tmp_path / "scenario.yaml").write_text("version: 1\nturns:\n  - fault: dropp\n")
    result = runner.invoke(app, ["demo", "--scenario-dir", str(tmp_path)])

    assert result.exit_code == 2
    assert "scenario.yaml" in result.output and "dropp" in result.output
    assert "Traceback" not in result.output


def test_demo_with_a_missing_scenario_folder_exits_2_with_one_sentence(tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", "--scenario-dir", str(tmp_path / "nowhere")])

    assert result.exit_code == 2
    assert "nowhere" in result.output
    assert "Traceback" not in result.output


def test_the_public_surfaces_export_what_they_claim() -> None:
    import engine
    import replay

    for package in (engine, replay):
        for name in package.__all__:
            assert hasattr(package, name), f"{package.__name__}.{name} is in __all__ but missing"
