"""The injected seams write exactly what the standard library's own formatting would: the fast
paths behind a message's uuid and timestamp change no byte of a transcript."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from engine.deps import ManualClock, SeededUuids, format_timestamp


def reference_timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@given(seed=st.integers(min_value=0, max_value=2**64))
def test_seeded_uuids_are_the_version_4_uuids_of_the_seeded_bits(seed: int) -> None:
    uuids, bits = SeededUuids(seed), random.Random(seed)
    for _ in range(5):
        assert uuids() == str(uuid.UUID(int=bits.getrandbits(128), version=4))


@given(
    moment=st.datetimes(
        min_value=datetime(2, 1, 1),
        timezones=st.builds(timezone, st.timedeltas(min_value=timedelta(hours=-23), max_value=timedelta(hours=23))),
    )
)
def test_a_timestamp_is_what_strftime_writes(moment: datetime) -> None:
    assert format_timestamp(moment) == reference_timestamp(moment)


def test_a_timestamp_of_an_early_year_is_written_as_strftime_writes_it() -> None:
    early = datetime(999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
    assert format_timestamp(early) == reference_timestamp(early)


def test_the_manual_clock_stamps_milliseconds_with_a_z() -> None:
    assert format_timestamp(ManualClock()()) == "2026-01-01T00:00:00.001Z"
