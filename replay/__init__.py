"""The harness around the engine: a deterministic fake model (in-process or on loopback), cassettes
recorded through vcrpy and replayed through an ``httpx2`` transport (so the real SDK parses every
byte), and session bundles that re-execute a recorded session offline.

Names are imported on first use: importing ``replay`` loads nothing else (so an early plugin
such as ``replay.respx_alias`` can run before anything imports ``httpx``)."""

from __future__ import annotations

import importlib
from typing import Any

# public name -> (module, name in that module)
_EXPORTS: dict[str, tuple[str, str]] = {
    "diff_traces": ("replay.diff", "diff_traces"),
    "diff_bundles": ("replay.diff", "diff_bundles"),
    "coverage": ("replay.coverage", "coverage"),
    "CoverageReport": ("replay.coverage", "CoverageReport"),
    "run_bundle": ("replay.runner", "run_bundle"),
    "RunReport": ("replay.runner", "RunReport"),
    "Verdict": ("replay.runner", "Verdict"),
    "BehaviourTrace": ("replay.trace", "BehaviourTrace"),
    "extract_trace": ("replay.trace", "extract_trace"),
    "render_text": ("replay.trace", "render_text"),
    "render_mermaid": ("replay.trace", "render_mermaid"),
    "TraceSnapshotExtension": ("replay.snapshot", "TraceSnapshotExtension"),
    "NetworkGuard": ("replay.network_guard", "NetworkGuard"),
    "Bundle": ("replay.session", "Bundle"),
    "BundleError": ("replay.session", "BundleError"),
    "Cassette": ("replay.cassette", "Cassette"),
    "CassetteError": ("replay.cassette", "CassetteError"),
    "CassetteMismatchError": ("replay.transport", "CassetteMismatchError"),
    "CassetteNotFoundError": ("replay.record", "CassetteNotFoundError"),
    "CassettePlayer": ("replay.transport", "CassettePlayer"),
    "CassetteRecorder": ("replay.record", "CassetteRecorder"),
    "CassetteSource": ("replay.cassette", "CassetteSource"),
    "CassetteTransport": ("replay.transport", "CassetteTransport"),
    "DropConnection": ("replay.scenario", "DropConnection"),
    "ErrorType": ("replay.scenario", "ErrorType"),
    "FakeModel": ("replay.fake", "FakeModel"),
    "FakeModelError": ("replay.fake", "FakeModelError"),
    "FakeModelServer": ("replay.server", "FakeModelServer"),
    "FakeModelTransport": ("replay.fake", "FakeModelTransport"),
    "FakeResponse": ("replay.fake", "FakeResponse"),
    "FaultKind": ("replay.scenario", "FaultKind"),
    "HttpError": ("replay.scenario", "HttpError"),
    "Interaction": ("replay.interaction", "Interaction"),
    "Normalizer": ("replay.fingerprint", "Normalizer"),
    "ReceivedRequest": ("replay.fake", "ReceivedRequest"),
    "RecordMode": ("replay.record", "RecordMode"),
    "RecordModeError": ("replay.record", "RecordModeError"),
    "RecordedFault": ("replay.interaction", "RecordedFault"),
    "RecordedFaultKind": ("replay.interaction", "FaultKind"),
    "RecordedRequest": ("replay.interaction", "RecordedRequest"),
    "RecordedResponse": ("replay.interaction", "RecordedResponse"),
    "RedactedThinkingBlock": ("replay.scenario", "RedactedThinkingBlock"),
    "SCENARIO_VERSION": ("replay.scenario", "SCENARIO_VERSION"),
    "Scenario": ("replay.scenario", "Scenario"),
    "ScenarioError": ("replay.scenario", "ScenarioError"),
    "ScenarioExhaustedError": ("replay.fake", "ScenarioExhaustedError"),
    "SessionRun": ("replay.session", "SessionRun"),
    "SessionSpec": ("replay.session", "SessionSpec"),
    "StopReason": ("replay.scenario", "StopReason"),
    "StreamError": ("replay.scenario", "StreamError"),
    "SyncCassetteTransport": ("replay.transport", "SyncCassetteTransport"),
    "SyncFakeModelTransport": ("replay.fake", "SyncFakeModelTransport"),
    "TextBlock": ("replay.scenario", "TextBlock"),
    "ThinkingBlock": ("replay.scenario", "ThinkingBlock"),
    "ToolUseBlock": ("replay.scenario", "ToolUseBlock"),
    "Turn": ("replay.scenario", "Turn"),
    "UnplayedInteractionsError": ("replay.transport", "UnplayedInteractionsError"),
    "Usage": ("replay.scenario", "Usage"),
    "fingerprint": ("replay.fingerprint", "fingerprint"),
    "load_bundle": ("replay.session", "load_bundle"),
    "load_cassette": ("replay.cassette", "load_cassette"),
    "load_scenario": ("replay.scenario", "load_scenario"),
    "parse_record_mode": ("replay.record", "parse_record_mode"),
    "record_bundle": ("replay.session", "record_bundle"),
    "register_with_vcr": ("replay.cassette", "register_with_vcr"),
    "replay_bundle": ("replay.session", "replay_bundle"),
    "save_cassette": ("replay.cassette", "save_cassette"),
    "scenario_to_document": ("replay.scenario_writer", "scenario_to_document"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'replay' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
