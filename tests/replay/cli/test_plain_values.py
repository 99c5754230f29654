"""Paths, texts and flags are converted without pydantic (`replay.cli.plain_values`), to the very
values typer's own adapters give, for every parameter of every command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer._coercion import build_runtime_param

from replay.cli.app import app
from replay.cli.plain_values import convert_plainly

COMMAND = typer.main.get_command(app)
SAMPLES: dict[Any, list[Any]] = {
    str: ["x", "", "two words", "ü 漢字", "-"],
    Path: ["cassettes/demo", "", "-", "/", "~", "no/such/folder", Path("already/a/path")],
    bool: [True, False],
    list[str]: [("a", "b"), ["one"], ()],
    list[Path]: [("cassettes/demo", "missing"), ["."], ()],
}


def plain_parameters() -> list[tuple[str, Any]]:
    found = []
    for name, command in sorted(COMMAND.commands.items()):  # type: ignore[attr-defined]
        ctx = command.make_context(name, ["--help"], resilient_parsing=True)
        for param in [*command.params, command.get_help_option(ctx)]:
            if param is not None and type(param._runtime_param).__name__ == "_PlainValue":
                found.append((f"{name} {param.name}", param))
    return found


PLAIN = plain_parameters()


def test_every_path_text_and_flag_parameter_is_converted_plainly() -> None:
    plain_types = {param.type_descriptor.annotation for _, param in PLAIN}

    assert plain_types == {str, Path, bool, list[str], list[Path]}
    assert {"scrub paths", "scrub check", "scrub help", "verify help"} <= {name for name, _ in PLAIN}


@pytest.mark.parametrize(("name", "param"), PLAIN, ids=[name for name, _ in PLAIN])
def test_a_plain_conversion_gives_what_typers_adapter_gives(name: str, param: Any) -> None:
    typers_own = build_runtime_param(param.type_descriptor)

    for value in [None, *SAMPLES[param.type_descriptor.annotation]]:
        ours = param._runtime_param.coerce(value, param=param, ctx=None)
        assert ours == typers_own.coerce(value, param=param, ctx=None), (name, value)
        assert type(ours) is type(typers_own.coerce(value, param=param, ctx=None)), (name, value)


def test_numbers_and_choices_keep_typers_adapters() -> None:
    verify = COMMAND.commands["verify"]  # type: ignore[attr-defined]
    jobs = next(param for param in verify.params if param.name == "jobs")

    assert jobs.type_descriptor.annotation is int
    assert convert_plainly(jobs) is False
    assert jobs.get_runtime_param().coerce("3", param=jobs, ctx=None) == 3
