"""Record mode rewrite (`CassetteRecorder(mode="rewrite")`): the cassette answers while the
session's requests are its own, in recorded order; from the first that is not, every request
goes to the upstream through the real recording path and is recorded; what no request reached
is pruned."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anthropic
import pytest

from replay.cassette import RewriteCounts, load_cassette
from replay.cassette.record import CassetteRecorder
from replay.cassette.rewrite import KeptRequest
from replay.fake.model import FakeModel
from replay.fake.scenario import Scenario
from replay.fake.server import FakeModelServer


def scenario(*texts: str) -> Scenario:
    return Scenario.from_list([{"content": [{"text": t}]} for t in texts])


async def ask(recorder: CassetteRecorder, base_url: str, *questions: str) -> list[str]:
    answers = []
    async with recorder.async_client() as http_client:
        client = anthropic.AsyncAnthropic(
            api_key="sk-ant-test", base_url=base_url, max_retries=0, http_client=http_client
        )
        for question in questions:
            message = await client.messages.create(
                model="claude-sonnet-4-6", max_tokens=100, messages=[{"role": "user", "content": question}]
            )
            answers.append(message.content[0].text)
    return answers


def questions_in(path: Path) -> list[str]:
    return [i.request.body["messages"][0]["content"] for i in load_cassette(path).interactions]


async def recorded(path: Path, *questions: str) -> None:
    texts = [f"answer {n}" for n in range(1, len(questions) + 1)]
    with FakeModelServer(FakeModel(scenario(*texts))) as server, CassetteRecorder(path, mode="all") as recorder:
        await ask(recorder, server.url, *questions)


async def test_keeps_the_prefix_that_matches_records_from_the_first_difference_and_prunes_the_rest(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.yaml"
    await recorded(path, "one", "two", "three")
    fake = FakeModel(scenario("new two", "new four"))

    with FakeModelServer(fake) as server, CassetteRecorder(path, mode="rewrite") as recorder:
        answers = await ask(recorder, server.url, "one", "TWO", "three")

    # "three" was recorded, but after the divergence every request goes upstream.
    assert answers == ["answer 1", "new two", "new four"]
    assert [r.json["messages"][0]["content"] for r in fake.requests] == ["TWO", "three"]
    assert questions_in(path) == ["one", "TWO", "three"]
    assert recorder.rewrite_counts == RewriteCounts(kept=1, rerecorded=2, pruned=2)


async def test_a_shorter_session_keeps_what_it_asked_and_prunes_the_rest_without_reaching_the_upstream(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.yaml"
    await recorded(path, "one", "two", "three")

    with CassetteRecorder(path, mode="rewrite") as recorder:
        assert await ask(recorder, "http://127.0.0.1:9", "one") == ["answer 1"]  # port 9: nothing listens

    assert questions_in(path) == ["one"]
    assert recorder.rewrite_counts == RewriteCounts(kept=1, rerecorded=0, pruned=2)


async def test_matching_is_in_recorded_order_so_the_kept_interactions_are_a_prefix(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    await recorded(path, "one", "two")

    with FakeModelServer(FakeModel(scenario("fresh", "fresher"))) as server:
        with CassetteRecorder(path, mode="rewrite") as recorder:
            # "two" is in the cassette, but not as the first request: the session diverged there.
            assert await ask(recorder, server.url, "two", "one") == ["fresh", "fresher"]

    assert questions_in(path) == ["two", "one"]
    assert recorder.rewrite_counts == RewriteCounts(kept=0, rerecorded=2, pruned=2)


async def test_the_hook_is_called_once_at_the_divergence_with_the_requests_kept(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    await recorded(path, "one", "two")
    calls: list[list[KeptRequest]] = []

    def position(kept: Sequence[KeptRequest]) -> None:
        calls.append(list(kept))

    with FakeModelServer(FakeModel(scenario("x", "y"))) as server:
        with CassetteRecorder(path, mode="rewrite", on_divergence=position) as recorder:
            await ask(recorder, server.url, "one", "changed", "more")

    ((kept,),) = calls
    assert (kept.method, kept.path) == ("POST", "/v1/messages")
    assert b'"content":"one"' in kept.body


async def test_a_hook_that_refuses_fails_that_request_and_every_later_one(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    await recorded(path, "one")

    def refuse(kept: Sequence[KeptRequest]) -> None:
        raise PermissionError("no key to record with")

    with FakeModelServer(FakeModel(scenario("never"))) as server:
        with CassetteRecorder(path, mode="rewrite", on_divergence=refuse) as recorder:
            for question in ("changed", "again"):
                with pytest.raises(anthropic.APIConnectionError) as caught:
                    await ask(recorder, server.url, question)
                assert isinstance(caught.value.__cause__, PermissionError)
        assert server.fake_model.requests == []


async def test_a_missing_cassette_records_everything(tmp_path: Path) -> None:
    path = tmp_path / "new.yaml"
    calls: list[int] = []

    with FakeModelServer(FakeModel(scenario("a", "b"))) as server:
        with CassetteRecorder(path, mode="rewrite", on_divergence=lambda kept: calls.append(len(kept))) as recorder:
            assert await ask(recorder, server.url, "one", "two") == ["a", "b"]

    assert questions_in(path) == ["one", "two"]
    assert calls == [0]
    assert recorder.rewrite_counts == RewriteCounts(kept=0, rerecorded=2, pruned=0)


async def test_a_session_that_follows_the_whole_cassette_leaves_the_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    await recorded(path, "one", "two")
    before = path.stat()

    with CassetteRecorder(path, mode="rewrite") as recorder:
        await ask(recorder, "http://127.0.0.1:9", "one", "two")

    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert recorder.rewrite_counts == RewriteCounts(kept=2, rerecorded=0, pruned=0)
    assert not recorder.rewrite_counts.changed


async def test_the_rest_is_recorded_from_where_the_positioned_fake_model_would_be(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    script = scenario("first", "second", "third")
    await recorded(path, "one", "two", "three")  # answers: "answer 1" ...
    fake = FakeModel(script)

    def position(kept: Sequence[KeptRequest]) -> None:
        fake.fast_forward(kept)

    with FakeModelServer(fake) as server, CassetteRecorder(path, mode="rewrite", on_divergence=position) as recorder:
        answers = await ask(recorder, server.url, "one", "two", "changed")

    assert answers == ["answer 1", "answer 2", "third"]  # the script's third turn, as in a full recording
    (_, _, last) = load_cassette(path).interactions
    assert "msg_fake_0003" in str(last.response.body) and last.response.headers["request-id"] == "req_fake_0003"
