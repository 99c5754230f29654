"""One rule sets a session up, for ``replay record``, `record_bundle` and the pytest plugin:
flags (explicit arguments) beat the scenario's ``prompts:``/``settings:``/``session:`` (or a
bundle's session.json), which beat the defaults; settings are overlaid field by field."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine import EngineSettings
from replay.cli.app import app
from replay.fake.scenario import Scenario, load_scenario
from replay.schema.options import SessionOptions
from replay.session.bundle import SCENARIO_FILE, BundleError, SessionSpec
from replay.session.recording import record_bundle
from replay.session.session_setup import resolve_setup
from tests.library_bundles import BUNDLES, SETUP_VARIETY

SCENARIO = """\
version: 1
prompts: [from the scenario]
settings: {model: claude-scenario, max_turns: 3, fallback_model: claude-fallback}
session: {env: {APP_MODE: scenario}}
turns:
  - content: [{text: Hello.}]
"""


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("bundle", BUNDLES, ids=[b.name for b in BUNDLES])
def test_every_library_scenario_records_its_bundle_byte_for_byte_through_the_cli(bundle: Path, tmp_path: Path) -> None:
    by_cli = tmp_path / bundle.name

    result = CliRunner().invoke(app, ["record", "--scenario", str(scenario_of(bundle)), "--out", str(by_cli)])

    assert result.exit_code == 0, result.output
    assert files(by_cli) == files(bundle)


# The command line calls `record_bundle` with the scenario file and nothing else, so recording
# every bundle both ways would record the library twice over for one comparison.
@pytest.mark.parametrize("bundle", SETUP_VARIETY, ids=[b.name for b in SETUP_VARIETY])
def test_record_bundle_from_a_scenario_file_writes_what_the_cli_writes(bundle: Path, tmp_path: Path) -> None:
    by_api = tmp_path / bundle.name

    asyncio.run(record_bundle(by_api, scenario=scenario_of(bundle)))

    assert files(by_api) == files(bundle)


def scenario_of(bundle: Path) -> Path:
    return bundle / SCENARIO_FILE


def test_the_library_is_discovered_not_listed() -> None:
    assert len(BUNDLES) >= 30 and all((b / SCENARIO_FILE).is_file() for b in BUNDLES)


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO)
    return path


def test_without_flags_the_scenario_sets_the_session_up(scenario_file: Path) -> None:
    setup = resolve_setup(scenario=load_scenario(scenario_file), scenario_path=scenario_file)

    assert setup.prompts == ("from the scenario",)
    assert (setup.settings.model, setup.settings.max_turns) == ("claude-scenario", 3)
    assert setup.settings.fallback_model == "claude-fallback"
    assert dict(setup.options.env) == {"APP_MODE": "scenario"}
    # What the scenario leaves out is the engine's default.
    assert setup.settings.context_window == EngineSettings().context_window


def test_a_flag_overlays_one_setting_and_keeps_the_scenarios_others(scenario_file: Path) -> None:
    setup = resolve_setup(
        scenario=load_scenario(scenario_file), scenario_path=scenario_file, overrides={"model": "claude-flag"}
    )

    assert (setup.settings.model, setup.settings.max_turns) == ("claude-flag", 3)
    assert setup.settings.fallback_model == "claude-fallback"


def test_an_unset_flag_changes_nothing(scenario_file: Path) -> None:
    setup = resolve_setup(scenario=load_scenario(scenario_file), scenario_path=scenario_file, overrides={"model": None})
    assert setup.settings.model == "claude-scenario"


def test_explicit_prompts_settings_and_options_replace_the_scenarios(scenario_file: Path) -> None:
    setup = resolve_setup(
        scenario=load_scenario(scenario_file),
        scenario_path=scenario_file,
        prompts=["mine"],
        settings=EngineSettings(max_turns=9),
        options=SessionOptions(env={"APP_MODE": "mine"}),
    )

    assert setup.prompts == ("mine",)
    assert (setup.settings.model, setup.settings.max_turns) == (EngineSettings().model, 9)
    assert dict(setup.options.env) == {"APP_MODE": "mine"}


def test_without_a_scenario_or_flags_the_defaults_hold() -> None:
    setup = resolve_setup(prompts=["hi"])
    assert (setup.settings, setup.options, setup.workspace) == (EngineSettings(), SessionOptions(), None)


def test_a_bundles_session_json_is_the_middle_source_too() -> None:
    spec = SessionSpec(prompts=("recorded",), settings=EngineSettings(max_turns=4))

    assert resolve_setup(spec=spec).settings.max_turns == 4
    overlaid = resolve_setup(spec=spec, overrides={"max_turns": 1}, prompts=["new"])
    assert (overlaid.prompts, overlaid.settings.max_turns) == (("new",), 1)


def test_the_workspace_beside_the_scenario_is_the_default_and_a_flag_wins(scenario_file: Path, tmp_path: Path) -> None:
    (tmp_path / "workspace").mkdir()
    scenario = load_scenario(scenario_file)

    assert resolve_setup(scenario=scenario, scenario_path=scenario_file).workspace == tmp_path / "workspace"
    mine = tmp_path / "mine"
    assert resolve_setup(scenario=scenario, scenario_path=scenario_file, workspace=mine).workspace == mine


def test_no_prompt_anywhere_is_refused_naming_the_scenario_file(tmp_path: Path) -> None:
    path = tmp_path / "quiet.yaml"
    path.write_text("version: 1\nturns: []\n")

    with pytest.raises(BundleError, match=r"quiet\.yaml lists no prompts .*--prompt TEXT"):
        resolve_setup(scenario=load_scenario(path), scenario_path=path)


def test_a_bad_setting_in_a_scenario_object_or_a_flag_is_refused() -> None:
    # (A scenario file's settings are checked when it is loaded, naming the file.)
    with pytest.raises(BundleError, match=r"The scenario: settings\.max_turnz is not a known field"):
        resolve_setup(scenario=Scenario(turns=(), prompts=("hi",), settings={"max_turnz": 1}))
    with pytest.raises(BundleError, match="max_turnz is not an engine setting"):
        resolve_setup(prompts=["hi"], overrides={"max_turnz": 1})


def test_a_scenario_object_without_a_file_resolves_the_same_way() -> None:
    scenario = Scenario(turns=(), prompts=("hi",), settings={"max_turns": 2})
    assert resolve_setup(scenario=scenario).settings.max_turns == 2
