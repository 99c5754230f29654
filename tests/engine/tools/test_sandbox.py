"""The tool sandbox, end to end: what the tools of a replayed session can and cannot reach.

What it guarantees. The file tools (Read, Write, Edit, Glob, Grep) touch nothing outside the
workspace: `..`, absolute paths and symbolic links that lead out are refused with a message.
Bash runs with the workspace as its working directory, under a timeout (EngineSettings.
bash_timeout_s, 120 s by default), with its output bounded (bash_max_output_chars) and with an
environment built from an allowlist (PATH, HOME, LANG, LC_*, TERM, TMPDIR, CLAUDE_PROJECT_DIR,
the session's `env`); in a replay, proxy variables point at a closed loopback port. Command
hooks get the same environment. Bash is a shell, not a filesystem jail: `echo x > ../outside.txt`
works. What keeps a replay harmless is where it runs, a temp copy of the bundle's workspace, so
the bundle itself is never modified; a command that climbs further can reach whatever the user
running the replay can.

The tools' own unit tests (test_read.py, test_bash.py, ...) check each refusal in isolation;
here the refusals come out of a real recording and replay of a bundle.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from engine import EngineSettings
from engine.tools import ToolUseContext
from replay.fake.scenario import Scenario
from replay.schema.options import SessionOptions
from replay.session.bundle import SessionSpec, load_bundle
from replay.session.recording import record_bundle
from replay.session.runner import run_bundle
from replay.session.session_run import replay_bundle
from tests.engine.tools.network_probe import FETCH_COMMAND

OUTSIDE = "Path '{}' is outside the workspace; tools may only touch files inside it."


def tool_use(name: str, **tool_input: Any) -> dict[str, Any]:
    return {"tool_use": {"name": name, "input": tool_input}}


BASH_ESCAPE = "pwd -P && echo x > ../outside.txt && ln -s ../outside.txt link.txt && ls .."
ESCAPES = [
    # One batch of attempts with the file tools.
    {
        "content": [
            {"text": "Let me look around."},
            tool_use("Write", file_path="../outside.txt", content="written by Write"),
            tool_use("Read", file_path="/etc/passwd"),
            tool_use("Glob", pattern="../*"),
            tool_use("Glob", pattern="*", path=".."),
            tool_use("Grep", pattern="root", path="/"),
        ]
    },
    # Bash can write outside the workspace; the link it makes points there.
    {"content": [tool_use("Bash", command=BASH_ESCAPE)]},
    {"content": [tool_use("Edit", file_path="link.txt", old_string="x", new_string="pwned")]},
    {"content": [tool_use("Read", file_path="link.txt")]},
    {"content": [tool_use("Bash", command="cat ../outside.txt")]},
    {"content": [{"text": "Done."}]},
]
ESCAPE_RESULTS = [
    OUTSIDE.format("../outside.txt"),
    OUTSIDE.format("/etc/passwd"),
    "Glob pattern '../*' must be relative and must not contain '..'; pass the directory to search as `path` and a "
    "pattern like '**/*.py'.",
    OUTSIDE.format(".."),
    OUTSIDE.format("/"),
    # The replay's temp workspace is the working directory (it is what the transcript calls
    # <workspace>), and its parent is the replay's temp folder, not the bundle.
    "<workspace>\noutside.txt\nsession\nworkspace",
    "Path 'link.txt' leads through a symbolic link to a place outside the workspace; tools may only touch files "
    "inside it.",
    "Path 'link.txt' leads through a symbolic link to a place outside the workspace; tools may only touch files "
    "inside it.",
    "x",
]


def tool_results(transcript: str) -> list[str]:
    """The text of every tool_result in a transcript, in order."""
    results = []
    for line in transcript.splitlines():
        content = json.loads(line).get("message", {}).get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result":
                results.append(block["content"] if isinstance(block["content"], str) else json.dumps(block["content"]))
    return results


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry below ``folder`` with a hash of what it holds (links by their target)."""
    entries = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        if path.is_symlink():
            entries[key] = "link:" + str(path.readlink())
        elif path.is_file():
            entries[key] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            entries[key] = "folder"
    return entries


@pytest.fixture(scope="module")
def escapes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("escapes")
    workspace = root / "workspace"
    workspace.mkdir()
    (workspace / "notes.md").write_text("notes\n")
    scenario = Scenario.from_list(ESCAPES)
    asyncio.run(record_bundle(root / "bundle", prompts=["escape"], scenario=scenario, workspace=workspace))
    return root / "bundle"


@pytest.fixture
def bundle(escapes: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "bundles" / "escapes"
    shutil.copytree(escapes, copy, symlinks=True)
    return copy


def test_a_replay_refuses_every_file_tool_path_out_of_the_workspace(bundle: Path) -> None:
    run = asyncio.run(replay_bundle(bundle))

    assert tool_results(run.transcript) == ESCAPE_RESULTS
    assert run.transcript == (bundle / "transcript.jsonl").read_text()
    assert str(bundle) not in run.transcript


def test_a_replay_modifies_nothing_in_the_bundle_nor_beside_it(bundle: Path) -> None:
    before = snapshot(bundle.parent)

    report = asyncio.run(run_bundle(bundle))

    assert report.matched, report.differences
    assert snapshot(bundle.parent) == before
    assert not (bundle / "workspace" / "link.txt").exists()
    assert not (bundle / "outside.txt").exists() and not (bundle.parent / "outside.txt").exists()


def test_recording_ran_in_a_temp_copy_too(escapes: Path) -> None:
    # The recording's Bash wrote ../outside.txt and link.txt; neither is in the bundle.
    assert sorted(p.name for p in (escapes / "workspace").iterdir()) == ["notes.md"]
    assert sorted(p.name for p in escapes.parent.iterdir()) == ["bundle", "workspace"]


# ---------------------------------------------------------------------------------------------
# Bash: timeout, bounded output, environment

SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-sandbox-test-key",
    "MY_ANTHROPIC_CREDENTIAL": "sk-ant-api03-sandbox-unlisted-name",
    "ANTHROPIC_AUTH_TOKEN": "auth-token-sandbox-1234",
    "GH_TOKEN": "ghp_sandbox1234567890",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-sandbox-1234",
    "DB_PASSWORD": "hunter2-sandbox",
}
BOUNDED = [
    {"content": [tool_use("Bash", command="echo started; sleep 30")]},
    {"content": [tool_use("Bash", command="yes 0123456789 | head -c 100000")]},
    {
        "content": [
            tool_use(
                "Bash",
                command=f'printenv {" ".join(SECRETS)} SANDBOX_UNLISTED; echo "exit=$?"; printenv SANDBOX_KEPT',
            )
        ]
    },
    {"content": [{"text": "Done."}]},
]
LIMITS = EngineSettings(bash_timeout_s=0.3, bash_max_output_chars=60)


def test_the_default_timeout_is_120_seconds_and_a_session_keeps_its_own() -> None:
    assert EngineSettings().bash_timeout_s == 120.0
    assert ToolUseContext(workspace_root=Path("."), session_dir=Path(".")).bash_timeout_s == 120.0
    spec = SessionSpec(prompts=("p",), settings=LIMITS)
    loaded = SessionSpec.from_json(spec.to_json(), source=Path("session.json")).settings
    assert (loaded.bash_timeout_s, loaded.bash_max_output_chars) == (0.3, 60)


async def test_bash_in_a_replay_is_timed_out_bounded_and_sees_no_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SANDBOX_UNLISTED", "an ordinary setting nobody named")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    bundle = await record_bundle(
        tmp_path / "bundle",
        prompts=["run"],
        scenario=Scenario.from_list(BOUNDED),
        workspace=workspace,
        settings=LIMITS,
        options=SessionOptions(env={"SANDBOX_KEPT": "an ordinary setting"}),
    )
    assert load_bundle(bundle.path).spec.settings.bash_timeout_s == 0.3

    run = await replay_bundle(bundle.path)

    assert tool_results(run.transcript) == [
        "started\nCommand timed out after 0.3 seconds and was killed.",
        ("0123456789\n" * 6)[:60]
        + "\n\n[Output truncated: the command printed more than 60 characters; only the first ones are shown.]",
        "exit=1\nan ordinary setting",
    ]
    assert run.transcript == bundle.transcript_path.read_text()
    files = [run.transcript, *(p.read_text() for p in bundle.path.glob("*.*"))]
    for value in SECRETS.values():
        assert not any(value in text for text in files), value


# ---------------------------------------------------------------------------------------------
# The environment of Bash and command hooks, and the network, in a recorded and replayed session

# Each command lists the names in its environment beyond the allowlist, the engine's own and the
# session's `env` (none, whatever the machine), then what it sees of the session and the proxy.
ALLOWED = r"PATH|HOME|LANG|LC_.*|TERM|TMPDIR|PWD|OLDPWD|SHLVL|_|CLAUDE_PROJECT_DIR|APP_MODE|[A-Za-z]+_(proxy|PROXY)"
LIST_ENV = (
    f"echo \"unlisted: [$(env -0 | cut -z -d= -f1 | tr '\\0' '\\n' | grep -Exv '{ALLOWED}' | sort | tr '\\n' ' ')]\"; "
    'echo "APP_MODE=$APP_MODE https_proxy=$https_proxy HTTP_PROXY=$HTTP_PROXY NO_PROXY=[$NO_PROXY]"; '
    'echo "workspace: $([ "$CLAUDE_PROJECT_DIR" = "$PWD" ] && echo the working directory)"'
)
SEEN = (
    "unlisted: []\n"
    "APP_MODE=test https_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 NO_PROXY=[]\n"
    "workspace: the working directory"
)
ENVIRONMENT = [
    {"content": [tool_use("Bash", command=LIST_ENV)]},
    {"content": [tool_use("Bash", command=FETCH_COMMAND)]},
    {"content": [{"text": "Done."}]},
]
# A post-tool hook exiting 2: what it prints on stderr goes back to the model with the result.
HOOK = {"post_tool_use": [{"command": f"{{ {LIST_ENV}; }} >&2; exit 2", "matcher": "Bash"}]}


@pytest.fixture(scope="module")
def environment_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("environment")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("MY_ANTHROPIC_CREDENTIAL", "sk-ant-api03-sandbox-unlisted-name")
        monkeypatch.setenv("SANDBOX_UNLISTED", "an ordinary setting nobody named")
        options = SessionOptions.from_mapping({"env": {"APP_MODE": "test"}, "hooks": HOOK})
        scenario = Scenario.from_list(ENVIRONMENT)
        asyncio.run(record_bundle(root / "bundle", prompts=["look"], scenario=scenario, options=options))
    return root / "bundle"


def test_bash_and_hooks_see_only_the_allowlist_the_session_env_and_proxies_that_point_nowhere(
    environment_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_ANTHROPIC_CREDENTIAL", "sk-ant-api03-sandbox-unlisted-name")

    run = asyncio.run(replay_bundle(environment_bundle))

    feedback = f"\n\nPostToolUse hook feedback:\n{SEEN}"
    assert tool_results(run.transcript)[0] == SEEN + feedback
    assert run.transcript == (environment_bundle / "transcript.jsonl").read_text()
    assert "sk-ant-api03-sandbox-unlisted-name" not in run.transcript


def test_a_replayed_command_cannot_reach_a_remote_host_it_goes_to_the_closed_proxy(environment_bundle: Path) -> None:
    run = asyncio.run(replay_bundle(environment_bundle))

    fetched = tool_results(run.transcript)[1]
    assert fetched.startswith("connect ('127.0.0.1', 9)\n<urlopen error [Errno 111] Connection refused>\n\n"), fetched
    assert run.transcript == (environment_bundle / "transcript.jsonl").read_text()
