"""`parsed_encoder` writes, for parsed JSON data, exactly the text ``JSONEncoder.encode`` writes,
for every encoder the project uses (fingerprints' canonical text, the prompt-cache prefixes'
canonical and compact texts, a response's compact body)."""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.storage.parsed_json import parsed_encoder

EXAMPLES = 2_000 if os.environ.get("HYPOTHESIS_PROFILE") == "long" else 200

ENCODERS = {
    "canonical": json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False),
    "compact": json.JSONEncoder(separators=(",", ":"), ensure_ascii=False),
    "ascii": json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True),
}
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(st.characters(codec="utf-8"), max_size=20)
)
PARSED = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=EXAMPLES, deadline=None)
@given(value=PARSED)
def test_the_text_is_the_one_encode_writes(value: Any) -> None:
    for encoder in ENCODERS.values():
        assert parsed_encoder(encoder)(value) == encoder.encode(value)


def test_what_json_loads_builds_is_written_back_as_encode_writes_it() -> None:
    text = '{"b":[1,1.0,-0.0,1e400,true,null,"\\u00e9\\ud83d\\ude00\\n"],"a":{"z":{},"y":[]},"c":"\\"\\\\"}'
    value = json.loads(text)
    for encoder in ENCODERS.values():
        assert parsed_encoder(encoder)(value) == encoder.encode(value)
