"""``replay record`` and ``replay serve``: make new bundles, and serve the fake model."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated

import typer

from replay.cli.common import bad_input, count, fail, say_waiting
from replay.cli.signals import cleanup_on_sigterm
from replay.collector import collector_paused
from replay.loopback import is_loopback

__all__ = ["record", "serve"]

API_KEY_VARIABLE = "ANTHROPIC_API_KEY"


def record(
    out: Annotated[
        Path,
        typer.Option(
            "--out", metavar="BUNDLE", help="The bundle folder to write (replaced if it is already a bundle)."
        ),
    ],
    scenario: Annotated[
        Path | None,
        typer.Option("--scenario", metavar="FILE", help="A scenario YAML file scripting the fake model's answers."),
    ] = None,
    prompts: Annotated[
        list[str] | None,
        typer.Option(
            "--prompt",
            metavar="TEXT",
            help="A prompt to submit, as the user would type it; repeat it for several, sent in order. "
            "Default: the scenario's prompts.",
        ),
    ] = None,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            metavar="FOLDER",
            help="The folder the tools start from (copied into the bundle). Default: workspace/ beside the "
            "scenario file if there is one, else an empty folder.",
            show_default=False,
        ),
    ] = None,
    live: Annotated[
        bool, typer.Option("--live", help=f"Record against the real Anthropic API (needs {API_KEY_VARIABLE}).")
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", metavar="MODEL", help="The model to ask (default: the scenario's setting, else the engine's)."
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", metavar="URL", help="The API's base URL for --live (default: the SDK's)."),
    ] = None,
    wait: Annotated[
        float,
        typer.Option(
            "--wait",
            metavar="SECONDS",
            help="If another process is writing the bundle, wait up to this many seconds for it "
            "(default: exit 2 at once, naming that process).",
            min=0,
        ),
    ] = 0.0,
) -> None:
    """Record a session into a bundle: against the fake model (a scenario) or live.

    With --scenario the fake model is served on loopback and the session goes through real HTTP,
    exactly as a live recording does, with no key and no network. With --live the prompts go to
    the real API; the key is read from ANTHROPIC_API_KEY and never written to the bundle.

    Flags win over the scenario's prompts:, settings: and session:, which win over the defaults;
    --model changes only the model. A script that runs out of turns is refused (exit 2).

    Examples:

        replay record --scenario cassettes/demo/scenario.yaml --out cassettes/review
        replay record --scenario cassettes/demo/scenario.yaml \\
            --prompt "Review notes.md" --out cassettes/review
        replay record --live --prompt "List the files" \\
            --out cassettes/live-ls --model claude-sonnet-4-5

    Exit codes: 0 recorded, 2 bad input (a missing key, a broken scenario, an --out folder that is not a bundle,
    a bundle another process is writing).
    """
    import asyncio

    if live and scenario is not None:
        fail("Give either --scenario (the fake model) or --live (the real API), not both.")
    if not live and scenario is None:
        fail("replay record needs --scenario FILE (record against the fake model) or --live (against the real API).")
    if live and not prompts:
        fail("replay record --live needs at least one --prompt TEXT: the prompts are what the user says.")
    # imported here, not above: `replay --help` must not import the SDK
    with collector_paused(long_lived=True):  # see replay.collector
        from replay.session.bundle import SESSION_FILE
        from replay.session.recording import record_bundle

    api_key = os.environ.get(API_KEY_VARIABLE) if live else None
    if live and not api_key:
        fail(f"A live recording needs an API key: set {API_KEY_VARIABLE} (export {API_KEY_VARIABLE}=sk-ant-...).")
    if out.exists() and not (out / SESSION_FILE).is_file() and (not out.is_dir() or any(out.iterdir())):
        fail(f"{out} exists and is not a bundle; refusing to replace it. Choose a new --out folder.")
    with cleanup_on_sigterm(), bad_input():
        bundle = asyncio.run(
            record_bundle(
                out,
                prompts=prompts or (),
                scenario=scenario,
                workspace=workspace,
                overrides={"model": model},
                api_key=api_key,
                base_url=base_url,
                wait=wait,
                on_wait=say_waiting(out),
            )
        )
        trace = bundle.recorded_trace()
    passes = sum(len(p.passes) for p in trace.prompts) if trace is not None else 0
    terminals = ", ".join(str(p.terminal) for p in trace.prompts) if trace is not None else "?"
    submitted = len(bundle.spec.prompts)
    noun = "terminal" if submitted == 1 else "terminals"
    typer.echo(f"Recorded {out}: {count(submitted, 'prompt')}, {count(passes, 'pass')}, {noun} {terminals}.")
    typer.echo(f"Replay it offline with: replay run {out}")


def serve(
    scenario: Annotated[
        Path, typer.Option("--scenario", metavar="FILE", help="A scenario YAML file scripting the fake model.")
    ],
    host: Annotated[str, typer.Option("--host", metavar="HOST", help="A loopback address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", metavar="PORT", help="The port to listen on; 0 picks a free one.")] = 0,
    log: Annotated[
        bool, typer.Option("--log", help="Print one line per request: method, path, status, ms, the turn played.")
    ] = False,
    no_restart: Annotated[
        bool,
        typer.Option(
            "--no-restart",
            help="Play the scenario once through: do not restart it when a new conversation starts.",
        ),
    ] = False,
) -> None:
    """Serve the fake model over HTTP on loopback, in the foreground, until Ctrl-C.

    Any Messages API client can talk to it: the n-th POST /v1/messages gets the n-th scripted
    turn (streamed or not) unless a turn's match claims it (a summary or title query, say: see
    docs/scenarios.md), POST /v1/messages/count_tokens is answered too, and any API key is
    accepted. The scenario starts again for every new conversation (a request whose messages
    hold no assistant turn, after a complete answer, that no matched turn accepts), so an agent
    can run again and again against one server; POST /reset restarts it too.

    Examples:

        replay serve --scenario cassettes/demo/scenario.yaml --port 8765 --log
        ANTHROPIC_BASE_URL=http://127.0.0.1:8765 ANTHROPIC_API_KEY=sk-ant-fake \\
            python my_agent.py
        curl -X POST http://127.0.0.1:8765/reset    # start the scenario again

    Exit codes: 0 stopped with Ctrl-C, 2 bad input (a broken scenario, a host that is not loopback).
    """
    import asyncio

    if not is_loopback(host):
        fail(
            f"--host must be a loopback address (127.0.0.1, ::1 or localhost), not {host!r}: "
            "the fake model checks no key."
        )
    from replay.fake.model import FakeModel
    from replay.fake.scenario import load_scenario
    from replay.fake.server import FakeModelServer

    with bad_input():
        loaded = load_scenario(scenario)
        server = FakeModelServer(
            # A served model's prompt cache expires on real time, as the API's does.
            FakeModel(loaded, clock=time.monotonic),
            host=host,
            port=port,
            restart_per_conversation=not no_restart,
            on_request=(lambda line: typer.echo(line, err=True)) if log else None,
        )

    def ready(url: str) -> None:
        typer.echo(f"Serving the fake model ({len(loaded.turns)} scripted turns from {scenario}) at {url}")
        typer.echo(f"Point a client at it with ANTHROPIC_BASE_URL={url} (any API key works). Ctrl-C stops it.")

    try:
        with bad_input():
            asyncio.run(server.serve_forever(on_ready=ready))
    except KeyboardInterrupt:
        typer.echo("Stopped.")
