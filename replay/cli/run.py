"""``replay run`` and ``replay verify``: re-execute recorded bundles and judge them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from replay.cli.common import (
    BAD_INPUT,
    DEFAULT_BUNDLES,
    DRIFT,
    OK,
    bad_input,
    count,
    describe_error,
    fail,
    one_line,
    say_waiting,
)
from replay.cli.progress import VerifyProgress
from replay.cli.signals import cleanup_on_sigterm
from replay.cli.tables import Column, print_table
from replay.collector import collector_paused, set_aside_for_the_process

if TYPE_CHECKING:
    from replay.session.runner import RunReport
    from replay.session.verify import BundleSummary
    from replay.trace.cache_summary import BreakReport

# Each command imports the library (the engine, the SDK) inside its function, so `replay --help`
# stays quick; `replay verify` imports it before starting its workers, which inherit it.

__all__ = ["cache_break_line", "run", "verify"]


def run(
    sessions: Annotated[
        list[Path], typer.Argument(metavar="BUNDLE", help="Bundle folders to re-execute.", show_default=False)
    ],
    update: Annotated[
        bool,
        typer.Option(
            "--update",
            help="Accept the new behaviour of a drifted bundle: re-record it from its first divergence (record "
            "mode rewrite: keep the interactions before the first request that differs, continue against the "
            "bundle's scenario, or the live API with ANTHROPIC_API_KEY, prune what is no longer requested) and "
            "swap it in whole, so the next run matches. A bundle that matches is not touched.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON report per bundle instead of text.")] = False,
    wait: Annotated[
        float,
        typer.Option(
            "--wait",
            metavar="SECONDS",
            help="If another process is writing a bundle to --update, wait up to this many seconds for it "
            "(default: exit 2 at once, naming that process).",
            min=0,
        ),
    ] = 0.0,
    fail_on_cache_break: Annotated[
        bool,
        typer.Option(
            "--fail-on-cache-break",
            help="Also exit 1 when the replayed run breaks the prompt cache where the loop did not mean "
            "to (a changed system prompt, a reordered tool list, a leaked backfill...), naming each break.",
        ),
    ] = False,
) -> None:
    """Re-execute recorded sessions offline and check the loop still does what it did.

    Each bundle's prompts go to a fresh engine wired to its cassette, with the tools really
    running in a temp copy of its workspace; the new transcript and behaviour trace are
    compared with the recorded ones and any difference is told in the loop's terms.

    Examples:

        replay run cassettes/fix-todo
        replay run cassettes/* --json
        replay run cassettes/fix-todo --update   # accept what the loop does now
        replay run cassettes/* --fail-on-cache-break

    Exit codes: 0 every bundle matches (or was updated), 1 at least one drifted (or, with
    --fail-on-cache-break, broke the prompt cache unexpectedly), 2 bad input (a missing or
    corrupt bundle, one another process is writing while --update would rewrite it, or a live bundle that
    --update would record from without ANTHROPIC_API_KEY).
    """
    import asyncio

    with collector_paused(long_lived=True):  # the SDK and the engine: see replay.collector
        from replay.session.runner import run_bundle
        from replay.trace.cache_summary import unexpected_breaks
    set_aside_for_the_process()  # the bundles replay here: see replay.collector

    code = OK
    reports: list[dict[str, object]] = []
    for session in sessions:
        try:
            with cleanup_on_sigterm():
                report = asyncio.run(run_bundle(session, update=update, wait=wait, on_wait=say_waiting(session)))
        except (ValueError, OSError) as exc:  # BundleError, CassetteError, ScenarioError, FileWriteError
            typer.echo(f"error: {one_line(describe_error(exc))}", err=True)
            reports.append({"bundle": str(session), "verdict": "error", "error": one_line(describe_error(exc))})
            code = BAD_INPUT
            continue
        breaks = unexpected_breaks(report.trace) if fail_on_cache_break and report.trace is not None else []
        document = report.to_json()
        if fail_on_cache_break:
            document["unexpected_cache_breaks"] = [b.to_json() for b in breaks]
        reports.append(document)
        if ((not report.matched and not report.updated) or breaks) and code == OK:
            code = DRIFT
        if not as_json:
            _print_report(report)
            for found in breaks:
                typer.echo(cache_break_line(report.bundle, found))
    if as_json:
        typer.echo(json.dumps(reports, indent=2, ensure_ascii=False))
    raise typer.Exit(code)


def cache_break_line(bundle: Path | str, found: BreakReport) -> str:
    """``CACHE BREAK cassettes/x prompt 1 pass 3: system[0].text (system prompt changed)``."""
    return f"CACHE BREAK {bundle} {found.where}: {found.cache_break.path} ({found.cache_break.cause.phrase})"


def _print_report(report: RunReport) -> None:
    passes = sum(len(p.passes) for p in report.trace.prompts) if report.trace is not None else 0
    if report.updated:
        counts = report.rewrite
        done = (
            f"kept {counts.kept}, re-recorded {counts.rerecorded}, pruned {counts.pruned} interaction(s)"
            if counts is not None
            else "its trace files are rewritten"
        )
        typer.echo(f"UPDATED {report.bundle}: {done}; replay run now matches.")
    else:
        verdict = "MATCH" if report.matched else "DRIFT"
        typer.echo(f"{verdict} {report.bundle} ({count(passes, 'pass')}, {report.seconds:.1f} s)")
    for line in report.differences:
        typer.echo(f"  {line}")


def verify(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="FOLDER",
            help="Folders to search for bundles (folders holding session.json).",
            show_default="cassettes",
        ),
    ] = None,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs", "-j", metavar="N", help="How many bundles to re-execute at once, each in its own process."
        ),
    ] = 1,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="Stop a bundle still replaying after this many seconds and report it as an error "
            "(every bundle then runs in a worker process, even with --jobs 1).",
            show_default="no limit",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summaries as JSON instead of a table.")] = False,
    rerecord: Annotated[
        bool,
        typer.Option(
            "--rerecord",
            help="Instead of replaying, record each bundle again from its scenario.yaml and check that every "
            "file comes out byte-identical (the record path is deterministic).",
        ),
    ] = False,
    fail_on_cache_break: Annotated[
        bool,
        typer.Option(
            "--fail-on-cache-break",
            help="Also exit 1 when a replayed run breaks the prompt cache where the loop did not mean to, "
            "naming each break.",
        ),
    ] = False,
) -> None:
    """Re-execute every bundle below some folders, with a progress bar and a summary table.

    A bundle is any folder holding session.json; the search does not enter a bundle or a
    hidden folder. Each bundle is judged as `replay run` judges it. With --jobs N the bundles
    run in N worker processes started from this one once it has loaded the SDK; the table lists
    them in the same order, with the same verdicts, as --jobs 1.

    Examples:

        replay verify                        # every bundle below cassettes/
        replay verify cassettes tests/sessions --jobs 4
        replay verify --jobs 2 --timeout 300  # a hung bundle: an error
        replay verify --rerecord             # record again: identical files?
        replay verify --fail-on-cache-break  # and no unexpected prompt-cache break

    Exit codes: 0 every bundle matches, 1 at least one drifted (or, with --fail-on-cache-break, broke the
    prompt cache unexpectedly), 2 bad input (no bundles, or one that cannot be read, or whose worker
    process died or ran past --timeout).
    """
    with collector_paused(long_lived=True):  # imported before the workers fork: see replay.collector
        from replay.session.verify import exit_code, find_bundles, start_workers, verify_bundles

    with bad_input():
        if jobs < 1:
            raise ValueError(f"--jobs must be 1 or more, not {jobs}.")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"--timeout must be more than 0 seconds, not {timeout:g}.")
        roots = paths or [DEFAULT_BUNDLES]
        bundles = find_bundles(roots)
    if not bundles:
        fail(
            f"No bundles below {', '.join(map(str, roots))} (a bundle is a folder holding session.json); "
            "record one with `replay record`."
        )
    if rerecord:
        with cleanup_on_sigterm():
            _rerecord_all(bundles)
    progress = VerifyProgress(len(bundles))  # before the workers fork: it may import rich
    pool = start_workers(jobs, len(bundles), timeout=timeout)
    if pool is None:
        set_aside_for_the_process()  # the bundles replay here, not in workers: see replay.collector
    try:
        with cleanup_on_sigterm(), progress:

            def done(summary: BundleSummary) -> None:
                progress.advance(f"{summary.verdict} {Path(summary.bundle).name}")

            summaries = verify_bundles(bundles, jobs=jobs, pool=pool, on_done=done)
    finally:
        if pool is not None:
            pool.close()
    if as_json:
        typer.echo(json.dumps([s.to_json() for s in summaries], indent=2, ensure_ascii=False))
    else:
        _print_summaries(summaries)
    for summary in summaries:
        if summary.error is not None:
            typer.echo(f"error: {one_line(summary.error)}", err=True)
    code = exit_code(summaries)
    if fail_on_cache_break:
        breaks = [(s.bundle, found) for s in summaries for found in s.cache_breaks]
        if not as_json:
            for bundle, found in breaks:
                typer.echo(cache_break_line(bundle, found))
        if breaks and code == OK:
            code = DRIFT
    raise typer.Exit(code)


def _rerecord_all(bundles: list[Path]) -> None:
    """Re-record each bundle, say which files changed, and exit (0 all identical, 1 otherwise)."""
    import asyncio

    with collector_paused(long_lived=True):
        from replay.session.rerecord import rerecord_bundle

    changed = 0
    for bundle in bundles:
        with bad_input():
            report = asyncio.run(rerecord_bundle(bundle))
        if report.identical:
            typer.echo(f"IDENTICAL {bundle}")
        else:
            changed += 1
            typer.echo(f"CHANGED   {bundle}: {', '.join(report.differing)}")
    typer.echo(f"{len(bundles)} bundle(s) re-recorded: {len(bundles) - changed} identical, {changed} changed.")
    raise typer.Exit(1 if changed else 0)


def _print_summaries(summaries: list[BundleSummary]) -> None:
    columns = [Column("bundle"), Column("verdict")] + [Column(h, right=True) for h in ("passes", "requests", "seconds")]
    rows = [[s.bundle, s.verdict.upper(), str(s.passes), str(s.requests), f"{s.seconds:.2f}"] for s in summaries]
    print_table(columns, rows)
    counts = {verdict: sum(s.verdict == verdict for s in summaries) for verdict in ("match", "drift", "error")}
    typer.echo(
        f"{len(summaries)} bundle(s): {counts['match']} match, {counts['drift']} drift, {counts['error']} error."
    )
    for s in summaries:
        if s.differences:
            typer.echo(f"\nDRIFT {s.bundle}:")
            for line in s.differences:
                typer.echo(f"  {line}")
