"""What the lean YAML paths are checked against: the full loader, and an equality that tells
1, 1.0 and True apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from replay.storage.strict_yaml import _DataLoader

LIBRARY = Path(__file__).resolve().parents[3] / "cassettes"
RESOLVERS = _DataLoader.yaml_implicit_resolvers


def full_loader(text: str) -> Any:
    loader = _DataLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def same(a: object, b: object) -> bool:
    # json.dumps tells 1, 1.0 and True apart, and keeps key order.
    return a == b and json.dumps(a) == json.dumps(b)
