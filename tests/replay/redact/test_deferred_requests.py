"""detect-secrets is imported with a stand-in for `requests` (`requests_deferred`): the scan never
verifies a secret online, so `requests` is imported only if something reads from it. Each case
runs in a fresh interpreter, since what it checks is which modules one process has loaded."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def run(code: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return result.stdout.split()


def test_the_redactor_loads_detect_secrets_without_requests() -> None:
    loaded = run("""
        import sys
        from replay.redact.redactor import current_redactor
        found = current_redactor().locate('key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"', binary=False)
        print(bool(found), "requests" in sys.modules, "urllib3" in sys.modules)
    """)

    assert loaded == ["True", "False", "False"]


def test_a_plugin_that_reads_requests_gets_the_real_module() -> None:
    loaded = run("""
        import sys
        import replay.redact.detectors
        import detect_secrets.plugins.base as base
        error = base.requests.exceptions.RequestException
        print(error.__module__, type(sys.modules["requests"]).__name__, base.requests.__name__)
    """)

    assert loaded == ["requests.exceptions", "module", "requests"]


def test_the_rest_of_the_process_never_sees_the_stand_in() -> None:
    loaded = run("""
        import sys
        import replay.redact.detectors
        import requests
        import requests.adapters
        print(type(requests).__name__, requests.adapters.HTTPAdapter.__module__)
    """)

    assert loaded == ["module", "requests.adapters"]


def test_a_requests_already_imported_is_left_as_it_is() -> None:
    loaded = run("""
        import requests
        import replay.redact.detectors
        import detect_secrets.plugins.base as base
        print(base.requests is requests)
    """)

    assert loaded == ["True"]
