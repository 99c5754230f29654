"""Importing detect-secrets without importing ``requests``.

detect-secrets' plugins ``import requests`` for one purpose: their ``verify`` method, which asks
the provider's server whether a secret is live. The redaction pass never verifies (it would go
to the network), yet importing ``requests`` (and urllib3, and its charset detectors) is a third
of what ``replay scrub --check`` spends starting up. `requests_deferred` lends detect-secrets a
stand-in module while it is imported: the stand-in imports the real ``requests`` the first time
anything is read from it, so a plugin that did verify would still work. The stand-in is taken
out of ``sys.modules`` again at once, so nothing else in the process ever sees it.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

__all__ = ["requests_deferred"]

_NAME: Final = "requests"


class _DeferredModule(types.ModuleType):
    """``requests`` until something is read from it, then the real module's attributes."""

    def __getattr__(self, attribute: str) -> Any:
        if sys.modules.get(_NAME) is self:
            del sys.modules[_NAME]
        return getattr(importlib.import_module(_NAME), attribute)


@contextmanager
def requests_deferred() -> Iterator[None]:
    """Within the block, ``import requests`` gives a stand-in that imports the real module when
    first used; after it, ``sys.modules`` is as it was (the real module, if it was imported)."""
    if _NAME in sys.modules:
        yield
        return
    stand_in = _DeferredModule(_NAME)
    sys.modules[_NAME] = stand_in
    try:
        yield
    finally:
        if sys.modules.get(_NAME) is stand_in:
            del sys.modules[_NAME]
