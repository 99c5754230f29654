"""A recording runs the fake model's prompt cache on the session's clock: `clock_advance_minutes`
and the engine's sleeps move it, and reading it moves nothing the session writes."""

from __future__ import annotations

from pathlib import Path

from replay.cassette.record import RecordMode
from replay.fake.model import FakeModel
from replay.fake.scenario import Scenario
from replay.fake.server import FakeModelServer
from replay.schema.options import SessionOptions
from replay.session.bundle import SessionSpec
from replay.session.session_run import SessionRun, run_session

SPEC = SessionSpec(prompts=("one", "two"), options=SessionOptions(clock_advance_minutes=(0, 7)))


def script() -> Scenario:
    return Scenario.from_list([{"content": [{"text": "first"}]}, {"content": [{"text": "second"}]}])


async def record(tmp_path: Path, name: str, *, fake_model: FakeModel, pass_model: bool) -> SessionRun:
    (tmp_path / name).mkdir()
    with FakeModelServer(fake_model) as server:
        return await run_session(
            SPEC,
            tmp_path / name,
            cassette=tmp_path / f"{name}.yaml",
            mode=RecordMode.ALL,
            base_url=server.url,
            fake_model=fake_model if pass_model else None,
        )


async def test_the_fake_models_clock_is_the_sessions(tmp_path: Path) -> None:
    fake_model = FakeModel(script())
    await record(tmp_path, "run", fake_model=fake_model, pass_model=True)
    assert fake_model.clock() == 7 * 60


async def test_reading_the_session_clock_changes_nothing_the_session_writes(tmp_path: Path) -> None:
    with_clock = await record(tmp_path, "a", fake_model=FakeModel(script()), pass_model=True)
    without = await record(tmp_path, "b", fake_model=FakeModel(script()), pass_model=False)
    assert with_clock.transcript == without.transcript
