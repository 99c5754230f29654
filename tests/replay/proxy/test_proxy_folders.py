"""A proxy told the folders its client runs in (``folders``, and ``aliases`` for other spellings
of them) stores placeholders for them, matches as if the client's paths were the placeholders, and
plays back the replaying client's own paths: a session recorded in one temp folder replays in
another."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2

from replay.cassette import load_cassette
from replay.fake.model import FakeModel
from replay.fake.scenario import Scenario
from replay.fake.server import FakeModelServer
from replay.proxy import CassetteProxy, ProxyOutcome

MODEL = "claude-sonnet-4-6"


def asking_about(workspace: Path, alias: str) -> dict[str, Any]:
    text = f"Working directory: {workspace}\nProject notes: ~/.claude/projects/{alias}/memory"
    return {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": text}]}


def reading(workspace: Path) -> Scenario:
    call = {"tool_use": {"name": "Read", "input": {"file_path": f"{workspace}/notes.md"}}}
    return Scenario.from_list([{"content": [{"text": f"Reading {workspace}/notes.md."}, call]}])


def post(proxy: CassetteProxy, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx2.post(f"{proxy.url}/v1/messages", json=body, headers={"x-api-key": "sk-ant-test"}, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def folder_of(run: Path) -> tuple[Path, str]:
    workspace = run / "workspace"
    workspace.mkdir(parents=True)
    return workspace, str(workspace).replace("/", "-")


def test_a_session_recorded_in_one_folder_replays_in_another(tmp_path: Path) -> None:
    cassette = tmp_path / "session.yaml"
    first, first_alias = folder_of(tmp_path / "first")
    second, second_alias = folder_of(tmp_path / "second-run")

    with FakeModelServer(FakeModel(reading(first))) as upstream:
        with CassetteProxy(
            cassette,
            mode="once",
            upstream=upstream.url,
            placeholders={"<workspace>": first},
            aliases=[(first_alias, "<workspace>")],
        ) as recording:
            recorded = post(recording, asking_about(first, first_alias))
    with CassetteProxy(
        cassette, mode="none", placeholders={"<workspace>": second}, aliases=[(second_alias, "<workspace>")]
    ) as replaying:
        replayed = post(replaying, asking_about(second, second_alias))

    assert [r.outcome for r in replaying.requests] == [ProxyOutcome.MATCH]
    assert recorded["content"][1]["input"] == {"file_path": f"{first}/notes.md"}
    assert replayed["content"][1]["input"] == {"file_path": f"{second}/notes.md"}
    assert replayed["content"][0]["text"] == f"Reading {second}/notes.md."
    # The file holds placeholders, not the recording's folders.
    text = cassette.read_text(encoding="utf-8")
    assert str(first) not in text and first_alias not in text and "<workspace>/notes.md" in text
    stored = load_cassette(cassette).interactions[0].request.body
    assert stored["messages"][0]["content"] == (
        "Working directory: <workspace>\nProject notes: ~/.claude/projects/<workspace>/memory"
    )


def test_without_folders_a_request_from_another_folder_misses(tmp_path: Path) -> None:
    cassette = tmp_path / "session.yaml"
    first, first_alias = folder_of(tmp_path / "first")
    second, second_alias = folder_of(tmp_path / "second-run")

    with FakeModelServer(FakeModel(reading(first))) as upstream:
        with CassetteProxy(cassette, mode="once", upstream=upstream.url) as recording:
            post(recording, asking_about(first, first_alias))
    with CassetteProxy(cassette, mode="none") as replaying:
        response = httpx2.post(
            f"{replaying.url}/v1/messages",
            json=asking_about(second, second_alias),
            headers={"x-api-key": "k"},
            timeout=10,
        )

    assert response.status_code == 599 and "second-run" in response.json()["error"]["message"]


def test_a_text_placeholder_such_as_the_date_matches_on_another_day(tmp_path: Path) -> None:
    cassette = tmp_path / "dated.yaml"
    asked = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "Today's date is %s."}]}

    def on(day: str) -> dict[str, Any]:
        return {**asked, "messages": [{"role": "user", "content": asked["messages"][0]["content"] % day}]}

    answer = Scenario.from_list([{"content": [{"text": "Noted: 2026-12-01."}]}])
    with FakeModelServer(FakeModel(answer)) as upstream:
        with CassetteProxy(cassette, mode="once", upstream=upstream.url, placeholders={"<date>": "2026-12-01"}) as rec:
            post(rec, on("2026-12-01"))
    with CassetteProxy(cassette, mode="none", placeholders={"<date>": "2026-12-05"}) as replaying:
        replayed = post(replaying, on("2026-12-05"))

    assert [r.outcome for r in replaying.requests] == [ProxyOutcome.MATCH]
    assert replayed["content"][0]["text"] == "Noted: 2026-12-05."


def test_the_requests_it_reports_keep_no_credential(tmp_path: Path) -> None:
    with FakeModelServer(FakeModel(reading(tmp_path))) as upstream:
        with CassetteProxy(tmp_path / "c.yaml", mode="once", upstream=upstream.url) as proxy:
            post(proxy, asking_about(tmp_path, "alias"))

    [request] = proxy.requests
    assert "x-api-key" not in request.headers and request.headers["content-type"] == "application/json"
    assert b"Working directory" in request.body
