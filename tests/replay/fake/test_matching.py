"""Scenario turns for a client we do not control: a turn's ``match`` says which request it answers
(its purpose, the last user message, tools, model, streaming); a turn without one answers the
next request in order, as every script did before matches existed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import pytest
import yaml

from engine.compact.autocompact import build_summary_request
from engine.messages import AssistantMessage, UserMessage
from engine.settings import EngineSettings
from replay.fake.blocks import Match, RequestPurpose, TextBlock, Turn
from replay.fake.faults import HttpError
from replay.fake.matching import accepts, purpose_of
from replay.fake.model import FakeModel, ScenarioExhaustedError
from replay.fake.scenario import Scenario, load_scenario
from replay.fake.scenario_writer import scenario_to_document
from tests.replay.fake.conftest import Serve

MODEL = "claude-sonnet-4-6"
HAIKU = "claude-haiku-4-5-20251001"
TOOLS = [{"name": "Read", "description": "Reads a file.", "input_schema": {"type": "object"}}]
# A client's own summary instruction, appended as the last user message with the tools kept.
CLIENT_SUMMARY = "Write a detailed summary of the conversation so far; respond with text only."


def text_turn(text: str, **match: Any) -> dict[str, Any]:
    return {"content": [{"text": text}], **({"match": match} if match else {})}


def fake(*turns: dict[str, Any], name: str | None = None) -> FakeModel:
    return FakeModel(Scenario.from_list(list(turns), name=name))


def main_request(text: str, *, model: str = MODEL) -> dict[str, Any]:
    return {"model": model, "max_tokens": 64, "tools": TOOLS, "messages": [{"role": "user", "content": text}]}


def side_request(text: str, *, model: str = HAIKU) -> dict[str, Any]:
    return {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": text}]}


def engine_summary_request() -> dict[str, Any]:
    """The engine's own summary request (engine/compact), as it goes on the wire."""
    stamp = "2026-01-01T00:00:00Z"
    history = [
        UserMessage(
            uuid="u1", timestamp=stamp, message={"role": "user", "content": [{"type": "text", "text": "Port?"}]}
        ),
        AssistantMessage(
            uuid="a1", timestamp=stamp, message={"role": "assistant", "content": [{"type": "text", "text": "8080"}]}
        ),
    ]
    return build_summary_request(history, settings=EngineSettings(), model=MODEL).params()


def client_summary_request() -> dict[str, Any]:
    """A client that reuses its conversation's prefix: same tools, the instruction as the last user message."""
    request = main_request("Which port?")
    request["messages"] += [
        {"role": "assistant", "content": "8080"},
        {"role": "user", "content": [{"type": "text", "text": CLIENT_SUMMARY}]},
    ]
    return request


def answer(fake_model: FakeModel, request: dict[str, Any]) -> dict[str, Any]:
    """The fake model's non-streaming answer to one POST /v1/messages."""
    response = fake_model.respond("POST", "/v1/messages", {}, json.dumps(request).encode())
    assert response.status == 200
    return json.loads(b"".join(response.chunks))


def text_of(fake_model: FakeModel, request: dict[str, Any]) -> str:
    return answer(fake_model, request)["content"][0]["text"]


# ---------------------------------------------------------------------------------------------
# Purposes, read from the body alone


def test_the_engines_summary_request_and_a_client_summary_that_keeps_its_tools_are_compact() -> None:
    assert purpose_of(engine_summary_request()) is RequestPurpose.COMPACT
    assert purpose_of(client_summary_request()) is RequestPurpose.COMPACT
    assert purpose_of({**client_summary_request(), "messages": [{"role": "user", "content": CLIENT_SUMMARY}]}) is (
        RequestPurpose.COMPACT
    )


def test_a_request_with_tools_is_main_and_one_without_is_side() -> None:
    assert purpose_of(main_request("Which port?")) is RequestPurpose.MAIN
    assert purpose_of(side_request("Give this conversation a title.")) is RequestPurpose.SIDE
    assert purpose_of({**main_request("Which port?"), "tools": []}) is RequestPurpose.SIDE
    # Only the last user message is read: a summary asked for earlier is history.
    earlier = client_summary_request()
    earlier["messages"] += [{"role": "assistant", "content": "Summary: 8080."}, {"role": "user", "content": "Thanks."}]
    assert purpose_of(earlier) is RequestPurpose.MAIN


def test_every_predicate_of_a_match_must_hold() -> None:
    request = {**side_request("Give this conversation a title."), "stream": True}

    assert accepts(Match(purpose=RequestPurpose.SIDE, model="claude-haiku", stream=True), request)
    assert accepts(Match(has_tools=False, last_user_contains="a title"), request)
    assert not accepts(Match(purpose=RequestPurpose.SIDE, model="claude-sonnet"), request)
    assert not accepts(Match(last_user_contains="A TITLE"), request)  # case matters
    assert not accepts(Match(stream=False), request)
    assert not accepts(Match(has_tools=True), request)


# ---------------------------------------------------------------------------------------------
# Which turn answers


def test_a_compaction_request_is_answered_by_its_matched_turn_while_the_main_requests_keep_their_order() -> None:
    fake_model = fake(
        text_turn("first answer"),
        text_turn("Summary: port 8080.", purpose="compact"),
        text_turn("second answer"),
        text_turn("third answer"),
    )

    assert text_of(fake_model, main_request("one")) == "first answer"
    assert text_of(fake_model, main_request("two")) == "second answer"
    assert text_of(fake_model, engine_summary_request()) == "Summary: port 8080."
    assert text_of(fake_model, main_request("three")) == "third answer"
    assert (fake_model.turns_played, fake_model.turns_remaining) == (4, 0)


def test_matched_turns_for_the_same_request_play_in_script_order_faults_included() -> None:
    fake_model = fake(
        text_turn("answer"),
        {"fault": "http_error", "status": 529, "error_type": "overloaded_error", "message": "Overloaded",
         "match": {"purpose": "compact"}},
        text_turn("Summary after the retry.", purpose="compact"),
    )  # fmt: skip
    body = json.dumps(client_summary_request()).encode()

    assert fake_model.respond("POST", "/v1/messages", {}, body).status == 529
    assert text_of(fake_model, client_summary_request()) == "Summary after the retry."
    assert text_of(fake_model, main_request("go on")) == "answer"


def test_last_user_contains_picks_the_turn_for_that_message() -> None:
    fake_model = fake(
        text_turn("the next answer in order"),
        text_turn("the tests pass", last_user_contains="[tool_result toolu_run]"),
    )
    tool_result = main_request("run the tests")
    tool_result["messages"] += [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_run", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_run", "content": "ok"}]},
    ]

    assert text_of(fake_model, tool_result) == "the tests pass"
    assert text_of(fake_model, main_request("and now?")) == "the next answer in order"


def test_model_matches_by_prefix() -> None:
    fake_model = fake(text_turn("from the main model"), text_turn("from haiku", model="claude-haiku"))

    assert text_of(fake_model, main_request("a", model=HAIKU)) == "from haiku"
    assert text_of(fake_model, main_request("b", model=MODEL)) == "from the main model"


def test_a_repeating_turn_answers_every_request_it_accepts_with_ids_that_count_requests() -> None:
    fake_model = fake(text_turn("main answer"), text_turn("A title", purpose="side", repeat=True))

    first = answer(fake_model, side_request("Title this."))
    main = answer(fake_model, main_request("Which port?"))
    second = answer(fake_model, side_request("Title this again."))

    assert [first["content"][0]["text"], second["content"][0]["text"]] == ["A title", "A title"]
    assert [first["id"], main["id"], second["id"]] == ["msg_fake_0001", "msg_fake_0002", "msg_fake_0003"]
    assert (fake_model.turns_played, fake_model.turns_remaining) == (2, 0)


def test_a_script_without_match_plays_in_order_whatever_the_requests_are() -> None:
    fake_model = fake(text_turn("one"), text_turn("two"), text_turn("three"))

    answers = [answer(fake_model, body) for body in (side_request("t"), engine_summary_request(), main_request("m"))]

    assert [a["content"][0]["text"] for a in answers] == ["one", "two", "three"]
    assert [a["id"] for a in answers] == ["msg_fake_0001", "msg_fake_0002", "msg_fake_0003"]


def test_reset_offers_the_matched_turns_again() -> None:
    fake_model = fake(text_turn("Summary.", purpose="compact"))
    assert text_of(fake_model, client_summary_request()) == "Summary."

    fake_model.reset()

    assert text_of(fake_model, client_summary_request()) == "Summary."


def test_a_request_no_turn_accepts_names_itself_and_the_turns_left() -> None:
    fake_model = fake(
        text_turn("Summary.", purpose="compact"),
        text_turn("A title", model="claude-haiku", repeat=True),
        name="matched",
    )

    with pytest.raises(ScenarioExhaustedError) as caught:
        fake_model.respond("POST", "/v1/messages", {}, json.dumps(main_request("Which port?")).encode())

    assert str(caught.value) == (
        "The scenario 'matched' has 2 turns, but no turn left accepts request 1 to POST /v1/messages "
        f"(purpose main, model {MODEL}) (last user message: 'Which port?'): the turns left are "
        'turn 1 (match: purpose: compact) and turn 2 (match: model: "claude-haiku", repeat: true); '
        "add a turn for it or change a match."
    )
    error = caught.value
    assert (error.request, error.purpose, error.model, error.positional) == (1, RequestPurpose.MAIN, MODEL, False)
    assert fake_model.exhausted is error


# ---------------------------------------------------------------------------------------------
# On the wire: the real SDK against the loopback server


async def test_a_side_query_without_tools_gets_its_turn_and_the_stream_its_own(serve: Serve) -> None:
    server = serve(fake(text_turn("The port is 8080."), text_turn("Port question", has_tools=False)))

    async with anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=server.url, max_retries=0) as client:
        async with client.messages.stream(**main_request("Which port?")) as stream:
            main = await stream.get_final_message()
        title = await client.messages.create(**side_request("Give this conversation a title."))

    assert (main.content[0].text, main.id) == ("The port is 8080.", "msg_fake_0001")
    assert (title.content[0].text, title.id) == ("Port question", "msg_fake_0002")


async def test_a_request_no_turn_accepts_answers_500_that_clients_must_not_retry(serve: Serve) -> None:
    server = serve(fake(text_turn("Summary.", purpose="compact")))

    async with anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=server.url, max_retries=2) as client:
        with pytest.raises(anthropic.InternalServerError) as caught:
            await client.messages.create(**side_request("Give this conversation a title."))

    message = caught.value.body["error"]["message"]
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert f"request 1 to POST /v1/messages (purpose side, model {HAIKU})" in message
    assert "'Give this conversation a title.'" in message
    assert "the turns left are turn 1 (match: purpose: compact)" in message


# ---------------------------------------------------------------------------------------------
# In the file


def test_a_match_round_trips_through_the_scenario_file(tmp_path: Path) -> None:
    text = """\
version: 1
turns:
  - content: [{text: main}]
  - content: [{text: Summary.}]
    match: {purpose: compact}
  - fault: reset_connection
    match: {model: claude-haiku, has_tools: false, stream: true}
  - content: [{text: A title}]
    match: {last_user_contains: title, repeat: true}
"""
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")

    scenario = load_scenario(path)
    path.write_text(yaml.safe_dump(scenario_to_document(scenario), sort_keys=False), encoding="utf-8")

    assert [turn.match for turn in scenario.turns] == [
        None,
        Match(purpose=RequestPurpose.COMPACT),
        Match(model="claude-haiku", has_tools=False, stream=True),
        Match(last_user_contains="title", repeat=True),
    ]
    assert load_scenario(path) == scenario


def test_a_match_built_in_python_is_checked_like_one_in_a_file() -> None:
    assert Turn(content=(TextBlock(text="x"),), match=Match(purpose=RequestPurpose.SIDE)).match == Match(purpose="side")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"unknown purpose 'title'; expected one of main, compact, side\."):
        Match(purpose="title")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"'match' must be a mapping of predicates, not dict\."):
        HttpError(status=529, error_type="overloaded_error", message="m", match={"purpose": "compact"})  # type: ignore[arg-type]
