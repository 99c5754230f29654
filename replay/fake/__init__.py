"""The deterministic fake model: scenarios, read from YAML and written back (`scenario`,
`scenario_writer`), their content blocks and faults (`blocks`, `faults`), rendering as the
Messages API streams (`sse`), the model itself with its in-process ``httpx2`` transports
(`model`), and the same model served on loopback (`server`, on the shared HTTP layer of
`replay.http`, dropped connections included).

May import: `replay.http`, `replay.prompt_cache`, `replay.schema`, `replay.storage`, `engine`. Never `replay.cassette`
or `replay.session`.
"""

from __future__ import annotations

from replay.lazy_exports import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "FakeModel": "model",
        "FakeModelError": "model",
        "FakeModelTransport": "model",
        "FakeResponse": "model",
        "ReceivedRequest": "model",
        "ScenarioExhaustedError": "model",
        "SyncFakeModelTransport": "model",
        "Block": "blocks",
        "Match": "blocks",
        "RequestPurpose": "blocks",
        "RedactedThinkingBlock": "blocks",
        "ScenarioError": "blocks",
        "StopReason": "blocks",
        "TextBlock": "blocks",
        "ThinkingBlock": "blocks",
        "ToolUseBlock": "blocks",
        "Turn": "blocks",
        "Usage": "blocks",
        "DropConnection": "faults",
        "ErrorType": "faults",
        "Fault": "faults",
        "FaultKind": "faults",
        "HttpError": "faults",
        "MalformedEvent": "faults",
        "ResetConnection": "faults",
        "StreamError": "faults",
        "TurnOrFault": "faults",
        "SCENARIO_VERSION": "scenario",
        "Scenario": "scenario",
        "load_scenario": "scenario",
        "scenario_to_document": "scenario_writer",
        "FakeModelServer": "server",
    },
)
