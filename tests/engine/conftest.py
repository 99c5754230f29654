"""A session harness for engine tests: a real QueryEngine, the real SDK, the fake model's
transport, a temp workspace and seeded deps."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

from engine import (
    AnthropicModel,
    EngineSettings,
    Hooks,
    QueryDeps,
    QueryEngine,
    QueryResult,
    Tool,
    TraceEvent,
    TraceKind,
    default_tools,
    normalize_messages_for_api,
)
from engine.orchestration import PermissionCallback
from engine.tools import allow_all
from replay.fake.model import FakeModel, FakeModelTransport
from replay.fake.scenario import Scenario

JsonDict = dict[str, Any]


@dataclass
class Session:
    """One engine wired to one fake model, with what a test wants to look at."""

    engine: QueryEngine
    fake: FakeModel
    workspace: Path
    session_dir: Path
    outputs: list[Any]

    async def submit(self, prompt: str, *, on_output: Any = None) -> QueryResult:
        async for item in self.engine.submit_message(prompt):
            self.outputs.append(item)
            if on_output is not None:
                on_output(item, self.engine)
        result = self.outputs[-1]
        assert isinstance(result, QueryResult)
        return result

    @property
    def requests(self) -> list[JsonDict]:
        return [r.json for r in self.fake.requests if r.path.endswith("/v1/messages")]

    def trace(self, kind: TraceKind) -> list[TraceEvent]:
        return [e for e in self.engine.trace if e.kind is kind]

    def tool_results(self) -> dict[str, JsonDict]:
        """Every tool_result block the session produced, by tool_use id."""
        results: dict[str, JsonDict] = {}
        for message in self.engine.mutable_messages:
            content = getattr(message, "message", {}).get("content")
            if isinstance(content, list):
                for block in content:
                    if block.get("type") == "tool_result":
                        results[block["tool_use_id"]] = block
        return results

    def transcript_bytes(self) -> bytes:
        self.engine.close()
        return (self.session_dir / "transcript.jsonl").read_bytes()


def make_session(
    root: Path,
    turns: Sequence[Any],
    *,
    tools: Sequence[Tool] | None = None,
    settings: EngineSettings | None = None,
    can_use_tool: PermissionCallback = allow_all,
    hooks: Hooks | None = None,
    files: dict[str, str] | None = None,
    seed: int = 0,
    transport: Any = None,
    workspace: Path | None = None,
) -> Session:
    workspace = workspace or root / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    for name, text in (files or {}).items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    fake = FakeModel(Scenario.from_list(list(turns)))
    model = AnthropicModel(http_client=httpx2.AsyncClient(transport=transport or FakeModelTransport(fake)))
    engine = QueryEngine(
        deps=QueryDeps.deterministic(model, seed=seed),
        workspace=workspace,
        session_dir=root / "session",
        settings=settings,
        tools=tools if tools is not None else default_tools(),
        can_use_tool=can_use_tool,
        hooks=hooks,
    )
    session = Session(engine, fake, workspace, root / "session", [])
    _SESSIONS.append(session)
    return session


_SESSIONS: list[Session] = []


@pytest.fixture(autouse=True)
def every_request_obeys_the_pairing_rule() -> Any:
    """The invariant checked after every engine test: each request any session sent pairs every
    tool_use with a result in the next message, and no result lacks its tool_use."""
    _SESSIONS.clear()
    yield
    for session in _SESSIONS:
        for number, body in enumerate(session.requests, start=1):
            try:
                assert_pairing(body["messages"])
            except AssertionError as exc:
                raise AssertionError(f"request {number} broke the pairing rule: {exc}") from None
    _SESSIONS.clear()


def assert_pairing(api_messages: list[JsonDict]) -> None:
    """The API's iron rule: each tool_use is answered in the very next user message, and each
    tool_result answers a tool_use of the message right before it."""
    for index, message in enumerate(api_messages):
        blocks = message["content"] if isinstance(message["content"], list) else []
        if message["role"] == "assistant":
            ids = {b["id"] for b in blocks if b["type"] == "tool_use"}
            if ids:
                following = api_messages[index + 1] if index + 1 < len(api_messages) else None
                assert following is not None and following["role"] == "user", f"tool_use {ids} left unanswered"
                answered = {b["tool_use_id"] for b in following["content"] if b["type"] == "tool_result"}
                assert ids <= answered, f"tool_use {ids - answered} left unanswered"
        else:
            results = {b["tool_use_id"] for b in blocks if b["type"] == "tool_result"}
            previous = api_messages[index - 1] if index else None
            asked = {b["id"] for b in previous["content"] if b["type"] == "tool_use"} if previous else set()
            assert results <= asked, f"tool_result {results - asked} answers no tool_use"


def assert_next_request_valid(session: Session) -> None:
    assert_pairing(normalize_messages_for_api(session.engine.mutable_messages))


@pytest.fixture
def session_root(tmp_path: Path) -> Path:
    return tmp_path
