"""A quick yes for tool inputs that plainly satisfy a plain schema.

Checking a tool call's input with ``jsonschema`` costs more than the rest of handing the call
to its tool. Most schemas are flat: an object of typed properties, some required, no others
allowed. ``plainly_valid`` reads such a schema (each time: a tool may change its schema, and
``jsonschema`` would see that) and answers True only when the input satisfies it for certain.
Anything else — another keyword, a value it does not check, an input that fails — gets False,
and ``jsonschema`` decides and words the error, so an answer of True is never a different
verdict from the one ``jsonschema`` would give.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["plainly_valid"]

# Keywords that only annotate: they never make an input invalid.
_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment"})
_OBJECT_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties"}) | _ANNOTATIONS
_VALUE_KEYWORDS = (
    frozenset({"type", "minLength", "maxLength", "enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
    | _ANNOTATIONS
)
# Exact types only: a bool is no integer to JSON Schema, and an integral float is left to jsonschema.
_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda value: type(value) is str,
    "boolean": lambda value: type(value) is bool,
    "integer": lambda value: type(value) is int,
    "number": lambda value: type(value) is int or type(value) is float,
}
_BOUNDS: dict[str, Callable[[Any, Any], bool]] = {
    "minimum": lambda value, bound: value >= bound,
    "maximum": lambda value, bound: value <= bound,
    "exclusiveMinimum": lambda value, bound: value > bound,
    "exclusiveMaximum": lambda value, bound: value < bound,
}


def plainly_valid(schema: Any, instance: Any) -> bool:
    """True when ``instance`` certainly satisfies ``schema`` (a flat object schema); False
    when it does not, or when the schema is not one this reads."""
    if not isinstance(schema, Mapping) or type(instance) is not dict:
        return False
    if schema.get("type") != "object" or not _OBJECT_KEYWORDS.issuperset(schema):
        return False
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, Mapping) or type(required) is not list or type(extra) is not bool:
        return False
    for name in required:
        if type(name) is not str or name not in instance:
            return False
    for name, value in instance.items():
        definition = properties.get(name)
        if definition is None:
            if not extra:
                return False
            continue
        if not _value_plainly_valid(definition, value):
            return False
    return True


def _value_plainly_valid(definition: Any, value: Any) -> bool:
    if not isinstance(definition, Mapping) or not _VALUE_KEYWORDS.issuperset(definition):
        return False
    kind = definition.get("type")
    check = _TYPES.get(kind) if type(kind) is str else None
    if check is None or not check(value):
        return False
    if kind == "string":
        return _string_plainly_valid(definition, value)
    if any(name in definition for name in ("minLength", "maxLength", "enum")):
        return False  # on a number or a bool: left to jsonschema
    for name, within in _BOUNDS.items():
        bound = definition.get(name)
        if bound is None:
            continue
        if type(bound) is not int and type(bound) is not float:
            return False
        if not within(value, bound):
            return False
    return True


def _string_plainly_valid(definition: Mapping[str, Any], value: str) -> bool:
    if any(name in definition for name in _BOUNDS):
        return False  # a numeric bound on a string: left to jsonschema
    shortest, longest = definition.get("minLength"), definition.get("maxLength")
    if shortest is not None and (type(shortest) is not int or len(value) < shortest):
        return False
    if longest is not None and (type(longest) is not int or len(value) > longest):
        return False
    enum = definition.get("enum")
    if enum is not None:
        return type(enum) is list and any(type(option) is str and option == value for option in enum)
    return True
