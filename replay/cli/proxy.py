"""``replay proxy``: record and replay any client over HTTP, in the foreground, until Ctrl-C."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from replay.cassette.record_mode import RecordMode
from replay.cli.common import bad_input, fail
from replay.cli.signals import Terminated, cleanup_on_sigterm

# The proxy's default upstream (replay.proxy.server.DEFAULT_UPSTREAM, pinned equal by a test),
# spelled here so that `replay --help` does not import httpx and vcrpy.
DEFAULT_UPSTREAM = "https://api.anthropic.com"

__all__ = ["proxy"]


def proxy(
    cassette: Annotated[
        Path,
        typer.Option("--cassette", metavar="FILE", help="The cassette to replay from and record into (YAML)."),
    ],
    record_mode: Annotated[
        RecordMode,
        typer.Option(
            "--record-mode",
            metavar="MODE",
            help="none: replay only (a miss is an error answer); once: record the cassette if it does not exist, "
            "else replay only; new_episodes: replay what matches, record the rest; all: record everything anew; "
            "rewrite: replay in recorded order until the first request that differs, record from there, prune "
            "what was not requested (on stop).",
            case_sensitive=False,
        ),
    ] = RecordMode.NONE,
    upstream: Annotated[
        str,
        typer.Option("--upstream", metavar="URL", help="Where requests are forwarded when recording."),
    ] = DEFAULT_UPSTREAM,
    port: Annotated[
        int, typer.Option("--port", metavar="PORT", help="The loopback port to listen on; 0 picks one.")
    ] = 0,
) -> None:
    """Record and replay any Messages API client over HTTP: point ANTHROPIC_BASE_URL at this.

    A loopback server that answers from the cassette, matching requests by the project's
    fingerprint (method, path, normalized body). When the record mode allows, what the cassette
    lacks is forwarded to --upstream, streamed back to the client event by event as it arrives,
    and recorded, secrets scrubbed; the cassette is rewritten atomically after each recorded
    interaction and on exit. A request the cassette cannot answer gets HTTP 599 with the
    diagnosis as an Anthropic-shaped error. The first line printed is
    ANTHROPIC_BASE_URL=http://127.0.0.1:PORT; then one line per request on stderr.

    Examples:

        replay proxy --cassette agent.yaml --record-mode once --port 8766
        export ANTHROPIC_BASE_URL=http://127.0.0.1:8766
        python my_agent.py                               # records, with your key
        ANTHROPIC_API_KEY=sk-ant-fake python my_agent.py   # replays

    Exit codes: 0 stopped with Ctrl-C, 2 bad input (a missing or broken cassette, a bad upstream or port).
    """
    import asyncio

    if not 0 <= port <= 65535:
        fail(f"--port must be from 0 to 65535 (0 picks a free port), not {port}.")
    if cassette.is_dir():
        fail(f"--cassette {cassette} is a folder; give the cassette file (for a bundle: {cassette}/cassette.yaml).")

    def log(line: str) -> None:
        typer.echo(line, err=True)

    from replay.proxy.server import CassetteProxy

    with bad_input():
        server = CassetteProxy(cassette, mode=record_mode.value, upstream=upstream, port=port, on_log=log)

    def ready(url: str) -> None:
        typer.echo(f"ANTHROPIC_BASE_URL={url}")
        doing = f"recording into {cassette} from {upstream}" if server.recording else f"replaying {cassette}"
        typer.echo(f"The replay proxy is {doing} (record mode {record_mode.value}). Ctrl-C stops it.", err=True)

    try:
        with cleanup_on_sigterm(), bad_input():
            asyncio.run(server.serve_forever(on_ready=ready))
    except (KeyboardInterrupt, Terminated) as stop:
        recorded = len(server.recorded)
        saved = f"; {recorded} recorded interaction(s) saved in {cassette}" if recorded else ""
        typer.echo(f"Stopped after {len(server.requests)} request(s){saved}.", err=True)
        if isinstance(stop, Terminated):
            raise
