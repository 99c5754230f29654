"""`replay verify`'s progress bar: drawn when rich takes stderr for a terminal, and rich not even
consulted when it surely would not (`may_be_terminal` False: no tty, no TTY_COMPATIBLE=1, no
FORCE_COLOR), so that a log's start-up skips importing it."""

from __future__ import annotations

import io
import sys

import pytest

from replay.cli.progress import VerifyProgress, may_be_terminal


class Terminal(io.StringIO):
    """A stream that says it is a tty."""

    def isatty(self) -> bool:
        return True


class Closed(io.StringIO):
    def isatty(self) -> bool:
        raise ValueError("I/O operation on closed file")


@pytest.fixture(autouse=True)
def no_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TTY_COMPATIBLE", "FORCE_COLOR", "TTY_INTERACTIVE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("stream", "env", "expected"),
    [
        (io.StringIO(), {}, False),
        (Closed(), {}, False),
        (Terminal(), {}, True),
        (io.StringIO(), {"FORCE_COLOR": "1"}, True),
        (io.StringIO(), {"FORCE_COLOR": ""}, False),  # rich: set but empty is no
        (io.StringIO(), {"TTY_COMPATIBLE": "1"}, True),
        (io.StringIO(), {"TTY_COMPATIBLE": "0"}, False),
        (Terminal(), {"TTY_COMPATIBLE": "0"}, True),  # rich says no then: it decides
    ],
)
def test_stderr_may_be_a_terminal_whenever_rich_could_take_it_for_one(
    monkeypatch: pytest.MonkeyPatch, stream: io.StringIO, env: dict[str, str], expected: bool
) -> None:
    monkeypatch.setattr(sys, "stderr", stream)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    assert may_be_terminal() is expected


def test_no_terminal_gets_no_bar_and_nothing_on_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)

    with VerifyProgress(2) as progress:
        progress.advance("match demo")
        progress.advance("drift other")

    assert stderr.getvalue() == ""


def test_a_terminal_gets_a_bar_naming_the_last_bundle_that_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.setenv("FORCE_COLOR", "1")

    with VerifyProgress(2) as progress:
        progress.advance("match demo")
        drawn = stderr.getvalue()

    assert "verifying" in drawn and "1/2" in drawn and "match demo" in drawn


def test_rich_saying_no_to_a_tty_draws_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = Terminal()
    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.setenv("TTY_COMPATIBLE", "0")

    with VerifyProgress(1) as progress:
        progress.advance("match demo")

    assert stderr.getvalue() == ""
