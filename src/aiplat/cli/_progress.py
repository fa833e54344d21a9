"""Progress on stderr for the commands that take a while, and their ``-q/--quiet`` option.

One rule for every long command (issue #23): a rich bar, or a spinner with the step's name
when the total is unknown, drawn on **stderr** and only when stderr is a terminal; stdout
carries the data and never changes. ``-q/--quiet`` silences the bar and the command's
summary lines even on a terminal (errors and warnings still show). Off a terminal nothing
redraws (no carriage returns, no cursor codes): a log keeps only the few named lines a
command prints (its phases, its summary).

The library functions never see rich: they take plain callbacks (a count, a fraction, a
step's name), and :class:`Bar` supplies them. rich is imported only when a bar is drawn, so
the commands' import time does not pay for it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any, Literal

import click

QUIET_KEY = "aiplat.quiet"
Kind = Literal["count", "fraction", "bytes", "seconds"]


def _set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:  # meta is shared by the whole invocation (never module state)
        ctx.meta[QUIET_KEY] = True
    return value


QUIET = click.option("-q", "--quiet", is_flag=True, callback=_set_quiet, is_eager=True,
                     expose_value=False,
                     help="no progress bar and no summary on stderr (errors still show)")


def is_quiet() -> bool:
    """Whether this invocation was given ``--quiet``."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(QUIET_KEY))


def shows_bar() -> bool:
    """A bar is drawn: stderr is a terminal and no ``--quiet``."""
    return not is_quiet() and sys.stderr.isatty()


def info(msg: str) -> None:
    """A summary or phase line on stderr, unless ``--quiet``."""
    if not is_quiet():
        click.echo(msg, err=True)


class Bar:
    """The callbacks a library function reports into, drawn as one rich task (or, when no
    bar is shown, doing nothing but :meth:`log`)."""

    def __init__(self, label: str, progress: Any = None, task: Any = None) -> None:
        self.label = label
        self._progress = progress
        self._task = task

    @property
    def shown(self) -> bool:
        return self._progress is not None

    def total(self, total: float | None) -> None:
        """Set (or learn late) the total; None: a spinner with no end."""
        if self._progress is not None:
            self._progress.update(self._task, total=total)

    def update(self, completed: float) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=completed)

    def advance(self, n: float = 1) -> None:
        if self._progress is not None:  # rich's Progress locks: callers may be threads
            self._progress.advance(self._task, n)

    def step(self, name: str) -> None:
        """Name what runs now (shown next to the label)."""
        if self._progress is not None:
            self._progress.update(self._task, description=f"{self.label}: {name}")

    def at(self, completed: float, total: float | None, name: str = "") -> None:
        """The library callback's shape, ``progress(done, total, running)``: how much is
        done of how much, and what runs now (empty: nothing more)."""
        if self._progress is not None:
            self._progress.update(self._task, completed=completed, total=total)
        if name:
            self.step(name)

    def log(self, msg: str) -> None:
        """A line that stays: above the bar on a terminal, a plain line off one, nothing
        with ``--quiet``."""
        if self._progress is not None:
            self._progress.console.print(msg, markup=False, highlight=False, soft_wrap=True)
        else:
            info(msg)


def _columns(kind: Kind) -> list[Any]:
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        SpinnerColumn,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    head = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn()]
    tail: dict[str, list[Any]] = {
        "count": [MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn()],
        "fraction": [TaskProgressColumn(), TimeElapsedColumn()],
        "bytes": [DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn()],
        "seconds": [TextColumn("{task.completed:.0f}/{task.total:.0f} s"),
                    TimeRemainingColumn()],
    }
    return head + tail[kind]


@contextlib.contextmanager
def progress_bar(label: str, total: float | None = None, kind: Kind = "count"
                 ) -> Iterator[Bar]:
    """A :class:`Bar` for the ``with`` block: drawn on stderr when :func:`shows_bar`,
    removed when the block ends (the terminal keeps only the command's own lines)."""
    if not shows_bar():
        yield Bar(label)
        return
    from rich.console import Console
    from rich.progress import Progress

    bar = Progress(*_columns(kind), console=Console(stderr=True), transient=True)
    task = bar.add_task(label, total=total)
    with bar:
        yield Bar(label, bar, task)
