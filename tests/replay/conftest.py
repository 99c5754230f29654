"""Shared helpers: real SDK clients wired to a fake model, never to the network."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

import anthropic
import httpx2
import pytest

from replay.fake.model import FakeModel, FakeModelTransport, SyncFakeModelTransport

AsyncClientFactory = Callable[[FakeModel], anthropic.AsyncAnthropic]
SyncClientFactory = Callable[[FakeModel], anthropic.Anthropic]


@pytest.fixture
async def async_client_for() -> AsyncIterator[AsyncClientFactory]:
    """Builds AsyncAnthropic clients on a FakeModelTransport and closes them afterwards."""
    clients: list[anthropic.AsyncAnthropic] = []

    def build(fake_model: FakeModel) -> anthropic.AsyncAnthropic:
        http_client = httpx2.AsyncClient(transport=FakeModelTransport(fake_model))
        client = anthropic.AsyncAnthropic(api_key="sk-ant-test", max_retries=0, http_client=http_client)
        clients.append(client)
        return client

    yield build
    for client in clients:
        await client.close()


@pytest.fixture
def sync_client_for() -> Iterator[SyncClientFactory]:
    """Builds Anthropic clients on a SyncFakeModelTransport and closes them afterwards."""
    clients: list[anthropic.Anthropic] = []

    def build(fake_model: FakeModel) -> anthropic.Anthropic:
        http_client = httpx2.Client(transport=SyncFakeModelTransport(fake_model))
        client = anthropic.Anthropic(api_key="sk-ant-test", max_retries=0, http_client=http_client)
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.close()
