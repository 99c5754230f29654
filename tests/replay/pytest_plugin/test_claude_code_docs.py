"""The examples of docs/claude-code.md, "Testing your Claude Code set-up", are what runs: each
example's files are written, exactly as the page lists them, into a project run in a pytest
subprocess, against the pinned Claude Code CLI and the fake model on loopback."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[3] / "docs" / "claude-code.md"
SECTION = "## Testing your Claude Code set-up\n"
# A listing: a fenced block whose first line is a comment naming its path.
LISTING = re.compile(r"```(?:python|yaml)\n# (?P<path>[\w./-]+)\n(?P<body>.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Example:
    title: str
    files: dict[str, str]

    @property
    def tests(self) -> int:
        return sum(
            text.count("\ndef test_") for path, text in self.files.items() if Path(path).name.startswith("test_")
        )


def examples() -> list[Example]:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    found = []
    for part in section.split("\n### ")[1:]:
        title = part.splitlines()[0]
        files = {match["path"]: f"# {match['path']}\n{match['body']}" for match in LISTING.finditer(part)}
        found.append(Example(title, files))
    return found


EXAMPLES = examples()


def test_the_page_has_the_five_examples_each_with_a_test_and_a_scenario() -> None:
    assert [example.title for example in EXAMPLES] == [
        "A PreToolUse hook that blocks `rm -rf`",
        "A permission rule that denies writes outside `src/`",
        "A Stop hook that demands tests",
        "A `CLAUDE.md` instruction, checked by a scenario that reads it",
        "Three 529s, then the fallback model",
    ]
    for example in EXAMPLES:
        assert example.tests >= 1, example.title
        assert any(path.endswith(".yaml") for path in example.files), example.title


@pytest.mark.parametrize("example", EXAMPLES, ids=[example.title for example in EXAMPLES])
def test_the_example_passes_as_listed(example: Example, project: pytest.Pytester, claude_code_cache: Path) -> None:
    for path, text in example.files.items():
        target = project.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    outcome = project.runpytest_subprocess("tests", timeout=300)

    assert outcome.ret == 0, outcome.stdout.str()
    outcome.assert_outcomes(passed=example.tests)
