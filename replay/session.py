"""Session bundles (DESIGN §4.1): a recorded session as a folder, and re-executing it.

A bundle holds ``cassette.yaml`` (the HTTP interactions), ``transcript.jsonl`` (what the engine
wrote, with the folders it ran in replaced by ``<workspace>`` and ``<session>``),
``session.json`` (model, system prompt, tools, settings, prompts, seed, format version),
``workspace/`` (the files the tools start from, never changed by a run) and, for a fake-model
recording, ``scenario.yaml``. Recording and re-execution both run the engine in a temp copy of
the workspace, so a bundle replays the same from any folder.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Sequence
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
from replay.fake import FakeModel
from replay.record import CassetteRecorder, RecordMode
from replay.redact import current_redactor
from replay.redact_files import redact_tree, write_redacted
from replay.scenario import Scenario, load_scenario
from replay.scenario_writer import scenario_to_document
from replay.server import FakeModelServer
from replay.session_options import SessionOptions, SessionOptionsError
from replay.trace import BehaviourTrace, extract_trace, render_text
from replay.transport import LoggedRequest

__all__ = [
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
        try:
            document = json.loads(text)
        except ValueError as exc:
            raise BundleError(f"{source} is not valid JSON ({exc}); the bundle is corrupt — re-record it.") from None
        if not isinstance(document, dict):
            raise BundleError(f"{source} must hold a JSON object, not {type(document).__name__}.")
        version = document.get("format_version")
        if version != SESSION_FORMAT_VERSION:
            raise BundleError(
                f"{source} is session format version {version!r}; this replay reads version {SESSION_FORMAT_VERSION}."
            )
        try:
            settings = _settings_from(document.get("settings") or {})
            prompts = tuple(str(p) for p in document["prompts"])
            tools = tuple(str(t) for t in document.get("tools") or ())
            seed = int(document.get("seed", 0))
            options = SessionOptions.from_mapping(document.get("session_options"))
        except (KeyError, TypeError, ValueError) as exc:
            raise BundleError(f"{source} is missing or has a bad field ({exc}).") from None
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
            seed=seed,
            live=bool(document.get("live", False)),
            scenario=document.get("scenario"),
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


def _settings_from(values: dict[str, Any]) -> EngineSettings:
    names = {f.name: f for f in dataclasses.fields(EngineSettings)}
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise ValueError(f"unknown settings {', '.join(unknown)}")
    converted = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    return EngineSettings(**converted)


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
            return BehaviourTrace.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, KeyError, TypeError) as exc:
            raise BundleError(f"{path} is not a readable behaviour trace ({exc}); re-record the bundle.") from None


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
        """The behaviour trace of this run, redacted (`replay.redact`) as its file is."""
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
        raise BundleError(f"Bundle {path} does not exist or is not a folder.")
    for name in (SESSION_FILE, CASSETTE_FILE, TRANSCRIPT_FILE):
        if not (path / name).is_file():
            raise BundleError(f"Bundle {path} has no {name}; it is incomplete — re-record it.")
    if not (path / WORKSPACE_DIR).is_dir():
        raise BundleError(f"Bundle {path} has no {WORKSPACE_DIR}/ folder, so its tools have nothing to start from.")
    _check_bundle_files(path)
    _check_workspace_tree(path / WORKSPACE_DIR)
    spec = SessionSpec.from_json((path / SESSION_FILE).read_text(encoding="utf-8"), source=path / SESSION_FILE)
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
) -> Bundle:
    """Record a session into the bundle folder ``out``: against the fake model serving
    ``scenario`` on loopback (the real record path, without a key), or, with no scenario, live
    against the API at ``base_url`` with ``api_key``. The folder is written whole or not at all."""
    out = Path(out)
    scenario_text: str | None = None
    if isinstance(scenario, Path):
        scenario_text = scenario.read_text(encoding="utf-8")
        scenario = load_scenario(scenario)
    if scenario is not None:
        # A scenario file may carry its own prompts, settings and session options; what the
        # caller passes wins.
        prompts = prompts or scenario.prompts
        if options is None and scenario.session:
            try:
                options = SessionOptions.from_mapping(scenario.session)
            except SessionOptionsError as exc:
                raise BundleError(f"The scenario's session options are not usable: {exc}.") from None
        if settings is None and scenario.settings:
            try:
                settings = _settings_from(dict(scenario.settings))
            except (TypeError, ValueError) as exc:
                raise BundleError(f"The scenario's settings are not valid engine settings ({exc}).") from None
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
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
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
        # Every file through the one redaction pass (replay.redact) before it reaches disk.
        write_redacted(staging / TRANSCRIPT_FILE, run.transcript)
        behaviour = run.behaviour(out.name, spec.prompts)
        write_redacted(staging / TRACE_JSON_FILE, behaviour.dumps())
        write_redacted(staging / TRACE_TEXT_FILE, render_text(behaviour))
        write_redacted(staging / SESSION_FILE, spec.to_json())
        if scenario is not None:
            write_redacted(staging / SCENARIO_FILE, scenario_text or _scenario_yaml(scenario))
        _swap_into_place(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return load_bundle(out)


async def replay_bundle(bundle: Bundle | Path, *, strict: bool = True) -> SessionRun:
    """Re-execute a bundle offline: a fresh engine in a temp copy of its workspace, the tools
    really running, every model call answered from the cassette."""
    if not isinstance(bundle, Bundle):
        bundle = load_bundle(bundle)
    with tempfile.TemporaryDirectory(prefix="agent-replay-run-") as temp:
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
    with tempfile.TemporaryDirectory(prefix="agent-replay-session-") as temp:
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


def _swap_into_place(staging: Path, out: Path) -> None:
    """Replace ``out`` with the finished ``staging`` folder. Where the system can exchange two
    names in one step (Linux's renameat2), there is never a moment without a bundle at ``out``;
    elsewhere the old bundle is renamed away first, and ``load_bundle`` points at it if the
    process dies between the two renames."""
    if not out.exists():
        os.replace(staging, out)
        return
    if _exchange(staging, out):
        shutil.rmtree(staging, ignore_errors=True)  # now holds the old bundle
        return
    retired = out.with_name(f".{out.name}.old-{os.getpid()}")
    os.replace(out, retired)
    os.replace(staging, out)
    shutil.rmtree(retired, ignore_errors=True)


_RENAME_EXCHANGE = 2


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths atomically; False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    result = renameat2(at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), _RENAME_EXCHANGE)
    return result == 0


def _scenario_yaml(scenario: Scenario) -> str:
    return yaml.safe_dump(scenario_to_document(scenario), sort_keys=False, allow_unicode=True)
