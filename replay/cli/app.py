"""The ``replay`` command line: thin commands over the library, errors mapped to exit codes
(0 ok, 1 drift or difference, 2 bad input with one line on stderr)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from replay.cli import inspect as cli_inspect
from replay.cli import proxy as cli_proxy
from replay.cli import record as cli_record
from replay.cli import run as cli_run
from replay.cli import scrub as cli_scrub
from replay.cli.command import ReplayCommand, ReplayGroup
from replay.collector import command_owns_the_process

__all__ = ["app", "run"]

app = typer.Typer(
    name="replay", cls=ReplayGroup, no_args_is_help=True, add_completion=False, rich_markup_mode="markdown"
)


@app.callback()
def main() -> None:
    """Record agent-loop sessions, replay them offline, and test what the loop did.

    A session bundle is a folder: the HTTP cassette, the transcript, session.json (prompts,
    settings), the workspace the tools start from, and the behaviour trace (trace.json).

    A first session in four commands:

        replay record --scenario cassettes/demo/scenario.yaml \\
            --prompt "Review notes.md" --out cassettes/review
        replay run cassettes/review    # re-execute offline: MATCH or DRIFT
        replay show cassettes/review   # what the loop did, pass by pass
        replay diff cassettes/review cassettes/other

    Exit codes: 0 ok, 1 drift or difference, 2 bad input (one line on stderr).
    """


app.command("run", cls=ReplayCommand)(cli_run.run)
app.command("verify", cls=ReplayCommand)(cli_run.verify)
app.command("record", cls=ReplayCommand)(cli_record.record)
app.command("diff", cls=ReplayCommand)(cli_inspect.diff)
app.command("show", cls=ReplayCommand)(cli_inspect.show)
app.command("serve", cls=ReplayCommand)(cli_record.serve)
app.command("proxy", cls=ReplayCommand)(cli_proxy.proxy)
app.command("coverage", cls=ReplayCommand)(cli_inspect.coverage)
app.command("scrub", cls=ReplayCommand)(cli_scrub.scrub)


@app.command(cls=ReplayCommand)
def demo(
    scenario_dir: Annotated[
        Path | None,
        typer.Option(
            "--scenario-dir",
            metavar="FOLDER",
            help="A folder with scenario.yaml and workspace/.",
            show_default="the bundled demo",
        ),
    ] = None,
) -> None:
    """Run a scripted session against the fake model and print the conversation and the trace.

    Nothing is recorded and the bundled workspace is never changed (the tools run in a copy).

    Examples:

        replay demo
        replay demo --scenario-dir my-scenario   # scenario.yaml, workspace/

    Exit codes: 0 the session completed, 1 it ended in an error, 2 bad input.
    """
    import asyncio

    from replay.session.demo import DEMO_DIR, describe, run_demo  # the SDK: not for `replay --help`

    scenario_dir = scenario_dir or DEMO_DIR

    def show(item: object) -> None:
        line = describe(item)
        if line is not None:
            typer.echo(line)

    try:
        run = asyncio.run(run_demo(scenario_dir, on_output=show))
    except ValueError as exc:  # ScenarioError
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except OSError as exc:
        typer.echo(f"error: cannot run the demo in {scenario_dir}: {exc.strerror or exc}.", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"{run.requests} API calls, replayed offline through the real anthropic SDK.")
    raise typer.Exit(1 if run.result.is_error else 0)


def run() -> None:
    """The ``replay`` script and ``python -m replay.cli``: the command line in a process of its own."""
    command_owns_the_process()
    app()
