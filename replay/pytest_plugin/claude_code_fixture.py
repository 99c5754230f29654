"""``claude_code``: the real Claude Code CLI, pinned, against a scenario, for a team testing its
Claude Code set-up (hooks, permission rules, ``CLAUDE.md``) offline — the model misbehaving on
cue. docs/claude-code.md, "Testing your Claude Code set-up".

    def test_the_hook_blocks_rm(claude_code):
        run = claude_code.run("Clean the build", scenario="rm-build.yaml", workspace="project")
        assert (run.workspace / "build").is_dir()

The CLI is found or installed once per test session (``claude_code_binary``; xdist workers
share the cache and its lock); an install that fails fails each test that runs it, with the
install's one sentence. Each run copies its workspace into the test's temp folder, with its own
empty ``HOME`` beside it: nothing the CLI sends or writes lands anywhere else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# Loaded with the plugin by every pytest run: the fake model and the CLI's code are imported
# only when the fixture is used (see the package's __init__).
if TYPE_CHECKING:
    from replay.claude_code.run import PermissionMode
    from replay.claude_code.scripted import ClaudeCodeRun
    from replay.fake.scenario import Scenario

__all__ = ["ClaudeCodeRunner", "claude_code", "claude_code_binary"]

# A run's default time limit: the CLI's own retries (529s, 429s) wait in real time.
RUN_TIMEOUT = 120.0


class ClaudeCodeRunner:
    """Runs the pinned CLI for one test; paths it is given are relative to the test file."""

    def __init__(self, binary: Path | str, *, test_folder: Path, tmp_path: Path) -> None:
        # The binary, or the sentence saying why it could not be installed.
        self._binary = binary
        self._test_folder = test_folder
        self._tmp_path = tmp_path
        self.runs: list[ClaudeCodeRun] = []

    def run(
        self,
        prompt: str,
        *,
        scenario: Scenario | str | PathLike[str],
        workspace: str | PathLike[str] | None = None,
        settings: Mapping[str, Any] | None = None,
        claude_md: str | None = None,
        model: str | None = None,
        max_turns: int | None = None,
        permission_mode: PermissionMode | str | None = None,
        allowed_tools: Sequence[str] = (),
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        timeout: float = RUN_TIMEOUT,
    ) -> ClaudeCodeRun:
        """Run ``claude -p PROMPT`` against ``scenario`` (a YAML file, or a `Scenario`) in a copy
        of ``workspace`` (a folder; an empty one by default), with ``settings`` as its
        ``.claude/settings.json`` and ``claude_md`` as its ``CLAUDE.md`` when given."""
        from replay.claude_code.run import ClaudeCodeRunError, PermissionMode
        from replay.claude_code.scripted import WorkspaceError, prepare_workspace, run_scenario
        from replay.fake.scenario import Scenario, ScenarioError, load_scenario

        if isinstance(self._binary, str):
            pytest.fail(self._binary, pytrace=False)
        mode = None if permission_mode is None else PermissionMode(permission_mode)
        # Each failure is one sentence, failed outside the except block (no chained traceback).
        failure: str | None = None
        try:
            script = scenario if isinstance(scenario, Scenario) else load_scenario(self._test_folder / scenario)
            folder = self._tmp_path / "claude_code" / f"run-{len(self.runs) + 1}"
            copied = prepare_workspace(
                folder / "workspace",
                source=None if workspace is None else self._test_folder / workspace,
                settings=settings,
                claude_md=claude_md,
            )
            home = folder / "home"
            home.mkdir()
            done = run_scenario(
                self._binary,
                prompt,
                script,
                workspace=copied,
                home=home,
                model=model,
                max_turns=max_turns,
                permission_mode=mode,
                allowed_tools=allowed_tools,
                args=args,
                env=env,
                timeout=timeout,
            )
        except (ScenarioError, WorkspaceError, ClaudeCodeRunError) as error:
            failure = str(error)
        if failure is not None:
            pytest.fail(failure, pytrace=False)
        self.runs.append(done)
        return done


@pytest.fixture(scope="session")
def claude_code_binary() -> Path | str:
    """The pinned ``claude`` binary, found or installed once per session; or, when that failed,
    the sentence saying why (each test that runs it fails with it)."""
    from replay.claude_code.install import ClaudeCodeInstallError, find_or_install_claude

    try:
        return find_or_install_claude()
    except ClaudeCodeInstallError as error:
        return str(error)


@pytest.fixture
def claude_code(request: pytest.FixtureRequest, claude_code_binary: Path | str, tmp_path: Path) -> ClaudeCodeRunner:
    """Runs the pinned Claude Code CLI against a scenario on loopback: ``claude_code.run(...)``."""
    return ClaudeCodeRunner(claude_code_binary, test_folder=request.path.parent, tmp_path=tmp_path)
