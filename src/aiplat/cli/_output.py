"""Data on stdout in the formats a kubectl user expects: ``-o table|json|yaml``.

One helper for the commands that list things (``aiplat catalog``, ``aiplat version``): the
same data goes to JSON and YAML as is, and to a table as the rows the command picks.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from aiplat.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

FORMATS = ("table", "json", "yaml")
F = TypeVar("F", bound=Callable[..., Any])


class OutDir(click.Path):
    """``-d DIR``: a folder the command writes files into. Never ``-``, which would make a
    folder of that name: only commands that stream (``kube render``) take it, on their own."""

    def __init__(self) -> None:
        super().__init__(file_okay=False)

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if value == "-":
            raise InputError("-d -: this command writes files into a folder, and '-' would "
                             "make one named '-' (fix: give a folder, -d DIR)")
        return super().convert(value, param, ctx)


class Existing(click.Path):
    """An input path that must exist, refused in aiplat's one error form (``error: PATH:
    problem (fix: ...)``, exit 2) rather than click's "Invalid value for ..." that names no
    fix; ``what`` says what the path should be, for the fix."""

    def __init__(self, what: str, *, file_okay: bool = True, dir_okay: bool = True,
                 path_type: type[Any] | None = None) -> None:
        super().__init__(file_okay=file_okay, dir_okay=dir_okay, path_type=path_type)
        self.what = what

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        import os

        path = os.fspath(value)
        fix = f"(fix: give the path of {self.what})"
        if not os.path.exists(path):
            raise InputError(f"{path}: does not exist {fix}")
        if not self.dir_okay and os.path.isdir(path):
            raise InputError(f"{path}: is a directory {fix}")
        if not self.file_okay and not os.path.isdir(path):
            raise InputError(f"{path}: not a directory {fix}")
        return super().convert(value, param, ctx)


def console() -> Console:
    """rich's console for the CLI's box tables: the terminal's width on a terminal, 160
    columns piped (rich wraps to 80 off a terminal); no markup, since cells quote outside
    names ('[/x]' would be a tag)."""
    from rich.console import Console

    return Console(highlight=False, markup=False, width=None if sys.stdout.isatty() else 160)


def box_table(title: str, columns: Sequence[str], *, right: Collection[str] = (),
              whole: Collection[str] = ()) -> Table:
    """A titled table whose cells fold where the terminal is narrow: rich's default cut
    names to 'pretrain-…' at 80 columns, and a cut name is no name. ``right``: columns of
    figures; ``whole``: names kept on one line (copied into kubectl commands)."""
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for col in columns:
        t.add_column(col, justify="right" if col in right else "left",
                     no_wrap=col in whole, overflow="ellipsis" if col in whole else "fold")
    return t


def output_option(default: str = "table") -> Callable[[F], F]:
    return click.option("-o", "--output", "fmt", type=click.Choice(FORMATS), default=default,
                        show_default=True, help="Output format.")


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell, upper-case headers, two spaces apart (kubectl's
    layout), no trailing blanks."""
    cells = [[h.upper() for h in headers], *[["" if c is None else str(c) for c in r]
                                             for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in cells)


def emit(fmt: str, data: Any, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    if fmt == "json":
        click.echo(json.dumps(data, indent=2))
    elif fmt == "yaml":
        from aiplat.kube.yamlout import dump_value

        click.echo(dump_value(data), nl=False)
    else:
        click.echo(table(headers, rows))
