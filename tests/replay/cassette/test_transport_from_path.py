"""The transports made from a cassette file, the arguments they refuse, and matching that never
looks at scheme, host or port."""

from __future__ import annotations

from pathlib import Path

import anthropic
import httpx2
import pytest

from replay.cassette import Cassette, CassetteError, save_cassette
from replay.cassette.transport import CassettePlayer, CassetteTransport, SyncCassetteTransport
from tests.replay.cassette.test_transport import answer, body


@pytest.fixture
def cassette(tmp_path: Path) -> Path:
    """A cassette recorded against https://api.anthropic.com: "hi" is answered "hello"."""
    path = tmp_path / "hello.yaml"
    save_cassette(Cassette(interactions=[answer("hi", "hello")]), path)
    return path


async def test_from_path_serves_the_async_sdk_from_a_cassette_file(cassette: Path) -> None:
    transport = CassetteTransport.from_path(cassette)
    client = anthropic.AsyncAnthropic(api_key="sk-ant-test", http_client=httpx2.AsyncClient(transport=transport))
    async with client.messages.stream(**body("hi", stream=False)) as stream:
        assert await stream.get_final_text() == "hello"
    assert transport.player.unplayed() == []


def test_from_path_serves_the_sync_sdk_from_a_cassette_file_named_by_a_string(cassette: Path) -> None:
    transport = SyncCassetteTransport.from_path(str(cassette))
    client = anthropic.Anthropic(api_key="sk-ant-test", http_client=httpx2.Client(transport=transport))
    with client.messages.stream(**body("hi", stream=False)) as stream:
        assert stream.get_final_text() == "hello"


@pytest.mark.parametrize("base_url", ["http://127.0.0.1:1", "https://llm-gateway.example.com:8443"])
def test_a_cassette_recorded_against_one_base_url_replays_against_any_other(cassette: Path, base_url: str) -> None:
    # Matching is method, path and body: the recorded https://api.anthropic.com plays anywhere.
    transport = SyncCassetteTransport.from_path(cassette)
    client = anthropic.Anthropic(
        api_key="sk-ant-test", base_url=base_url, http_client=httpx2.Client(transport=transport)
    )
    with client.messages.stream(**body("hi", stream=False)) as stream:
        assert stream.get_final_text() == "hello"


@pytest.mark.parametrize("transport", [CassetteTransport, SyncCassetteTransport])
def test_a_transport_given_a_path_says_to_use_from_path(transport: type[CassetteTransport]) -> None:
    with pytest.raises(TypeError) as refused:
        transport("cassettes/hello.yaml")  # type: ignore[arg-type]
    name = transport.__name__
    assert str(refused.value) == (
        f"{name} takes a CassettePlayer, not the path 'cassettes/hello.yaml'; "
        f"for a cassette file write {name}.from_path('cassettes/hello.yaml')."
    )
    with pytest.raises(TypeError, match=rf"^{name} takes a CassettePlayer, not the path 'hello.yaml'; "):
        transport(Path("hello.yaml"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=rf"^{name} takes a CassettePlayer, not dict; for a cassette file write "):
        transport({})  # type: ignore[arg-type]


@pytest.mark.parametrize("transport", [CassetteTransport, SyncCassetteTransport])
def test_from_path_refuses_what_is_not_a_path_and_a_file_that_is_not_there(
    transport: type[CassetteTransport], tmp_path: Path
) -> None:
    with pytest.raises(TypeError, match=r"from_path takes the path of a cassette file \(str or Path\), not list\.$"):
        transport.from_path([tmp_path])  # type: ignore[arg-type]
    with pytest.raises(CassetteError, match=r"missing\.yaml does not exist; record it first"):
        transport.from_path(tmp_path / "missing.yaml")


def test_a_transport_still_takes_a_player() -> None:
    player = CassettePlayer([answer("hi", "hello")])
    assert CassetteTransport(player).player is player
    assert SyncCassetteTransport(player).player is player
