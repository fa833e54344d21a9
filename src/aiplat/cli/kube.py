"""``aiplat kube render|validate|lint|why-pending``: thin commands over ``aiplat.kube``.

Data goes to stdout (``-o table|json|yaml``), progress and errors to stderr. Exit codes:
0 ok, 1 validation errors / lint errors, 2 bad input (``InputError``).
"""

from __future__ import annotations

import io
import json
import re
import sys
import time
from typing import Any

import click

from aiplat.catalog import load_catalog
from aiplat.cli._output import print_data
from aiplat.errors import InputError
from aiplat.findings import Finding, counts, line
from aiplat.fsutil import write_owned_tree
from aiplat.inputs import STDIN, read_stdin
from aiplat.kube import (
    CrdIndex,
    check_platform,
    lint,
    load_crds,
    load_snapshot,
    render,
    validate_objects,
)
from aiplat.kube.inventory import Inventory
from aiplat.kube.render import EXAMPLES, PARTS, part_of
from aiplat.kube.render_releases import MODES
from aiplat.kube.tree import Build, read_manifests
from aiplat.spec import EXAMPLE, example_text, load_platform, parse_platform
from aiplat.spec.models import Platform
from aiplat.text import shown

NAMESPACE = click.option(
    "-n", "--namespace",
    help="namespace of the objects that name none (default: default); as with kubectl, an "
         "object naming another is refused")
_INPUT = "Kubernetes manifests or an aiplat spec"
OUTPUT = click.option("-o", "--output", "fmt", type=click.Choice(["table", "json", "yaml"]),
                      default="table", show_default=True, help="format of stdout")


def _platform(spec: str | None) -> Platform:
    catalog = load_catalog()
    return load_platform(spec, catalog) if spec else parse_platform(example_text(), EXAMPLE,
                                                                    catalog)


def _kustomize() -> Build | None:
    """The kustomize program that builds what kube/tree.py does not read itself: the lab's
    kubectl (`aiplat lab cluster build`), else kubectl or kustomize on PATH."""
    from aiplat.cluster.assets import default_cache
    from aiplat.kube.kustomize import find

    try:
        lab = [default_cache() / "bin" / "kubectl"]
    except InputError:  # no pinned versions readable: PATH only
        lab = []
    return find(lab)


def _emit(fmt: str, data: Any, table: list[str]) -> None:
    if fmt in ("json", "yaml"):
        print_data(fmt, data)
    else:
        for text in table:  # lines quote the tree's or snapshot's names: terminal-safe
            click.echo(shown(text))


@click.group()
def kube() -> None:
    """Kubernetes manifests for the platform: render, validate, lint, explain pending work."""


@kube.command("render")
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@click.option("-d", "--out-dir", "out_dir", default="out/kube", show_default=True,
              type=click.Path(file_okay=False),
              help="directory for the kustomize tree; - for none (the objects on stdout)")
@click.option("-o", "--output", "fmt", type=click.Choice(["table", "json", "yaml"]),
              default="table", show_default=True,
              help="table: write the tree and print a summary; yaml: the tree's objects on "
                   "stdout as one multi-document YAML, in apply order (for `kubectl apply -f "
                   "-`); json: the same as one v1 List. With yaml or json, files are written "
                   "only where -d is given")
@click.option("--with-examples", is_flag=True,
              help="list the example workloads (workloads/: a JobSet, vLLM Deployments) in "
                   "the root kustomization and the stream; default: written to workloads/ "
                   "only, applied when asked (aiplat kube apply DIR/workloads)")
@click.option("--gitops", type=click.Choice(MODES), default=None,
              help="how operators/ installs the operators (GPU Operator, DRA driver, Kueue), "
                   "pinned to the spec's approved versions: helmfile.yaml, Argo CD "
                   "Applications (listed in the root kustomization) or Flux HelmReleases "
                   "(applied by flux/ before cluster/) [default: helmfile, or a README "
                   "saying why not where the spec approves no version]")
@click.pass_context
def render_cmd(ctx: click.Context, spec: str | None, out_dir: str, fmt: str,  # noqa: PLR0917
               with_examples: bool, gitops: str | None) -> None:
    """Render cluster/, kueue/, tenants/, storage/, serving/ and the opt-in workloads/ from
    SPEC (default: the built-in example; - reads it from stdin) into a kustomize-ready tree,
    or stream its objects to stdout. Every object carries its part's Argo CD sync wave
    (CRDs -3, operators -2, cluster/ -1, the platform 0, examples 1) and flux/ holds a Flux
    Kustomization per folder with dependsOn in that order. -d DIR is rewritten whole: files
    the spec no longer renders are removed; a folder aiplat did not write is refused.

    \b
    Examples:
      aiplat kube render -d kube
      aiplat spec example > platform.yaml
      aiplat kube render platform.yaml -o yaml > all.yaml
      aiplat kube render - -d - < platform.yaml | aiplat kube validate -
    """
    t0 = time.perf_counter()
    stream = fmt if fmt != "table" else "yaml" if out_dir == "-" else None
    explicit = ctx.get_parameter_source("out_dir") is not click.core.ParameterSource.DEFAULT
    write = out_dir != "-" and (stream is None or explicit)
    platform = _platform(spec)
    rendered = render(platform, load_catalog())
    files = rendered.files(examples=with_examples, gitops=gitops)
    manifests = rendered.manifests if with_examples else {
        p: o for p, o in rendered.manifests.items() if part_of(p, {}) != "examples"}
    text = _stream(manifests, stream) if stream else ""  # whole, before a byte goes
    if write:
        write_owned_tree(out_dir, files, "aiplat kube render")
    if stream:
        click.echo(text, nl=False)
        click.echo(f"rendered {sum(len(o) for o in manifests.values())} objects"
                   + (f"; wrote {len(files)} files under {shown(str(out_dir))}" if write else "")
                   + f" in {time.perf_counter() - t0:.2f} s", err=True)
        return
    per_layer: dict[str, list[int]] = {}
    for path, objs in rendered.manifests.items():
        layer = path.split("/")[0]
        row = per_layer.setdefault(layer, [PARTS[part_of(path, {})], 0])
        row[1] += len(objs)
    opt_in = "" if with_examples else " (opt-in)"
    _emit("table", None, [f"{'layer':<10} {'wave':>4} objects"]
          + [f"{k:<10} {w:>4} {n:>7}" + (opt_in if k == EXAMPLES else "")
             for k, (w, n) in per_layer.items()]
          + [f"{'total':<10} {'':>4} {sum(n for _w, n in per_layer.values()):>7}"])
    click.echo(f"wrote {len(files)} files under {shown(str(out_dir))} in "
               f"{time.perf_counter() - t0:.2f} s", err=True)


def _stream(manifests: dict[str, list[Any]], fmt: str) -> str:
    """The tree's objects in the order they can be applied (``kube.apply.apply_order``:
    namespaces before what lives in them): YAML documents, each headed by the file it is in,
    or one v1 List."""
    from aiplat.kube.apply import apply_order
    from aiplat.kube.yamlout import dump_docs

    source = {id(o): path for path, objs in manifests.items() for o in objs}
    ordered = apply_order([o for objs in manifests.values() for o in objs])
    if fmt == "json":
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": ordered},
                          indent=2) + "\n"
    return "".join(f"---\n# Source: {source[id(o)]}\n{dump_docs([o])}" for o in ordered)


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
    """Validate the manifests of FILE, DIR (as `kubectl apply -R -f` reads it, or its
    kustomization as kustomize builds it) or - (stdin): built-in kinds with the official
    schemas (strict), custom resources with their CRDs, then names, quantities, DRA rules and
    CEL selectors.

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
                                 only=namespace is not None, build=_kustomize())
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
    """Cross-check the layers of rendered manifests (FILE, DIR as kustomize builds it, or -
    for stdin), or of a SPEC (an aiplat Platform file or stdin, rendered in memory).

    \b
    Examples:
      aiplat kube render -d kube
      aiplat kube lint kube
      aiplat spec example > platform.yaml
      aiplat kube lint - -o json < platform.yaml
    """
    if kueue_version is not None and not re.fullmatch(r"v?\d{1,3}\.\d{1,3}\.\d{1,4}",
                                                      kueue_version):
        raise InputError(f"--kueue-version {kueue_version!r}: not a release (fix: give one "
                         "such as 0.19.2, as `kubectl -n kueue-system get deploy "
                         "kueue-controller-manager -o yaml` shows in its image tag)")
    inv: Inventory | None
    files: list[str] | None = None
    notes: list[Finding] = []  # a tree kustomize built says so
    placed: list[Any] = []  # put in "default" only as kubectl's context likely would
    # stdin is read once: kept, in case it holds a spec
    stdin = io.BytesIO(read_stdin(_INPUT)) if target == STDIN else None
    items, inv = read_manifests(target, notes, namespace=namespace or "default",
                                only=namespace is not None,
                                placed=placed if namespace is None else None,
                                build=_kustomize(), stdin=stdin)
    unset: set[int] = set()
    if len(items) == 1 and _is_spec(items[0][1]):
        platform = _platform(target) if stdin is None else parse_platform(
            stdin.getvalue().decode("utf-8"), STDIN, load_catalog())
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
    findings = notes + lint(objects, inv, files=files, kueue_version=kueue_version,
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


def client_dry_run(items: list[tuple[str, Any]]) -> list[Any]:
    """kubectl's --dry-run=client: each object, checked as apply checks it before any request,
    in the order apply would send it; nothing sent."""
    from aiplat.kube.apply import Outcome, apply_order, check_objects, label

    check_objects(items)
    files = {id(o): f for f, o in items}
    return [Outcome(label(o), files.get(id(o)), "would apply")
            for o in apply_order(o for _f, o in items)]


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
@click.argument("targets", metavar="FILE|DIR|-...", nargs=-1, required=True)
@click.option("--dry-run", "dry_run", type=click.Choice(["none", "client", "server"]),
              default="none", show_default=True,
              help="server: the real admission chain, nothing persisted; client: the objects "
                   "in the order they would be applied, no cluster asked (as kubectl's)")
@click.option("--diff", is_flag=True, help="show what would change against the live objects")
@click.option("--prune", is_flag=True,
              help="apply the objects as one owned set (kubectl's ApplySet labels) and "
                   "delete what the set held that they no longer include")
@click.option("--applyset", "applyset", default="aiplat", show_default=True, metavar="NAME",
              help="with --prune: the set's parent, Secret kube-system/NAME (one per tree: "
                   "apply the opt-in examples with another name)")
@click.option("--kubeconfig", type=click.Path(dir_okay=False),
              help="kubeconfig (default: $KUBECONFIG, then ~/.kube/config)")
@click.option("--context", help="kubeconfig context (default: its current-context)")
@click.option("--force-conflicts", is_flag=True,
              help="take over fields another manager owns (default: report the conflict)")
@click.option("--no-pod-check", is_flag=True,
              help="skip the dry-run Pod made from each workload's template")
@OUTPUT
def apply_cmd(  # noqa: PLR0917 (one parameter per click option)
        targets: tuple[str, ...], dry_run: str, diff: bool, prune: bool, applyset: str,
        kubeconfig: str | None, context: str | None, force_conflicts: bool,
        no_pod_check: bool, fmt: str) -> None:
    """Server-side apply FILE, DIR (a kustomization as kustomize builds it) or - (stdin),
    one or more, as one tree (field manager aiplat) in dependency order: by Argo CD sync
    wave, then CRDs, namespaces, cluster objects, Kueue queues, namespaced configuration,
    workloads. Each workload's pods are also created as a dry run, so a LimitRange, quota or
    Pod Security level that would refuse them is reported now, with the API server's
    message. With --prune, what an earlier apply of the same --applyset created and the
    tree no longer renders is deleted (after everything applied; not when anything was
    refused). Exit 1 when anything is refused.

    \b
    Examples:
      aiplat kube render -d kube
      aiplat kube apply kube --dry-run=client

    \b
    Examples (a running lab cluster):
      aiplat kube render -d kube
      aiplat kube apply kube --prune
      aiplat kube apply kube/workloads --prune --applyset aiplat-examples
      aiplat kube render -o yaml | aiplat kube apply -
    """
    from aiplat.kube.apply import Api, apply_tree
    from aiplat.kube.applyset import ApplySet

    if targets.count(STDIN) > 1:
        raise InputError("- (stdin) can be given once")
    aset = ApplySet(applyset) if prune else None
    items = [i for t in targets for i in read_manifests(t, build=_kustomize())[0]]
    if dry_run == "client":
        if diff or prune:
            raise InputError(f"--{'diff' if diff else 'prune'} compares with the live "
                             "objects: give --dry-run server or none with it, not client")
        outcomes = client_dry_run(items)
    else:
        api = Api.from_kubeconfig(kubeconfig, context)
        outcomes = apply_tree(api, items, dry_run=dry_run == "server", diff=diff,
                              probe_pods=not no_pod_check, force=force_conflicts,
                              prune=aset)
    refused = [o for o in outcomes if o.action in ("refused", "pods refused")]
    lines = []
    for o in outcomes:
        lines.append(f"{o.object}: {o.action}" + (f": {o.message}" if o.message else ""))
        if o.diff:
            lines.append(o.diff.rstrip("\n"))
    mode = f" ({dry_run} dry run)" if dry_run != "none" else ""
    pruned = sum(o.action in ("pruned", "would prune") for o in outcomes)
    lines.append(f"{len(items)} objects{mode}: {len(refused)} refused"
                 + (f", {pruned} pruned" if prune else ""))
    _emit(fmt, [o.as_dict() for o in outcomes], lines)
    if refused:
        sys.exit(1)


__all__ = ["check_platform", "kube"]
