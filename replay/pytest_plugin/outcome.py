"""How a test went, for the checks the plugin makes at its teardown: the call's report (kept by
`pytest_runtest_makereport`, read by `call_failed`), and interactions a replay left unplayed (an
a failure, or an `UnplayedInteractionsWarning` with ``--replay-allow-unplayed``). A failed test has already
said what went wrong, so these checks stay quiet for it."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "SnapshotKeeper",
    "UnplayedInteractionsWarning",
    "call_failed",
    "pytest_runtest_makereport",
    "unplayed_message",
]


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


class SnapshotKeeper:
    """Keeps syrupy from deleting snapshots in a run where a snapshot test failed.

    A test that fails before it asserts its snapshot (a replay that drifted from its bundle) has
    not used it, and ``--snapshot-update`` deletes every unused snapshot: the committed trace would
    go with the failure. syrupy offers no way to mark a snapshot used (its extension API decides
    only what is discovered and deleted, and the default extension still finds and deletes the
    file), so the plugin turns on syrupy's own ``--snapshot-no-cleanup`` for such a run: nothing is
    deleted, syrupy reports the snapshots as unused, and a later run that passes cleans up.

    A plugin object with the config, registered by ``pytest_configure``: under xdist the
    controller, which deletes, hears of each test only through its reports."""

    name = "replay-snapshot-keeper"

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.kept_for: str | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # syrupy marks every test that uses its snapshot fixture (trace_snapshot included).
        if not (report.failed and report.when in ("setup", "call") and "syrupy_snapshot" in report.keywords):
            return
        if hasattr(self.config.option, "no_cleanup") and not self.config.option.no_cleanup:
            self.config.option.no_cleanup = True
            self.kept_for = report.nodeid

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.kept_for is not None and self.config.option.update_snapshots:
            terminalreporter.write_line(
                f"agent-replay: no snapshot was deleted, because {self.kept_for} failed before it could use its "
                "snapshot; once the failing tests pass, --snapshot-update cleans up unused snapshots."
            )


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
