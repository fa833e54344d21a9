"""``aiplat matrix show|check|diff`` and ``aiplat accept run|compare|report``: thin commands.

Each command loads its input, calls one function of :mod:`aiplat.ops.matrix`,
:mod:`aiplat.ops.acceptance_run` or :mod:`aiplat.ops.acceptance`, and prints a table or JSON
on stdout (progress on stderr). Exit 0 pass, 1 a violated fact or failed acceptance, 2 bad
input.
"""

from __future__ import annotations

import json
import sys
from datetime import date
from typing import Any

import click

from aiplat.cli._output import DATA_FORMATS, FORMATS, Existing, OutDir, print_data
from aiplat.errors import InputError
from aiplat.spec.models import Platform
from aiplat.text import shown

OUTPUT = click.option("-o", "--output", "output", type=click.Choice(FORMATS),
                      default="table", show_default=True, help="stdout format")
SPEC = click.argument("spec", required=False, type=click.Path(dir_okay=False))
TODAY = click.option("--today", type=click.DateTime(["%Y-%m-%d"]), default=None,
                     help="evaluate end of life as of this date (default: today)")


def _platform(spec: str | None) -> Platform:
    from aiplat.catalog import load_catalog
    from aiplat.spec import EXAMPLE, example_text, load_platform, parse_platform

    catalog = load_catalog()
    return load_platform(spec, catalog) if spec else parse_platform(
        example_text(), EXAMPLE, catalog)


def _today(value: Any) -> date:
    return value.date() if value is not None else date.today()


# ------------------------------------------------------------------------------ matrix


@click.group("matrix")
def matrix_group() -> None:
    """The approved version combinations, checked against compatibility facts."""


def _write_docs(out_dir: str | None, doc: Any) -> None:
    if out_dir is None:
        return
    from aiplat.fsutil import write_tree
    from aiplat.report import render_html, render_markdown

    written = write_tree(out_dir, {"matrix.md": render_markdown(doc),
                                   "matrix.html": render_html(doc)})
    click.echo(f"wrote {shown(', '.join(str(p) for p in written))}", err=True)


@matrix_group.command("show")
@SPEC
@OUTPUT
@TODAY
@click.option("-d", "--out-dir", "-w", "--write", "out_dir", type=OutDir(),
              help="also write matrix.md and matrix.html to this directory")
def matrix_show(spec: str | None, output: str, today: Any, out_dir: str | None) -> None:
    """Show the approved entries of SPEC (default: the built-in example) side by side.

    \b
    Examples:
      aiplat matrix show
      aiplat spec example > platform.yaml
      aiplat matrix show platform.yaml -d matrix
    """
    from aiplat.ops.matrix import LABELS, MATRIX_KEYS, check_matrix, matrix_document

    check = check_matrix(_platform(spec), _today(today))
    if output in DATA_FORMATS:
        print_data(output, {"platform": check.platform, "aiplat": check.aiplat,
               "entries": [{"name": e.name, **e.values, "status": e.status}
                           for e in check.entries]})
    else:
        names = [e.name for e in check.entries]
        width = max([len(n) for n in names] + [12])
        click.echo(f"{'component':20} " + " ".join(f"{n:{width}}" for n in names))
        for k in MATRIX_KEYS:
            click.echo(f"{LABELS[k]:20} " + " ".join(f"{(e.values[k] or '–'):{width}}"
                                                     for e in check.entries))
        click.echo(f"{'aiplat':20} " + " ".join(f"{check.aiplat:{width}}" for _ in names))
    _write_docs(out_dir, matrix_document(check))


@matrix_group.command("check")
@SPEC
@OUTPUT
@TODAY
@click.option("--strict", is_flag=True, help="exit 1 on warnings too")
def matrix_check(spec: str | None, output: str, today: Any, strict: bool) -> None:
    """Check every approved entry against the facts and the rest of the spec; exit 1 on a
    violated fact.

    \b
    Examples:
      aiplat spec example > platform.yaml
      aiplat matrix check platform.yaml
      aiplat matrix check platform.yaml --strict --today 2027-06-30 -o json
    """
    from aiplat.findings import line
    from aiplat.ops.matrix import check_matrix

    check = check_matrix(_platform(spec), _today(today))
    if output in DATA_FORMATS:
        print_data(output, {"status": check.status, **check.model_dump(mode="json")})
    else:
        for f in check.facts:
            click.echo(line(f))
        for e in check.entries:
            click.echo(f"{e.name}: {e.status}")
            for f in e.facts:
                click.echo(f"  {line(f)}")
        click.echo(f"overall: {check.status}")
    if check.status == "fail" or (strict and check.status == "warn"):
        sys.exit(1)


@matrix_group.command("diff")
@SPEC
@click.argument("after_spec", metavar="[AFTER]", required=False,
                type=click.Path(dir_okay=False))
@OUTPUT
@TODAY
@click.option("--entry", help="the approved entry to patch (default: the first; with AFTER: "
                              "the last of each spec)")
@click.option("--set", "changes", multiple=True, metavar="KEY=VALUE",
              help="a planned change, e.g. --set driver=580.105.08 (KEY= removes the pin)")
def matrix_diff(*, spec: str | None, after_spec: str | None, output: str, today: Any,
                entry: str | None, changes: tuple[str, ...]) -> None:
    """What a planned patch changes in an approved entry and which facts it violates; exit 1
    when the planned entry violates a fact.

    The patch is given by --set on SPEC's entry, or by a second spec: `aiplat matrix diff
    platform.yaml.previous platform.yaml` compares the entries of the spec before and after
    a change (the runbook's rollout does).

    \b
    Examples:
      aiplat spec example > platform.yaml
      aiplat matrix diff platform.yaml --set driver=580.105.08
      aiplat matrix diff platform.yaml --set kueue=0.19.2 -o json
    """
    from aiplat.ops.matrix import diff_entries, find_entry, parse_changes, planned_entry

    if after_spec is not None and changes:
        raise InputError("give either a second spec or --set KEY=VALUE, not both (fix: "
                         "`aiplat matrix diff BEFORE AFTER` or `aiplat matrix diff SPEC --set "
                         "driver=...`)")
    if after_spec is None and not changes:
        raise InputError("nothing to compare (fix: add --set KEY=VALUE, e.g. --set "
                         "driver=580.105.08, or a second spec: aiplat matrix diff "
                         "platform.yaml.previous platform.yaml)")
    if after_spec is not None:
        before_p, platform = _platform(spec), _platform(after_spec)
        current = _entry_of(before_p, entry, spec)
        after = _entry_of(platform, entry, after_spec)
    else:
        platform = _platform(spec)
        current = find_entry(platform, entry)
        after = planned_entry(current, parse_changes(list(changes)), f"{current.name}-planned")
    d = diff_entries(current, after, platform, _today(today))
    _print_diff(d, output)
    if d.status == "fail":
        sys.exit(1)


def _entry_of(platform: Platform, name: str | None, path: str | None) -> Any:
    from aiplat.ops.matrix import find_entry

    try:
        return find_entry(platform, name, last=True)
    except InputError as e:
        raise InputError(f"{path}: {e}") from e


def _print_diff(d: Any, output: str) -> None:
    from aiplat.findings import line

    if output in DATA_FORMATS:
        print_data(output, {"status": d.status, **d.model_dump(mode="json")})
    else:
        for c in d.changes:
            click.echo(f"{c.key:18} {c.before or '–'} -> {c.after or '–'}")
        for f in d.new_facts:
            click.echo(f"new   {line(f)}")
        for f in d.resolved:
            click.echo(f"gone  {line(f)}")
        click.echo(f"planned entry: {d.status}")


# ------------------------------------------------------------------------------ accept


@click.group("accept")
def accept_group() -> None:
    """Acceptance: function, performance, isolation and repeatability in one record."""


def _kv_floats(values: tuple[str, ...], option: str = "--min") -> dict[str, float]:
    out = {}
    for v in values:
        k, sep, num = v.partition("=")
        try:
            out[k.strip()] = float(num)
        except ValueError:
            sep = ""
        if not sep:
            raise InputError(f"{option} {v!r}: expected METRIC=VALUE, e.g. model.pull=200")
    return out


@accept_group.command("run")
@click.argument("spec", type=Existing("the platform spec (YAML)", dir_okay=False))
@click.option("--pool", required=True, help="the spec's pool this node belongs to")
@click.option("--suite", "suites", default="function,performance,isolation,repeatability",
              show_default=True, help="comma-separated suites")
@click.option("--runs", default=5, show_default=True, type=int, help="repetitions per probe")
@click.option("--scale", default=0.25, show_default=True, type=float, help="work per probe")
@click.option("--max-cv", default=0.15, show_default=True, type=float,
              help="repeatability: coefficient-of-variation threshold")
@click.option("--max-cv-for", "cv_for", multiple=True, metavar="METRIC=VALUE",
              help="a metric's own CV threshold, e.g. node.disk.read=0.3")
@click.option("--tolerance", default=0.10, show_default=True, type=float,
              help="repeatability: drop against --baseline that counts as a regression")
@click.option("--baseline", "baseline_file",
              type=Existing("an acceptance record (JSON)", dir_okay=False),
              help="an earlier acceptance record (JSON) to compare with")
@click.option("--node-baseline", type=Existing("a node baseline (JSON)", dir_okay=False),
              help="a node baseline (aiplat node baseline record) to compare with")
@click.option("--registry", help="HOST:PORT of a registry for the pull test (default: start "
                                 "docker-registry on 127.0.0.1)")
@click.option("--plain-http/--https", "plain_http", default=None,
              help="protocol to --registry (default: plain HTTP only for loopback)")
@click.option("--cdi-spec", "cdi_specs", multiple=True, type=Existing("a CDI spec"),
              help="CDI spec(s) to verify (default: from the host, or made-up device nodes)")
@click.option("--crd-dir", type=Existing("a folder of CRDs", file_okay=False),
              help="CRDs to validate custom resources against")
@click.option("--image", help="probe image for CDI verification (default: "
                              "localhost/aiplat-cdi-probe:1, made offline from busybox-static)")
@click.option("--observed", multiple=True, metavar="KEY=VALUE",
              help="matrix values the node cannot observe, e.g. kueue=0.19.2")
@click.option("--min", "floors", multiple=True, metavar="METRIC=VALUE",
              help="performance floor for a metric's median, e.g. model.pull=200")
@click.option("-d", "--out-dir", "-w", "--write", "out_dir", type=OutDir(),
              help="write acceptance.json, acceptance.md and acceptance.html here")
@OUTPUT
def accept_run(*, spec: str, pool: str, suites: str, runs: int, scale: float, max_cv: float,
               cv_for: tuple[str, ...], tolerance: float, baseline_file: str | None,
               node_baseline: str | None,
               registry: str | None, plain_http: bool | None, cdi_specs: tuple[str, ...],
               crd_dir: str | None, image: str | None, observed: tuple[str, ...],
               floors: tuple[str, ...], out_dir: str | None,
               output: str) -> None:
    """Run the acceptance suites on this node against SPEC; exit 1 unless every criterion
    passes (a skipped one makes the run incomplete).

    \b
    Examples (root, Podman, docker-registry):
      aiplat spec example --this-host > node.yaml
      aiplat accept run node.yaml --pool lab --observed kubernetes=1.34 -d acceptance
      aiplat accept run node.yaml --pool lab --suite function
    """
    from aiplat.node.matrix import parse_observed
    from aiplat.ops.acceptance import parse_suites
    from aiplat.ops.acceptance_run import Options, run_acceptance

    base = _load(baseline_file) if baseline_file else None
    opts = Options(suites=parse_suites(suites), runs=runs, scale=scale, max_cv=max_cv,
                   cv_for=_kv_floats(cv_for, "--max-cv-for"),
                   tolerance=tolerance, registry=registry, plain_http=plain_http,
                   cdi_specs=list(cdi_specs),
                   crd_dir=crd_dir, observed=parse_observed(list(observed)), baseline=base,
                   node_baseline=node_baseline, floors=_kv_floats(floors), spec_file=spec,
                   podman_image=image)
    rec = run_acceptance(_platform(spec), pool, opts,
                         progress=lambda m: click.echo(f"... {m}", err=True))
    _emit_record(rec, output, out_dir)
    if rec.status != "pass":
        sys.exit(1)


def _emit_record(rec: Any, output: str, out_dir: str | None) -> None:
    from aiplat.ops.acceptance_report import acceptance_document

    if output in DATA_FORMATS:
        print_data(output, rec.dump(), data_maps=("measurements",))
    else:
        for c in rec.criteria:
            click.echo(f"{c.id:42} {c.status:5} {c.observed}")
        counts = rec.counts()
        click.echo(f"acceptance: {rec.status} ({counts['pass']} pass, {counts['fail']} fail, "
                   f"{counts['warn']} warn, {counts['skip']} skipped) in {rec.seconds:.1f} s; "
                   f"matrix entry {rec.matrix.get('matched') or 'none'}")
        for n in rec.notes:
            click.echo(f"note: {n}")
    if out_dir:
        from aiplat.fsutil import write_tree
        from aiplat.report import render_html, render_markdown

        doc = acceptance_document(rec)
        written = write_tree(out_dir, {
            "acceptance.json": json.dumps(rec.dump(), indent=2) + "\n",
            "acceptance.md": render_markdown(doc), "acceptance.html": render_html(doc)})
        click.echo(f"wrote {shown(', '.join(str(p) for p in written))}", err=True)


def _load(path: str) -> Any:
    from pydantic import ValidationError

    from aiplat import inputs
    from aiplat.ops.acceptance import load_record

    fix = "(fix: pass acceptance.json from `aiplat accept run -w DIR`)"
    try:
        return load_record(inputs.read_text(path, "an acceptance record"), path)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "(document)"
        raise InputError(f"{path}: not an acceptance record ({where}: {first['msg']}, "
                         f"{e.error_count()} problems) {fix}") from e
    except ValueError as e:
        raise InputError(f"{path}: not JSON ({e}) {fix}") from e


@accept_group.command("compare")
@click.argument("a", type=click.Path(dir_okay=False))
@click.argument("b", type=click.Path(dir_okay=False))
@OUTPUT
def accept_compare(a: str, b: str, output: str) -> None:
    """What changed from acceptance record A to B; exit 1 when a criterion newly fails.

    \b
    Examples (root, Podman, docker-registry):
      aiplat spec example --this-host > node.yaml
      aiplat accept run node.yaml --pool lab --suite function -d before
      aiplat accept compare before/acceptance.json before/acceptance.json
    """
    from aiplat.ops.acceptance import compare_records
    from aiplat.ops.acceptance_report import diff_lines

    d = compare_records(_load(a), _load(b))
    if output in DATA_FORMATS:
        print_data(output, {"regressed": d.regressed, **d.model_dump(mode="json")})
    else:
        for line in diff_lines(d):  # a record's text: terminal-safe
            click.echo(shown(line))
    if d.regressed:
        sys.exit(1)


@accept_group.command("report")
@click.argument("record", type=click.Path(dir_okay=False))
@click.option("-d", "--out-dir", "-w", "--write", "out_dir", required=True,
              type=OutDir())
def accept_report(record: str, out_dir: str) -> None:
    """Re-render acceptance.md and acceptance.html from a recorded acceptance.json.

    \b
    Examples (root, Podman, docker-registry):
      aiplat spec example --this-host > node.yaml
      aiplat accept run node.yaml --pool lab --suite function -d acceptance
      aiplat accept report acceptance/acceptance.json -d report
    """
    rec = _load(record)
    from aiplat.fsutil import write_tree
    from aiplat.ops.acceptance_report import acceptance_document
    from aiplat.report import render_html, render_markdown

    doc = acceptance_document(rec)
    written = write_tree(out_dir, {"acceptance.md": render_markdown(doc),
                                   "acceptance.html": render_html(doc)})
    click.echo(f"wrote {shown(', '.join(str(p) for p in written))}", err=True)
