"""Fixtures of the respx suite: the cassette to replay and SDK clients with their default httpx2
client, as a project's own suite would build them.

The main run loads this file too (it visits the folder) but collects nothing here: keep it free
of anything that needs the alias.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anthropic
import pytest

from replay.cassette import Cassette, save_cassette

from .session import BASE_URL, CASSETTE_ENV, recorded_session


@pytest.fixture
def cassette_path(tmp_path: Path) -> Path:
    """The cassette named by ``RESPX_SUITE_CASSETTE``; without it, the session saved afresh."""
    named = os.environ.get(CASSETTE_ENV)
    if named:
        return Path(named)
    path = tmp_path / "cassette.yaml"
    save_cassette(Cassette(interactions=recorded_session()), path)
    return path


@pytest.fixture
async def client() -> AsyncIterator[anthropic.AsyncAnthropic]:
    """An ``AsyncAnthropic`` on its own default httpx2 client; the engine owns retries, so none here."""
    client = anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=BASE_URL, max_retries=0)
    yield client
    await client.close()


@pytest.fixture
def sync_client() -> Iterator[anthropic.Anthropic]:
    """The synchronous twin of ``client``."""
    client = anthropic.Anthropic(api_key="sk-ant-test", base_url=BASE_URL, max_retries=0)
    yield client
    client.close()
