"""``replay scrub``: find credentials left in cassettes, transcripts and bundles, and redact them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from replay.cli.common import DRIFT, OK, bad_input, count, fail

if TYPE_CHECKING:
    from replay.session.scrub_files import ScanReport, ScrubReport

__all__ = ["scrub"]


def scrub(
    paths: Annotated[
        list[Path],
        typer.Argument(
            metavar="PATH", help="Bundles, folders of bundles, cassettes or transcripts.", show_default=False
        ),
    ],
    check: Annotated[
        bool, typer.Option("--check", help="Only report what leaks (FILE:LINE:COL: kind); change nothing.")
    ] = False,
) -> None:
    """Find credentials (API keys and tokens of every kind detect-secrets knows, private keys,
    passwords, high-entropy strings, this environment's credential values, auth headers,
    cookies) in recorded files, and redact them in place.

    Every file below PATH is scanned, hidden ones too (workspace/.env), symbolic links excepted;
    a file that is not UTF-8 is read as latin-1. Without --check each leaking file is rewritten
    atomically: a cassette through the cassette writer (which drops secret headers and scrubs
    every body; a vcrpy cassette comes back in the native format), any other file through the
    redaction pass, in its own encoding. Then it is scanned again: a secret still there is
    listed.

    Examples:

        replay scrub --check cassettes        # CI: fail if anything leaks
        replay scrub cassettes/live-ls        # redact, then check again

    Exit codes: 0 nothing leaks, 1 secrets found (--check) or still there, 2 bad input.
    """
    # imported here, not above: `replay --help` must not import detect-secrets
    from replay.session.scrub_files import ScanReport, scan_paths, scrub_paths

    with bad_input():  # a missing path, an unreadable file, a file that cannot be rewritten
        report = scan_paths(paths) if check else scrub_paths(paths)
    where = ", ".join(map(str, paths))
    if not report.scanned:
        fail(f"There are no files to scan below {where} (symbolic links are skipped).")
    if isinstance(report, ScanReport):
        _report_scan(report, where, paths)
    else:
        _report_scrub(report, where)


def _report_scan(report: ScanReport, where: str, paths: list[Path]) -> None:
    for finding in report.findings:
        typer.echo(str(finding))
    if not report.findings:
        typer.echo(f"No secrets in {count(report.scanned, 'file')} below {where}.")
        raise typer.Exit(OK)
    files = len({finding.path for finding in report.findings})
    typer.echo(
        f"{count(len(report.findings), 'secret')} in {count(files, 'file')} (of {report.scanned} scanned)."
        f" Run `replay scrub {' '.join(map(str, paths))}` to redact them in place."
    )
    raise typer.Exit(DRIFT)


def _report_scrub(report: ScrubReport, where: str) -> None:
    if not report.changed:
        typer.echo(f"No secrets in {count(report.scanned, 'file')} below {where}; nothing changed.")
        raise typer.Exit(OK)
    for scrubbed in report.changed:
        how = " (rewritten as a native cassette)" if scrubbed.as_cassette else ""
        typer.echo(f"Scrubbed {scrubbed.path}: {count(scrubbed.redacted, 'secret')} redacted{how}.")
    for finding in report.remaining:
        typer.echo(f"{finding} is still there: scrub cannot redact it; edit that line by hand.")
    left = (
        f"{count(len(report.remaining), 'secret')} still there (listed above)"
        if report.remaining
        else "no secrets left"
    )
    typer.echo(f"Scrubbed {len(report.changed)} of {count(report.scanned, 'file')}; {left}.")
    raise typer.Exit(DRIFT if report.remaining else OK)
