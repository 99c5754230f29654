"""Temp folders that last one test run: made by the process that starts it, named in the
environment so that xdist's workers and every subprocess use the same one, removed at its end."""

from __future__ import annotations

import os
import shutil
import tempfile


def folder_for_run(variable: str, prefix: str) -> str | None:
    """A new folder, named in the environment as ``variable``; None where ``variable`` is set
    already (by the user, or by the process that started this one)."""
    if variable in os.environ:
        return None
    folder = tempfile.mkdtemp(prefix=prefix)
    os.environ[variable] = folder
    return folder


def remove_folder_of_run(variable: str, folder: str | None) -> None:
    """Removes ``folder`` if this process made it (`folder_for_run`) and it is still the run's."""
    if folder is not None and os.environ.get(variable) == folder:
        shutil.rmtree(folder, ignore_errors=True)
