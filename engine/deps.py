"""Dependency seams: uuid, clock, sleep and randomness are injected.

Nothing else in the engine reads the wall clock, calls ``uuid4()`` or touches the global RNG,
so a seeded run writes byte-identical transcripts.
"""

from __future__ import annotations

import asyncio
import random
import uuid as _uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.model import ModelClient

__all__ = ["ManualClock", "QueryDeps", "SeededUuids", "SystemClock", "format_timestamp"]


def format_timestamp(moment: datetime) -> str:
    """ISO-8601 with milliseconds and a ``Z`` suffix, as Claude Code writes it."""
    utc = moment.astimezone(UTC)
    if utc.year < 1000:
        # strftime's %Y does not pad such a year on every platform: keep what it writes.
        return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    # The fields formatted directly: strftime cost more than the rest of a message's stamping.
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}."
        f"{moment.microsecond // 1000:03d}Z"
    )


_UUID4_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_UUID4_SET = (0x8000 << 48) | (4 << 76)


class SeededUuids:
    """Version-4 UUIDs drawn from a private seeded RNG: the same seed gives the same sequence."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def __call__(self) -> str:
        # What ``str(uuid.UUID(int=..., version=4))`` writes, without building the UUID object
        # (its checks cost more than drawing the bits): RFC 4122 variant, version 4.
        bits = self._rng.getrandbits(128) & _UUID4_CLEAR | _UUID4_SET
        text = f"{bits:032x}"
        return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


class ManualClock:
    """A clock that only moves when asked: each reading advances it by ``tick``, and ``sleep``
    advances it by the slept time without waiting, so retries and timestamps are repeatable."""

    def __init__(
        self,
        start: datetime = datetime(2026, 1, 1, tzinfo=UTC),
        *,
        tick: timedelta = timedelta(milliseconds=1),
    ) -> None:
        self._now = start
        self._tick = tick
        self.slept: list[float] = []

    def __call__(self) -> datetime:
        self._now += self._tick
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(seconds)


class SystemClock:
    """The real clock, for live sessions."""

    def __call__(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@dataclass(frozen=True, kw_only=True)
class QueryDeps:
    """Everything the loop reaches outside itself. Tests and the harness swap these."""

    call_model: ModelClient
    uuid: Callable[[], str] = field(default_factory=lambda: SeededUuids(0))
    clock: Callable[[], datetime] = field(default_factory=ManualClock)
    sleep: Callable[[float], Awaitable[None]] = field(default=None)  # type: ignore[assignment]
    rng: random.Random = field(default_factory=lambda: random.Random(0))

    def __post_init__(self) -> None:
        if self.sleep is None:
            # Pair the default sleep with the clock so a sleep moves time and never waits.
            sleeper = getattr(self.clock, "sleep", None)
            object.__setattr__(self, "sleep", sleeper if sleeper is not None else ManualClock().sleep)

    def now(self) -> str:
        return format_timestamp(self.clock())

    @classmethod
    def deterministic(cls, call_model: ModelClient, *, seed: int = 0) -> QueryDeps:
        """Seeded uuids, a manual clock and a seeded RNG: two runs give identical bytes."""
        clock = ManualClock()
        return cls(
            call_model=call_model,
            uuid=SeededUuids(seed),
            clock=clock,
            sleep=clock.sleep,
            rng=random.Random(seed),
        )

    @classmethod
    def live(cls, call_model: ModelClient) -> QueryDeps:
        """Real uuids, wall clock and sleep, for sessions against the real API."""
        clock = SystemClock()
        return cls(
            call_model=call_model,
            uuid=lambda: str(_uuid.uuid4()),
            clock=clock,
            sleep=clock.sleep,
            rng=random.Random(),
        )
