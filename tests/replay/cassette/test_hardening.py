"""Refusals added on top of the cassette and scenario loaders: a compression bomb, an alias bomb
in a scenario, and a recording that cannot be saved names its cassette."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from replay.cassette import content_encoding
from replay.cassette.content_encoding import ContentEncodingError, decode_content_encoding
from replay.fake.blocks import ScenarioError
from replay.fake.scenario import load_scenario


def test_a_body_that_decompresses_past_the_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(content_encoding, "MAX_DECODED_BODY_BYTES", 1_000)
    bomb = gzip.compress(b"\0" * 100_000)
    with pytest.raises(ContentEncodingError, match=r"decompresses to more than .* \(too large\)"):
        decode_content_encoding(bomb, "gzip")


def test_a_body_under_the_cap_decompresses() -> None:
    assert decode_content_encoding(gzip.compress(b"hello"), "gzip") == b"hello"


def test_a_scenario_with_aliases_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text("version: 1\nturns:\n  - &t {content: [{text: hi}]}\n  - *t\n")
    with pytest.raises(ScenarioError, match=r"scenario.yaml: invalid YAML \(.*alias"):
        load_scenario(path)
