"""The harness around the engine: a deterministic fake model (in-process or on loopback), cassettes
recorded through vcrpy and replayed through an ``httpx2`` transport (so the real SDK parses every
byte), and session bundles that re-execute a recorded session offline."""

from replay.cassette import (
    Cassette,
    CassetteError,
    CassetteSource,
    load_cassette,
    register_with_vcr,
    save_cassette,
)

from replay.fake import (
    FakeModel,
    FakeModelError,
    FakeModelTransport,
    FakeResponse,
    ReceivedRequest,
    ScenarioExhaustedError,
    SyncFakeModelTransport,
)
from replay.fingerprint import Normalizer, fingerprint
from replay.interaction import FaultKind as RecordedFaultKind
from replay.interaction import Interaction, RecordedFault, RecordedRequest, RecordedResponse
from replay.record import CassetteNotFoundError, CassetteRecorder, RecordMode, RecordModeError, parse_record_mode
from replay.scenario import (
    SCENARIO_VERSION,
    DropConnection,
    ErrorType,
    FaultKind,
    HttpError,
    RedactedThinkingBlock,
    Scenario,
    ScenarioError,
    StopReason,
    StreamError,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Turn,
    Usage,
    load_scenario,
    scenario_to_document,
)
from replay.server import FakeModelServer
from replay.session import Bundle, BundleError, SessionRun, SessionSpec, load_bundle, record_bundle, replay_bundle
from replay.transport import (
    CassetteMismatchError,
    CassettePlayer,
    CassetteTransport,
    SyncCassetteTransport,
    UnplayedInteractionsError,
)

__all__ = [
    "SCENARIO_VERSION",
    "Bundle",
    "BundleError",
    "Cassette",
    "CassetteError",
    "CassetteMismatchError",
    "CassetteNotFoundError",
    "CassettePlayer",
    "CassetteRecorder",
    "CassetteSource",
    "CassetteTransport",
    "DropConnection",
    "ErrorType",
    "FakeModel",
    "FakeModelError",
    "FakeModelServer",
    "FakeModelTransport",
    "FakeResponse",
    "FaultKind",
    "HttpError",
    "Interaction",
    "Normalizer",
    "ReceivedRequest",
    "RecordMode",
    "RecordModeError",
    "RecordedFault",
    "RecordedFaultKind",
    "RecordedRequest",
    "RecordedResponse",
    "RedactedThinkingBlock",
    "Scenario",
    "ScenarioError",
    "ScenarioExhaustedError",
    "SessionRun",
    "SessionSpec",
    "StopReason",
    "StreamError",
    "SyncCassetteTransport",
    "SyncFakeModelTransport",
    "TextBlock",
    "ThinkingBlock",
    "ToolUseBlock",
    "Turn",
    "UnplayedInteractionsError",
    "Usage",
    "fingerprint",
    "load_bundle",
    "load_cassette",
    "load_scenario",
    "parse_record_mode",
    "record_bundle",
    "register_with_vcr",
    "replay_bundle",
    "save_cassette",
    "scenario_to_document",
]
