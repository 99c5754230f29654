"""A JSON encoder for data the parser built, without what `JSONEncoder.encode` redoes per call.

`JSONEncoder.encode` makes its C core anew on every call, with a table of the containers it is
inside to refuse a cycle: a third of encoding a small value. Data the JSON parser built (or a
YAML load that keeps to JSON's types: aliases are refused) holds only JSON's types and no cycle,
so nothing can fail halfway and leave that table stale, and the core can be made once, without
it. The text is the one `encode` writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

__all__ = ["parsed_encoder"]


def parsed_encoder(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """``encoder.encode`` for parsed data (see the module), or ``encoder.encode`` itself where
    it takes no C core (no accelerator, or an indent)."""
    if c_make_encoder is None or encoder.indent is not None:
        return encoder.encode
    core = c_make_encoder(
        None,  # no table of containers: parsed data has no cycle
        encoder.default,
        encode_basestring_ascii if encoder.ensure_ascii else encode_basestring,
        encoder.indent,
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        encoder.allow_nan,
    )

    def encode(value: Any) -> str:
        return "".join(core(value, 0))

    return encode
