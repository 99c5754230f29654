"""``claude_code``: the real Claude Code CLI, pinned, against a scenario, for a team testing its
Claude Code set-up (hooks, permission rules, ``CLAUDE.md``) offline — the model misbehaving on
cue. docs/claude-code.md, "Testing your Claude Code set-up".

    def test_the_hook_blocks_rm(claude_code):
        run = claude_code.run("Clean the build", scenario="rm-build.yaml", workspace="project")
        assert (run.workspace / "build").is_dir()

Or through ``replay proxy``, a run recorded into a cassette once (from the live API, or from a
scenario) and replayed from it offline with the session's ``--record-mode``:

    def test_the_hook_blocks_rm_live(claude_code):
        run = claude_code.run("Clean the build", cassette="clean-build", workspace="project")

The CLI is found or installed once per test session (``claude_code_binary``; xdist workers
share the cache and its lock); an install that fails fails each test that runs it, with the
install's one sentence. Each run copies its workspace into the test's temp folder, with its own
empty ``HOME`` beside it: nothing the CLI sends or writes lands anywhere else but a cassette the
test names.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest

from replay.network_guard import NetworkGuard

# Loaded with the plugin by every pytest run: the fake model and the CLI's code are imported
# only when the fixture is used (see the package's __init__).
if TYPE_CHECKING:
    from replay.cassette import RecordMode
    from replay.claude_code.run import ClaudeRunOptions, PermissionMode
    from replay.claude_code.scripted import ClaudeCodeRun
    from replay.fake.scenario import Scenario

__all__ = ["ClaudeCodeRunner", "claude_code", "claude_code_binary"]

# A run's default time limit: the CLI's own retries (529s, 429s) wait in real time.
RUN_TIMEOUT = 120.0


class ClaudeCodeRunner:
    """Runs the pinned CLI for one test; paths it is given are relative to the test file."""

    def __init__(
        self,
        binary: Path | str,
        *,
        test_folder: Path,
        tmp_path: Path,
        upstream: str,
        record_mode: RecordMode | None = None,
        cassette_dir: str = "cassettes",
        network_guard: NetworkGuard | None = None,
    ) -> None:
        # The binary, or the sentence saying why it could not be installed.
        self._binary = binary
        self._test_folder = test_folder
        self._tmp_path = tmp_path
        # For runs through replay proxy: the session's record mode, where cassettes are, and
        # where a recording without a scenario goes (the live API unless a test overrides it).
        self._record_mode = record_mode
        self._cassette_dir = cassette_dir
        self._upstream = upstream
        self._network_guard = network_guard
        self.runs: list[ClaudeCodeRun] = []

    def run(
        self,
        prompt: str,
        *,
        scenario: Scenario | str | PathLike[str] | None = None,
        cassette: str | None = None,
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
        """Run ``claude -p PROMPT`` against ``scenario`` (a YAML file, or a `Scenario`), or through
        ``replay proxy`` serving ``cassette`` (named as the replay fixtures name theirs: in
        ``cassettes/`` beside the test), in a copy of ``workspace`` (a folder; an empty one by
        default), with ``settings`` as its ``.claude/settings.json`` and ``claude_md`` as its
        ``CLAUDE.md`` when given. With both, the scenario is what a recording records."""
        from replay.cassette import CassetteError
        from replay.claude_code.run import ClaudeCodeRunError, ClaudeRunOptions, PermissionMode
        from replay.claude_code.scripted import WorkspaceError, prepare_workspace, run_scenario
        from replay.fake.model import FakeModel
        from replay.fake.scenario import Scenario, ScenarioError, load_scenario
        from replay.fake.server import FakeModelServer

        if isinstance(self._binary, str):
            pytest.fail(self._binary, pytrace=False)
        if scenario is None and cassette is None:
            pytest.fail(
                "claude_code.run needs a scenario= (the scripted model) or a cassette= (a recorded run).", pytrace=False
            )
        mode = None if permission_mode is None else PermissionMode(permission_mode)
        # Each failure is one sentence, failed outside the except block (no chained traceback).
        failure: str | None = None
        try:
            script = (
                scenario
                if isinstance(scenario, Scenario) or scenario is None
                else load_scenario(self._test_folder / scenario)
            )
            folder = self._tmp_path / "claude_code" / f"run-{len(self.runs) + 1}"
            copied = prepare_workspace(
                folder / "workspace",
                source=None if workspace is None else self._test_folder / workspace,
                settings=settings,
                claude_md=claude_md,
            )
            home = folder / "home"
            home.mkdir()
            options = ClaudeRunOptions(
                home=home,
                model=model,
                max_turns=max_turns,
                permission_mode=mode,
                allowed_tools=allowed_tools,
                args=args,
                env=env,
                timeout=timeout,
            )
            if cassette is not None and script is not None:  # recorded from the scenario
                with FakeModelServer(FakeModel(script)) as server:
                    done = self._through_proxy(prompt, cassette, copied, server.url, options)
            elif cassette is not None:
                done = self._through_proxy(prompt, cassette, copied, self._upstream, options)
            elif script is not None:
                done = run_scenario(self._binary, prompt, script, workspace=copied, **options)
        except (ScenarioError, WorkspaceError, ClaudeCodeRunError, CassetteError) as error:
            failure = str(error)
        if failure is not None:
            pytest.fail(failure, pytrace=False)
        self.runs.append(done)
        if done.misses:
            pytest.fail(done.misses[0], pytrace=False)
        return done

    def _through_proxy(
        self, prompt: str, cassette: str, workspace: Path, upstream: str, options: ClaudeRunOptions
    ) -> ClaudeCodeRun:
        from replay.cassette import RecordMode
        from replay.claude_code.recorded import run_recorded
        from replay.loopback import is_loopback
        from replay.pytest_plugin.options import RECORD_HINT, locate_cassette

        path = locate_cassette(self._test_folder, cassette, cassette_dir=self._cassette_dir).path
        mode = self._record_mode or RecordMode.NONE
        if mode is RecordMode.NONE and not path.exists():
            pytest.fail(
                f"Cassette {path} does not exist and record mode 'none' never records. {RECORD_HINT}", pytrace=False
            )
        records = mode is not RecordMode.NONE and (mode is not RecordMode.ONCE or not path.exists())
        env = dict(options.get("env") or {})
        if records and not is_loopback(urlsplit(upstream).hostname):
            # A live recording: the test runner's key goes to the CLI (the cassette's headers are
            # scrubbed), and the proxy may reach the API through the plugin's network guard.
            key = os.environ.get("ANTHROPIC_API_KEY")
            if not key:
                pytest.fail(
                    f"Recording {path} from {upstream} needs ANTHROPIC_API_KEY in the environment "
                    "(or give claude_code.run a scenario= to record from).",
                    pytrace=False,
                )
            env.setdefault("ANTHROPIC_API_KEY", key)
            if self._network_guard is not None:
                self._network_guard.allow_remote = True
        return run_recorded(
            self._binary, prompt, path, workspace=workspace, mode=mode, upstream=upstream, **{**options, "env": env}
        )


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
def claude_code(
    request: pytest.FixtureRequest,
    pytestconfig: pytest.Config,
    claude_code_binary: Path | str,
    replay_proxy_upstream: str,
    tmp_path: Path,
    _replay_network_guard: NetworkGuard | None,
) -> ClaudeCodeRunner:
    """Runs the pinned Claude Code CLI against a scenario on loopback, or through ``replay proxy``
    and a cassette: ``claude_code.run(...)``."""
    from replay.pytest_plugin.options import PluginOptions

    options = PluginOptions.of(pytestconfig)
    return ClaudeCodeRunner(
        claude_code_binary,
        test_folder=request.path.parent,
        tmp_path=tmp_path,
        record_mode=options.mode,
        cassette_dir=options.cassette_dir,
        upstream=replay_proxy_upstream,
        network_guard=_replay_network_guard,
    )
