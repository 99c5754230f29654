"""What a test asks of the plugin: the command-line options and ini setting (``--record-mode``,
``--replay-allow-unplayed``, ``replay_cassette_dir``), the ``replay_cassette`` marker and its arguments,
and where a cassette name points (`locate_cassette`: a bundle folder or a cassette file)."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from replay.pytest_plugin.outcome import SnapshotKeeper

# Loaded with the plugin, by every pytest run where agent-replay is installed: the engine, the
# SDK and vcrpy are imported only when a fixture is used (see the package's __init__).
if TYPE_CHECKING:
    from replay.cassette.record import RecordMode
    from replay.session.bundle import Bundle

__all__ = [
    "BUNDLE_RECORD_HINT",
    "MARKER",
    "RECORD_HINT",
    "CassetteLocation",
    "MarkerArguments",
    "PluginOptions",
    "bundle_record_hint",
    "default_cassette_name",
    "load_located_bundle",
    "locate_cassette",
    "pytest_addoption",
    "pytest_configure",
]

MARKER = "replay_cassette"
CASSETTE_SUFFIXES = (".yaml", ".yml", ".json")
RECORD_HINT = "Run pytest with --record-mode=once to record cassettes that do not exist yet."


def bundle_record_hint(nodeid: str) -> str:
    """How to accept a bundle's new behaviour from the test ``nodeid``: re-record the bundle and
    update the test's trace snapshots in one run. ``--snapshot-update`` alone would re-record
    nothing, and would only fail again on the same bundle."""
    return (
        f"To accept the new behaviour: `pytest {nodeid} --record-mode=rewrite --snapshot-update` re-records the "
        "bundle from its first differing request and updates the test's trace snapshot."
    )


# Where no test is at hand (the same command, for the test that replays the bundle).
BUNDLE_RECORD_HINT = bundle_record_hint("<test id>")


# -- options, marker, settings -------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("replay", "agent-replay: replayed engines, bundles and trace snapshots")
    group.addoption(
        "--record-mode",
        dest="record_mode",
        default=None,
        type=_record_mode_option,
        metavar="MODE",
        help="When replay tests reach the network: none (default; replay only, offline), once (record cassettes "
        "that do not exist yet), new_episodes (record requests a cassette lacks), all (record the cassette "
        "afresh), rewrite (re-record from the first request that differs and prune the rest; a drifted bundle "
        "is updated so).",
    )
    group.addoption(
        "--replay-allow-unplayed",
        dest="replay_allow_unplayed",
        action="store_true",
        default=False,
        help="Let a replay test pass although its cassette has interactions it never requested (a warning; by "
        "default the test fails).",
    )
    group.addoption(
        "--replay-strict",
        dest="replay_strict",
        action="store_true",
        default=False,
        help="Kept for compatibility: unplayed interactions fail a test by default now.",
    )
    parser.addini(
        "replay_cassette_dir",
        "Folder beside each test file where replay_cassette names are looked up (default: cassettes).",
        default="cassettes",
    )


def _record_mode_option(value: str) -> RecordMode:
    from replay.cassette.record import RecordModeError, parse_record_mode

    try:
        return parse_record_mode(value)
    except RecordModeError as exc:
        raise argparse.ArgumentTypeError(
            f"{exc} Use none (the default: replay only) or once (record cassettes that do not exist yet)."
        ) from None


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("replay_allow_unplayed", False) and config.getoption("replay_strict", False):
        raise pytest.UsageError("--replay-strict and --replay-allow-unplayed contradict each other; pass one.")
    if not config.pluginmanager.has_plugin(SnapshotKeeper.name):
        config.pluginmanager.register(SnapshotKeeper(config), SnapshotKeeper.name)
    config.addinivalue_line(
        "markers",
        f"{MARKER}(name=None, *, scenario=None, strict=None): the cassette or bundle the replay fixtures use, "
        "looked up in the replay_cassette_dir beside the test file (default name: <module>/<test name>); "
        "scenario= a scenario file to record against instead of the real API; strict=False lets interactions go "
        "unplayed (as --replay-allow-unplayed does for every test).",
    )


@dataclass(frozen=True)
class PluginOptions:
    mode: RecordMode
    strict: bool
    cassette_dir: str

    @classmethod
    def of(cls, config: pytest.Config) -> PluginOptions:
        from replay.cassette.record import RecordMode

        allow_unplayed = bool(config.getoption("replay_allow_unplayed"))
        return cls(
            mode=config.getoption("record_mode") or RecordMode.NONE,
            strict=not allow_unplayed,
            cassette_dir=str(config.getini("replay_cassette_dir")),
        )


@dataclass(frozen=True, kw_only=True)
class MarkerArguments:
    """What the test's ``replay_cassette`` marker says (or the defaults without one)."""

    name: str | None
    scenario: Path | None
    strict: bool | None

    @classmethod
    def of(cls, request: pytest.FixtureRequest) -> MarkerArguments:
        marker = request.node.get_closest_marker(MARKER)
        if marker is None:
            return cls(name=None, scenario=None, strict=None)
        unknown = sorted(set(marker.kwargs) - {"name", "scenario", "strict"})
        if unknown or len(marker.args) > 1:
            pytest.fail(
                f"@pytest.mark.{MARKER} takes one name and the keywords scenario= and strict=, not "
                f"{', '.join([*map(repr, marker.args), *(f'{k}=' for k in unknown)])}.",
                pytrace=False,
            )
        name = marker.args[0] if marker.args else marker.kwargs.get("name")
        scenario = marker.kwargs.get("scenario")
        return cls(
            name=str(name) if name is not None else None,
            scenario=request.path.parent / scenario if scenario is not None else None,
            strict=marker.kwargs.get("strict"),
        )


# -- where a name points ----------------------------------------------------------------------


@dataclass(frozen=True)
class CassetteLocation:
    """Where a ``replay_cassette`` name points: a bundle folder or a cassette file."""

    name: str
    path: Path
    is_bundle: bool


def locate_cassette(test_dir: Path, name: str, *, cassette_dir: str = "cassettes") -> CassetteLocation:
    """The lookup rule: ``<test_dir>/<cassette_dir>/<name>/`` if that folder exists (a bundle),
    else the cassette file ``<test_dir>/<cassette_dir>/<name>.yaml`` (``name`` kept as it is when
    it already ends in .yaml, .yml or .json). An absolute ``name`` is used as it is."""
    path = Path(name) if Path(name).is_absolute() else test_dir / cassette_dir / name
    if path.is_dir():
        return CassetteLocation(name, path, is_bundle=True)
    if path.suffix not in CASSETTE_SUFFIXES:
        path = path.with_name(path.name + ".yaml")
    return CassetteLocation(name, path, is_bundle=False)


def default_cassette_name(request: pytest.FixtureRequest) -> str:
    return f"{request.path.stem}/{re.sub(r'[^A-Za-z0-9._-]+', '_', request.node.name)}"


def load_located_bundle(path: Path) -> Bundle:
    from replay.session.bundle import BundleError, load_bundle

    try:
        return load_bundle(path)
    except BundleError as exc:
        pytest.fail(str(exc), pytrace=False)
