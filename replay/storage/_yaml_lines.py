"""The fast path of `load_yaml`: the YAML our own dumper writes, read line by line.

libyaml's event stream alone costs more than vcrpy's whole load of the same traffic (a
structured body is many events; vcrpy stores each body as one string). But the YAML
`dump_yaml` writes is regular: block mappings and indentless block sequences indented by two,
one-line flow collections, plain, quoted and literal scalars, each on its own line(s). This
recognizes exactly that shape, one compiled regex per line, and builds the data as it goes.

It is conservative: whatever it is not certain to read as libyaml does (tabs, carriage returns,
anchors, tags, ``? `` keys, multi-line plain or quoted scalars, folded scalars, comments after a
value, a plain scalar holding ``: `` or `` #``, odd indentation, repeated keys, a key that is
not a string, documents markers...) raises `Unusual`, and `load_yaml` reads the text again
the way it did before (the event path, then the full loader), which accepts or refuses it
exactly as ever. Scalars resolve with the full loader's own implicit resolvers.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from itertools import chain
from typing import IO, Any, Final

from replay.storage._yaml_events import MAX_DEPTH, SHARED_LENGTH, ItemHook, Scalars, Unusual
from replay.storage._yaml_flow_json import FAST_SCAN, RESOLVED_FIRST, FlowJson
from replay.storage._yaml_scalars import SINGLE_QUOTED, is_plain, is_single_quoted

__all__ = ["construct_lines"]

_SLICE: Final = 1 << 16  # bytes read at a time from a file
_MAX_KEY: Final = 128  # longer keys are written as "? key" by the dumper; libyaml limits simple keys

# Anything libyaml reads otherwise than a plain character: tabs, carriage returns and the other
# YAML 1.1 line breaks, a byte order mark, non-printable characters.
_ODD: Final = re.compile("[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")

_SQ = SINGLE_QUOTED
_DQ = r'"(?:[^"\\]|\\.)*"'
# A plain key: no indicator first ("-" only before a non-space), none of :#'" or a flow
# indicator anywhere, no trailing space.
_PLAIN_KEY = r"(?:[^\s\-?:,\[\]{}#&*!|>'\"%@`]|-(?=\S))[^:#'\"{}\[\],]*(?<! )"
# indentation, "- ", a key followed by ": " or the line's end, the rest of the line.
_LINE: Final = re.compile(rf"( *)(- )?(?:({_PLAIN_KEY}|{_SQ}|{_DQ}):(?: |$))?(.*)")
_LITERAL_HEADER: Final = re.compile(r"\|([1-9])?([-+])?")
# Tokens of a one-line flow collection; a plain scalar in one holds none of :#,[]{} at all.
_FLOW_TOKEN: Final = re.compile(
    rf"[{{}}\[\]]|, |: |{_SQ}|{_DQ}|(?:[^\s,\[\]{{}}:#'\"?&*!|>%@`\-]|-(?=[^\s,\[\]{{}}:#]))[^,\[\]{{}}:#]*(?<! )"
)
_DQ_ESCAPE: Final = re.compile(r"\\(?:x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))")
# The escapes of a double-quoted scalar that stand for one character (\x, \u and \U aside).
_ESCAPES: Final = dict(zip('0abtnvfre "\\N_LP', '\0\a\b\t\n\v\f\r\x1b "\\\x85\xa0\u2028\u2029', strict=True))


def construct_lines(
    text: str | bytes | IO[bytes], resolvers: dict[Any, list[tuple[str, Any]]], items: ItemHook | None = None
) -> Any:
    """The one document in ``text`` (str, UTF-8 bytes, or a binary file read as it goes), as
    `construct_plain` builds it (JSON values only, ``items`` applied), when it is written the
    way `dump_yaml` writes; else raises `Unusual` (a file is then read only in part)."""
    # JSON reads flow collections only when no resolver starts with a character it does not know.
    as_json = all(first in RESOLVED_FIRST for first, found in resolvers.items() if found)
    return _Reader(Scalars(resolvers), items, as_json).read(chain.from_iterable(_line_lists(text)))


def _line_lists(text: str | bytes | IO[bytes]) -> Iterator[list[str]]:
    """The text's lines, a list at a time (a file is read a slice at a time)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise Unusual from None
    if isinstance(text, str):
        if _ODD.search(text) is not None or (text and not text.endswith("\n")):
            raise Unusual
        lines = text.split("\n")
        lines.pop()
        yield lines
        return
    decoder = codecs.getincrementaldecoder("utf-8")()
    # The unfinished last line, a slice at a time, joined once a line break comes (joined to
    # every slice, a 10 MB line would be copied over and over).
    pending: list[str] = []
    while True:
        block = text.read(_SLICE)
        try:
            part = decoder.decode(block, final=not block)
        except UnicodeDecodeError:
            raise Unusual from None
        if _ODD.search(part) is not None:
            raise Unusual
        pending.append(part)
        if "\n" in part:
            lines = "".join(pending).split("\n")
            pending = [lines.pop()]
            yield lines
        if not block:
            break
    if any(pending):  # no line break at the end
        raise Unusual


class _Frame:
    """An open block collection: the column of its keys or dashes, and a key waiting for a
    nested collection (``key:`` alone on its line)."""

    __slots__ = ("column", "data", "hooked", "is_map", "pending")

    def __init__(self, column: int, data: Any, hooked: bool = False) -> None:
        self.column = column
        self.data = data
        self.is_map = type(data) is dict
        self.pending: str | None = None
        self.hooked = hooked  # an item of the list the hook applies to


# What a line holds, as `_Reader._parse` reads it (cached by the line's text).
_SKIP: Final = 0  # blank, or a comment
_SCALAR: Final = 1  # a scalar: the value
_OPEN: Final = 2  # "key:" alone: a collection follows on the next lines
_LITERAL: Final = 3  # a literal block's header
_JSON: Final = 4  # a flow collection, as JSON text
_FLOW: Final = 5  # a flow collection JSON does not read: its text
_CACHED_LINES: Final = 256
_CACHED_LENGTH: Final = 200


class _Reader:
    def __init__(self, scalars: Scalars, items: ItemHook | None, as_json: bool = True) -> None:
        self._scalars = scalars
        self._as_json = as_json
        self._flow_json = FlowJson()
        self._items = items
        self._hooked_list: list[Any] | None = None
        self._keys: dict[str, str] = {}  # a line's key as written -> the key (a cassette repeats a few)
        self._first: Any = None  # the value of the flow collection `_parse` read last

    def read(self, lines: Iterator[str]) -> Any:
        stack: list[_Frame] = []
        top: Any = None  # stack[-1]
        root: Any = None
        literal: _Literal | None = None
        # Each line's reading by its text: a cassette repeats most lines ("    method: POST",
        # "    - {event: ping, data: {type: ping}}") many times.
        known: dict[str, tuple[int, bool, str | None, int, Any]] = {}
        earlier: dict[str, tuple[int, bool, str | None, int, Any]] = {}  # what `known` was before it filled
        parse = self._parse
        close = self._close
        scan = FAST_SCAN
        scalar, opened, literal_kind, json_kind = _SCALAR, _OPEN, _LITERAL, _JSON  # locals: read per line
        hook_key = self._items[0] if self._items else None
        for line in lines:
            if literal is not None:
                if literal.take(line):
                    continue
                literal.finish()
                literal = None
            parsed = known.get(line)
            fresh = False  # whether a flow collection's value is `_first`, just read
            if parsed is None:
                parsed = earlier.get(line)
                if parsed is None:
                    parsed = parse(line)
                    fresh = True
                if len(line) <= _CACHED_LENGTH:
                    if len(known) >= _CACHED_LINES:
                        # The lines that recur are read again soon; the rest are each once.
                        earlier, known = known, {}
                    known[line] = parsed
            column, dash, key, kind, payload = parsed  # type: ignore[misc]
            if not kind:
                continue
            if root is None:
                if column:
                    raise Unusual
                root = {} if key is not None and not dash else []
                top = _Frame(0, root)
                stack.append(top)
            if top.pending is not None:
                # "key:" alone: the next line opens the collection under it.
                if dash and column == top.column:
                    value: Any = []
                    if self._items is not None and len(stack) == 1 and top.pending == self._items[0]:
                        self._hooked_list = value
                elif not dash and column > top.column:
                    value = {}
                else:
                    raise Unusual
                top.data[top.pending] = value
                top.pending = None
                top = _Frame(column, value)
                stack.append(top)
                if len(stack) > MAX_DEPTH:
                    raise Unusual
            if dash:
                while top.column > column:  # never the root's: it is at column 0
                    top = close(stack)
                if top.is_map or top.column != column:
                    raise Unusual
                items = top.data
                if key is None:
                    if kind == scalar:
                        items.append(payload)
                        continue
                    if kind == literal_kind:
                        items.append(None)
                        literal = _Literal(payload, column, items, len(items) - 1)
                        continue
                    if kind == json_kind:
                        value = self._first if fresh else scan(payload, 0)[0]
                    else:
                        value = self._flow(payload)
                    if items is self._hooked_list and type(value) is dict:
                        value = self._items[1](value)  # type: ignore[index]
                    items.append(value)
                    continue
                # "- key: ...": a mapping opens two columns in.
                data: dict[str, Any] = {}
                items.append(data)
                column += 2
                top = _Frame(column, data, hooked=items is self._hooked_list)
                stack.append(top)
                if len(stack) > MAX_DEPTH:
                    raise Unusual
            else:
                if top.column != column or not top.is_map:  # else a key beside the last one
                    while top.column > column or (top.column == column and not top.is_map):
                        top = close(stack)
                        if top is None:
                            raise Unusual  # a key after a root list
                    if not top.is_map or top.column != column:
                        raise Unusual
                data = top.data
            if key in data:
                raise Unusual  # the full loader decides on repeated keys
            if kind == scalar:
                data[key] = payload  # type: ignore[index]
            elif kind == opened:
                top.pending = key
                data[key] = None  # type: ignore[index]  # holds the key's place in the mapping's order
            elif kind == literal_kind:
                data[key] = None  # type: ignore[index]
                literal = _Literal(payload, column, data, key)
            elif key == hook_key and len(stack) == 1:
                raise Unusual  # the hooked list written as flow: the event path hands the hook its items
            elif kind == json_kind:
                data[key] = self._first if fresh else scan(payload, 0)[0]  # type: ignore[index]
            else:
                data[key] = self._flow(payload)  # type: ignore[index]
        if literal is not None:
            literal.finish()
        if root is None or top.pending is not None:
            raise Unusual
        while stack:
            close(stack)
        return root

    def _parse(self, line: str) -> tuple[int, bool, str | None, int, Any]:
        """A line's indentation, dash, key, what follows (`_SCALAR`...) and its payload."""
        if line[:3] in ("---", "...") and line[3:4] in ("", " "):
            raise Unusual  # a document marker, whatever follows it on the line
        indent, dash, raw_key, rest = _LINE.match(line).groups()  # type: ignore[union-attr]
        if raw_key is None and not dash:
            stripped = rest.lstrip(" ")
            if not stripped or stripped[0] == "#":
                return 0, False, None, _SKIP, None
            raise Unusual  # a scalar on its own line: a continuation, or a root scalar
        key = None if raw_key is None else self._keys.get(raw_key) or self._line_key(raw_key)
        if not rest:
            if key is None:
                raise Unusual  # "- " alone
            return len(indent), bool(dash), key, _OPEN, None
        first = rest[0]
        if first == "|":
            return len(indent), bool(dash), key, _LITERAL, rest
        if first == "{" or first == "[":
            read = self._flow_json.read(rest) if self._as_json else None
            if read is not None:
                self._first = read[1]
                return len(indent), bool(dash), key, _JSON, read[0]
            self._flow(rest)  # raises Unusual unless it reads
            return len(indent), bool(dash), key, _FLOW, rest
        return len(indent), bool(dash), key, _SCALAR, self._value(rest)

    def _close(self, stack: list[_Frame]) -> _Frame | None:
        """Closes the innermost open collection; the one open around it, if any."""
        frame = stack.pop()
        if frame.pending is not None:
            raise Unusual  # "key:" with nothing under it
        if frame.hooked:
            parent = stack[-1].data
            parent[-1] = self._items[1](parent[-1])  # type: ignore[index]
        return stack[-1] if stack else None

    def _line_key(self, raw: str) -> str:
        key = self._key(raw)
        if len(raw) <= SHARED_LENGTH:
            self._keys[raw] = key
        return key

    def _key(self, raw: str) -> str:
        if len(raw) > _MAX_KEY:
            raise Unusual
        key = self._token(raw)
        if type(key) is not str:
            raise Unusual
        return key

    def _token(self, token: str) -> Any:
        """What a well-formed scalar token stands for: a quoted one's text (a short one shared),
        a plain one resolved."""
        first = token[0]
        if first == "'":
            value = token[1:-1].replace("''", "'")
        elif first == '"':
            value = _double_quoted(token)
        else:
            return self._scalars.resolved(token)
        return self._scalars.shared(value)

    def _value(self, rest: str) -> Any:
        """The scalar ``rest`` after a key or a dash."""
        first = rest[0]
        if first == "'":
            well_formed = is_single_quoted(rest)
        elif first == '"':
            well_formed = re.fullmatch(_DQ, rest) is not None
        else:
            well_formed = is_plain(rest)
        if not well_formed:
            raise Unusual
        return self._token(rest)

    def _flow(self, text: str) -> Any:
        tokens = _FLOW_TOKEN.findall(text)
        if "".join(tokens) != text:
            raise Unusual  # something between the tokens: not a flow collection written on one line
        tokens.append("")  # the end
        value, end = self._flow_node(tokens, 0, 0)
        if end != len(tokens) - 1:
            raise Unusual
        return value

    def _flow_node(self, tokens: list[str], at: int, depth: int) -> tuple[Any, int]:
        token = tokens[at]
        if token == "{" or token == "[":
            if depth >= MAX_DEPTH:
                raise Unusual
            is_map = token == "{"
            close = "}" if is_map else "]"
            data: Any = {} if is_map else []
            at += 1
            if tokens[at] == close:
                return data, at + 1
            while True:
                if is_map:
                    raw = tokens[at]
                    if not raw or raw in "{}[]" or raw == ", " or raw == ": " or tokens[at + 1] != ": ":
                        raise Unusual
                    key = self._key(raw)
                    if key in data:
                        raise Unusual
                    data[key], at = self._flow_node(tokens, at + 2, depth + 1)
                else:
                    item, at = self._flow_node(tokens, at, depth + 1)
                    data.append(item)
                token = tokens[at]
                if token == close:
                    return data, at + 1
                if token != ", ":
                    raise Unusual
                at += 1
        if not token or token in "}]" or token == ", " or token == ": ":
            raise Unusual
        return self._token(token), at + 1


def _double_quoted(raw: str) -> str:
    inner = raw[1:-1]
    if "\\" not in inner:
        return inner
    return _DQ_ESCAPE.sub(_unescape, inner)


def _unescape(found: re.Match[str]) -> str:
    hex_digits = found.group(1) or found.group(2) or found.group(3)
    if hex_digits is not None:
        code = int(hex_digits, 16)
        if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
            raise Unusual  # libyaml refuses these
        return chr(code)
    replacement = _ESCAPES.get(found.group(4))
    if replacement is None:
        raise Unusual
    return replacement


class _Literal:
    """A literal block scalar (``|``, ``|-``, ``|+``, an indentation indicator) whose key or
    dash is at ``column``: its lines are the following ones indented past that column. It
    takes lines until one is less indented, then writes its text into ``data[slot]``."""

    __slots__ = ("blanks", "chomping", "column", "content", "data", "indent", "slot")

    def __init__(self, header: str, column: int, data: Any, slot: Any) -> None:
        found = _LITERAL_HEADER.fullmatch(header)
        if found is None:
            raise Unusual
        indicator, self.chomping = found.groups()
        self.column = column
        self.indent = column + int(indicator) if indicator else 0
        self.content: list[str] = []
        self.blanks = 0
        self.data = data
        self.slot = slot

    def take(self, line: str) -> bool:
        if not line:
            self.blanks += 1
            return True
        spaces = len(line) - len(line.lstrip(" "))
        if spaces == len(line):
            raise Unusual  # a line of spaces only: how it counts depends on its length
        if not self.indent:
            if spaces <= self.column:
                raise Unusual  # an empty literal: the dumper writes ''
            self.indent = spaces
        if spaces < self.indent:
            return False
        if self.blanks:
            self.content.extend([""] * self.blanks)
            self.blanks = 0
        self.content.append(line[self.indent :])
        return True

    def finish(self) -> None:
        if not self.content:
            raise Unusual
        text = "\n".join(self.content)
        if self.chomping == "+":
            text += "\n" * (self.blanks + 1)
        elif self.chomping != "-":
            text += "\n"
        self.data[self.slot] = text
