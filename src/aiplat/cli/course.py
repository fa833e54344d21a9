"""``aiplat lab exercise N|all [--check] [--step NAME] [--lab PREFIX]``: thin command over
:mod:`aiplat.course`.

Exported as :data:`exercise` (a click command) and :func:`register`, which adds it to the
``lab`` group: ``register(lab)`` at the end of :mod:`aiplat.cli.lab`, or
``lab.add_command(exercise)``. Exit 0 when every exercise checked is done, 1 otherwise.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from aiplat.cli._output import DATA_FORMATS, FORMATS, Existing, print_data
from aiplat.course.exercises import LAB_PREFIX
from aiplat.errors import InputError


@click.command("exercise")
@click.argument("which", metavar="N|all")
@click.option("--check", "check_only", is_flag=True,
              help="only check the results under $COURSE (run nothing)")
@click.option("--step", help="run only this action step of exercise N (see docs/lab-guide.md)")
@click.option("--course", "course_dir", type=click.Path(file_okay=False),
              default=lambda: os.environ.get("COURSE", "course"), show_default="$COURSE or course",
              help="folder of the participant's results")
@click.option("--root", type=Existing("an aiplat checkout", file_okay=False), default=".",
              show_default=True, help="the aiplat checkout the commands run from")
@click.option("--lab", "lab", default=lambda: os.environ.get("LAB", LAB_PREFIX),
              show_default=f"$LAB or {LAB_PREFIX}",
              help="the lab (its --prefix) exercises 5-7 run on")
@click.option("-o", "--output", "fmt", type=click.Choice(FORMATS), default="table",
              show_default=True, help="Output format (the exercises' verdicts).")
def exercise(*, which: str, check_only: bool, step: str | None, course_dir: str, root: str,
             lab: str, fmt: str) -> None:
    """Run exercise N of the lab course (or all seven) and check its result; with --check,
    only check what is on disk, as an instructor would.

    \b
    Examples (an aiplat source checkout; exercises 5-7: root, a lab):
      aiplat lab exercise 1
      aiplat lab exercise 1 --check
      aiplat lab exercise all --check -o json
    """
    from aiplat.course.exercises import EXERCISES
    from aiplat.course.runner import CourseError, check, run_exercise

    if which == "all":
        chosen = list(EXERCISES)
    elif which.isascii() and which.isdigit() and 1 <= int(which) <= len(EXERCISES):
        chosen = [EXERCISES[int(which) - 1]]
    else:
        raise InputError(f"exercise {which!r}: expected 1-{len(EXERCISES)} or all")
    if step and len(chosen) != 1:
        raise InputError("--step needs one exercise number, e.g. 'exercise 7 --step accept'")
    course = Path(course_dir).absolute()
    results: list[dict[str, Any]] = []
    for ex in chosen:
        t0 = time.perf_counter()
        if check_only:
            problems = check(ex, course)
        else:
            click.echo(f"exercise {ex.number}: {ex.title}", err=True)
            try:
                problems = run_exercise(ex, course, Path(root).absolute(),
                                        lambda m: click.echo(m, err=True), only=step, lab=lab)
            except CourseError as e:
                problems = [str(e)]
        results.append({"number": ex.number, "slug": ex.slug, "step": step,
                        "done": not problems, "problems": problems,
                        "seconds": None if check_only else round(time.perf_counter() - t0, 1)})
        if fmt not in DATA_FORMATS:  # each verdict as its exercise ends, after its steps
            _show(results[-1])
    done = sum(1 for r in results if r["done"])
    if fmt in DATA_FORMATS:
        print_data(fmt, {"course": str(course_dir), "exercises": results,
                         "done": done, "of": len(results)})
    elif len(results) > 1:
        click.echo(f"{done} of {len(results)} exercises done in {course_dir}")
    if done < len(results):
        sys.exit(1)


def _show(r: dict[str, Any]) -> None:
    if r["step"] and r["done"]:
        click.echo(f"exercise {r['number']} step {r['step']}: done")
        return
    verdict = "done" if r["done"] else "NOT done"
    click.echo(f"exercise {r['number']} ({r['slug']}): {verdict}"
               + ("" if r["seconds"] is None else f" in {r['seconds']:.1f} s"))
    for p in r["problems"]:
        click.echo(f"  - {p}")


def register(lab_group: click.Group) -> None:
    """Add ``exercise`` under ``aiplat lab``."""
    lab_group.add_command(exercise)
