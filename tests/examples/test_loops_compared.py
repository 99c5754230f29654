"""docs/loops-compared.md stays true: its table is what scripts/compare_loops.py prints today."""

from __future__ import annotations

import pytest

from tests.examples.conftest import ROOT, load_module

compare_loops = load_module("scripts/compare_loops.py")


@pytest.fixture(scope="module")
def table() -> str:
    """Every scenario run against both loops, once for the module (about 2 s)."""
    return compare_loops.render_table()


def test_the_docs_table_is_what_the_generator_prints(table: str) -> None:
    documented = compare_loops.generated_block((ROOT / "docs" / "loops-compared.md").read_text(encoding="utf-8"))

    assert documented == table, (
        "docs/loops-compared.md is out of date: run `python scripts/compare_loops.py --write` and commit the page."
    )


def test_every_scenario_has_a_row(table: str) -> None:
    rows = table.splitlines()[2:]

    assert [row.split(" | ")[0].removeprefix("| ") for row in rows] == [s.name for s in compare_loops.SCENARIOS]
