"""Session bundles (DESIGN §4.1): a recorded session as a folder, and re-executing it.

A bundle holds ``cassette.yaml`` (the HTTP interactions), ``transcript.jsonl`` (what the engine
wrote, with the folders it ran in replaced by ``<workspace>`` and ``<session>``),
``session.json`` (model, system prompt, tools, settings, prompts, seed, format version),
``workspace/`` (the files the tools start from, never changed by a run) and, for a fake-model
recording, ``scenario.yaml``. Recording and re-execution both run the engine in a temp copy of
the workspace, so a bundle replays the same from any folder.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from engine import (
    AnthropicModel,
    EngineSettings,
    ManualClock,
    QueryDeps,
    QueryEngine,
    QueryResult,
    TraceEvent,
    default_tools,
)
from replay.cassette.record import CassetteRecorder, RecordMode
from replay.cassette.transport import LoggedRequest
from replay.fake.model import FakeModel
from replay.fake.scenario import Scenario, load_scenario
from replay.fake.scenario_writer import scenario_to_document
from replay.fake.server import FakeModelServer
from replay.redact.files import redact_tree, write_redacted
from replay.redact.redactor import current_redactor
from replay.schema.documents import (
    SchemaError,
    SessionDocument,
    engine_settings_from,
    session_options_from,
    validate_document,
)
from replay.schema.options import SessionOptions
from replay.session.bundle_swap import begin_bundle_write, swap_into_place
from replay.storage.bundle_files import (
    MAX_SESSION_BYTES,
    MAX_TRACE_BYTES,
    MAX_TRANSCRIPT_BYTES,
    BadFileError,
    loads_json,
    read_capped_text,
    read_recorded_transcript,
)
from replay.storage.stale_folders import ScratchKind, scratch_prefix
from replay.trace.behaviour import BehaviourTrace, extract_trace, render_text

__all__ = [
    "MAX_SESSION_BYTES",
    "MAX_TRANSCRIPT_BYTES",
    "SESSION_FORMAT_VERSION",
    "Bundle",
    "BundleError",
    "SessionRun",
    "SessionSpec",
    "load_bundle",
    "record_bundle",
    "replay_bundle",
]

SESSION_FORMAT_VERSION = 1
CASSETTE_FILE = "cassette.yaml"
TRANSCRIPT_FILE = "transcript.jsonl"
SESSION_FILE = "session.json"
SCENARIO_FILE = "scenario.yaml"
TRACE_JSON_FILE = "trace.json"
TRACE_TEXT_FILE = "trace.txt"
WORKSPACE_DIR = "workspace"
# The files a recording writes beside workspace/ (and replaces on a re-recording).
BUNDLE_FILES = (CASSETTE_FILE, TRANSCRIPT_FILE, SESSION_FILE, SCENARIO_FILE, TRACE_JSON_FILE, TRACE_TEXT_FILE)
WORKSPACE_PLACEHOLDER = "<workspace>"
SESSION_PLACEHOLDER = "<session>"
# A live recording needs a key; a fake-model one sends this placeholder (scrubbed all the same).
PLACEHOLDER_KEY = "sk-ant-replay-placeholder"
# How a cassette recorded against the loopback fake server names it (its port changes every run).
FAKE_SERVER_BASE_URL = "http://fake-model.invalid"
_RE_RECORD = "restore it from version control or re-record the bundle"


class BundleError(ValueError):
    """A bundle that cannot be read or written: names the file and the problem."""


@dataclass(frozen=True, kw_only=True)
class SessionSpec:
    """``session.json``: everything needed to run the session again."""

    prompts: tuple[str, ...]
    settings: EngineSettings = field(default_factory=EngineSettings)
    tools: tuple[str, ...] = ("Read", "Write", "Edit", "Bash", "Glob", "Grep")
    seed: int = 0
    live: bool = False
    scenario: str | None = None
    options: SessionOptions = field(default_factory=SessionOptions)
    format_version: int = SESSION_FORMAT_VERSION

    def to_json(self) -> str:
        settings = dataclasses.asdict(self.settings)
        document = {
            "format_version": self.format_version,
            "model": self.settings.model,
            "system_prompt": self.settings.system_prompt,
            "tools": list(self.tools),
            "prompts": list(self.prompts),
            "seed": self.seed,
            "live": self.live,
            "scenario": self.scenario,
            "settings": settings,
            "session_options": self.options.to_mapping(),
        }
        return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str, *, source: Path) -> SessionSpec:
        """The spec in ``text`` (the contents of ``source``), checked against the session schema
        (`replay.schema.documents`): exact types, no unknown keys."""
        try:
            document = loads_json(text, source=source, remedy=_RE_RECORD)
        except BadFileError as exc:
            raise BundleError(str(exc)) from None
        if not isinstance(document, dict):
            raise BundleError(f"{source} must hold a JSON object, not {type(document).__name__}.")
        version = document.get("format_version")
        if version != SESSION_FORMAT_VERSION or isinstance(version, bool):
            raise BundleError(
                f"{source} is session format version {version!r}; this replay reads version {SESSION_FORMAT_VERSION}."
            )
        try:
            checked = validate_document(SessionDocument, document, source=source)
            settings = engine_settings_from(document.get("settings") or {}, source=source)
            options = session_options_from(document.get("session_options"), source=source, prefix="session_options.")
        except SchemaError as exc:
            raise BundleError(str(exc)) from None
        for name in ("model", "system_prompt"):
            if name in document and document[name] != getattr(settings, name):
                raise BundleError(
                    f"{source}: {name} is {document[name]!r} but settings.{name} is {getattr(settings, name)!r}; "
                    f"the top-level {name} only repeats the setting for a reader — make them agree."
                )
        prompts = tuple(checked.prompts)
        tools = tuple(checked.tools or ())
        _check_paths_stay_in_bundle(document, settings, source)
        known = {tool.name for tool in default_tools()}
        unknown = sorted(set(tools) - known)
        if unknown:
            raise BundleError(f"{source} names tools this engine does not have: {', '.join(unknown)}.")
        if not prompts:
            raise BundleError(f"{source} has no prompts to submit.")
        return cls(
            prompts=prompts,
            settings=settings,
            tools=tools,
            seed=checked.seed,
            live=checked.live,
            scenario=checked.scenario,
            options=options,
        )


def _check_paths_stay_in_bundle(document: dict[str, Any], settings: EngineSettings, source: Path) -> None:
    """The values of ``session.json`` that name files must name them inside the bundle: a
    stranger's bundle must not point a replay at ``/etc/passwd`` or ``../../elsewhere``."""
    scenario = document.get("scenario")
    if scenario is not None and scenario != SCENARIO_FILE:
        raise BundleError(
            f"{source} names the scenario {scenario!r}; a bundle's scenario is always the {SCENARIO_FILE} "
            "beside session.json (or null), never a path elsewhere, so the bundle is refused."
        )
    for pattern in settings.memory_paths:
        if not isinstance(pattern, str) or os.path.isabs(pattern) or ".." in Path(pattern).parts:
            raise BundleError(
                f"{source} has the memory path {pattern!r} in its settings, which leads outside the workspace; "
                "memory paths are patterns relative to workspace/ without '..', so the bundle is refused."
            )


@dataclass(frozen=True)
class Bundle:
    """A bundle on disk, checked."""

    path: Path
    spec: SessionSpec

    @property
    def cassette_path(self) -> Path:
        return self.path / CASSETTE_FILE

    @property
    def transcript_path(self) -> Path:
        return self.path / TRANSCRIPT_FILE

    @property
    def workspace_path(self) -> Path:
        return self.path / WORKSPACE_DIR

    def recorded_trace(self) -> BehaviourTrace | None:
        """The behaviour recorded with the bundle (``trace.json``), if it has one."""
        path = self.path / TRACE_JSON_FILE
        if not path.is_file():
            return None
        try:
            text = read_capped_text(path, limit=MAX_TRACE_BYTES, remedy=_RE_RECORD)
            return BehaviourTrace.from_json(loads_json(text, source=path, remedy=_RE_RECORD))
        except BadFileError as exc:
            raise BundleError(str(exc)) from None
        except (ValueError, KeyError, TypeError) as exc:
            raise BundleError(f"{path} is not a readable behaviour trace ({exc}); re-record the bundle.") from None

    def recorded_transcript(self) -> str:
        """The recorded ``transcript.jsonl``, every line a complete JSON record (a torn line,
        even the last, is corruption in a bundle: see `read_recorded_transcript`)."""
        try:
            return read_recorded_transcript(self.transcript_path)
        except BadFileError as exc:
            raise BundleError(str(exc)) from None


@dataclass(frozen=True)
class SessionRun:
    """What running a session produced: the transcript (normalized text), the trace, and one
    result per prompt."""

    transcript: str
    trace: list[TraceEvent]
    results: list[QueryResult]
    unplayed: list[int] = field(default_factory=list)
    # Every request in order, with its fingerprint (and whether the cassette had it).
    requests: list[LoggedRequest] = field(default_factory=list)

    def behaviour(self, session: str, prompts: Sequence[str]) -> BehaviourTrace:
        """The behaviour trace of this run, redacted (`replay.redact.redactor`) as its file is."""
        trace = extract_trace(session, prompts, self.trace, self.requests)
        return BehaviourTrace.from_json(current_redactor().redact_value(trace.to_json()))


def load_bundle(path: Path) -> Bundle:
    """Read and check a bundle folder."""
    path = Path(path)
    if not path.is_dir():
        retired = sorted(path.parent.glob(f".{path.name}.old-*")) if path.parent.is_dir() else []
        if retired:
            raise BundleError(
                f"Bundle {path} does not exist: a re-recording was interrupted while swapping it in; the previous "
                f"bundle is whole at {retired[0]} — rename it back to {path.name}."
            )
        if path.is_file():
            hint = f"its folder, {path.parent}" if path.name == SESSION_FILE else "the folder holding session.json"
            raise BundleError(f"{path} is a file, not a bundle folder; give {hint}.")
        raise BundleError(f"Bundle {path} does not exist or is not a folder.")
    for name in (SESSION_FILE, CASSETTE_FILE, TRANSCRIPT_FILE):
        if not (path / name).is_file():
            raise BundleError(f"Bundle {path} has no {name}; it is incomplete — re-record it.")
    if not (path / WORKSPACE_DIR).is_dir():
        raise BundleError(f"Bundle {path} has no {WORKSPACE_DIR}/ folder, so its tools have nothing to start from.")
    _check_bundle_files(path)
    _check_workspace_tree(path / WORKSPACE_DIR)
    try:
        text = read_capped_text(path / SESSION_FILE, limit=MAX_SESSION_BYTES, remedy=_RE_RECORD)
    except BadFileError as exc:
        raise BundleError(str(exc)) from None
    spec = SessionSpec.from_json(text, source=path / SESSION_FILE)
    return Bundle(path, spec)


def _check_bundle_files(path: Path) -> None:
    """A bundle's own files are in the bundle: a link to a file elsewhere (``cassette.yaml ->
    ~/.ssh/id_rsa``) is refused, and workspace/ is a real folder (a link to ``/`` would copy the
    whole disk)."""
    if (path / WORKSPACE_DIR).is_symlink():
        raise BundleError(
            f"{path / WORKSPACE_DIR} is a symbolic link; a bundle's {WORKSPACE_DIR}/ must be a real folder inside "
            "the bundle, so the bundle is refused before anything is copied or run."
        )
    real_bundle = Path(os.path.realpath(path))
    for name in BUNDLE_FILES:
        file = path / name
        if file.is_symlink() and not Path(os.path.realpath(file)).is_relative_to(real_bundle):
            raise BundleError(
                f"{file} is a symbolic link to {os.readlink(file)!r}, outside the bundle; a bundle's files must be "
                "inside its folder, so the bundle is refused before anything is read or run."
            )


def _check_workspace_tree(root: Path) -> None:
    """Refuse a workspace that a replay could follow out of: a symbolic link with an absolute
    target (it would still point at the original from the temp copy) or one that resolves
    outside the workspace, and anything that is not a file, a folder or such a link (a FIFO or
    a device would hang or flood the copy). Checked before anything is copied or run."""
    lexical_root = os.path.abspath(root)
    real_root = os.path.realpath(root)
    pending = [lexical_root]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_symlink():
                    _check_link(entry.path, lexical_root, real_root)
                elif entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                elif not entry.is_file(follow_symlinks=False):
                    raise BundleError(
                        f"{entry.path} is {_special_kind(entry.path)}, not a file or a folder; a bundle's workspace "
                        "holds only files, folders and links that stay inside it, so the bundle is refused."
                    )


def _check_link(link: str, lexical_root: str, real_root: str) -> None:
    target = os.readlink(link)
    if os.path.isabs(target):
        raise BundleError(
            f"{link} is a symbolic link to the absolute path {target!r}; a bundle's workspace may hold only "
            "relative links that stay inside it, so the bundle is refused — replace the link by the file itself."
        )
    # Both the link's text and where it really leads must stay inside: `d/../x` through a link d
    # to `.` reads as inside but leads out.
    lexical = Path(os.path.normpath(os.path.join(os.path.dirname(link), target)))
    if not (lexical.is_relative_to(lexical_root) and Path(os.path.realpath(link)).is_relative_to(real_root)):
        raise BundleError(
            f"{link} is a symbolic link to {target!r}, which leads outside the workspace; a bundle's workspace may "
            "hold only links that stay inside it, so the bundle is refused — replace the link by the file itself."
        )


def _special_kind(path: str) -> str:
    mode = os.lstat(path).st_mode
    kinds = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device file"))
    return next((name for test, name in kinds if test(mode)), "a special file")


async def record_bundle(
    out: Path,
    *,
    prompts: Sequence[str] = (),
    scenario: Scenario | Path | None = None,
    workspace: Path | None = None,
    settings: EngineSettings | None = None,
    seed: int = 0,
    api_key: str | None = None,
    base_url: str | None = None,
    options: SessionOptions | None = None,
    wait: float = 0.0,
    on_wait: Callable[[int | None], None] | None = None,
) -> Bundle:
    """Record a session into the bundle folder ``out``: against the fake model serving
    ``scenario`` on loopback (the real record path, without a key), or, with no scenario, live
    against the API at ``base_url`` with ``api_key``. The folder is written whole or not at all,
    under the bundle's writer lock: if another process holds it, wait up to ``wait`` seconds
    (``on_wait`` is told its pid), then raise ``BundleBusyError``."""
    out = Path(out)
    scenario_text: str | None = None
    if isinstance(scenario, Path):
        # Loaded (and so checked) first: a file that is not a scenario is never read as text.
        scenario_path, scenario = scenario, load_scenario(scenario)
        scenario_text = scenario_path.read_text(encoding="utf-8")
    if scenario is not None:
        # A scenario file may carry its own prompts, settings and session options; what the
        # caller passes wins.
        prompts = prompts or scenario.prompts
        try:
            if options is None and scenario.session:
                options = session_options_from(scenario.session, source="The scenario", prefix="session.")
            if settings is None and scenario.settings:
                settings = engine_settings_from(scenario.settings, source="The scenario")
        except SchemaError as exc:
            raise BundleError(str(exc)) from None
    settings = settings or EngineSettings()
    if not prompts:
        raise BundleError("Nothing to submit: give at least one prompt (or list them under 'prompts' in the scenario).")
    live = scenario is None
    if live and not api_key:
        raise BundleError("A live recording needs an API key: set ANTHROPIC_API_KEY (or pass api_key).")
    spec = SessionSpec(
        prompts=tuple(prompts),
        settings=settings,
        seed=seed,
        live=live,
        scenario=SCENARIO_FILE if scenario is not None else None,
        options=options or SessionOptions(),
    )
    write = begin_bundle_write(out, wait=wait, on_wait=on_wait)
    staging = write.staging
    try:
        _copy_workspace(workspace, staging / WORKSPACE_DIR)
        # Before the session runs in it: the recording and every replay read the same redacted
        # files, and a secret in the workspace never reaches a tool result.
        redact_tree(staging / WORKSPACE_DIR)
        if not any((staging / WORKSPACE_DIR).iterdir()):
            # git keeps no empty folder, and a bundle without its workspace/ is incomplete.
            (staging / WORKSPACE_DIR / ".keep").write_text("", encoding="utf-8")
        server = FakeModelServer(FakeModel(scenario)) if scenario is not None else None
        if server is not None:
            base_url = server.start()
        try:
            run = await _run_session(
                spec,
                staging / WORKSPACE_DIR,
                cassette=staging / CASSETTE_FILE,
                mode=RecordMode.ALL,
                api_key=api_key or PLACEHOLDER_KEY,
                base_url=base_url,
                stored_base_url=(base_url, FAKE_SERVER_BASE_URL) if server is not None and base_url else None,
            )
        finally:
            if server is not None:
                server.stop()
        # Every file through the one redaction pass (replay.redact.redactor) before it reaches disk.
        write_redacted(staging / TRANSCRIPT_FILE, run.transcript)
        behaviour = run.behaviour(out.name, spec.prompts)
        write_redacted(staging / TRACE_JSON_FILE, behaviour.dumps())
        write_redacted(staging / TRACE_TEXT_FILE, render_text(behaviour))
        write_redacted(staging / SESSION_FILE, spec.to_json())
        if scenario is not None:
            write_redacted(staging / SCENARIO_FILE, scenario_text or _scenario_yaml(scenario))
        swap_into_place(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        write.release()
    return load_bundle(out)


async def replay_bundle(bundle: Bundle | Path, *, strict: bool = True) -> SessionRun:
    """Re-execute a bundle offline: a fresh engine in a temp copy of its workspace, the tools
    really running, every model call answered from the cassette."""
    if not isinstance(bundle, Bundle):
        bundle = load_bundle(bundle)
    with tempfile.TemporaryDirectory(prefix=scratch_prefix(ScratchKind.RUN)) as temp:
        workspace = Path(temp) / WORKSPACE_DIR
        _copy_workspace(bundle.workspace_path, workspace)
        return await _run_session(
            bundle.spec, workspace, cassette=bundle.cassette_path, mode=RecordMode.NONE, strict=strict
        )


async def _run_session(
    spec: SessionSpec,
    workspace: Path,
    *,
    cassette: Path,
    mode: RecordMode,
    api_key: str = PLACEHOLDER_KEY,
    base_url: str | None = None,
    strict: bool = False,
    stored_base_url: tuple[str, str] | None = None,
) -> SessionRun:
    """Run ``spec``'s prompts in a scratch copy of ``workspace`` (so the bundle's own files
    never change), recording into or replaying from ``cassette``."""
    with tempfile.TemporaryDirectory(prefix=scratch_prefix(ScratchKind.SESSION)) as temp:
        run_workspace = Path(temp) / WORKSPACE_DIR
        shutil.copytree(workspace, run_workspace, symlinks=True)
        session_dir = Path(temp) / "session"
        results: list[QueryResult] = []
        with CassetteRecorder(
            cassette,
            mode=mode,
            workspace=run_workspace,
            session_dir=session_dir,
            strict=strict,
            stored_base_url=stored_base_url,
        ) as recorder:
            async with recorder.async_client() as http_client:
                model = AnthropicModel(http_client=http_client, api_key=api_key, base_url=base_url)
                deps = (
                    QueryDeps.live(model)
                    if spec.live and mode is not RecordMode.NONE
                    else QueryDeps.deterministic(model, seed=spec.seed)
                )
                tools = [tool for tool in default_tools() if tool.name in spec.tools]
                engine = QueryEngine(
                    deps=deps,
                    workspace=run_workspace,
                    session_dir=session_dir,
                    settings=spec.settings,
                    tools=tools,
                    hooks=spec.options.build_hooks(),
                    can_use_tool=spec.options.build_permissions(),
                    tool_environment=spec.options.tool_environment(
                        live_recording=spec.live and mode is not RecordMode.NONE
                    ),
                )
                interrupts: list[int] = []
                for index, prompt in enumerate(spec.prompts):
                    minutes = spec.options.minutes_before(index)
                    if minutes and isinstance(deps.clock, ManualClock):
                        deps.clock.advance(minutes * 60)
                    async for item in engine.submit_message(prompt):
                        if isinstance(item, QueryResult):
                            results.append(item)
                        elif spec.options.should_interrupt(item, interrupts):
                            engine.abort()
                engine.close()
            unplayed = recorder.unplayed()
            requests = list(recorder.request_log)
        transcript = (session_dir / "transcript.jsonl").read_text(encoding="utf-8")
        transcript = _normalize_paths(transcript, run_workspace, session_dir)
        # Redacted as the recorded transcript was, so a replay compares like with like.
        transcript = current_redactor().redact_text(transcript)
        return SessionRun(
            transcript=transcript, trace=list(engine.trace), results=results, unplayed=unplayed, requests=requests
        )


def _normalize_paths(text: str, workspace: Path, session_dir: Path) -> str:
    for path, placeholder in ((workspace, WORKSPACE_PLACEHOLDER), (session_dir, SESSION_PLACEHOLDER)):
        for variant in {str(path), os.path.realpath(path)}:
            text = text.replace(json.dumps(variant)[1:-1], placeholder)
    return text


def _copy_workspace(source: Path | None, target: Path) -> None:
    if source is None:
        target.mkdir(parents=True)
        return
    if not source.is_dir():
        raise BundleError(f"Workspace {source} does not exist or is not a folder.")
    # Checked again here, right before copying: a recording must not make a bundle that loading
    # would refuse, and a Bundle may have been built before its folder changed.
    _check_workspace_tree(source)
    shutil.copytree(source, target, symlinks=True)


def _scenario_yaml(scenario: Scenario) -> str:
    return yaml.safe_dump(scenario_to_document(scenario), sort_keys=False, allow_unicode=True)
