"""Suite-wide guard: tests never reach the network (loopback is allowed for local servers), nor
write compiled cassette copies into the user's cache; generated tests draw the same examples every
run; scratch files live in memory where they can; and what keeps a run fast: the order the slowest
files start in, the processes the tests start sharing one bytecode cache, the ``replay`` package
left to Python's own loader, and a young generation of the collector sized for the tests."""

from __future__ import annotations

import sys


def leave_replay_unrewritten() -> None:
    """pytest rewrites the asserts of every module of an installed pytest plugin's package, and
    ``replay`` is one: about 80 modules re-parsed in each process that collects when bytecode is
    not cached. Their asserts are the library's own invariants, not tests. Done before this file
    imports anything, through the rewriting hook's private state (a pytest without it just rewrites
    as before). The other packages stay marked, ``engine`` among them: a pytester run in this
    process marks them again, and warns that a module imported unrewritten cannot be rewritten
    (``replay`` itself was imported rewritten, with the plugin, before this file)."""
    for finder in sys.meta_path:
        marked, cache = getattr(finder, "_must_rewrite", None), getattr(finder, "_marked_for_rewrite_cache", None)
        if type(finder).__name__ == "AssertionRewritingHook" and isinstance(marked, set) and isinstance(cache, dict):
            marked.discard("replay")
            cache.clear()


leave_replay_unrewritten()

import functools  # noqa: E402 (after the rewriting hook is told what to leave)
import gc  # noqa: E402
import os  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import httpcore2  # noqa: E402, F401 (imported up front: see below)
import pytest  # noqa: E402
import typer.main  # noqa: E402
import typer.testing  # noqa: E402
from hypothesis import settings  # noqa: E402

from replay.network_guard import NetworkGuard  # noqa: E402
from tests import bytecode_cache  # noqa: E402
from tests.ctrl_c import restore_ctrl_c  # noqa: E402
from tests.run_folders import folder_for_run, remove_folder_of_run  # noqa: E402

# Pytester's in-process runs put sys.modules back as it was when they end: a module first imported
# during one is dropped, and imported afresh by the next user. httpx2 imports httpcore2 only when it
# first needs a connection pool, so if that happens inside an in-process project, httpx2 keeps the
# old copy's exception classes while a new pool raises the new copy's: a dropped connection is then
# no httpx2.TransportError, and a later recording of one fails. Imported here, it is never dropped.

# The plugin's tests run small projects in a pytest subprocess; pytest takes plugins only from the
# top-level conftest.
pytest_plugins = ["pytester"]

# Generated tests draw the same examples on every run, with no example database, so a run's outcome
# never depends on its luck: what one run passes, every run passes. `HYPOTHESIS_PROFILE=long` (see
# tests/engine/test_properties.py) draws fresh examples instead, to look for new failures.
settings.register_profile("suite", derandomize=True, database=None)
if os.environ.get("HYPOTHESIS_PROFILE", "ci") != "long":
    settings.load_profile("suite")

# Scratch files (pytest's tmp_path, the sessions' and recordings' temporary folders, the compiled
# cache below) go to a folder in memory when there is one and TMPDIR does not name another: they
# are deleted within the run that makes them (pytest keeps a failed test's tmp_path only,
# `tmp_path_retention_policy` in pyproject.toml), and on a disk every folder removed and every fsync
# of a recording waits for the journal (the engine's properties spent half their time there).
# Set in the environment, so that xdist's workers and every subprocess use it too.
_RAM_FOLDER = "/dev/shm"
_RAM_FOLDER_ROOM = 2**30  # bytes free at least (a container's /dev/shm is often 64 MB)


def ram_scratch_folder(path: str = _RAM_FOLDER) -> str | None:
    """``path`` if it is a folder this process may write in, run programs from, and that has room."""
    if not os.path.isdir(path):
        return None
    stats = os.statvfs(path)
    if stats.f_flag & (os.ST_RDONLY | getattr(os, "ST_NOEXEC", 0)) or not os.access(path, os.W_OK | os.X_OK):
        return None
    return path if stats.f_bavail * stats.f_frsize >= _RAM_FOLDER_ROOM else None


if "TMPDIR" not in os.environ and (_scratch := ram_scratch_folder()) is not None:
    os.environ["TMPDIR"] = _scratch
    tempfile.tempdir = None  # read again from the environment (pytest may have asked already)

# typer's CliRunner turns the app into a click command at every invoke, reading every command's
# signature and evaluating its annotations (9 ms), and a run invokes the command line about 300
# times. An app's commands are registered when its module is imported, so the command built from it
# is the same every time: each app's is built once.
if hasattr(typer.testing, "_get_command"):  # typer's own helper; a typer without it builds per invoke
    typer.testing._get_command = functools.cache(typer.main.get_command)

# Compiled cassette copies go to a folder of this run's (subprocesses inherit it), not to ~/.cache.
_COMPILED_CACHE = "AGENT_REPLAY_CACHE_DIR"
_TEST_CACHE = folder_for_run(_COMPILED_CACHE, "agent-replay-test-cache-")


# Tests stop the processes they start with Ctrl-C, which a run started as a background job would
# leave them ignoring (tests/ctrl_c.py).
restore_ctrl_c()

# The processes the tests start share a bytecode cache of the run's (tests/bytecode_cache.py).
_TEST_PYCACHE = bytecode_cache.make_run_folder()


def pytest_configure(config: pytest.Config) -> None:
    bytecode_cache.share_with_subprocesses(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    remove_folder_of_run(_COMPILED_CACHE, _TEST_CACHE)
    remove_folder_of_run(bytecode_cache.FOLDER_VARIABLE, _TEST_PYCACHE)


# The slowest files, the slowest first (CPU seconds measured on 2 CPUs). Under
# `-n`, each file runs whole on one worker, so a module's fixtures
# are set up once, and handing out the longest files first lets the workers finish together rather
# than one running a long file alone at the end. A file not listed only costs balance: it runs
# after these, in the usual order.
SLOWEST_FIRST = (
    "tests/engine/test_properties.py",
    "tests/replay/session/test_crash_safety.py",
    "tests/replay/session/test_session_setup.py",
    "tests/replay/pytest_plugin/test_snapshot_safety.py",
    "tests/test_library.py",
    "tests/replay/pytest_plugin/test_pytest_plugin.py",
    "tests/replay/session/test_large_sessions.py",
    "tests/replay/pytest_plugin/test_claude_code_docs.py",
    "tests/replay/cassette/test_cassette.py",
    "tests/replay/cassette/test_respx_adapter.py",
    "tests/replay/claude_code/test_conformance.py",
    "tests/replay/claude_code/test_run.py",
    "tests/replay/cassette/test_request_keys.py",
    "tests/replay/storage/test_bundle_lock.py",
    "tests/replay/pytest_plugin/test_rewrite_mode.py",
    "tests/replay/pytest_plugin/test_sdk_clients.py",
    "tests/replay/pytest_plugin/test_claude_code_fixture.py",
    "tests/replay/claude_code/test_recorded.py",
    "tests/replay/cli/test_cli_run.py",
    "tests/replay/cli/test_cli_startup.py",
    "tests/replay/redact/test_redact.py",
    "tests/engine/tools/test_read.py",
    "tests/test_library_cache.py",
    "tests/replay/cli/test_cli_proxy.py",
    "tests/replay/pytest_plugin/test_proxy_fixture.py",
    "tests/replay/pytest_plugin/test_scenario_recording.py",
    "tests/replay/cli/test_cli_verify_jobs.py",
)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Under ``-n`` without a ``--dist`` of the user's: ``loadfile``, the files in collection order.
    Set here rather than in addopts, so that ``-p no:xdist`` still runs."""
    if getattr(config.option, "dist", "no") == "no" and getattr(config.option, "numprocesses", None):
        config.option.dist = "loadfile"
        config.option.loadscopereorder = False


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    """Collecting imports every test module, the SDK and the engine: hundreds of thousands of
    objects, none of them garbage, that the cyclic collector would walk again and again."""
    gc.disable()


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Collector on again, with what collecting built frozen: it lives until the end, so every
    full collection during the tests would walk it for nothing."""
    gc.enable()
    gc.freeze()
    # A young generation of 100,000 objects rather than 700: the tests build many short-lived
    # containers (parsed bodies, YAML nodes, hypothesis' draws), and a collection every 700 of them
    # cost about 4% of the in-process tests' time.
    gc.set_threshold(100_000, 50, 100)
    bytecode_cache.link_loaded_bytecode()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files of ``SLOWEST_FIRST`` first, in its order; each file's tests keep theirs."""
    rank = {path: number for number, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


@pytest.fixture(autouse=True, scope="session")
def _no_network() -> Iterator[None]:
    with NetworkGuard():
        yield
