"""The one rule that sets up a session to record or run: what the caller says (command-line
flags, explicit arguments) beats what the session's document says (a scenario's ``prompts:``,
``settings:`` and ``session:``, or a bundle's ``session.json``), which beats the defaults.

``replay record``, `record_bundle` and the pytest plugin all resolve through `resolve_setup`, so
one scenario file records the same session whichever of them runs it. Settings are overlaid
field by field (``--model X`` changes the model and keeps the scenario's ``max_turns``); an
`EngineSettings` object, prompts and session options replace the document's whole.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import EngineSettings
from replay.fake.scenario import Scenario
from replay.schema.documents import SchemaError, engine_settings_from, session_options_from
from replay.schema.options import SessionOptions
from replay.session.bundle import WORKSPACE_DIR, BundleError, SessionSpec

__all__ = ["SessionSetup", "resolve_setup"]

_SETTING_NAMES = frozenset(f.name for f in dataclasses.fields(EngineSettings))


@dataclass(frozen=True, kw_only=True)
class SessionSetup:
    """A session's set-up once every source has had its say."""

    prompts: tuple[str, ...]
    settings: EngineSettings
    options: SessionOptions
    # The folder the tools start from (None: an empty one).
    workspace: Path | None = None


def resolve_setup(
    *,
    scenario: Scenario | None = None,
    scenario_path: Path | None = None,
    spec: SessionSpec | None = None,
    prompts: Sequence[str] = (),
    settings: EngineSettings | None = None,
    overrides: Mapping[str, Any] | None = None,
    options: SessionOptions | None = None,
    workspace: Path | None = None,
    need_prompts: bool = True,
) -> SessionSetup:
    """The set-up of a session: each of ``prompts``, ``settings``, ``options`` and ``workspace``
    given by the caller wins; what is not given comes from ``scenario`` (read from
    ``scenario_path``, whose folder's ``workspace/`` is the default workspace) or from a bundle's
    ``spec``, else the defaults. ``overrides`` then set single settings fields. `BundleError`
    names the file when the scenario's set-up is invalid, or when no prompt is given anywhere
    (with ``need_prompts``)."""
    if scenario is not None and spec is not None:
        raise ValueError("A session is set up from a scenario or from a bundle's session.json, not both.")
    source = str(scenario_path) if scenario_path is not None else "The scenario"
    base_settings, base_options, base_prompts = EngineSettings(), SessionOptions(), ()
    try:
        if scenario is not None:
            base_prompts = scenario.prompts
            if settings is None and scenario.settings:
                base_settings = engine_settings_from(scenario.settings, source=source)
            if options is None and scenario.session:
                base_options = session_options_from(scenario.session, source=source, prefix="session.")
    except SchemaError as exc:
        raise BundleError(str(exc)) from None
    if spec is not None:
        base_prompts, base_settings, base_options = spec.prompts, spec.settings, spec.options
    chosen = _overlay(settings or base_settings, overrides or {})
    if workspace is None and scenario_path is not None and (scenario_path.parent / WORKSPACE_DIR).is_dir():
        workspace = scenario_path.parent / WORKSPACE_DIR
    setup = SessionSetup(
        prompts=tuple(prompts) or tuple(base_prompts),
        settings=chosen,
        options=options if options is not None else base_options,
        workspace=workspace,
    )
    if need_prompts and not setup.prompts:
        raise BundleError(_no_prompt(scenario_path if scenario is not None else None))
    return setup


def _overlay(settings: EngineSettings, overrides: Mapping[str, Any]) -> EngineSettings:
    unknown = sorted(set(overrides) - _SETTING_NAMES)
    if unknown:
        raise BundleError(
            f"{', '.join(unknown)} is not an engine setting; expected one of {', '.join(sorted(_SETTING_NAMES))}."
        )
    given = {name: value for name, value in overrides.items() if value is not None}
    try:
        return dataclasses.replace(settings, **given) if given else settings
    except ValueError as exc:
        raise BundleError(f"The settings given cannot be used: {exc}") from None


def _no_prompt(scenario_path: Path | None) -> str:
    if scenario_path is None:
        return "Nothing to submit: give at least one prompt (--prompt TEXT, or prompts= in Python)."
    return (
        f"Nothing to submit: {scenario_path} lists no prompts (add them under 'prompts:') and none was given "
        "(--prompt TEXT, or prompts= in Python)."
    )
