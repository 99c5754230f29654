"""The public surface of engine.compact: every name it lists is there."""

from __future__ import annotations

import engine.compact


def test_every_name_in_all_is_exported() -> None:
    missing = [name for name in engine.compact.__all__ if not hasattr(engine.compact, name)]
    assert missing == []


def test_all_lists_each_name_once() -> None:
    assert len(engine.compact.__all__) == len(set(engine.compact.__all__))
