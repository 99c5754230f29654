"""How every ``replay`` command parses and explains itself: help with plain metavars
(``BUNDLE...``, ``--jobs N``, a flag with no type tag) and a usage error as one line on stderr,
``error: <what> (see 'replay X --help')``, with exit code 2 — never typer's boxed panel."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError  # typer vendors click
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from replay.cli.common import BAD_INPUT, one_line
from replay.cli.plain_values import convert_plainly
from replay.collector import no_collection_at_exit

__all__ = ["ReplayCommand", "ReplayGroup", "usage_error_line"]


def _no_type(ctx: object) -> None:
    return None


def _tidy(param: object) -> None:
    """An argument is named by its metavar (upper case, ``...`` when it takes several) and shows
    no type; a flag shows no type; an option that takes a value shows its metavar (``N``)."""
    if isinstance(param, TyperArgument):
        name = param.metavar or (param.name or "").upper()
        if param.nargs != 1 and not name.endswith("..."):
            name += "..."
        param.metavar = name
        param.display_type_rich = _no_type  # type: ignore[method-assign]
    elif isinstance(param, TyperOption) and (param.is_flag or param.count):
        param.display_type_rich = _no_type  # type: ignore[method-assign]


class _NamesItsCommand:
    """A usage error the option parser raises without a context (``Option '--out' requires an
    argument``) gets this command's, so its line can say which ``--help`` to read."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)  # type: ignore[misc, no-any-return]
        except ClickException as exc:
            if getattr(exc, "ctx", None) is None:
                exc.ctx = ctx  # type: ignore[attr-defined]
            raise


class ReplayCommand(_NamesItsCommand, TyperCommand):
    """A subcommand: tidy metavars in its help and usage line; paths and text converted without
    pydantic (`convert_plainly`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            _tidy(param)
            convert_plainly(param)

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None:
            _tidy(option)
            convert_plainly(option)
        return option

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = param.metavar or ""
                pieces.append(name if param.required else f"[{name}]")
        return pieces


class ReplayGroup(_NamesItsCommand, TyperGroup):
    """The ``replay`` group: its own help tidied, and every usage error (an unknown option or
    command, a missing argument, a bad value) reported as one line on stderr with exit code 2."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None:
            _tidy(option)
            convert_plainly(option)
        return option

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        no_collection_at_exit()  # the command line's process ends after this: see replay.collector
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except NoArgsIsHelpError as exc:  # `replay` alone: the help is already printed
            sys.exit(exc.exit_code)
        except ClickException as exc:
            typer.echo(usage_error_line(exc), err=True)
            sys.exit(BAD_INPUT)
        except typer.Abort:
            typer.echo("error: aborted.", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def usage_error_line(exc: ClickException) -> str:
    """``error: No such option: --bogus (see 'replay run --help')``: click's message on one
    line, without the type checker's wording, and where to read how the command is used."""
    message = one_line(exc.format_message()).replace("Value error, ", "")
    for tail in (", unable to parse string as", " [type="):
        message = message.split(tail)[0]
    message = message.replace(": Input should", ": input should")
    ctx = getattr(exc, "ctx", None)
    hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    return f"error: {message.removesuffix('.')}{hint}."
