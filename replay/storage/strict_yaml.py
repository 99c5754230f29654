"""Safe YAML for cassettes: plain data in, plain data out.

Loading builds only JSON-like data (plus ``!!binary`` bytes, which vcrpy writes for bodies that
are not UTF-8). It refuses aliases (an alias bomb costs nothing to write and everything to
expand), any other tag, and a key that appears twice in a mapping with different values. Dates
and YAML 1.1 oddities (``<<`` merges, ``=``) stay strings, as they are in JSON.

Dumping writes block style, multi-line strings as literal blocks (readable in a diff), never an
anchor, and keeps the key order it is given: callers sort.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any, Final

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from replay.storage._yaml_events import ItemHook, Unusual, construct_plain
from replay.storage._yaml_lines import construct_lines

__all__ = [
    "AliasRefusedError",
    "DuplicateKeyError",
    "FlowMap",
    "FlowSeq",
    "dump_yaml",
    "load_yaml",
    "load_yaml_data",
    "yaml_problem",
]

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BaseDumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

_DATA_TAGS: Final = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "binary", "str", "seq", "map")
)
_NON_DATA_RESOLVERS: Final = frozenset(f"tag:yaml.org,2002:{name}" for name in ("timestamp", "merge", "value", "yaml"))


class AliasRefusedError(yaml.MarkedYAMLError):
    """The document uses an alias (``*name``)."""


class DuplicateKeyError(yaml.MarkedYAMLError):
    """A mapping has the same key twice, with different values."""

    def __init__(self, key: Any, mark: Any) -> None:
        super().__init__(problem=f"duplicate key {key!r}", problem_mark=mark)
        self.key = key


class _DataLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    yaml_constructors = {
        tag: constructor
        for tag, constructor in SafeConstructor.yaml_constructors.items()
        if tag is None or tag in _DATA_TAGS
    }
    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in _NON_DATA_RESOLVERS]
        for first, resolvers in Resolver.yaml_implicit_resolvers.items()
    }

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        # Every node is constructed once, from its one parent; a second visit is an alias.
        if node in self.constructed_objects or node in self.recursive_objects:
            raise AliasRefusedError(problem="an alias to the node", problem_mark=node.start_mark)
        return super().construct_object(node, deep=deep)

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        mapping: dict[Any, Any] = {}
        value_nodes: dict[Any, Node] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise yaml.constructor.ConstructorError(
                    problem=f"a mapping key must be a plain value, not {type(key).__name__}",
                    problem_mark=key_node.start_mark,
                )
            if key in value_nodes:
                if _same_node(value_nodes[key], value_node):
                    continue
                raise DuplicateKeyError(key, key_node.start_mark)
            value_nodes[key] = value_node
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


class FlowMap(dict):  # type: ignore[type-arg]
    """A mapping written on one line: ``{a: 1, b: 2}``."""


class FlowSeq(list):  # type: ignore[type-arg]
    """A list written on one line: ``[a, b]``."""


class _DataDumper(_BaseDumper):  # type: ignore[misc, valid-type]
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, data: str) -> ScalarNode:
    # The emitter falls back to a quoted style by itself when a literal block cannot hold the
    # text exactly (trailing spaces, special characters).
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_DataDumper.add_representer(str, _represent_str)
_DataDumper.add_representer(
    FlowMap, lambda dumper, data: dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style=True)
)
_DataDumper.add_representer(
    FlowSeq, lambda dumper, data: dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)
)


def load_yaml(text: str) -> Any:
    """The one document in ``text`` as plain data. Raises `yaml.YAMLError` (with a mark where
    the parser has one), `AliasRefusedError` or `DuplicateKeyError`."""
    return load_yaml_data(text)[0]


def load_yaml_data(
    text: str | bytes | IO[bytes] | Callable[[], IO[bytes]],
    items: ItemHook | None = None,
    *,
    whole_text: Callable[[], str] | None = None,
) -> tuple[Any, bool]:
    """`load_yaml`, and whether the data is known to hold JSON values only (string keys, no
    bytes): true when a lean path built it, and then ``items`` (see `construct_plain`) was
    applied. ``text`` may be UTF-8 bytes, or a binary file read as it is parsed (no copy of a
    large file in memory), or a function that opens one from its start each time it is called
    (a file is read again whenever a path leaves it); the full loader reads ``whole_text()``."""
    # Two lean paths: the YAML our own dumper writes, read line by line; then the parser's
    # events. Whatever they leave (tags, anchors, other keys, repeated keys, errors) the full
    # loader reads, accepts or refuses as ever.
    reopen = _reopener(text)
    for lean in (construct_lines, construct_plain):
        try:
            return lean(reopen(), _DataLoader.yaml_implicit_resolvers, items), True
        except Unusual:
            pass
    if isinstance(text, bytes):
        text = text.decode("utf-8")  # the full loader's marks and messages, as for text
    elif not isinstance(text, str):
        if whole_text is None:
            raise TypeError("a file to load needs whole_text for the full loader")
        text = whole_text()
    loader = _DataLoader(text)
    try:
        return loader.get_single_data(), False
    finally:
        loader.dispose()


def _reopener(text: str | bytes | IO[bytes] | Callable[[], IO[bytes]]) -> Callable[[], str | bytes | IO[bytes]]:
    if callable(text):
        return text
    if isinstance(text, (str, bytes)):
        return lambda: text
    start = text.tell()

    def from_start() -> IO[bytes]:
        text.seek(start)
        return text

    return from_start


def dump_yaml(data: Any) -> str:
    """Block-style YAML of ``data``, keys in the order given, no anchors, long lines unfolded."""
    return yaml.dump(
        data,
        Dumper=_DataDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1 << 20,
        indent=2,
    )


def yaml_problem(err: yaml.YAMLError) -> str:
    """The parser's problem and its place: ``expected ... at line 3, column 5``."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    if mark is None:
        return problem
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"


def _same_node(a: Node, b: Node) -> bool:
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if type(x) is not type(y) or x.tag != y.tag:
            return False
        if isinstance(x, ScalarNode):
            if x.value != y.value:
                return False
        elif isinstance(x, SequenceNode):
            if len(x.value) != len(y.value):
                return False
            pending.extend(zip(x.value, y.value, strict=True))
        elif isinstance(x, MappingNode):
            if len(x.value) != len(y.value):
                return False
            for (kx, vx), (ky, vy) in zip(x.value, y.value, strict=True):
                pending.extend(((kx, ky), (vx, vy)))
    return True
