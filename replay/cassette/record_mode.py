"""The record modes, in a module of their own: the command line names them in its help, and
``replay --help`` must not import what recording needs (httpx, vcrpy)."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["RecordMode", "RecordModeError", "parse_record_mode"]


class RecordMode(StrEnum):
    """When requests go to the network (vcrpy's modes, by the same names)."""

    NONE = "none"  # never: every request must be in the cassette
    ONCE = "once"  # record a cassette that does not exist yet; otherwise like none
    NEW_EPISODES = "new_episodes"  # answer what is recorded, record what is not
    ALL = "all"  # record everything anew, replacing the cassette
    # play what still matches, in order; record from the first request that does not; prune the
    # rest (replay.cassette.rewrite)
    REWRITE = "rewrite"

    @property
    def replaces(self) -> bool:
        """Whether the cassette is recorded anew, whatever it held (``all``)."""
        return self is RecordMode.ALL


class RecordModeError(ValueError):
    """A record mode name that is not one of the five."""


def parse_record_mode(value: str | RecordMode) -> RecordMode:
    """The ``RecordMode`` named ``value``; a clear error for anything else."""
    try:
        return RecordMode(value)
    except ValueError:
        names = ", ".join(mode.value for mode in RecordMode)
        raise RecordModeError(f"Record mode {value!r} is not one of {names}.") from None
