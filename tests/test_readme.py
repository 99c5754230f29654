"""The README's promises: two set-up commands first, CI running the second, and examples that
load."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from replay.fake.scenario import Scenario

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _commands() -> list[str]:
    first_block = README.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in first_block.splitlines() if line and not line.startswith("#")]


def test_the_readme_opens_with_exactly_two_commands() -> None:
    assert README.index("```bash") < README.index("## ")
    commands = _commands()
    assert len(commands) == 2
    assert commands[0].endswith("replay verify")
    assert "pytest" in commands[1]


def test_ci_runs_the_readmes_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert _commands()[1].replace("pip install -e", "pip install -q -e") in ci


def test_the_readmes_scenario_example_is_a_valid_script() -> None:
    block = re.search(r"```yaml\n(.*?)```", README, re.DOTALL)
    assert block is not None
    document = yaml.safe_load(block.group(1))
    assert len(Scenario.from_list(document["turns"]).turns) == 5
