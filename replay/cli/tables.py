"""The tables the ``replay`` commands print: a rich table in a terminal, and plain aligned text
at the content's width when stdout is not a terminal (a pipe, a file, a CI log), so that a long
bundle name never wraps onto a second row and no box characters reach the log."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

import typer

__all__ = ["Column", "plain_table", "print_table"]


@dataclass(frozen=True)
class Column:
    header: str
    right: bool = False  # numbers are right-aligned


def print_table(columns: Sequence[Column], rows: Sequence[Sequence[str]], *, file: TextIO | None = None) -> None:
    """Print ``rows`` under ``columns`` on stdout (or ``file``)."""
    out = file if file is not None else sys.stdout
    if out.isatty():
        # imported here: only a terminal gets rich's table, and every command's start-up skips it
        from rich.console import Console
        from rich.table import Table

        table = Table(show_edge=False)
        for index, column in enumerate(columns):
            table.add_column(
                column.header,
                justify="right" if column.right else "left",
                overflow="fold" if index == 0 else "ellipsis",
            )
        for row in rows:
            table.add_row(*row)
        Console(file=out, soft_wrap=False).print(table)
    else:
        typer.echo(plain_table(columns, rows), file=out, nl=False)


def plain_table(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> str:
    """The header, a rule of dashes, and one line per row, columns two spaces apart, each as
    wide as its widest cell, no trailing spaces."""
    widths = [
        max(len(str(cell)) for cell in (column.header, *(row[i] for row in rows))) for i, column in enumerate(columns)
    ]

    def line(cells: Sequence[str]) -> str:
        parts = [
            cell.rjust(width) if column.right else cell.ljust(width)
            for cell, width, column in zip(cells, widths, columns, strict=True)
        ]
        return "  ".join(parts).rstrip()

    lines = [line([c.header for c in columns]), line(["-" * w for w in widths])]
    lines.extend(line(row) for row in rows)
    return "\n".join(lines) + "\n"
