"""Data on stdout in the formats a kubectl user expects: ``-o table|json|yaml``.

Every command prints its JSON or YAML through ``print_data`` (``emit`` adds a table), so the
field names are spelled one way, the spec's: camelCase (``gpuHoursPerMonth``, as the spec's
pydantic aliases spell its fields). The conversion is one function, ``camel`` (in
``aiplat.fieldnames``; the files commands write use it too), rather than ``by_alias`` dumps
of pydantic models: what the commands print is dicts, dataclasses and models of many
layers, and the core keeps its Python names. A key is renamed only when it is a Python field
name, so data that happens to be a key stays as it is (a device name such as ``mlx5_0``, a
Kubernetes object as the API spells it), and a command names the fields whose mappings are
keyed by data (measurement names, label keys) with ``data_maps`` and those that hold an
outside document (a registry's config blob) with ``verbatim``.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from aiplat.errors import InputError
from aiplat.fieldnames import camel, camel_key

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

FORMATS = ("table", "json", "yaml")
DATA_FORMATS = ("json", "yaml")  # the -o choices that print data, not a table
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


def spec_argument(*, required: bool = False) -> Callable[[F], F]:
    """``SPEC``, the platform spec, given positionally as most commands take it (``aiplat
    plan SPEC``, ``aiplat kube render SPEC``); the function gets it as ``spec``. ``--spec
    FILE``, the form some commands took before, is still read (hidden from --help) with a
    deprecation note on stderr, so scripts keep working while they move."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            old = kwargs.pop("spec_option", None)
            if old is not None:
                if kwargs.get("spec") is not None:
                    raise click.UsageError("SPEC given twice, as an argument and as --spec "
                                           "(fix: give it once, as the argument)")
                click.echo("warning: --spec FILE is deprecated and will go: give the spec "
                           "as the argument, SPEC", err=True)
                kwargs["spec"] = old
            if required and kwargs.get("spec") is None:
                raise click.UsageError("Missing argument 'SPEC'.")
            return fn(*args, **kwargs)

        opt = click.option("--spec", "spec_option", hidden=True,
                           type=click.Path(dir_okay=False), help="deprecated: SPEC")
        arg = click.argument("spec", required=False, type=click.Path(dir_okay=False))
        return cast(F, arg(opt(wrapper)))

    return decorate


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


def camel_schema(schema: Any) -> Any:
    """A JSON Schema of Python-named fields (pydantic's) for the data ``print_data`` prints:
    each object's ``properties`` and ``required`` names in camelCase, the rest as it is."""
    if isinstance(schema, list):
        return [camel_schema(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: camel_schema(v) for k, v in schema.items()}
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {camel_key(k): camel_schema(v)
                             for k, v in schema["properties"].items()}
    if isinstance(schema.get("required"), list):
        out["required"] = [camel_key(k) for k in schema["required"]]
    return out


def print_data(fmt: str, data: Any, *, data_maps: Collection[str] = (),
               verbatim: Collection[str] = ()) -> None:
    """``data`` on stdout as JSON or YAML (``fmt``), field names as the spec spells them
    (``camel``). Values JSON does not know (a date, a path) are printed as their text."""
    data = camel(data, data_maps, verbatim)
    if fmt == "json":
        click.echo(json.dumps(data, indent=2, default=str))
    else:
        import yaml

        from aiplat.kube.yamlout import dump_value

        try:
            text = dump_value(data)
        except UnicodeEncodeError:  # a lone surrogate from outside (a registry's config):
            # libyaml's emitter cannot write it; PyYAML's own escapes it, ASCII only.
            text = yaml.safe_dump(data, sort_keys=False, allow_unicode=False)
        click.echo(text, nl=False)


def emit(fmt: str, data: Any, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    if fmt in ("json", "yaml"):
        print_data(fmt, data)
    else:
        click.echo(table(headers, rows))
