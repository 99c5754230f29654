"""``CassetteTransport``: replay a cassette through ``httpx2``, so the SDK and the engine run
unchanged.

Each request is fingerprinted (``replay.cassette.fingerprints``) and looked up in a hash index: identical
fingerprints play in recorded order, so a retried request gets the next recorded answer, and
the lookup costs the same whatever the cassette's size. Responses are handed to the SDK as a
stream, one chunk per event, and recorded faults happen again at the same place. A request that
matches nothing raises ``CassetteMismatchError``, which names the request, shows the nearest
recorded ones with a diff, and says how to re-record.
"""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

import httpx2

from replay.cassette._io import load_cassette
from replay.cassette._model import Cassette
from replay.cassette.fingerprints import (
    Normalizer,
    canonical_json,
    fingerprint,
    fingerprint_with_body,
    home_folder,
    parse_body,
    route_key,
)
from replay.cassette.interaction import FaultKind, Interaction, RecordedRequest, RecordedResponse
from replay.cassette.jsondiff import differing_paths
from replay.cassette.normalized_text import NormalizedText
from replay.cassette.request_keys import RequestKeys
from replay.cassette.scrub import scrub_bytes
from replay.cassette.sent_again import LOGGED_BODY, SentAgain
from replay.cassette.tool_result_order import tool_results_by_id

__all__ = [
    "CONNECTION_FAILED_MESSAGE",
    "DROPPED_CONNECTION_MESSAGE",
    "RERECORD_HINT",
    "CassetteMismatchError",
    "CassettePlayer",
    "CassetteTransport",
    "LoggedRequest",
    "NormalizedText",
    "SyncCassetteTransport",
    "UnplayedInteractionsError",
    "replay_response",
    "request_path",
]

# A recorded connection failure keeps no error text; its replay (and its recording) says this.
CONNECTION_FAILED_MESSAGE = "Recorded connection failure: the request never got a response."
DROPPED_CONNECTION_MESSAGE = "peer closed connection without sending complete message body (incomplete chunked read)"
RERECORD_HINT = (
    'To re-record, run the session again with record mode "rewrite" (keeps what matches up to the first request '
    'that differs, records from there and prunes what is no longer requested), "new_episodes" (keeps everything '
    'and records what is missing) or "all" (records everything anew), e.g. `pytest --record-mode=rewrite`; for '
    "a bundle, `replay run BUNDLE --update`."
)
_NEAREST = 3
_UNPARSED = object()  # a live body not parsed yet (the fast path never needs it parsed)
_DIFF_LINES = 40


class CassetteMismatchError(Exception):
    """A request that no recorded interaction answers."""


class UnplayedInteractionsError(Exception):
    """Strict mode: recorded interactions that no request asked for."""


@dataclass(frozen=True)
class LoggedRequest:
    """A request the transport saw, in order: its path, its fingerprint, whether the cassette
    answered it (the behaviour trace lists these per pass), its body as the fingerprint reads it
    (parsed and normalized, so it is the same in any folder; the cache audit reads it), when it
    was sent on the session clock (None without one, as in a live recording) and whether it was
    answered."""

    path: str
    fingerprint: str
    matched: bool = True
    # Parsed from its normalized text at the first read (see `DecodedOnRead`); not in the repr,
    # which asyncio takes of a finished task's result (a session's whole request log).
    body: Any = field(default=LOGGED_BODY, repr=False)
    at: float | None = None
    # Whether the model began answering it (`RecordedResponse.began`): only then is it cached.
    answered: bool = True


@dataclass(frozen=True, slots=True)
class _Recorded:
    index: int
    fingerprint: str
    interaction: Interaction


class CassettePlayer:
    """The matching core shared by the async and sync transports."""

    def __init__(
        self,
        interactions: Sequence[Interaction],
        *,
        name: str = "<cassette>",
        fingerprints: Sequence[str] | None = None,
        recorded_normalizer: Normalizer | None = None,
        normalizer: Normalizer | None = None,
        strict: bool = False,
        fingerprints_home: str | None = None,
    ) -> None:
        # fingerprints_home: the home folder `fingerprints` were computed under (None: not known,
        # then no request is told sent again, see `SentAgain`).
        self.name = name
        self.strict = strict
        # The last line of a miss: how to record what is missing (a caller that knows, such as
        # the pytest plugin, names its own command).
        self.rerecord_hint = RERECORD_HINT
        self._normalizer = normalizer or Normalizer()
        # Live requests keyed a piece at a time, each piece normalized once (see request_keys).
        self._keys = RequestKeys(self._normalizer)
        recorded_normalizer = recorded_normalizer or Normalizer()
        self._recorded_normalizer = recorded_normalizer
        # Recorded requests by fingerprint with their tool results in id order, built at the
        # first request that misses (see tool_result_order).
        self._by_results_order: dict[str, list[_Recorded]] | None = None
        if fingerprints is None:
            fingerprints_home = home_folder()
            fingerprints = [
                fingerprint(i.request.method, i.request.path, i.request.body, normalizer=recorded_normalizer)
                for i in interactions
            ]
        self._recorded = [
            _Recorded(index, key, interaction)
            for index, (key, interaction) in enumerate(zip(fingerprints, interactions, strict=True))
        ]
        # A list per fingerprint, not a deque (a deque is a 64-slot block): most hold one request.
        self._queues: dict[str, list[_Recorded]] = {}
        for recorded in self._recorded:
            self._queues.setdefault(recorded.fingerprint, []).append(recorded)
        self._played = [False] * len(self._recorded)
        self._unplayed_from = 0  # no recorded interaction before this one is unplayed
        self._sent = SentAgain(recorded_normalizer, self._normalizer, fingerprints_home)
        self._requests = 0
        self.log: list[LoggedRequest] = []
        # The session clock each logged request is stamped with (None: no clock).
        self.clock: Callable[[], float | None] | None = None

    @classmethod
    def from_cassette(
        cls, cassette: Cassette, *, workspace: Path | None = None, session_dir: Path | None = None, strict: bool = False
    ) -> CassettePlayer:
        """A player for a loaded cassette: recorded requests are normalized against the folders
        the recording used, live ones against the folders this run uses."""
        computed = cassette.computed_fingerprints
        known = computed is not None and len(computed) == len(cassette.interactions)
        return cls(
            cassette.interactions,
            name=str(cassette.path) if cassette.path else "<cassette>",
            fingerprints=cassette.fingerprints() if known else None,
            recorded_normalizer=cassette.normalizer(),
            normalizer=cassette.replay_normalizer(workspace=workspace, session_dir=session_dir),
            strict=strict,
            fingerprints_home=cassette.fingerprints_home if known else None,
        )

    def match(self, method: str, path: str, body: bytes) -> Interaction:
        """The next recorded interaction for this request; ``CassetteMismatchError`` if none."""
        self._requests += 1
        parsed: Any = _UNPARSED
        body_seen: Any
        sent_again = self._sent_again(method, path, body)
        if sent_again is not None:
            # The next recorded request sent again: its fingerprint (see sent_again).
            request, key = sent_again.interaction.request, sent_again.fingerprint
            body_seen = self._sent.logged_body(method, path, request)
        elif (fast := self._keys.key(method, path, body)) is not None:
            key, body_seen = fast.fingerprint, fast.body
        else:
            # Recorded bodies were scrubbed before they were saved: scrub this one the same way.
            parsed = parse_body(scrub_bytes(body))
            key, body_seen = fingerprint_with_body(method, path, parsed, normalizer=self._normalizer)
        queue = self._queues.get(key)
        at = self.clock() if self.clock is not None else None
        if queue:
            recorded: _Recorded | None = queue.pop(0)
        else:
            if parsed is _UNPARSED:
                parsed = parse_body(scrub_bytes(body))
            recorded = self._in_another_results_order(method, path, parsed)
        path = sys.intern(path)  # one string per route for the whole log, not one per request
        if recorded is None:
            self.log.append(LoggedRequest(path, key, matched=False, body=body_seen, at=at, answered=False))
            raise CassetteMismatchError(self._miss_message(method, path, parsed, key))
        answered = recorded.interaction.response.began
        self.log.append(LoggedRequest(path, key, body=body_seen, at=at, answered=answered))
        self._played[recorded.index] = True
        return recorded.interaction

    def _sent_again(self, method: str, path: str, body: bytes) -> _Recorded | None:
        """The first unplayed recorded request when this one is it sent again (`SentAgain`),
        else None."""
        if not self._sent.looking:
            return None
        played, start = self._played, self._unplayed_from
        while start < len(played) and played[start]:
            start += 1
        self._unplayed_from = start
        if start == len(played):
            return None
        recorded = self._recorded[start]
        # Unplayed, it is in its fingerprint's queue, and first (a played one leaves it): the one
        # the fingerprint keyed from the text would find.
        first = self._queues[recorded.fingerprint][0] is recorded
        sent = first and self._sent.sent_again(recorded.interaction.request, method, path, body)
        return recorded if sent else None

    def _in_another_results_order(self, method: str, path: str, body: Any) -> _Recorded | None:
        """The first unplayed recorded request that asks the same as this one but for the order of
        its tool results (taken from its fingerprint's queue too), or None."""
        if self._by_results_order is None:
            self._by_results_order = {}
            for recorded in self._recorded:
                request = recorded.interaction.request
                in_order = tool_results_by_id(request.body)
                if in_order is not request.body:
                    key = fingerprint(request.method, request.path, in_order, normalizer=self._recorded_normalizer)
                    self._by_results_order.setdefault(key, []).append(recorded)
        key = fingerprint(method, path, tool_results_by_id(body), normalizer=self._normalizer)
        for recorded in self._by_results_order.get(key, ()):
            if not self._played[recorded.index]:
                self._queues[recorded.fingerprint].remove(recorded)
                return recorded
        return None

    def fingerprint_of(self, method: str, path: str, body: bytes) -> str:
        """The fingerprint this player gives a live request."""
        fast = self._keys.key(method, path, body)
        if fast is not None:
            return fast.fingerprint
        return fingerprint(method, path, parse_body(scrub_bytes(body)), normalizer=self._normalizer)

    def unplayed(self) -> list[int]:
        """Indexes of the recorded interactions no request has asked for yet."""
        return [index for index, played in enumerate(self._played) if not played]

    def finish(self) -> list[int]:
        """Report the unplayed interactions; in strict mode, fail on them."""
        unplayed = self.unplayed()
        if unplayed and self.strict:
            listed = ", ".join(f"#{i + 1} {self._describe(self._recorded[i].interaction)}" for i in unplayed[:5])
            more = f" and {len(unplayed) - 5} more" if len(unplayed) > 5 else ""
            raise UnplayedInteractionsError(
                f"{len(unplayed)} recorded interaction(s) in {self.name} were never requested: {listed}{more}. "
                "The session made fewer calls than when it was recorded; if that is intended, re-record it."
            )
        return unplayed

    def _miss_message(self, method: str, path: str, body: Any, key: str) -> str:
        lines = [
            f"No recorded interaction matches request {self._requests}: {method} {path} "
            f"(fingerprint {key[:12]}) in {self.name}."
        ]
        lines.extend(self._same_body_elsewhere(method, path, body))
        nearest = self._nearest(method, path, body)
        if not nearest:
            lines.append(
                f"The cassette has no {method} {route_key(path)} request at all ({len(self._recorded)} interactions"
                f"{self._routes()})."
            )
        else:
            lines.append("Nearest recorded requests:")
            live_text = _pretty(self._normalizer.body(body))
            for recorded in nearest:
                played = "played" if self._played[recorded.index] else "not played yet"
                recorded_body = recorded.interaction.request.body
                recorded_text = _pretty(Normalizer().body(recorded_body))
                paths = differing_paths(recorded_body, body)
                where = f" — differs at {', '.join(paths)}" if paths else " — differs only in normalized text"
                lines.append(f"  #{recorded.index + 1} {self._describe(recorded.interaction)} ({played}){where}")
                diff = list(
                    difflib.unified_diff(
                        recorded_text.splitlines(),
                        live_text.splitlines(),
                        fromfile=f"recorded #{recorded.index + 1}",
                        tofile=f"request {self._requests}",
                        lineterm="",
                        n=1,
                    )
                )
                if len(diff) > _DIFF_LINES:
                    diff = [*diff[:_DIFF_LINES], f"... ({len(diff) - _DIFF_LINES} more diff lines)"]
                lines.extend(f"    {line}" for line in diff)
        lines.append(self.rerecord_hint)
        return "\n".join(lines)

    def _same_body_elsewhere(self, method: str, path: str, body: Any) -> list[str]:
        """Lines naming the recorded requests that this body would match under their own
        method, path or query: the request differs from them in nothing else."""
        own_route = (method.upper(), route_key(path))
        found: dict[tuple[str, str], list[_Recorded]] = {}
        for recorded in self._recorded:
            request = recorded.interaction.request
            route = (request.method.upper(), route_key(request.path))
            if route != own_route:
                found.setdefault(route, []).append(recorded)
        lines = []
        for (other_method, other_path), group in found.items():
            key = fingerprint(other_method, other_path, body, normalizer=self._normalizer)
            same = [r for r in group if r.fingerprint == key]
            if same:
                first = next((r for r in same if not self._played[r.index]), same[0])
                played = "played" if self._played[first.index] else "not played yet"
                lines.append(
                    f"A recorded request has the same body but is {first.interaction.request.method} "
                    f"{first.interaction.request.path} (#{first.index + 1}, {played}; {len(same)} such): "
                    f"this request differs only in {_route_difference(method, path, first.interaction.request)}."
                )
        return lines

    def _routes(self) -> str:
        counts: dict[str, int] = {}
        for recorded in self._recorded:
            request = recorded.interaction.request
            route = f"{request.method} {request.path}"
            counts[route] = counts.get(route, 0) + 1
        if not counts:
            return ""
        listed = ", ".join(f"{route} ×{count}" for route, count in list(counts.items())[:5])
        return f": {listed}" + (f" and {len(counts) - 5} more routes" if len(counts) > 5 else "")

    def _nearest(self, method: str, path: str, body: Any) -> list[_Recorded]:
        own_route = (method.upper(), route_key(path))
        candidates = [
            r
            for r in self._recorded
            if (r.interaction.request.method.upper(), route_key(r.interaction.request.path)) == own_route
        ]
        if not candidates:
            return []
        # The next unplayed request is what the session most likely meant; then the closest
        # by how much of the body differs (cheap to compute on any cassette size).
        first_unplayed = next((r for r in candidates if not self._played[r.index]), None)
        size = len(canonical_json(body)) if body is not None else 0
        ranked = sorted(
            candidates[:500],
            key=lambda r: (
                len(differing_paths(r.interaction.request.body, body, limit=50)),
                abs(len(canonical_json(r.interaction.request.body)) - size),
            ),
        )
        chosen = [first_unplayed] if first_unplayed is not None else []
        for recorded in ranked:
            if len(chosen) >= _NEAREST:
                break
            if recorded not in chosen:
                chosen.append(recorded)
        return chosen

    @staticmethod
    def _describe(interaction: Interaction) -> str:
        request = interaction.request
        summary = ""
        if isinstance(request.body, dict) and isinstance(request.body.get("messages"), list):
            summary = f", {len(request.body['messages'])} messages"
        return f"{request.method} {request.path}{summary}"


def replay_response(interaction: Interaction, request: httpx2.Request, *, sync: bool) -> httpx2.Response:
    """The recorded response as an ``httpx2.Response`` streaming its body (faults included)."""
    response = interaction.response
    fault = response.fault
    if fault is not None and fault.kind is FaultKind.CONNECTION_FAILED:
        raise httpx2.ConnectError(CONNECTION_FAILED_MESSAGE, request=request)
    headers = [(name, value) for name, value in response.headers.items() if name.lower() != "content-length"]
    stream: httpx2.SyncByteStream | httpx2.AsyncByteStream = (
        _SyncReplayStream(response, request) if sync else _AsyncReplayStream(response, request)
    )
    return httpx2.Response(response.status, headers=headers, stream=stream, request=request)


def _player_argument(owner: str, player: object) -> CassettePlayer:
    if isinstance(player, CassettePlayer):
        return player
    if isinstance(player, (str, PathLike)):
        raise TypeError(
            f"{owner} takes a CassettePlayer, not the path {str(player)!r}; "
            f"for a cassette file write {owner}.from_path({str(player)!r})."
        )
    raise TypeError(
        f"{owner} takes a CassettePlayer, not {type(player).__name__}; "
        f"for a cassette file write {owner}.from_path(path)."
    )


def _player_from_path(owner: str, path: object, *, strict: bool) -> CassettePlayer:
    if not isinstance(path, (str, PathLike)):
        raise TypeError(
            f"{owner}.from_path takes the path of a cassette file (str or Path), not {type(path).__name__}."
        )
    return CassettePlayer.from_cassette(load_cassette(path), strict=strict)


class CassetteTransport(httpx2.AsyncBaseTransport):
    """An ``httpx2`` transport that answers from a cassette and never touches the network:
    ``httpx2.AsyncClient(transport=CassetteTransport.from_path("cassettes/x.yaml"))``."""

    def __init__(self, player: CassettePlayer) -> None:
        self.player = _player_argument(type(self).__name__, player)

    @classmethod
    def from_path(cls, path: str | PathLike[str], *, strict: bool = False) -> CassetteTransport:
        """A transport answering from the cassette file ``path`` (``CassetteError`` if it cannot be read)."""
        return cls(_player_from_path(cls.__name__, path, strict=strict))

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        interaction = self.player.match(request.method, request_path(request), body)
        return replay_response(interaction, request, sync=False)


class SyncCassetteTransport(httpx2.BaseTransport):
    """The synchronous twin of ``CassetteTransport``:
    ``httpx2.Client(transport=SyncCassetteTransport.from_path("cassettes/x.yaml"))``."""

    def __init__(self, player: CassettePlayer) -> None:
        self.player = _player_argument(type(self).__name__, player)

    @classmethod
    def from_path(cls, path: str | PathLike[str], *, strict: bool = False) -> SyncCassetteTransport:
        """A transport answering from the cassette file ``path`` (``CassetteError`` if it cannot be read)."""
        return cls(_player_from_path(cls.__name__, path, strict=strict))

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = request.read()
        interaction = self.player.match(request.method, request_path(request), body)
        return replay_response(interaction, request, sync=True)


class _AsyncReplayStream(httpx2.AsyncByteStream):
    def __init__(self, response: RecordedResponse, request: httpx2.Request) -> None:
        self._response, self._request = response, request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._response.chunks():
            yield chunk
        _raise_fault(self._response, self._request)


class _SyncReplayStream(httpx2.SyncByteStream):
    def __init__(self, response: RecordedResponse, request: httpx2.Request) -> None:
        self._response, self._request = response, request

    def __iter__(self) -> Iterator[bytes]:
        yield from self._response.chunks()
        _raise_fault(self._response, self._request)


def _raise_fault(response: RecordedResponse, request: httpx2.Request) -> None:
    if response.fault is not None and response.fault.kind is FaultKind.DROPPED_CONNECTION:
        raise httpx2.RemoteProtocolError(DROPPED_CONNECTION_MESSAGE, request=request)


def request_path(request: httpx2.Request) -> str:
    """The request's path and query, as fingerprints use it."""
    query = request.url.query.decode("ascii") if request.url.query else ""
    return request.url.path + (f"?{query}" if query else "")


def _route_difference(method: str, path: str, recorded: RecordedRequest) -> str:
    """Which of method, path and query tell a request from ``recorded``."""
    own_path, _, own_query = route_key(path).partition("?")
    other_path, _, other_query = route_key(recorded.path).partition("?")
    parts = [
        name
        for name, differs in (
            ("method", method.upper() != recorded.method.upper()),
            ("path", own_path != other_path),
            ("query", own_query != other_query),
        )
        if differs
    ]
    return " and ".join(parts)


def _pretty(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=1, sort_keys=True, ensure_ascii=False)
    except ValueError:
        return text
