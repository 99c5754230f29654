"""Session bundles on disk: the folder's layout, ``session.json`` (`SessionSpec`), and loading
a bundle (`load_bundle`), checked so that a stranger's bundle cannot lead a replay outside it.

A bundle holds ``cassette.yaml`` (the HTTP interactions), ``transcript.jsonl`` (what the engine
wrote, with the folders it ran in replaced by ``<workspace>`` and ``<session>``),
``session.json`` (model, system prompt, tools, settings, prompts, seed, format version),
``workspace/`` (the files the tools start from, never changed by a run) and, for a fake-model
recording, ``scenario.yaml``. Recording one is `replay.session.recording`; running its session
again, `replay.session.session_run`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import EngineSettings, default_tools
from replay.schema.documents import (
    SchemaError,
    SessionDocument,
    engine_settings_from,
    session_options_from,
    validate_document,
)
from replay.schema.options import SessionOptions, SessionOptionsError
from replay.session.bundle_layout import (  # re-exported: the rest of the package imports them from here
    BUNDLE_FILES,
    CASSETTE_FILE,
    SCENARIO_FILE,
    SESSION_FILE,
    TRACE_JSON_FILE,
    TRANSCRIPT_FILE,
    WORKSPACE_DIR,
)
from replay.storage.bundle_files import (
    MAX_SESSION_BYTES,
    MAX_TRACE_BYTES,
    MAX_TRANSCRIPT_BYTES,
    BadFileError,
    loads_json,
    read_capped_text,
    read_recorded_transcript,
)
from replay.trace.behaviour import BehaviourTrace, TraceFormatError

__all__ = [
    "MAX_SESSION_BYTES",
    "MAX_TRANSCRIPT_BYTES",
    "SESSION_FORMAT_VERSION",
    "Bundle",
    "BundleError",
    "SessionSpec",
    "check_workspace",
    "copy_workspace",
    "load_bundle",
]

SESSION_FORMAT_VERSION = 1
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

    def __post_init__(self) -> None:
        try:
            self.options.check_prompt_count(len(self.prompts))
        except SessionOptionsError as exc:
            raise BundleError(f"The session option {exc}.") from None

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
        try:
            options.check_prompt_count(len(prompts))
        except SessionOptionsError as exc:
            raise BundleError(f"{source}: session_options: {exc}.") from None
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
        except TraceFormatError as exc:
            problem = f"{path} is not a readable behaviour trace ({exc.detail})"
            raise BundleError(f"{problem}; re-record the bundle.") from None

    def recorded_transcript(self) -> str:
        """The recorded ``transcript.jsonl``, every line a complete JSON record (a torn line,
        even the last, is corruption in a bundle: see `read_recorded_transcript`)."""
        try:
            return read_recorded_transcript(self.transcript_path)
        except BadFileError as exc:
            raise BundleError(str(exc)) from None


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


def copy_workspace(source: Path | None, target: Path) -> None:
    """Copy the workspace ``source`` (an empty one if None) to ``target``, after the checks
    loading a bundle makes: a recording copies a workspace into a bundle, a replay out of one."""
    if source is None:
        target.mkdir(parents=True)
        return
    check_workspace(source)
    shutil.copytree(source, target, symlinks=True)


def check_workspace(source: Path) -> None:
    """The checks made right before a workspace is copied (a recording must not make a bundle
    that loading would refuse, and a Bundle may have been built before its folder changed):
    `BundleError` if ``source`` is not a folder a replay can copy without following it out."""
    if not source.is_dir():
        raise BundleError(f"Workspace {source} does not exist or is not a folder.")
    _check_workspace_tree(source)
