"""The real Claude Code CLI as a client of the harness: finding it or installing a pinned version
from npm into a cache (`install`), running it once, isolated and offline, against a model
URL such as the fake model's loopback server (`run`), and running it against a scenario in a
copy of a workspace, with the requests it sent and their summary (`scripted`, behind the pytest
plugin's ``claude_code`` fixture), and running it through ``replay proxy`` to record a run into a
cassette and replay it (`recorded`).

May import: `replay.proxy`, `replay.fake`, `replay.storage` and the layers below them (and the
foundation modules); it sits beside `replay.session`, since it starts fake model servers.
"""

from __future__ import annotations

from replay.lazy_exports import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CLAUDE_CODE_VERSION": "install",
        "DEVICE_ID": "run",
        "ClaudeCodeInstallError": "install",
        "cache_root": "install",
        "find_or_install_claude": "install",
        "ClaudeCodeResult": "run",
        "ClaudeCodeRunError": "run",
        "PermissionDenial": "run",
        "PermissionMode": "run",
        "claude_environment": "run",
        "run_claude": "run",
        "ClaudeCodeRun": "scripted",
        "RequestSummary": "scripted",
        "ToolResult": "scripted",
        "WorkspaceError": "scripted",
        "prepare_workspace": "scripted",
        "run_scenario": "scripted",
        "project_folder_aliases": "recorded",
        "run_recorded": "recorded",
    },
)
