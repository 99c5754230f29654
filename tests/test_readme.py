"""The README's promises: two set-up commands first, CI running the second, examples that load, a
size a user reads, and links (README and docs/) that lead to files in the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from replay import Scenario

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


def test_the_readme_stays_short() -> None:
    assert len(README.encode()) < 15_000


PAGES = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    return {_slug(line.lstrip("#")) for line in text.splitlines() if re.match(r"#{1,6} ", line)}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_in_the_repository(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if ROOT not in resolved.parents and resolved != ROOT:
            broken.append(f"{target} (outside the repository)")
        elif not resolved.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_no_page_points_outside_the_repository(page: Path) -> None:
    text = page.read_text()
    for outside in ("../shared", "DESIGN.md", "shared folder"):
        assert outside not in text, f"{page.relative_to(ROOT)} mentions {outside!r}"
