"""How a test went, for the checks the plugin makes at its teardown: the call's report (kept by
`pytest_runtest_makereport`, read by `call_failed`), and interactions a replay left unplayed (an
a failure, or an `UnplayedInteractionsWarning` with ``--replay-allow-unplayed``). A failed test has already
said what went wrong, so these checks stay quiet for it."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import pytest

__all__ = ["UnplayedInteractionsWarning", "call_failed", "pytest_runtest_makereport", "unplayed_message"]


class UnplayedInteractionsWarning(UserWarning):
    """A replayed test left recorded interactions unplayed, under ``--replay-allow-unplayed`` (else a failure)."""


_CALL_REPORT = pytest.StashKey[pytest.TestReport]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    # Teardown checks (unplayed interactions, refused connections) need to know how the test went.
    report = yield
    if report.when == "call":
        item.stash[_CALL_REPORT] = report
    return report


def call_failed(request: pytest.FixtureRequest) -> tuple[bool, str]:
    """Whether the test's call failed, and its failure as text (``(False, "")`` before the call)."""
    report = request.node.stash.get(_CALL_REPORT, None)
    if report is None or not report.failed:
        return False, ""
    return True, report.longreprtext


def unplayed_message(cassette: Path, unplayed: Sequence[int]) -> str:
    """What to say when the interactions ``unplayed`` (0-based) of ``cassette`` were never requested."""
    listed = ", ".join(f"#{i + 1}" for i in unplayed[:5])
    if len(unplayed) > 5:
        listed += f" and {len(unplayed) - 5} more"
    return (
        f"{len(unplayed)} recorded interaction(s) in {cassette} were never requested ({listed}): the session made "
        "fewer calls than when it was recorded. If that is intended, re-record the cassette; "
        "--replay-allow-unplayed (or the marker's strict=False) lets it pass with a warning."
    )
