"""Lazy export tables: a package names its public objects and the modules that define them, and
imports a module only when one of its names is first used. So ``import replay`` (or
``import replay.cassette``) loads nothing else, and an early plugin such as
``replay.respx_alias`` can run before anything imports ``httpx``."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, table: Mapping[str, str]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__``, ``__getattr__`` and ``__dir__`` for ``package``. ``table`` maps each public
    name to the module that defines it, relative to ``package`` (``"model"``), or to
    ``"module:attribute"`` when the public name differs from the defining one."""

    def __getattr__(name: str) -> Any:
        try:
            target = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        module, _, attribute = target.partition(":")
        value = getattr(importlib.import_module(f"{package}.{module}"), attribute or name)
        vars(sys.modules[package])[name] = value  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *table})

    return sorted(table), __getattr__, __dir__
