"""``aiplat kube render|validate|lint|why-pending``: thin commands over ``aiplat.kube``.

Data goes to stdout (``-o table|json|yaml``), progress and errors to stderr. Exit codes:
0 ok, 1 validation errors / lint errors, 2 bad input (``InputError``).
"""

from __future__ import annotations

import json
import re
import sys
import time
from typing import Any

import click

from aiplat.catalog import load_catalog
from aiplat.errors import InputError
from aiplat.findings import Finding, counts, line
from aiplat.fsutil import write_tree
from aiplat.kube import (
    CrdIndex,
    check_platform,
    lint,
    load_crds,
    load_snapshot,
    read_tree,
    render,
    validate_objects,
)
from aiplat.kube.inventory import Inventory
from aiplat.kube.tree import read_manifests
from aiplat.kube.yamlout import dump_value
from aiplat.spec import EXAMPLE, example_text, load_platform, parse_platform
from aiplat.spec.models import Platform
from aiplat.text import shown

NAMESPACE = click.option(
    "-n", "--namespace",
    help="namespace of the objects that name none (default: default); as with kubectl, an "
         "object naming another is refused")
OUTPUT = click.option("-o", "--output", "fmt", type=click.Choice(["table", "json", "yaml"]),
                      default="table", show_default=True, help="format of stdout")


def _platform(spec: str | None) -> Platform:
    catalog = load_catalog()
    return load_platform(spec, catalog) if spec else parse_platform(example_text(), EXAMPLE,
                                                                    catalog)


def _emit(fmt: str, data: Any, table: list[str]) -> None:
    if fmt == "json":
        click.echo(json.dumps(data, indent=2))
    elif fmt == "yaml":
        click.echo(dump_value(data), nl=False)
    else:
        for text in table:  # lines quote the tree's or snapshot's names: terminal-safe
            click.echo(shown(text))


@click.group()
def kube() -> None:
    """Kubernetes manifests for the platform: render, validate, lint, explain pending work."""


@kube.command("render")
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@click.option("-d", "--out-dir", "out_dir", default="out/kube", show_default=True,
              type=click.Path(file_okay=False), help="directory for the kustomize tree")
@click.option("-o", "--output", "fmt", type=click.Choice(["table", "json", "yaml"]),
              default="table", show_default=True, help="format of the summary on stdout")
def render_cmd(spec: str | None, out_dir: str, fmt: str) -> None:
    """Render cluster/, kueue/, tenants/, storage/, serving/ and workloads/ from SPEC
    (default: the built-in example) into a kustomize-ready tree.

    \b
    Examples:
      aiplat kube render -d kube
      aiplat spec example > platform.yaml
      aiplat kube render platform.yaml -d kube -o json
    """
    t0 = time.perf_counter()
    platform = _platform(spec)
    rendered = render(platform, load_catalog())
    files = rendered.files()
    write_tree(out_dir, files)
    per_layer: dict[str, int] = {}
    for path, objs in rendered.manifests.items():
        layer = path.split("/")[0]
        per_layer[layer] = per_layer.get(layer, 0) + len(objs)
    data = {"out": out_dir, "files": len(files), "objects": per_layer}
    _emit(fmt, data, [f"{'layer':<10} objects"]
          + [f"{k:<10} {v:>7}" for k, v in per_layer.items()]
          + [f"{'total':<10} {sum(per_layer.values()):>7}"])
    click.echo(f"wrote {len(files)} files under {shown(str(out_dir))} in "
               f"{time.perf_counter() - t0:.2f} s", err=True)


@kube.command("validate")
@click.argument("target", metavar="FILE|DIR|-")
@click.option("--k8s-version", "versions", multiple=True, default=("1.34",), show_default=True,
              help="target Kubernetes minor version; repeat for several")
@click.option("--crd-dir", type=click.Path(file_okay=False),
              help="CRDs of the target cluster (e.g. `kubectl get crd -o yaml`)")
@NAMESPACE
@OUTPUT
def validate_cmd(target: str, versions: tuple[str, ...], crd_dir: str | None,
                 namespace: str | None, fmt: str) -> None:
    """Validate the manifests of FILE, DIR (as `kubectl apply -R -f` or kustomize reads it)
    or - (stdin): built-in kinds with the official schemas (strict), custom resources with
    their CRDs, then names, quantities, DRA rules and CEL selectors.

    \b
    Examples:
      aiplat kube render -d kube
      aiplat kube validate kube
      aiplat kube validate kube --k8s-version 1.34 --k8s-version 1.35 -o json
      aiplat kube validate - -n research < kube/tenants/research/quota.yaml
    """
    from aiplat.kube.validate import check_version

    versions = tuple(check_version(v) for v in versions)
    items, _inv = read_manifests(target, namespace=namespace or "default",
                                 only=namespace is not None)
    crds = load_crds(crd_dir) if crd_dir else CrdIndex()
    results = []
    for v in versions:
        try:
            results.append(validate_objects(items, v, crds))
        except ValueError as e:
            raise InputError(f"--k8s-version {v}: {e}") from e
    data = [{"version": r.version, "objects": r.objects, "errors": len(r.errors),
             "issues": [i.__dict__ for i in r.issues]} for r in results]
    lines = []
    for r in results:
        lines += [str(i) for i in r.issues]
        lines.append(f"Kubernetes {r.version}: {r.objects} objects, {len(r.errors)} errors, "
                     f"{len(r.issues) - len(r.errors)} warnings")
    _emit(fmt, data, lines)
    if any(not r.ok for r in results):
        sys.exit(1)


@kube.command("lint")
@click.argument("target", metavar="SPEC|FILE|DIR|-")
@click.option("--inventory", type=click.Path(dir_okay=False),
              help="pool inventory YAML (default: DIR/cluster/nodes/inventory.yaml; "
                   "without one, the checks against nodes are not run)")
@click.option("--kueue-version", metavar="X.Y.Z",
              help="the Kueue release the cluster runs, whose shipped Configuration stands "
                   "in when the tree has none (default: a SPEC's kueueVersion, else the "
                   "release aiplat targets)")
@NAMESPACE
@OUTPUT
def lint_cmd(target: str, inventory: str | None, kueue_version: str | None,
             namespace: str | None, fmt: str) -> None:
    """Cross-check the layers of rendered manifests (FILE, DIR or - for stdin), or of a SPEC
    (an aiplat Platform file, rendered in memory).

    \b
    Examples:
      aiplat kube render -d kube
      aiplat kube lint kube
      aiplat spec example > platform.yaml
      aiplat kube lint platform.yaml -o json
    """
    if kueue_version is not None and not re.fullmatch(r"v?\d{1,3}\.\d{1,3}\.\d{1,4}",
                                                      kueue_version):
        raise InputError(f"--kueue-version {kueue_version!r}: not a release (fix: give one "
                         "such as 0.19.2, as `kubectl -n kueue-system get deploy "
                         "kueue-controller-manager -o yaml` shows in its image tag)")
    inv: Inventory | None
    files: list[str] | None = None
    unknown: list[Finding] = []  # kustomize fields the reader does not model: errors
    placed: list[Any] = []  # put in "default" only as kubectl's context likely would
    items, inv = read_manifests(target, unknown, namespace=namespace or "default",
                                only=namespace is not None,
                                placed=placed if namespace is None else None)
    unset: set[int] = set()
    if target != "-" and len(items) == 1 and _is_spec(items[0][1]):
        platform = _platform(target)
        rendered = render(platform, load_catalog())
        objects = rendered.objects()
        inv = rendered.inventory
        kueue_version = kueue_version or platform.kubernetes.kueue_version
    else:
        files, objects = [f for f, _o in items], [o for _f, o in items]
        moved = {id(o) for o in placed}
        unset = {i for i, o in enumerate(objects) if id(o) in moved}
    if inventory:
        from aiplat import inputs

        inv = Inventory.from_dict(inputs.load_yaml(inventory, "a node inventory (YAML)") or {},
                                  inventory)
    # Without an inventory the node-dependent rules judge nothing (lint says so).
    findings = unknown + lint(objects, inv, files=files, kueue_version=kueue_version,
                              unset_namespace=unset)
    n = counts(findings)
    errors = n["error"]
    lines = [line(f) for f in findings]
    lines.append(f"{len(objects)} objects, {errors} errors, {n['warning']} warnings"
                 + (f", {n['info']} notes" if n["info"] else ""))
    _emit(fmt, [f.model_dump() for f in findings], lines)
    if errors:
        sys.exit(1)


@kube.command("why-pending")
@click.argument("name")
@click.option("-n", "--namespace", help="namespace of the Job, Workload or Pod")
@click.option("--snapshot", type=click.Path(file_okay=False),
              help="folder of `kubectl get -o json` lists")
@click.option("--kubeconfig", type=click.Path(dir_okay=False),
              help="read the live cluster (read-only) with this kubeconfig "
                   "(default without --snapshot: $KUBECONFIG, then ~/.kube/config)")
@click.option("--context", help="kubeconfig context (default: its current-context)")
@OUTPUT
def why_pending_cmd(  # noqa: PLR0917 (one parameter per click option)
        name: str, namespace: str | None, snapshot: str | None,
                    kubeconfig: str | None, context: str | None, fmt: str) -> None:
    """Explain why the Job, Workload, Pod or Deployment NAME is not running: one line, then
    evidence, with what Kueue's next cycles would do (a replay of Kueue v0.19's scheduler over the
    same objects).

    \b
    Examples:
      aiplat samples get snapshot-quota-exhausted -d snap
      aiplat kube why-pending finetune -n research --snapshot snap
      aiplat kube why-pending finetune -n research --snapshot snap -o json

    \b
    Examples (a running lab cluster):
      aiplat kube why-pending nightly-eval -n batch
      aiplat kube why-pending docs-search -n serving -o yaml
    """
    from aiplat.ops.why_pending import explain

    if snapshot and (kubeconfig or context):
        raise InputError("give one of --snapshot DIR and --kubeconfig FILE/--context NAME, "
                         "not both")
    snap = load_snapshot(snapshot) if snapshot else _read_live(_kubeconfig(kubeconfig),
                                                                context)
    e = explain(snap, name, namespace)
    _emit(fmt, e.as_dict(), [f"{e.object}: {e.reason} [{e.code}]",
                             *(f"  - {x}" for x in e.evidence)])
    if e.code == "NotFound":
        sys.exit(2)


def _is_spec(o: Any) -> bool:
    """An aiplat Platform spec, not a Kubernetes manifest."""
    return isinstance(o, dict) and o.get("kind") == "Platform" \
        and str(o.get("apiVersion", "")).startswith("aiplat/")


def _read_live(path: str, context: str | None) -> Any:
    """The cluster of ``context`` as why-pending reads it (kube.live.read_cluster)."""
    from aiplat.kube import snapshot_from_lists
    from aiplat.kube.apply import Api
    from aiplat.kube.live import read_cluster

    with Api.from_kubeconfig(path, context) as api:
        return snapshot_from_lists(read_cluster(api).lists)


def _kubeconfig(given: str | None) -> str:
    """The kubeconfig kubectl would use: --kubeconfig, else the first of $KUBECONFIG, else
    ~/.kube/config."""
    from aiplat.kube.live import kubectl_kubeconfig

    return kubectl_kubeconfig(given, missing="no --snapshot and no kubeconfig at {path} (fix: "
                              "pass --snapshot DIR or --kubeconfig FILE, or set KUBECONFIG)")


@kube.command("apply")
@click.argument("directory", type=click.Path(file_okay=False, exists=True))
@click.option("--dry-run", "dry_run", type=click.Choice(["none", "server"]), default="none",
              show_default=True, help="server: the real admission chain, nothing persisted")
@click.option("--diff", is_flag=True, help="show what would change against the live objects")
@click.option("--kubeconfig", type=click.Path(dir_okay=False),
              help="kubeconfig (default: $KUBECONFIG, then ~/.kube/config)")
@click.option("--context", help="kubeconfig context (default: its current-context)")
@click.option("--force-conflicts", is_flag=True,
              help="take over fields another manager owns (default: report the conflict)")
@click.option("--no-pod-check", is_flag=True,
              help="skip the dry-run Pod made from each workload's template")
@OUTPUT
def apply_cmd(  # noqa: PLR0917 (one parameter per click option)
        directory: str, dry_run: str, diff: bool, kubeconfig: str | None,
              context: str | None, force_conflicts: bool, no_pod_check: bool,
              fmt: str) -> None:
    """Server-side apply DIR (field manager aiplat) in dependency order: CRDs, namespaces,
    cluster objects, Kueue queues, namespaced configuration, workloads. Each workload's pods
    are also created as a dry run, so a LimitRange, quota or Pod Security level that would
    refuse them is reported now, with the API server's message. Exit 1 when anything is
    refused.

    \b
    Examples (a running lab cluster):
      aiplat kube render -d kube
      aiplat kube apply kube --dry-run server
      aiplat kube apply kube
    """
    from aiplat.kube.apply import Api, apply_tree

    items, _inv = read_tree(directory)
    api = Api.from_kubeconfig(kubeconfig, context)
    outcomes = apply_tree(api, items, dry_run=dry_run == "server", diff=diff,
                          probe_pods=not no_pod_check, force=force_conflicts)
    refused = [o for o in outcomes if o.action in ("refused", "pods refused")]
    lines = []
    for o in outcomes:
        lines.append(f"{o.object}: {o.action}" + (f": {o.message}" if o.message else ""))
        if o.diff:
            lines.append(o.diff.rstrip("\n"))
    mode = " (server dry run)" if dry_run == "server" else ""
    lines.append(f"{len(items)} objects{mode}: {len(refused)} refused")
    _emit(fmt, [o.as_dict() for o in outcomes], lines)
    if refused:
        sys.exit(1)


__all__ = ["check_platform", "kube"]
