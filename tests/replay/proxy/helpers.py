"""What the proxy tests share: the scenario the upstream plays, running the subprocess agent,
and a raw HTTP/1.1 exchange that keeps the chunk boundaries the proxy sent."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from replay.fake.scenario import Scenario
from tests import forked

AGENT = Path(__file__).with_name("agent.py")
MODEL = "claude-sonnet-4-6"
SHOUTING = Scenario.from_list(
    [
        {"content": [{"text": "Let me shout it."}, {"tool_use": {"name": "shout", "input": {"text": "hello"}}}]},
        {"content": [{"text": "Done: HELLO, as asked. ünïcödé ✓"}]},
    ]
)


def agent_environment(base_url: str, api_key: str = "sk-ant-test") -> dict[str, str]:
    """The environment a user's process would have: the base URL and a key, no proxy settings."""
    kept = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("ANTHROPIC_") and name.lower() not in ("http_proxy", "https_proxy", "all_proxy")
    }
    return {**kept, "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": api_key}


def run_agent(base_url: str, prompt: str, *, api_key: str = "sk-ant-test") -> subprocess.CompletedProcess[str]:
    return forked.run(
        [sys.executable, str(AGENT), prompt],
        env=agent_environment(base_url, api_key),
        capture_output=True,
        text=True,
        timeout=60,
    )


def raw_exchange(base_url: str, body: dict[str, Any], *, api_key: str = "sk-ant-test") -> tuple[bytes, list[bytes]]:
    """POST ``body`` to /v1/messages on a fresh connection; the response head and the body's
    chunks exactly as framed on the wire (one list item per HTTP chunk)."""
    parts = urlsplit(base_url)
    assert parts.hostname is not None and parts.port is not None
    data = json.dumps(body).encode()
    request = (
        b"POST /v1/messages HTTP/1.1\r\nHost: proxy\r\nx-api-key: %b\r\ncontent-type: application/json\r\n"
        b"anthropic-version: 2023-06-01\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%b"
    ) % (api_key.encode(), len(data), data)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as connection:
        connection.sendall(request)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    head, _, rest = received.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" not in head.lower():
        return head, [rest]
    chunks: list[bytes] = []
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        chunks.append(rest[:size])
        rest = rest[size + 2 :]
    return head, chunks
