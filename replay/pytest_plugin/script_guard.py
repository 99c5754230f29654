"""A marker's scenario that runs out of turns while a test records: the loop (or the test's own
agent) sees the fake server's 500 as an ordinary API error and may well pass, so the plugin fails
the test with the sentence `replay record` prints, and puts the cassette back as it was."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# Loaded with the plugin, by every pytest run where agent-replay is installed: the fake model is
# imported only when a test records from a scenario (see the package's __init__).
if TYPE_CHECKING:
    from replay.fake.model import FakeModel

__all__ = ["ScriptGuard"]


@dataclass
class ScriptGuard:
    """Made before the recorder opens the cassette (so ``previous`` is what was committed), told
    the fake model once it serves, restored after the recorder has saved."""

    scenario: Path
    cassette: Path
    previous: bytes | None
    fake_model: FakeModel | None = None

    @classmethod
    def before_recording(cls, scenario: Path, cassette: Path) -> ScriptGuard:
        return cls(scenario, cassette, cassette.read_bytes() if cassette.is_file() else None)

    @property
    def ran_out(self) -> bool:
        return self.fake_model is not None and self.fake_model.exhausted is not None

    def restore_if_ran_out(self) -> None:
        """Put the cassette back as it was (removed if it was new) when the script ran out."""
        from replay.storage.atomic import atomic_write_text

        if not self.ran_out:
            return
        if self.previous is None:
            self.cassette.unlink(missing_ok=True)
        else:
            atomic_write_text(self.cassette, self.previous.decode("latin-1"), encoding="latin-1")  # byte for byte

    def check(self) -> None:
        """Fail the test if the script ran out."""
        from replay.session.recording import exhausted_message

        __tracebackhide__ = True
        if self.fake_model is not None and self.fake_model.exhausted is not None:
            pytest.fail(exhausted_message(self.fake_model.exhausted, self.scenario, self.cassette), pytrace=False)
