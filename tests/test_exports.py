"""The public surface: ``import replay`` gives every public name of the library subpackages, each
the very object its defining module holds, and importing it loads nothing else."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import replay

# The subpackages whose whole ``__all__`` is the library's public surface, and the foundation
# module of the network guard (usable without pytest); cli, storage, redact, schema, http and
# proxy are internal layers.
LIBRARY_SUBPACKAGES = ("replay.cassette", "replay.fake", "replay.trace", "replay.session")
GUARD_EXPORTS = {"NetworkGuard"}


def _subpackage_names() -> dict[str, str]:
    names: dict[str, str] = {}
    for package in LIBRARY_SUBPACKAGES:
        for name in importlib.import_module(package).__all__:
            assert name not in names, f"{name} is exported by both {names[name]} and {package}"
            names[name] = package
    return names


def test_replays_table_is_exactly_the_subpackages_public_names() -> None:
    expected = {**_subpackage_names(), **dict.fromkeys(GUARD_EXPORTS, "replay.network_guard")}
    assert replay._EXPORTS == expected
    assert replay.__all__ == sorted(expected)


@pytest.mark.parametrize("name", sorted(replay._EXPORTS))
def test_each_public_name_is_the_object_its_subpackage_exports(name: str) -> None:
    package = importlib.import_module(replay._EXPORTS[name])
    assert name in package.__all__
    assert getattr(replay, name) is getattr(package, name)


@pytest.mark.parametrize("package", LIBRARY_SUBPACKAGES)
def test_every_name_a_subpackage_exports_resolves(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None
    with pytest.raises(AttributeError, match="has no attribute 'missing'"):
        _ = module.missing


def test_importing_replay_or_a_subpackage_loads_nothing_else() -> None:
    # A fresh interpreter: this one has loaded everything already.
    program = (
        "import sys, replay, replay.cassette, replay.fake, replay.trace, replay.session\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'engine', 'httpx', 'httpx2', 'anthropic', 'vcr'}"
        " or (m.startswith('replay.') and m.count('.') > 1)))"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_the_library_works_without_the_test_extras() -> None:
    # `pip install -e .` has no pytest, syrupy or respx: every public name but the syrupy
    # extension must import without them (a fresh interpreter where importing them fails).
    program = (
        "import sys\n"
        "for name in ('pytest', 'syrupy', 'respx', '_pytest'): sys.modules[name] = None\n"
        "import replay\n"
        "missing = [n for n in replay.__all__ if n != 'TraceSnapshotExtension' and getattr(replay, n) is None]\n"
        "print(missing)"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
