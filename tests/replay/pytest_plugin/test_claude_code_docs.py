"""The examples of docs/claude-code.md, "Testing your Claude Code set-up", are what runs: each
example's files are written, exactly as the page lists them, into a project run by pytest (in this
process), against the pinned Claude Code CLI and the fake model on loopback. The page's
recording example is recorded as the page says, with the fake model standing in for the API, and
then replayed offline, from its cassette alone."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[3] / "docs" / "claude-code.md"
SECTION = "## Testing your Claude Code set-up\n"
# A listing: a fenced block whose first line is a comment naming its path.
LISTING = re.compile(r"```(?:python|yaml|markdown)\n# (?P<path>[\w./-]+)\n(?P<body>.*?)```", re.DOTALL)
RECORDING_SECTION = "## Recording a real run, replaying it offline\n"


@dataclass(frozen=True)
class Example:
    title: str
    files: dict[str, str]

    @property
    def tests(self) -> int:
        return sum(
            text.count("\ndef test_") for path, text in self.files.items() if Path(path).name.startswith("test_")
        )


def section_of(title: str) -> str:
    return DOCS.read_text(encoding="utf-8").split(title, 1)[1].split("\n## ", 1)[0]


def examples() -> list[Example]:
    section = section_of(SECTION)
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

    outcome = project.runpytest_inprocess("tests")

    assert outcome.ret == 0, outcome.stdout.str()
    outcome.assert_outcomes(passed=example.tests)


# Stands in for the API while the page's recording example records: the model reads the issue
# and writes the label.
API_STAND_IN = """\
import pytest

from replay.fake.model import FakeModel
from replay.fake.scenario import Scenario
from replay.fake.server import FakeModelServer

TRIAGE = Scenario.from_list(
    [
        {"content": [{"tool_use": {"name": "Read", "input": {"file_path": "issue.md"}}}]},
        {"content": [{"tool_use": {"name": "Write", "input": {"file_path": "label.txt", "content": "bug\\n"}}}]},
        {"content": [{"text": "Labelled it a bug."}]},
    ]
)


@pytest.fixture
def replay_proxy_upstream():
    with FakeModelServer(FakeModel(TRIAGE)) as server:
        yield server.url
"""


def test_the_recording_example_records_once_then_replays_offline(
    project: pytest.Pytester, claude_code_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {m["path"]: f"# {m['path']}\n{m['body']}" for m in LISTING.finditer(section_of(RECORDING_SECTION))}
    assert sorted(files) == ["tests/claude_code/project/issue.md", "tests/claude_code/test_triage.py"]
    for path, text in files.items():
        (project.path / path).parent.mkdir(parents=True, exist_ok=True)
        (project.path / path).write_text(text, encoding="utf-8")
    stand_in = project.path / "tests" / "claude_code" / "conftest.py"
    stand_in.write_text(API_STAND_IN, encoding="utf-8")
    cassette = project.path / "tests" / "claude_code" / "cassettes" / "triage.yaml"

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-recording-key-0123456789")
    recording = project.runpytest_inprocess("tests/claude_code", "--record-mode=once")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    stand_in.unlink()  # nothing to answer now but the cassette
    replaying = project.runpytest_inprocess("tests/claude_code")

    assert recording.ret == 0, recording.stdout.str()
    assert replaying.ret == 0, replaying.stdout.str()
    replaying.assert_outcomes(passed=1)
    recorded = cassette.read_text(encoding="utf-8")
    assert str(project.path) not in recorded and "sk-ant-recording-key" not in recorded
    assert "<workspace>" in recorded and "Labelled it a bug." in recorded
