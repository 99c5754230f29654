"""The real Claude Code CLI through ``replay proxy``: a run recorded into a cassette — from the
live API, or from a scenario's fake model — and replayed from it offline, in any folder.

A recording keeps what the CLI sent (its system prompt and tools are Anthropic's text, and the
run's own files): keep such cassettes with the tests of your own set-up, not in a public place.
The run's folders are stored as placeholders (``<workspace>``, ``<home>``; the CLI also names its
workspace in a folder name of its own, ``~/.claude/projects/-tmp-...-workspace``), so a replay in
another temp folder matches, and it gets its own paths back in what the model said.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
import re
import tempfile
from pathlib import Path
from typing import Unpack

from replay.cassette import RecordMode
from replay.cassette.fingerprints import parse_body
from replay.claude_code.run import ClaudeRunOptions, run_claude
from replay.claude_code.scripted import ClaudeCodeRun, completed_run
from replay.fake.model import ReceivedRequest
from replay.proxy import DEFAULT_UPSTREAM, CassetteProxy

__all__ = ["project_folder_aliases", "run_placeholders", "run_recorded"]

WORKSPACE_PLACEHOLDER = "<workspace>"
HOME_PLACEHOLDER = "<home>"


def project_folder_aliases(workspace: Path) -> list[tuple[str, str]]:
    """The names the CLI gives ``workspace``'s folder under ``~/.claude/projects`` (its path with
    every character but letters and digits made ``-``), each as ``<workspace>``."""
    return [
        (re.sub(r"[^A-Za-z0-9]", "-", path), WORKSPACE_PLACEHOLDER)
        for path in {str(workspace), os.path.realpath(workspace)}
    ]


def run_placeholders(workspace: Path, home: Path) -> dict[str, str | Path]:
    """What differs between two runs of the same session, by the placeholder a cassette keeps:
    the run's folders, the date (the CLI tells the model today's date) and the machine's kernel
    (it tells the OS version too), so a run recorded on a laptop on Monday replays in CI on
    Friday. The CLI's platform and shell are told as well: record on the platform you replay on."""
    return {
        WORKSPACE_PLACEHOLDER: workspace,
        HOME_PLACEHOLDER: home,
        "<date>": datetime.date.today().isoformat(),
        "<os-version>": f"{platform.system()} {platform.release()}",
    }


def run_recorded(
    claude: Path,
    prompt: str,
    cassette: Path,
    *,
    workspace: Path,
    mode: RecordMode | str = RecordMode.NONE,
    upstream: str = DEFAULT_UPSTREAM,
    **options: Unpack[ClaudeRunOptions],
) -> ClaudeCodeRun:
    """Run ``claude -p PROMPT`` in ``workspace`` against a ``replay proxy`` serving ``cassette``
    with record ``mode``: what the cassette lacks is recorded from ``upstream`` when the mode
    allows, and a request it cannot answer is in the run's ``misses``. Raises `CassetteError`
    (a cassette that cannot be read, or none with mode ``none``) before the CLI starts."""
    with contextlib.ExitStack() as stack:
        home = options.pop("home", None) or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="claude-home-"))
        )
        proxy = CassetteProxy(
            cassette,
            mode=mode,
            upstream=upstream,
            placeholders=run_placeholders(workspace, home),
            aliases=project_folder_aliases(workspace),
        )
        with proxy:
            result = run_claude(claude, prompt, base_url=proxy.url, workspace=workspace, home=home, **options)
    requests = tuple(
        ReceivedRequest(method=r.method, path=r.path, headers=r.headers, body=r.body, json=parse_body(r.body))
        for r in proxy.requests
    )
    return completed_run(result, requests, workspace=workspace, misses=tuple(proxy.misses))
