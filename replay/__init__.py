"""The harness around the engine: a deterministic fake model (in-process or on loopback), cassettes
recorded through vcrpy and replayed through an ``httpx2`` transport (so the real SDK parses every
byte), and session bundles that re-execute a recorded session offline.

The subpackages, from the top down (each may import only those below it; docs/architecture.md):
``cli`` and ``pytest_plugin``; ``session`` (bundles); ``trace`` (what the loop did),
``cassette`` (the file format, recording, replaying) and ``fake`` (the fake model); ``schema``
and ``redact``; ``storage`` (safe files); then ``engine``.

This package exports every public name of ``cassette``, ``fake``, ``trace`` and ``session`` (and
``NetworkGuard``), each imported on first use: importing ``replay`` loads nothing else (so an
early plugin such as ``replay.respx_alias`` can run before anything imports ``httpx``)."""

from __future__ import annotations

import importlib
from typing import Any

# public name -> the subpackage that exports it (tests/test_exports.py checks this table
# against the subpackages' __all__)
_EXPORTS: dict[str, str] = {
    "AgentReplaySerializer": "replay.cassette",
    "AtomicPersister": "replay.cassette",
    "CASSETTE_FORMAT_VERSION": "replay.cassette",
    "Cassette": "replay.cassette",
    "CassetteError": "replay.cassette",
    "CassetteMismatchError": "replay.cassette",
    "CassetteNotFoundError": "replay.cassette",
    "CassettePlayer": "replay.cassette",
    "CassetteRecorder": "replay.cassette",
    "CassetteSource": "replay.cassette",
    "CassetteTransport": "replay.cassette",
    "FAULT_KEY": "replay.cassette",
    "Interaction": "replay.cassette",
    "MAX_CASSETTE_BYTES": "replay.cassette",
    "Normalizer": "replay.cassette",
    "RECORDED_PATH_KEYS": "replay.cassette",
    "RecordMode": "replay.cassette",
    "RecordModeError": "replay.cassette",
    "RewriteCounts": "replay.cassette",
    "RecordedFault": "replay.cassette",
    "RecordedFaultKind": "replay.cassette",
    "RecordedRequest": "replay.cassette",
    "RecordedResponse": "replay.cassette",
    "SERIALIZER_NAME": "replay.cassette",
    "SyncCassetteTransport": "replay.cassette",
    "TEMP_KEYS": "replay.cassette",
    "UnplayedInteractionsError": "replay.cassette",
    "dumps_cassette": "replay.cassette",
    "fingerprint": "replay.cassette",
    "interactions_from_vcr": "replay.cassette",
    "load_cassette": "replay.cassette",
    "loads_cassette": "replay.cassette",
    "parse_record_mode": "replay.cassette",
    "register_with_vcr": "replay.cassette",
    "save_cassette": "replay.cassette",
    "Block": "replay.fake",
    "DropConnection": "replay.fake",
    "ErrorType": "replay.fake",
    "FakeModel": "replay.fake",
    "FakeModelError": "replay.fake",
    "FakeModelServer": "replay.fake",
    "FakeModelTransport": "replay.fake",
    "FakeResponse": "replay.fake",
    "Fault": "replay.fake",
    "FaultKind": "replay.fake",
    "HttpError": "replay.fake",
    "MalformedEvent": "replay.fake",
    "Match": "replay.fake",
    "RequestPurpose": "replay.fake",
    "ResetConnection": "replay.fake",
    "ReceivedRequest": "replay.fake",
    "RedactedThinkingBlock": "replay.fake",
    "SCENARIO_VERSION": "replay.fake",
    "Scenario": "replay.fake",
    "ScenarioError": "replay.fake",
    "ScenarioExhaustedError": "replay.fake",
    "StopReason": "replay.fake",
    "StreamError": "replay.fake",
    "SyncFakeModelTransport": "replay.fake",
    "TextBlock": "replay.fake",
    "ThinkingBlock": "replay.fake",
    "ToolUseBlock": "replay.fake",
    "Turn": "replay.fake",
    "TurnOrFault": "replay.fake",
    "Usage": "replay.fake",
    "load_scenario": "replay.fake",
    "scenario_to_document": "replay.fake",
    "NetworkGuard": "replay.network_guard",
    "Bundle": "replay.session",
    "BundleError": "replay.session",
    "CoverageReport": "replay.session",
    "RunReport": "replay.session",
    "SessionRun": "replay.session",
    "SessionSpec": "replay.session",
    "Verdict": "replay.session",
    "diff_bundles": "replay.session",
    "coverage": "replay.session",
    "load_bundle": "replay.session",
    "record_bundle": "replay.session",
    "replay_bundle": "replay.session",
    "run_bundle": "replay.session",
    "BehaviourTrace": "replay.trace",
    "TraceSnapshotExtension": "replay.trace",
    "diff_traces": "replay.trace",
    "extract_trace": "replay.trace",
    "render_mermaid": "replay.trace",
    "render_text": "replay.trace",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    try:
        package = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'replay' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(package), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
