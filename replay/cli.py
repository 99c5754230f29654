"""The ``replay`` command line: thin commands over the library, errors mapped to exit codes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from replay.demo import DEMO_DIR, describe, run_demo
from replay.scenario import ScenarioError

app = typer.Typer(
    name="replay",
    help="Record agent-loop sessions, replay them offline, and test what the loop did.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def main() -> None:
    """Record agent-loop sessions, replay them offline, and test what the loop did."""


@app.command()
def demo(
    scenario_dir: Annotated[
        Path, typer.Option("--scenario-dir", help="A folder with scenario.yaml and workspace/.")
    ] = DEMO_DIR,
) -> None:
    """Run a scripted session against the fake model and print the conversation and the trace."""

    def show(item: object) -> None:
        line = describe(item)
        if line is not None:
            typer.echo(line)

    try:
        run = asyncio.run(run_demo(scenario_dir, on_output=show))
    except ScenarioError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except OSError as exc:
        typer.echo(f"error: cannot run the demo in {scenario_dir}: {exc.strerror or exc}.", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"{run.requests} API calls, replayed offline through the real anthropic SDK.")
    raise typer.Exit(1 if run.result.is_error else 0)
