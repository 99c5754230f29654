"""The environment of the commands the engine starts is built from an allowlist; offline, its
proxy variables point at a closed loopback port."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from engine.process import (
    PROXY_VARIABLES,
    UNREACHABLE_PROXY,
    WORKSPACE_VARIABLE,
    NetworkPolicy,
    ToolEnvironment,
    kill_process_group,
    start_shell,
)
from tests.engine.tools.test_bash import process_is_gone

PARENT = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/someone",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "LC_TIME": "en_GB.UTF-8",
    "TERM": "xterm",
    "TMPDIR": "/tmp/someone",
    "MY_ANTHROPIC_CREDENTIAL": "sk-ant-api03-not-on-the-list",
    "ANTHROPIC_API_KEY": "sk-ant-api03-key",
    "DATABASE_URL": "postgres://user:pw@db/prod",
    "SHELL": "/bin/zsh",
    "http_proxy": "http://corporate-proxy:3128",
    "PYTHONPATH": "/somewhere",
}
WORKSPACE = Path("/work/space")


def test_only_the_allowlisted_variables_and_the_workspace_are_inherited() -> None:
    env = ToolEnvironment().build(workspace=WORKSPACE, environ=PARENT)

    assert env == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/someone",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "LC_TIME": "en_GB.UTF-8",
        "TERM": "xterm",
        "TMPDIR": "/tmp/someone",
        WORKSPACE_VARIABLE: "/work/space",
    }


def test_the_session_names_its_own_variables_with_their_values() -> None:
    environment = ToolEnvironment(variables={"APP_MODE": "test", "LANG": "fr_FR.UTF-8"})

    env = environment.build(workspace=WORKSPACE, environ=PARENT)

    assert env["APP_MODE"] == "test"
    assert env["LANG"] == "fr_FR.UTF-8"  # the session's value wins over the inherited one
    assert "MY_ANTHROPIC_CREDENTIAL" not in env


def test_offline_every_proxy_variable_points_at_a_closed_loopback_port_and_nothing_is_exempt() -> None:
    env = ToolEnvironment(network=NetworkPolicy.OFFLINE).build(workspace=WORKSPACE, environ=PARENT)

    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        assert env[name] == UNREACHABLE_PROXY == "http://127.0.0.1:9"
    assert env["NO_PROXY"] == env["no_proxy"] == ""


def test_with_the_network_allowed_no_proxy_variable_is_set_nor_inherited() -> None:
    env = ToolEnvironment(network=NetworkPolicy.ALLOW).build(workspace=WORKSPACE, environ=PARENT)

    assert set(PROXY_VARIABLES).isdisjoint(env)


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"http_proxy": "http://elsewhere"}, "The environment variable http_proxy is set by the engine"),
        ({WORKSPACE_VARIABLE: "/elsewhere"}, f"The environment variable {WORKSPACE_VARIABLE} is set by the engine"),
        ({"NO_PROXY": "*"}, "The environment variable NO_PROXY is set by the engine"),
        ({"A=B": "x"}, "'A=B' is not a usable environment variable name"),
        ({"": "x"}, "'' is not a usable environment variable name"),
        ({"X": 5}, "The environment variable X needs a string value"),
        ({"X": "a\0b"}, "The environment variable X needs a string value without NUL characters"),
    ],
)
def test_a_session_cannot_set_what_the_engine_sets_nor_unusable_variables(
    variables: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ToolEnvironment(variables=variables)  # type: ignore[arg-type]


async def test_a_shell_gets_exactly_the_environment_given(tmp_path: Path) -> None:
    env = ToolEnvironment(variables={"APP_MODE": "test"}, network=NetworkPolicy.OFFLINE).build(
        workspace=tmp_path, environ=PARENT | {"PATH": "/usr/bin:/bin"}
    )
    out = tmp_path / "env.txt"
    with out.open("wb") as stdout:
        process = await start_shell(
            "env -0", cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.DEVNULL
        )
        assert await process.wait() == 0
    seen = dict(entry.split("=", 1) for entry in out.read_text().split("\0") if entry)
    # bash adds its own bookkeeping (PWD, SHLVL, _); everything else is what was given.
    assert {k: v for k, v in seen.items() if k not in ("PWD", "OLDPWD", "SHLVL", "_")} == env


async def test_killing_the_process_group_stops_what_the_shell_left_running(tmp_path: Path) -> None:
    process = await start_shell(
        "sleep 30 & echo $! > child.pid; wait",
        cwd=tmp_path,
        env=ToolEnvironment().build(workspace=tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    while not (tmp_path / "child.pid").is_file() or not (tmp_path / "child.pid").read_text().strip():
        await asyncio.sleep(0.01)
    child = int((tmp_path / "child.pid").read_text())

    kill_process_group(process)

    assert await process.wait() == -9
    # The child is in the same group and got the same SIGKILL; it may linger as a zombie.
    assert process_is_gone(child)
    kill_process_group(process)  # a group that is gone already is not an error
