"""Mount a cassette into a respx router, for test suites that already mock HTTP with respx.

respx 0.23 patches ``httpx``, while the anthropic SDK talks ``httpx2``: respx sees the SDK's
requests only when ``httpx2.alias_httpx()`` ran before anything imported ``httpx``. That is the
test run's decision, made once with ``pytest -p replay.respx_alias`` (docs/respx.md); this module
never makes it, and refuses to mount a cassette where respx would not see the SDK's traffic.

The route's side effect hands each request to a `CassettePlayer`, so replay through respx
matches exactly as `CassetteTransport` does: fingerprints, recorded order, recorded faults.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx2

from replay.cassette._io import load_cassette
from replay.cassette._model import Cassette
from replay.cassette.interaction import FaultKind, Interaction, RecordedResponse
from replay.cassette.transport import DROPPED_CONNECTION_MESSAGE, CassettePlayer, request_path

if TYPE_CHECKING:
    import respx

__all__ = ["DEFAULT_BASE_URL", "RespxNotAliasedError", "mount_cassette"]

DEFAULT_BASE_URL = "https://api.anthropic.com"


class RespxNotAliasedError(RuntimeError):
    """respx patches a different ``httpx`` than the SDK uses, so it would never see the SDK's requests."""


def mount_cassette(
    router: respx.Router,
    cassette: Cassette | Path,
    *,
    base_url: str = DEFAULT_BASE_URL,
    strict: bool = False,
    workspace: Path | None = None,
) -> CassettePlayer:
    """Answer every request under ``base_url`` that reaches ``router`` from ``cassette``.

    Returns the player: call ``player.finish()`` at the end of the test to get the unplayed
    interactions (with ``strict=True`` it raises `UnplayedInteractionsError` instead). A request
    no interaction answers raises `CassetteMismatchError`; the SDK reports it as
    ``APIConnectionError`` whose ``__cause__`` is the miss.
    """
    _require_respx()
    _require_alias()
    loaded = cassette if isinstance(cassette, Cassette) else load_cassette(cassette)
    player = CassettePlayer.from_cassette(loaded, workspace=workspace, strict=strict)
    prefix = str(httpx2.URL(base_url)).rstrip("/") + "/"

    def answer(request: httpx2.Request) -> httpx2.Response:
        # respx has read the request body already (both of its mockers do), for sync and async clients.
        interaction = player.match(request.method, request_path(request), request.content)
        return cassette_response(interaction, request)

    router.route(url__startswith=prefix).mock(side_effect=answer)
    return player


def cassette_response(interaction: Interaction, request: httpx2.Request) -> httpx2.Response:
    """The recorded response for a respx side effect: its body streams chunk by chunk to a sync
    or an async client, and a recorded fault happens again at the same place."""
    response = interaction.response
    if response.fault is not None and response.fault.kind is FaultKind.CONNECTION_FAILED:
        raise httpx2.ConnectError("Recorded connection failure: the request never got a response.", request=request)
    headers = [(name, value) for name, value in response.headers.items() if name.lower() != "content-length"]
    return httpx2.Response(response.status, headers=headers, stream=_ReplayStream(response, request), request=request)


class _ReplayStream(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """Both kinds of stream: a side effect cannot tell whether a sync or an async client asked.
    Not an ``httpx2.ByteStream``, so respx hands it on unread instead of reading it up front
    (which would raise a recorded drop before the client saw a single event)."""

    def __init__(self, response: RecordedResponse, request: httpx2.Request) -> None:
        self._response, self._request = response, request

    def __iter__(self) -> Iterator[bytes]:
        yield from self._response.chunks()
        self._raise_fault()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._response.chunks():
            yield chunk
        self._raise_fault()

    def _raise_fault(self) -> None:
        fault = self._response.fault
        if fault is not None and fault.kind is FaultKind.DROPPED_CONNECTION:
            raise httpx2.RemoteProtocolError(DROPPED_CONNECTION_MESSAGE, request=self._request)


def _require_respx() -> None:
    try:
        import respx  # noqa: F401
    except ImportError:
        raise ImportError(
            "replay.cassette.respx_adapter needs respx, which is not installed; "
            "install it with `pip install 'respx>=0.23'` (or the project's test extra: `pip install -e '.[test]'`)."
        ) from None


def _require_alias() -> None:
    httpx = sys.modules.get("httpx")
    if httpx is not httpx2:
        where = getattr(httpx, "__file__", None) or "an unknown location"
        raise RespxNotAliasedError(
            f"respx patches the httpx imported from {where}, not httpx2, so the anthropic SDK's requests would "
            "bypass the router. Run pytest with `-p replay.respx_alias` (on the command line or in addopts) so "
            "httpx2.alias_httpx() runs before anything imports httpx; see docs/respx.md."
        )
