"""Record mode ``rewrite``: re-record a cassette from its first divergence.

While the session's requests are the cassette's own, one after the other in recorded order,
they are answered from it. At the first request that is not the next recorded one, that
request and every later one go to the upstream and are recorded. The cassette written on close
holds the interactions played before the divergence, in order, then the recorded ones; every
recorded interaction no request reached is pruned, so the next replay plays the whole file.

Matching is in order, not by the player's per-fingerprint queues: the kept interactions are a
prefix of the old recording, so with a deterministic upstream the result is exactly what
recording the whole session anew would give.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from replay.cassette._model import Cassette
from replay.cassette.fingerprints import Normalizer, fingerprint, fingerprint_with_body, parse_body
from replay.cassette.interaction import Interaction
from replay.cassette.scrub import scrub_bytes

__all__ = ["CassetteRewrite", "DivergenceHook", "KeptRequest", "RewriteCounts"]


@dataclass(frozen=True)
class KeptRequest:
    """A request answered from the cassette before the divergence, as the session sent it."""

    method: str
    path: str
    body: bytes


# Called once, before the first request goes upstream, with the requests kept so far: a caller
# positions its upstream there (a fake model serves its script from that turn on). It may raise
# to refuse the recording (a live bundle without a key); every later request then fails the same way.
DivergenceHook = Callable[[Sequence[KeptRequest]], None]


@dataclass(frozen=True)
class RewriteCounts:
    """What a rewrite did to the cassette's interactions."""

    kept: int  # played from the old cassette, before the divergence
    rerecorded: int  # recorded from the upstream, from the divergence on
    pruned: int  # in the old cassette, but no longer requested

    @property
    def changed(self) -> bool:
        """Whether the cassette's interactions are not the old ones, as they were."""
        return bool(self.rerecorded or self.pruned)

    def to_json(self) -> dict[str, int]:
        return {"kept": self.kept, "rerecorded": self.rerecorded, "pruned": self.pruned}


class CassetteRewrite:
    """The splice of one rewrite: which requests are answered from the old cassette, and the
    interactions the new one keeps."""

    def __init__(
        self,
        cassette: Cassette | None,
        *,
        normalizer: Normalizer | None = None,
        on_divergence: DivergenceHook | None = None,
    ) -> None:
        self._old = list(cassette.interactions) if cassette is not None else []
        self._fingerprints = cassette.fingerprints() if cassette is not None else []
        self._normalizer = normalizer or Normalizer()
        # Settable until the divergence: a caller may start its upstream after the recorder.
        self.on_divergence = on_divergence
        self.kept_requests: list[KeptRequest] = []
        self.diverged = False
        self._refusal: BaseException | None = None

    def fingerprint_of(self, method: str, path: str, body: bytes) -> str:
        """The fingerprint of a live request, as the player computes it (scrubbed, normalized)."""
        return fingerprint(method, path, parse_body(scrub_bytes(body)), normalizer=self._normalizer)

    def fingerprint_with_body(self, method: str, path: str, body: bytes) -> tuple[str, Any]:
        """`fingerprint_of` and the body as it reads it, parsed (None unless a JSON object)."""
        return fingerprint_with_body(method, path, parse_body(scrub_bytes(body)), normalizer=self._normalizer)

    def answer(self, method: str, path: str, body: bytes, *, key: str | None = None) -> Interaction | None:
        """The recorded interaction for this request while the session follows the cassette;
        None from the divergence on (the request is to be recorded). ``key`` is the request's
        fingerprint if the caller has it."""
        if self._refusal is not None:
            raise self._refusal
        if not self.diverged:
            number = len(self.kept_requests)
            key = key if key is not None else self.fingerprint_of(method, path, body)
            if number < len(self._fingerprints) and self._fingerprints[number] == key:
                self.kept_requests.append(KeptRequest(method, path, body))
                return self._old[number]
            self.diverged = True
            if self.on_divergence is not None:
                try:
                    self.on_divergence(list(self.kept_requests))
                except BaseException as exc:
                    self._refusal = exc
                    raise
        return None

    @property
    def kept(self) -> list[Interaction]:
        """The old interactions played before the divergence, in order."""
        return self._old[: len(self.kept_requests)]

    def counts(self, rerecorded: int) -> RewriteCounts:
        """The counts, given how many interactions were recorded."""
        kept = len(self.kept_requests)
        return RewriteCounts(kept=kept, rerecorded=rerecorded, pruned=len(self._old) - kept)
