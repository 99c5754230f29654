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

IDLE = SessionSpec(prompts=("one", "two"), options=SessionOptions(clock_advance_minutes=(0, 7)))
BRISK = SessionSpec(prompts=("one", "two"), options=SessionOptions(clock_advance_minutes=(0, 1)))


def script() -> Scenario:
    return Scenario.from_list([{"content": [{"text": "first"}]}, {"content": [{"text": "second"}]}])


async def record(
    tmp_path: Path, name: str, *, fake_model: FakeModel, pass_model: bool, spec: SessionSpec = IDLE
) -> SessionRun:
    (tmp_path / name).mkdir()
    with FakeModelServer(fake_model) as server:
        return await run_session(
            spec,
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


def second_usage(run: SessionRun) -> dict[str, int]:
    """What the second prompt's one request was billed."""
    return run.results[1].usage


async def test_reading_the_session_clock_changes_nothing_the_session_writes(tmp_path: Path) -> None:
    # One minute apart the cached prefix is alive either way, so the clock may only be read, and
    # reading it must neither tick it nor move a timestamp.
    with_clock = await record(tmp_path, "a", fake_model=FakeModel(script()), pass_model=True, spec=BRISK)
    without = await record(tmp_path, "b", fake_model=FakeModel(script()), pass_model=False, spec=BRISK)
    assert with_clock.transcript == without.transcript
    assert second_usage(with_clock)["cache_read_input_tokens"] > 0


async def test_an_idle_gap_past_the_ttl_expires_the_cached_prefix(tmp_path: Path) -> None:
    on_the_clock = await record(tmp_path, "a", fake_model=FakeModel(script()), pass_model=True)
    frozen = await record(tmp_path, "b", fake_model=FakeModel(script()), pass_model=False)
    assert second_usage(on_the_clock)["cache_read_input_tokens"] == 0
    assert second_usage(on_the_clock)["cache_creation_input_tokens"] > 0
    assert second_usage(frozen)["cache_read_input_tokens"] > 0
