"""Loads the example and the generator from their files: neither folder is a package."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_module(relative_path: str) -> ModuleType:
    """Import a script of the repository by its path (once; dataclasses need it in sys.modules)."""
    name = relative_path.removesuffix(".py").replace("/", "_")
    if name in sys.modules:
        return sys.modules[name]
    path = ROOT / relative_path
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
