"""An early pytest plugin: ``pytest -p replay.respx_alias`` makes ``import httpx`` resolve to
``httpx2`` (and ``httpcore`` to ``httpcore2``) for the whole test run, so respx, which patches
``httpx``, sees the anthropic SDK's requests (docs/respx.md).

``httpx2.alias_httpx()`` only works before anything imports ``httpx``. Plugins named with ``-p``
(on the command line or in ``addopts``) are imported before pytest loads the plugins installed as
entry points — respx's own plugin imports ``httpx`` — and before any conftest, so this is the
earliest hook a test run has. A conftest's ``pytest_plugins`` is too late: by then the entry-point
plugins are loaded and ``httpx`` is the real one. Aliasing is a whole-process choice a test run
makes for itself; no library module (``replay.cassette.respx_adapter`` included) ever makes it.
"""

from __future__ import annotations

import sys

import httpx2
import pytest

__all__: list[str] = []

try:
    httpx2.alias_httpx()
except RuntimeError:
    _httpx = sys.modules.get("httpx")
    # vcrpy imports httpx as soon as it is imported itself (when httpx is installed): the usual culprit.
    _culprit = " (vcrpy, already loaded, imports it as soon as it is imported)" if "vcr" in sys.modules else ""
    raise pytest.UsageError(
        "replay.respx_alias loaded too late: httpx was already imported from "
        f"{getattr(_httpx, '__file__', None) or 'an unknown location'}{_culprit}, so it can no longer resolve to "
        "httpx2 and respx would not see the anthropic SDK's requests. Load it with `-p replay.respx_alias` on the "
        "pytest command line or in addopts (not from a conftest's pytest_plugins), ahead of any other -p plugin, "
        "and make sure nothing imported before it imports httpx or vcrpy."
    ) from None
