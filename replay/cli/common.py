"""What every ``replay`` command shares: bad input as one line on stderr and exit code 2."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import typer

__all__ = [
    "BAD_INPUT",
    "DEFAULT_BUNDLES",
    "DRIFT",
    "OK",
    "bad_input",
    "count",
    "describe_error",
    "fail",
    "one_line",
    "say_waiting",
]

OK, DRIFT, BAD_INPUT = 0, 1, 2
DEFAULT_BUNDLES = Path("cassettes")


def fail(message: str) -> NoReturn:
    """Print ``message`` as one line on stderr and exit 2 (bad input)."""
    typer.echo(f"error: {one_line(message)}", err=True)
    raise typer.Exit(BAD_INPUT)


def say_waiting(bundle: Path) -> Callable[[int | None], None]:
    """What a writer told to ``--wait`` prints when another process holds the bundle."""

    def waiting(owner: int | None) -> None:
        who = f"process {owner}" if owner is not None else "another process"
        typer.echo(f"Waiting for {bundle}: {who} is writing it.", err=True)

    return waiting


def count(number: int, noun: str) -> str:
    """``1 pass``, ``3 passes``, ``2 prompts``."""
    plural = noun + ("es" if noun.endswith("s") else "s")
    return f"{number} {noun if number == 1 else plural}"


def one_line(message: str) -> str:
    return " ".join(message.split())


def describe_error(exc: BaseException) -> str:
    """One sentence for a bad-input exception."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror[0].lower()}{exc.strerror[1:]}."
    return str(exc)


@contextmanager
def bad_input() -> Iterator[None]:
    """Turn the library's bad-input errors (an unreadable bundle, cassette or scenario, a file
    that is not there, a bad value) into one line on stderr and exit code 2, never a traceback.
    Every such error of the library (``BundleError``, ``CassetteError``, ``ScenarioError``,
    ``FileWriteError``) is a ``ValueError``: naming them here would import the SDK for ``--help``."""
    try:
        yield
    except (ValueError, OSError) as exc:
        fail(describe_error(exc))
