"""``replay show``, ``replay diff`` and ``replay coverage``: read what bundles recorded."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from replay.cli.common import DEFAULT_BUNDLES, DRIFT, OK, bad_input, fail

if TYPE_CHECKING:
    from replay.trace.behaviour import BehaviourTrace

# Each command imports the library inside its function: `replay --help` must not import the SDK.

__all__ = ["TraceFormat", "coverage", "diff", "show"]


class TraceFormat(StrEnum):
    TEXT = "text"
    JSON = "json"
    MERMAID = "mermaid"


def show(
    session: Annotated[
        Path,
        typer.Argument(metavar="BUNDLE_OR_TRACE", help="A bundle folder or a trace.json file.", show_default=False),
    ],
    output_format: Annotated[
        TraceFormat,
        typer.Option(
            "--format", "-f", metavar="FORMAT", help="text (the snapshot format), json, or mermaid (a state diagram)."
        ),
    ] = TraceFormat.TEXT,
) -> None:
    """Print the behaviour recorded in a bundle: per prompt and per pass, what the loop did,
    then what the prompt cache did and what the session cost.

    The text form is what snapshots store, followed by a session summary: tokens read from the
    cache, written to it and left uncached, the hit ratio, the cost in US dollars (from the usage
    the API reported; models the price table does not know are named), the unexpected cache
    breaks, and, for a live bundle, the requests where the cache audit and the usage the API
    reported disagree. json is the
    full model plus a `summary` object with the same; mermaid draws the passes as a state
    diagram to paste into a README or a pull request (inside a ```mermaid block).

    Examples:

        replay show cassettes/fix-todo
        replay show cassettes/fix-todo --format mermaid

    Exit codes: 0 shown, 2 bad input (no such bundle, or one without trace.json).
    """
    from replay.session.bundle import load_bundle
    from replay.trace.behaviour import render_mermaid, render_text
    from replay.trace.cache_summary import summarize_cache

    with bad_input():
        trace = _load_trace(session)
        # A fake-model bundle's usage is the scenario's (often pinned): comparing the audit with
        # it says nothing about the API, so only a live bundle (or a bare trace) lists disagreements.
        live = load_bundle(session).spec.live if session.is_dir() else True
    if output_format is TraceFormat.JSON:
        document = {**trace.to_json(), "summary": summarize_cache(trace).to_json()}
        typer.echo(json.dumps(document, indent=2, ensure_ascii=False))
    elif output_format is TraceFormat.MERMAID:
        typer.echo(render_mermaid(trace), nl=False)
    else:
        typer.echo(render_text(trace))
        typer.echo(summarize_cache(trace).render_text(disagreements=live), nl=False)


def _load_trace(path: Path) -> BehaviourTrace:
    from replay.session.bundle import SESSION_FILE, BundleError, load_bundle

    if path.is_dir():
        if not (path / SESSION_FILE).is_file():
            raise BundleError(f"{path} is a folder without {SESSION_FILE}, so it is not a bundle.")
        trace = load_bundle(path).recorded_trace()
        if trace is None:
            raise BundleError(f"Bundle {path} has no trace.json; write one with `replay run --update {path}`.")
        return trace
    return _load_trace_file(path)


def _load_trace_file(path: Path) -> BehaviourTrace:
    """A ``trace.json`` file, or ``ValueError`` with one sentence for a file that is not one."""
    from replay.trace.behaviour import TraceFormatError, TraceProblem
    from replay.trace.trace_file import read_trace_file

    try:
        return read_trace_file(path)
    except TraceFormatError as exc:
        if exc.problem is TraceProblem.OTHER_VERSION:
            raise ValueError(f"{path} is a behaviour trace this replay cannot read ({exc.detail}).") from None
        if exc.problem in (TraceProblem.NOT_JSON, TraceProblem.NOT_A_TRACE):
            remedy = "Give a bundle folder or the trace.json inside one."
            raise ValueError(f"{path} is not a bundle or a trace file: {exc.detail}. {remedy}") from None
        raise  # a damaged trace: the error names the file and what is missing


def _is_trace_file(path: Path) -> bool:
    return path.suffix == ".json" and path.exists() and not path.is_dir()


def diff(
    a: Annotated[
        Path, typer.Argument(metavar="BEFORE", help="The 'before' side: a bundle, a trace.json or a transcript.jsonl.")
    ],
    b: Annotated[Path, typer.Argument(metavar="AFTER", help="The 'after' side, of the same kind as BEFORE.")],
) -> None:
    """Show what changed between two bundles, two traces or two transcripts, in the loop's terms.

    A transition that no longer fires, a compaction boundary that moved, a request fingerprint
    that changed (and, between bundles, which field of the request changed it), tools called
    or batched differently, a different terminal. Between bundles, session.json differences
    (settings, tools, seed) come first.

    Examples:

        replay diff cassettes/fix-todo cassettes/fix-todo-v2
        replay diff old/trace.json new/trace.json

    Exit codes: 0 no difference, 1 different, 2 bad input.
    """
    from replay.session.bundle_diff import diff_paths
    from replay.trace.diff import diff_traces

    with bad_input():
        if _is_trace_file(a) and _is_trace_file(b):
            lines = diff_traces(_load_trace_file(a), _load_trace_file(b))
        else:
            lines = diff_paths(a, b)
    if not lines:
        typer.echo(f"No differences between {a} and {b}.")
        raise typer.Exit(OK)
    typer.echo(f"What changed from {a} to {b}:")
    for line in lines:
        typer.echo(f"  {line}")
    raise typer.Exit(DRIFT)


def coverage(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(metavar="FOLDER", help="Folders to search for bundles.", show_default="cassettes"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the coverage as JSON instead of a table.")] = False,
) -> None:
    """Tabulate which transitions, terminals, compaction tiers and fault kinds the bundles
    exercise, and which none does.

    Transitions, terminals, compactions, retries, fallbacks and withheld errors are read from
    each bundle's trace.json; HTTP error statuses, dropped or failed connections and mid-stream
    error events from its cassette.

    Examples:

        replay coverage
        replay coverage cassettes --json

    Exit codes: 0 shown, 2 bad input (no bundles, or one that cannot be read).
    """
    from replay.session.library_coverage import coverage as coverage_of
    from replay.session.library_coverage import render_table

    roots = paths or [DEFAULT_BUNDLES]
    with bad_input():
        report = coverage_of(roots)
    if not report.bundles:
        fail(f"No bundles below {', '.join(map(str, roots))} (a bundle is a folder holding session.json).")
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        typer.echo(render_table(report), nl=False)
