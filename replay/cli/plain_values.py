"""Path and text parameters converted without pydantic.

typer (0.29) converts every parameter value through a pydantic ``TypeAdapter`` it builds when the
value is first converted; importing pydantic and building the adapters is a third of what
``replay scrub --check`` spends starting up. For a parameter typed plainly ``Path``, ``str`` or
``bool``, or a list of paths or texts (no parser, no ``path_type``), the conversion is plain, so it
is done here the way typer's adapters do it: text as it came, a path through typer's own path
checks (``exists``, ``dir_okay``, ``resolve_path`` ...) given an already built ``Path``, which is
what typer does once pydantic has built it, a flag's ``True`` or ``False`` as it is (any other
value of a ``bool`` option goes to typer's adapter). Numbers and choices keep typer's adapters.
The parts of typer used are internal: a typer without them leaves every parameter to typer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

try:  # typer's internals (the project pins typer < 0.30)
    from typer._coercion import RuntimeParam, build_runtime_param
    from typer._param_types import coerce_cli_path
except ImportError:  # pragma: no cover - another typer: its own conversion is used
    RuntimeParam = None  # type: ignore[assignment, misc]

__all__ = ["convert_plainly"]

_PLAIN = (Path, str, bool)


def convert_plainly(param: object) -> bool:
    """Give ``param`` (a typer parameter) the plain conversion when its type is a plain path or
    text, or a list of them; True when it did."""
    descriptor = getattr(param, "type_descriptor", None)
    if RuntimeParam is None or descriptor is None or getattr(param, "_runtime_param", False) is not None:
        return False
    annotation, info = descriptor.annotation, descriptor.parameter_info
    many = get_origin(annotation) is list
    leaf = get_args(annotation)[0] if many else annotation
    if leaf not in _PLAIN or descriptor.file_annotation is not None:
        return False
    if getattr(info, "parser", None) is not None or getattr(info, "path_type", None) is not None:
        return False
    param._runtime_param = _PlainValue(info, annotation, leaf=leaf, many=many)  # type: ignore[attr-defined]
    return True


if RuntimeParam is not None:

    @dataclass(frozen=True)
    class _PlainValue(RuntimeParam):  # type: ignore[misc, valid-type]
        """A path or text value (or a list of them), converted as typer's adapters convert it."""

        leaf: type = str
        many: bool = False

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.many:
                items = value if isinstance(value, (list, tuple)) else [value]
                return [self._one(item, param, ctx) for item in items]
            return self._one(value, param, ctx)

        def _one(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.leaf is bool:
                if isinstance(value, bool):
                    return value
                return build_runtime_param(param.type_descriptor)._coerce_value(value, param=param, ctx=ctx)
            if self.leaf is str:
                return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
            path = value if isinstance(value, Path) else Path(value)
            return coerce_cli_path(path, self.parameter_info, path_type=Path, param=param, ctx=ctx)
