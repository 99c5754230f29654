"""One bytecode cache for the Python processes a test run starts, where caching is turned off.

With ``PYTHONDONTWRITEBYTECODE`` set (as many CI images set it), every process the tests start (a
test project's pytest session and its xdist workers, the respx suite, the command line) compiled
this project from source and ran pytest's assertion rewriting anew: about 2 s a pytest session.
They share a bytecode cache in a folder of the run's instead (``PYTHONPYCACHEPREFIX``): nothing is
written beside the sources, and the folder goes with the run.

A prefix also hides the bytecode compiled beside installed modules (the SDK alone is about 3 s to
compile), so each worker links what it has loaded into the folder once it has collected: a process
started later compiles only what no worker has loaded. The links are replaced, never written
through: Python and pytest write a cache file by renaming a new file onto its path.

The run's own xdist workers keep their usual cache: they start together, before any of this exists.
"""

from __future__ import annotations

import os
import sys

import pytest

from tests.run_folders import folder_for_run

FOLDER_VARIABLE = "AGENT_REPLAY_TEST_PYCACHE"


def make_run_folder() -> str | None:
    """The folder this process made for the run (in the process that starts it), or None where
    caching is on, a prefix is already set, or a parent process made one."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or "PYTHONPYCACHEPREFIX" in os.environ:
        return None
    return folder_for_run(FOLDER_VARIABLE, "agent-replay-test-pycache-")


def share_with_subprocesses(config: pytest.Config) -> None:
    """Processes started from here on use the run's cache; not the xdist workers this one starts."""
    folder = os.environ.get(FOLDER_VARIABLE)
    starts_workers = bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")
    if folder is not None and not starts_workers:
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = folder


def link_loaded_bytecode(folder: str | None = None) -> int:
    """Links, in ``folder`` (by default the run's, once processes started from here use it), the
    installed bytecode of every module this process has loaded, where a child process given that
    prefix looks for it; the number of links made."""
    if folder is None:
        folder = os.environ.get("PYTHONPYCACHEPREFIX")
        if folder is None or folder != os.environ.get(FOLDER_VARIABLE):
            return 0
    if sys.pycache_prefix is not None:
        return 0  # this process's own bytecode paths are under a prefix already
    tag = sys.implementation.cache_tag
    made = 0
    for module in list(sys.modules.values()):
        spec = getattr(module, "__spec__", None)
        source, cached = getattr(spec, "origin", None), getattr(spec, "cached", None)
        if not (isinstance(source, str) and isinstance(cached, str) and source.endswith(".py")):
            continue
        if not os.path.isfile(cached):
            continue  # compiled by nobody yet (this project's own modules, under this setting)
        head, name = os.path.split(os.path.abspath(source))
        # importlib's `cache_from_source` under a prefix: the source's folder, mirrored below it.
        link = os.path.join(folder, head.lstrip(os.sep), f"{name[:-3]}.{tag}.pyc")
        try:
            os.makedirs(os.path.dirname(link), exist_ok=True)
            os.symlink(cached, link)
        except FileExistsError:
            continue  # the other worker linked it, or a child wrote it
        except OSError:
            return made  # a folder that takes no links: children compile, as before
        made += 1
    return made
