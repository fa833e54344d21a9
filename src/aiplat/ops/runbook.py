"""The runbook: responsibilities, escalation, maintenance windows and the procedures with the
exact aiplat and kubectl commands, generated from the platform spec as a report ``Document``.

Design:
- Procedures are data (:class:`Procedure` of :class:`Step` s: action, command, expected
  result) built by pure functions; :func:`runbook_document` lays them out as sections and
  tables of the report model, so the Markdown and the single-file HTML renderers of
  ``aiplat.report`` show the same text and tests assert on data, not markup.
- Everything the spec knows is filled in: pool names, GPUs per node, the approved version
  matrix, maintenance windows, the RACI and escalation contacts, spare nodes (which bound how
  many nodes may be out at once). What only the operator knows at run time stays a shell
  variable (``$NODE``, ``$NS``, ``$WL``) so every command can be pasted as is.
- Gaps are reported, not hidden: an area of the RACI with nobody responsible, a platform
  without escalation or maintenance windows become notes in the document (and ``gaps``).
- Draining respects Kueue: Kueue admits by quota, not by free nodes, so deleting the pods of
  an admitted workload under it breaks gangs and leaves quota held. Workloads running on the
  node are found through their Job's UID (label ``kueue.x-k8s.io/job-uid``), deactivated
  (Kueue evicts them and releases their quota), the node drained, and the workloads then
  re-activated so that Kueue re-admits them elsewhere.
- Each alert of :mod:`aiplat.ops.monitoring` links to a section here (its ``runbook_url``);
  a test checks that every such anchor exists.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from aiplat.ops.monitoring import RuleGroup, monitoring_rules
from aiplat.report.document import Code, Document, KeyFigure, Rich, Section, Table
from aiplat.shell import quote, sh
from aiplat.spec.models import Platform, PoolSpec, Responsibility

AREAS: tuple[str, ...] = ("nodes", "drivers", "operators", "cluster", "queues", "model store")
"""The areas every handover must assign (RACI rows), in this order."""

# Alert component -> RACI area that owns the response.
COMPONENT_AREA: dict[str, str] = {
    "gpu": "nodes", "node": "nodes", "node-agent": "nodes", "network": "nodes", "roce": "nodes",
    "queues": "queues",
    "model-store": "model store", "monitoring": "cluster",
}
BATCH_MINUTES = 45
"""Assumed time to take one batch of nodes through cordon, drain, update, reboot, check."""

KUBECONFIG = "${KUBECONFIG:-$HOME/.kube/config}"
"""The kubeconfig the runbook's aiplat commands read, as kubectl finds it (one file)."""
KUEUE_RELEASES = "https://github.com/kubernetes-sigs/kueue/releases/download"

_DOW = ["Sundays", "Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays"]


@dataclass(frozen=True)
class Step:
    action: str
    command: str = ""
    expect: str = ""


@dataclass(frozen=True)
class Procedure:
    id: str
    title: str
    area: str
    when: Rich
    steps: tuple[Step, ...]
    rollback: tuple[Step, ...] = ()
    notes: tuple[str, ...] = ()


# ---------------------------------------------------------------------------- helpers


def _number(text: str) -> bool:
    # ASCII digits: str.isdigit() also says yes to '²', which int() refuses.
    return text.isascii() and text.isdigit()


def describe_cron(expr: str) -> str:
    """A reading of simple cron schedules (``M H * * D``); others are returned as given.

    >>> describe_cron("0 2 * * 6")
    'Saturdays 02:00'
    """
    parts = expr.split()
    if len(parts) != 5 or not (_number(parts[0]) and _number(parts[1])):
        return expr
    minute, hour, dom, month, dow = parts
    at = f"{int(hour):02d}:{int(minute):02d}"
    if dom == "*" and month == "*" and dow == "*":
        return f"daily {at}"
    if dom == "*" and month == "*" and _number(dow) and 0 <= int(dow) <= 7:
        return f"{_DOW[int(dow) % 7]} {at}"
    if _number(dom) and month == "*" and dow == "*":
        return f"monthly on day {dom} {at}"
    return expr


def raci(platform: Platform) -> tuple[list[list[str]], list[str]]:
    """RACI rows for every required area plus any other area of the spec, and the gaps."""
    given: dict[str, Responsibility] = {}
    for r in platform.operations.responsibilities:
        given.setdefault(r.area.strip().lower(), r)
    rows: list[list[str]] = []
    gaps: list[str] = []
    for area in (*AREAS, *(a for a in given if a not in AREAS)):
        found = given.get(area)
        if found is None:
            rows.append([area, "unassigned", "unassigned", "—", "—"])
            gaps.append(f"nobody is responsible for {area}: add operations.responsibilities "
                        f"entry {{area: {area}, responsible: ..., accountable: ...}}")
        else:
            rows.append([area, found.responsible, found.accountable,
                         ", ".join(found.consulted) or "—", ", ".join(found.informed) or "—"])
    return rows, gaps


def owner(platform: Platform, area: str) -> tuple[str, str]:
    """(responsible, accountable) for ``area``; 'unassigned' when the spec names nobody."""
    for r in platform.operations.responsibilities:
        if r.area.strip().lower() == area:
            return r.responsible, r.accountable
    return "unassigned", "unassigned"


def batch_size(pool: PoolSpec, spares: Mapping[str, int]) -> int:
    """Nodes of ``pool`` that may be out at once: its spare nodes, at least one."""
    return max(1, spares.get(pool.name, 1))


def rollout(pool: PoolSpec, spares: Mapping[str, int], window_hours: float | None) -> list[str]:
    """One row of the canary plan: pool, nodes, canary, batch, batches, windows."""
    batch = batch_size(pool, spares)
    rest = max(pool.nodes - 1, 0)
    batches = math.ceil(rest / batch)
    if window_hours:
        per_window = max(1, int(window_hours * 60 // BATCH_MINUTES))
        windows = 1 + math.ceil(batches / per_window)
        win = str(windows)
    else:
        win = "—"
    return [pool.name, str(pool.nodes), "1", str(batch), str(batches), win]


# ---------------------------------------------------------------------------- procedures


def _kueue_drain_steps() -> tuple[Step, ...]:
    """Cordon and drain ``$NODE`` without pulling pods out from under admitted workloads."""
    return (
        Step("Cordon the node: no new pods land on it",
             "kubectl cordon $NODE",
             "node shows SchedulingDisabled"),
        Step("List the Kueue workloads with pods on the node (through the owning Job's UID)",
             "kubectl get pods -A --field-selector spec.nodeName=$NODE -o jsonpath="
             "'{range .items[*]}{.metadata.namespace}{\" \"}{.metadata.ownerReferences[0].uid}"
             "{\"\\n\"}{end}' | sort -u | while read ns uid; do kubectl get "
             "workloads.kueue.x-k8s.io -n \"$ns\" -l kueue.x-k8s.io/job-uid=\"$uid\" "
             "-o custom-columns=NS:.metadata.namespace,WL:.metadata.name --no-headers; "
             "done | tee workloads-$NODE.txt",
             "the admitted workloads on $NODE, one 'NS WL' per line"),
        Step("Let each finish or checkpoint within the window; otherwise evict it through "
             "Kueue (deactivate: Kueue stops it and releases its quota)",
             "while read NS WL; do kubectl patch workloads.kueue.x-k8s.io -n $NS $WL "
             "--type=merge -p '{\"spec\":{\"active\":false}}'; done < workloads-$NODE.txt",
             "the workloads' pods terminate; their Workloads show Evicted"),
        Step("Drain what is left (DaemonSets stay; PodDisruptionBudgets are respected)",
             "kubectl drain $NODE --ignore-daemonsets --delete-emptydir-data --timeout=30m",
             "drain ends with 'node/$NODE drained'"),
        Step("Re-activate the evicted workloads: Kueue re-admits them on other nodes when "
             "quota and capacity allow",
             "while read NS WL; do kubectl patch workloads.kueue.x-k8s.io -n $NS $WL "
             "--type=merge -p '{\"spec\":{\"active\":true}}'; done < workloads-$NODE.txt",
             "each is admitted or pending; explain a pending one with "
             f"aiplat kube why-pending $WL -n $NS --kubeconfig {KUBECONFIG}"),
    )


def node_patch(platform: Platform, spec: str, spares: Mapping[str, int]) -> Procedure:
    tol = {p.name: p.node.checks.baseline_tolerance for p in platform.pools}
    tol_text = ", ".join(f"{k} {v:.0%}" for k, v in tol.items())
    entry = platform.versions.approved[-1].name if platform.versions.approved else None
    entry_opt = sh(" --entry {entry}", entry=entry) if entry else ""
    prev = f"{spec}.previous"
    steps = (
        Step("Check the target versions against the compatibility facts",
             sh("aiplat matrix check {spec}", spec=spec),
             f"exit 0; target entry {entry}" if entry else "exit 0"),
        Step("Before the change, on the node: record its baseline",
             sh("aiplat node baseline record {spec} --pool $POOL "
                "-w baseline/$NODE-before.json", spec=spec),
             "file written; medians of 5 runs"),
        *_kueue_drain_steps(),
        Step("Update the node per the approved matrix: review the generated steps, run them, "
             "reboot",
             sh("aiplat node prepare {spec} --pool $POOL", spec=spec) + entry_opt
             + " -w prepare-$NODE.sh; less prepare-$NODE.sh; sudo bash prepare-$NODE.sh && "
             "sudo systemctl reboot",
             "node back Ready (kubectl get node $NODE)"),
        Step("Run the node checks, versions included",
             sh("aiplat node check {spec} --pool $POOL --matrix", spec=spec),
             "exit 0: every check passes and the versions match the approved entry"),
        Step("Compare with the baseline recorded before",
             sh("aiplat node baseline compare baseline/$NODE-before.json {spec} "
                "--pool $POOL", spec=spec),
             f"exit 0: no regression beyond the pool tolerance ({tol_text})"),
        Step("Check device binding: containers see exactly their devices",
             "aiplat cdi verify",
             "exit 0"),
        Step("Return the node to service",
             "kubectl uncordon $NODE",
             "allocatable GPUs as in the spec: kubectl get node $NODE -o jsonpath="
             "'{.status.allocatable.nvidia\\.com/gpu}' (DRA: kubectl get resourceslices "
             "--field-selector spec.nodeName=$NODE)"),
        Step("Soak: watch the node's alerts before the next batch",
             "curl -s http://PROMETHEUS:9090/api/v1/alerts | grep -c \"$NODE\"",
             "0 (no GpuCriticalXid, GpuMissing, AiplatNodeCheckFailed for $NODE)"),
    )
    rollback = (
        Step("Keep the node cordoned; stop the rollout (no further batches)",
             "kubectl cordon $NODE"),
        Step("Reinstall the previous approved entry: prepare from the spec before the change",
             sh("aiplat node prepare {prev} --pool $POOL -w rollback-$NODE.sh; "
                "sudo bash rollback-$NODE.sh && sudo systemctl reboot", prev=prev)),
        Step("Prove the node is back to its recorded state",
             sh("aiplat node check {prev} --pool $POOL --matrix && "
                "aiplat node baseline compare baseline/$NODE-before.json "
                "{prev} --pool $POOL", prev=prev),
             "both exit 0"),
        Step("Return it to service and record what failed against the matrix",
             sh("kubectl uncordon $NODE; aiplat matrix diff {prev} {spec}", prev=prev,
                spec=spec)),
    )
    notes = (
        "Canary order: one node of the pool first, then batches no larger than the pool's "
        "spare nodes, so the pool never drops below the capacity its quotas promise.",
        "Kueue admits by quota, not by free nodes: while nodes are out, admitted workloads may "
        "wait for pods. Patch inside a maintenance window.",
    )
    return Procedure(
        "node-patch", "Node patch (OS, kernel, firmware, driver on the node)", "nodes",
        ["Monthly OS patches, a kernel or firmware update, or a new approved matrix entry. "
         "Set POOL and NODE first (export POOL=... NODE=...); keep the spec before the change "
         "as ", Code(text=f"{spec}.previous"), "."],
        steps, rollback, notes)


UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
"""The node label the GPU Operator's upgrade controller (k8s-operator-libs, driver 'gpu')
keeps each node's driver upgrade state in."""
UPGRADE_SKIP_LABEL = "nvidia.com/gpu-driver-upgrade.skip"
"""The node label (value 'true') the upgrade controller leaves a node alone for."""
UPGRADE_STATES = ("upgrade-required", "cordon-required", "wait-for-jobs-required",
                  "pod-deletion-required", "drain-required", "pod-restart-required",
                  "validation-required", "uncordon-required", "upgrade-done")
"""The controller's states in the order a node goes through them; ``upgrade-failed`` is
where it stops instead (k8s-operator-libs pkg/upgrade consts)."""
GPU_NODES = "nvidia.com/gpu.present=true"
"""The label GPU Feature Discovery puts on every GPU node: the operator's nodes."""
VALUES = "out/kube/cluster/gpu-operator/values.yaml"


def driver_upgrade(platform: Platform, spec: str) -> Procedure:
    """The driver upgrade through the driver's owner (``kubernetes.components.driver``):
    the GPU Operator's upgrade controller, or ``node prepare`` on each host. Never by
    deleting the operator's driver pods by hand: the controller cordons, waits for jobs,
    evicts and restarts them itself, and a pod deleted under it restarts unvalidated."""
    entry = platform.versions.approved[-1] if platform.versions.approved else None
    target = entry.driver if entry and entry.driver else "$DRIVER"
    prev = f"{spec}.previous"
    check = Step("Add the new driver to a versions.approved entry and check it (CUDA minimum, "
                 "branch end of life)",
                 sh("aiplat matrix check {spec} && aiplat matrix diff {prev} {spec}", spec=spec,
                    prev=prev),
                 "no violated facts")
    if platform.kubernetes.components.driver == "operator":
        return _driver_upgrade_operator(spec, prev, target, check)
    return _driver_upgrade_host(platform, spec, prev, target, check)


def _driver_upgrade_operator(spec: str, prev: str, target: str, check: Step) -> Procedure:
    states = " → ".join(UPGRADE_STATES)
    watch = f"kubectl get nodes -l {GPU_NODES} -L {UPGRADE_STATE_LABEL}"
    steps = (
        check,
        Step("Render the GPU Operator values with the new driver version",
             sh("aiplat kube render {spec} -d out/kube", spec=spec),
             f"{VALUES} has driver.version {target} and driver.upgradePolicy "
             "(autoUpgrade, maxParallelUpgrades, waitForCompletion for Kueue's pods)"),
        Step("Canary: hold every GPU node but the canary ($NODE) out of the rollout",
             f"kubectl label nodes -l {GPU_NODES} {UPGRADE_SKIP_LABEL}=true --overwrite && "
             f"kubectl label node $NODE {UPGRADE_SKIP_LABEL}-",
             f"every GPU node but $NODE shows {UPGRADE_SKIP_LABEL}=true"),
        Step("Set the new version in the ClusterPolicy through the chart's values",
             "helm upgrade gpu-operator nvidia/gpu-operator -n gpu-operator --reuse-values "
             f"-f {VALUES}",
             "helm reports the new revision; kubectl get clusterpolicies.nvidia.com -o "
             f"jsonpath='{{.items[0].spec.driver.version}}' prints {target}"),
        Step("Follow the canary through the operator's upgrade controller (it cordons, waits "
             "for the selected jobs, evicts, restarts the driver pod, validates, uncordons)",
             f"kubectl get node $NODE -L {UPGRADE_STATE_LABEL} -w",
             f"{states}; upgrade-failed stops here: see the rollback"),
        Step("Check the canary: driver version, GPUs, device binding",
             sh("aiplat node check {spec} --pool $POOL --matrix && aiplat cdi verify",
                spec=spec),
             f"exit 0; driver {target}"),
        Step("Release the other nodes: the controller takes them maxParallelUpgrades at a "
             "time, never more than maxUnavailable out",
             f"kubectl label nodes -l {GPU_NODES} {UPGRADE_SKIP_LABEL}-",
             "no node carries the skip label"),
        Step("Follow the rollout to the end", watch + " -w",
             "every GPU node upgrade-done, none upgrade-failed; GpuDriverUpgradeFailed, "
             "GpuMissing and GpuCriticalXid stay silent"),
    )
    rollback = (
        Step("Hold the nodes the controller has not reached yet",
             f"kubectl label nodes -l '{GPU_NODES},{UPGRADE_STATE_LABEL} in "
             f"(upgrade-required)' {UPGRADE_SKIP_LABEL}=true --overwrite",
             "no further node starts the new version"),
        Step("Set the previous version the same way: values rendered from the spec before "
             "the change",
             sh("aiplat kube render {prev} -d out/kube-previous && helm upgrade gpu-operator "
                "nvidia/gpu-operator -n gpu-operator --reuse-values -f ", prev=prev)
             + "out/kube-previous/cluster/gpu-operator/values.yaml",
             "the ClusterPolicy shows the previous driver.version"),
        Step("Follow the upgraded nodes back through the same states. A node in "
             "upgrade-failed moves on by itself once its driver pod is up to date and Ready; "
             "read that pod's log for the cause (kubectl -n gpu-operator logs POD), never "
             "delete it",
             "kubectl -n gpu-operator get pods -o wide --field-selector spec.nodeName=$NODE; "
             + watch + " -w", "every GPU node upgrade-done on the previous version"),
        Step("Release the held nodes", f"kubectl label nodes -l {GPU_NODES} "
             f"{UPGRADE_SKIP_LABEL}-", "no node carries the skip label"),
    )
    notes = (
        "Never delete the driver pods by hand: the operator's upgrade controller owns the "
        "rollout (cordon, wait for jobs, pod eviction, driver restart, validation, uncordon) "
        f"and records each node's progress in the {UPGRADE_STATE_LABEL} label.",
    )
    return Procedure("driver-upgrade", "Driver upgrade (the GPU Operator owns the driver)",
                     "drivers", "A new approved driver: security fix, CUDA requirement, branch "
                     "end of life.", steps, rollback, notes)


def _driver_upgrade_host(platform: Platform, spec: str, prev: str, target: str,
                         check: Step) -> Procedure:
    """``aiplat maintain`` rolls it: the canary, then batches within the pool's spares, each
    node cordoned, drained through the Eviction API (PodDisruptionBudgets honoured, Kueue's
    pods evicted so Kueue requeues them, never deleted), updated on the host, gated on the
    node agent's verdict and uncordoned, its state in a ConfigMap so a lost session resumes.
    The steps by hand stay in the notes, for a cluster the run cannot reach."""
    approved = platform.versions.approved
    entry_opt = sh(" --entry {entry}", entry=approved[-1].name) if approved else ""
    change = sh("driver={v}", v=target) if not target.startswith("$") else f"driver={target}"
    run = sh("aiplat maintain run {spec} --pool $POOL --change ", spec=spec) + change
    steps = (
        check,
        Step("Review the rollout: the canary, the batches (no larger than the pool's spare "
             "nodes, block by block), each node's calls and the pods its drain evicts",
             f"{run} --dry-run", "the batches; no change made"),
        Step("Start it inside a maintenance window (a batch starts only inside the spec's "
             "operations.maintenanceWindows, cron read in UTC; outside them the run waits, "
             "naming the next opening): the canary is cordoned and drained, then the run "
             "stops for its update and prints the node's command",
             run, "'waiting', naming $NODE and the command that updates it"),
        Step("On the node it names: install the new driver with the approved entry (review "
             "the generated script; DKMS builds the modules, signed where Secure Boot is "
             "required), reboot, then tell the run",
             sh("aiplat node prepare {spec} --pool $POOL", spec=spec) + entry_opt
             + " -w prepare-$NODE.sh; less prepare-$NODE.sh; sudo bash prepare-$NODE.sh && "
             "sudo systemctl reboot",
             "node back Ready (kubectl get node $NODE)"),
        Step("Hand the node back to the run: it waits for the node agent's verdict "
             "(AiplatNodeHealthy, newer than the drain), uncordons it and takes the next "
             "batch, stopping at each for its nodes the same way",
             "aiplat maintain resume --applied $NODE",
             f"the next batch waiting, or done; driver {target} on every node"),
        Step("Follow it (from any shell: the state is in ConfigMap "
             "aiplat-system/aiplat-maintenance; a second run is refused while one holds it)",
             "aiplat maintain status",
             "done; or failed: the node is rolled back and left cordoned with the reason"),
    )
    rollback = (
        Step("Roll the node back to the version it had before the change (the run recorded "
             "it); it stays cordoned and the rollout stops",
             "aiplat maintain rollback $NODE"),
        Step("On the node: reinstall the previous driver from the spec before the change (the "
             "pin allows the downgrade), reboot",
             sh("aiplat node prepare {prev} --pool $POOL -w rollback-$NODE.sh; "
                "sudo bash rollback-$NODE.sh && sudo systemctl reboot", prev=prev)),
        Step("Check it and return it to service",
             sh("aiplat node check {prev} --pool $POOL --matrix && kubectl uncordon "
                "$NODE", prev=prev), "exit 0; previous driver"),
    )
    notes = (
        "With --apply-with CMD the run calls `CMD NODE` itself for each node of a batch "
        "(AIPLAT_COMMAND holds the node's prepare command, AIPLAT_ACTION apply or rollback), "
        "e.g. a script that runs it over ssh and reboots, instead of stopping for resume.",
        "By hand, where the run cannot reach the cluster: per node, the node patch "
        "procedure's cordon, Kueue-aware drain, prepare, check and uncordon, canary first, "
        "then batches no larger than the pool's spare nodes.",
    )
    return Procedure("driver-upgrade", "Driver upgrade (node prepare owns the driver)",
                     "drivers", "A new approved driver: security fix, CUDA requirement, branch "
                     "end of life. kubernetes.components.driver is host: the GPU Operator "
                     "leaves the driver alone.", steps, rollback, notes)


def operator_upgrade(platform: Platform, spec: str) -> Procedure:
    entry = platform.versions.approved[-1] if platform.versions.approved else None
    # The approved version, quoted, or the variable the admin sets.
    version = quote(entry.gpu_operator) if entry and entry.gpu_operator else '"$VERSION"'
    steps = (
        Step("Check the operator version in the matrix",
             sh("aiplat matrix check {spec}", spec=spec), "exit 0"),
        Step("Update the CRDs first (helm does not upgrade CRDs)",
             "helm repo update && helm show crds nvidia/gpu-operator --version "
             f"{version} | kubectl apply --server-side -f -",
             "CRDs configured"),
        Step("Upgrade the operator with the rendered values",
             sh("aiplat kube render {spec} -d out/kube && helm upgrade gpu-operator "
                "nvidia/gpu-operator -n gpu-operator --version ", spec=spec)
             + f"{version} -f out/kube/cluster/gpu-operator/values.yaml",
             "new revision deployed"),
        Step("Wait for the operands",
             "kubectl -n gpu-operator get pods; kubectl get clusterpolicies.nvidia.com "
             "-o jsonpath='{.items[0].status.state}'",
             "all pods Running or Completed; state ready"),
        Step("Check one node per pool",
             sh("aiplat node check {spec} --pool $POOL --matrix && aiplat cdi verify",
                spec=spec),
             "exit 0; ScrapeTargetDown silent for dcgm-exporter"),
    )
    rollback = (Step("Roll back the release", "helm rollback gpu-operator -n gpu-operator"),)
    return Procedure("operator-upgrade", "GPU operator upgrade", "operators",
                     "A new approved GPU operator release (device plugin, toolkit, "
                     "dcgm-exporter, MIG manager).", steps, rollback)


def kueue_upgrade(platform: Platform, spec: str) -> Procedure:
    v = platform.kubernetes.kueue_version
    steps = (
        Step("Check the Kueue version and API in the matrix",
             sh("aiplat matrix check {spec}", spec=spec),
             f"exit 0 (running {v}, API {platform.kubernetes.kueue_api})"),
        Step("Fetch the new release's manifests (its CRDs among them)",
             "mkdir -p kueue-$VERSION-crds && curl -fsSL -o kueue-$VERSION-crds/manifests.yaml "
             f"{KUEUE_RELEASES}/v$VERSION/manifests.yaml",
             "the file holds the release's CustomResourceDefinitions"),
        Step("Validate the rendered queues against the new release's CRDs",
             sh("aiplat kube render {spec} -d out/kube && aiplat kube validate out/kube "
                "--crd-dir kueue-$VERSION-crds", spec=spec),
             "exit 0"),
        Step("Save the queue state",
             "kubectl get clusterqueues,localqueues,workloads.kueue.x-k8s.io -A -o yaml > "
             "kueue-before.yaml",
             "file written"),
        Step("Install the release (server-side apply)",
             f"kubectl apply --server-side -f {KUEUE_RELEASES}/v$VERSION/manifests.yaml",
             "objects configured"),
        Step("Wait for the controller",
             "kubectl -n kueue-system rollout status deploy/kueue-controller-manager",
             "successfully rolled out"),
        Step("Check the queues and the cross-layer lint",
             "kubectl get clusterqueues; aiplat kube lint out/kube",
             "every ClusterQueue Active; lint exit 0; KueueInadmissibleWorkloads silent"),
    )
    rollback = (
        Step("Re-apply the previous release (same storage API version only)",
             sh("kubectl apply --server-side -f {url}",
                url=f"{KUEUE_RELEASES}/v{v}/manifests.yaml")),
    )
    return Procedure("kueue-upgrade", "Kueue upgrade", "queues",
                     "A new approved Kueue release.", steps, rollback)


def cluster_upgrade(platform: Platform, spec: str) -> Procedure:
    order = ", ".join(p.name for p in sorted(platform.pools, key=lambda p: (p.nodes, p.name)))
    steps = (
        Step("Check the target version: DRA resource.k8s.io/v1 needs 1.34 or later",
             sh("aiplat matrix check {spec} && aiplat kube validate out/kube --k8s-version "
                "$TARGET", spec=spec),
             "exit 0"),
        Step("Back up etcd (the only way back from a control plane upgrade)",
             "ETCDCTL_API=3 etcdctl snapshot save etcd-before-$TARGET.db",
             "snapshot saved"),
        Step("Upgrade the control plane (kubeadm; or the provider's upgrade)",
             "kubeadm upgrade plan && kubeadm upgrade apply v$TARGET",
             "control plane on $TARGET"),
        Step("Check the APIs the platform uses",
             "kubectl api-resources --api-group=resource.k8s.io; kubectl get clusterqueues",
             "resourceclaims, deviceclasses, resourceslices served; queues Active"),
        Step(f"Upgrade the kubelets pool by pool, smallest first ({order}), each by the node "
             "patch procedure", "", "every node Ready on $TARGET"),
    )
    rollback = (
        Step("Control plane: restore the etcd snapshot on the previous version",
             "ETCDCTL_API=3 etcdctl snapshot restore etcd-before-$TARGET.db"),
        Step("Nodes: the node patch rollback with the previous kubelet"),
    )
    return Procedure("cluster-upgrade", "Kubernetes cluster upgrade", "cluster",
                     f"A new Kubernetes minor (now {platform.kubernetes.version}).",
                     steps, rollback)


def add_tenant(platform: Platform, spec: str) -> Procedure:
    pools = ", ".join(p.name for p in platform.pools)
    steps = (
        Step(f"Add the tenant to the spec: name, quota per pool ({pools}), admins, users, "
             "weight", sh("aiplat spec validate {spec}", spec=spec), "valid"),
        Step("Plan: quotas against capacity", sh("aiplat plan {spec} -d out", spec=spec),
             "exit 0 (no error findings)"),
        Step("Render, validate and lint every layer",
             sh("aiplat kube render {spec} -d out/kube && aiplat kube validate out/kube && "
                "aiplat kube lint out/kube", spec=spec),
             "all exit 0"),
        Step("Review and apply the tenant and the queues",
             "kubectl diff -k out/kube/tenants/$TENANT; kubectl apply -k "
             "out/kube/tenants/$TENANT && kubectl apply -k out/kube/kueue",
             "namespace, roles, quotas, policies and LocalQueue created"),
        Step("Check the ClusterQueue and the rights",
             "kubectl get clusterqueue $TENANT -o jsonpath='{.status.conditions[?(@.type==\""
             "Active\")].status}'; kubectl auth can-i create jobs -n $TENANT "
             "--as=system:serviceaccount:$TENANT:default",
             "True; rights as the spec grants"),
        Step("Refresh monitoring and this runbook",
             sh("aiplat monitoring render {spec} -d out/monitoring && aiplat runbook {spec} "
                "-d out/runbook", spec=spec),
             "files written; reload Prometheus"),
    )
    rollback = (Step("Remove the tenant from the spec, render again and delete its objects",
                     "kubectl delete -k out/kube/tenants/$TENANT"),)
    return Procedure("add-tenant", "Adding a tenant (and changing quotas)", "queues",
                     "A new team or a quota change. Queue alerts (pending, inadmissible, quota, "
                     "preemptions) point here too: most are fixed by a quota change.",
                     steps, rollback)


def _label_step(platform: Platform, spec: str) -> Step:
    """Pools with ``nodeNames`` are labelled by their NodeFeatureRule (kube/render_nodes.py):
    the replacement takes its place in the list; the others by the tree's script."""
    if all(p.node_names for p in platform.pools):
        return Step("Join it; put its name at the failed node's place in pools[].nodeNames",
                    sh("aiplat kube render {spec} -d out/kube && kubectl apply -f "
                       "out/kube/cluster/nodefeaturerules.yaml", spec=spec),
                    "NFD labels aiplat.io/pool=$POOL, its rack and block, and the pool's "
                    "taints (NodeFeatureRule aiplat-pool-$POOL)")
    return Step("Join, label and taint it as its pool, in the failed node's place ($POS: its "
                "place in the pool's order, 0-based, rack by rack: rack R, slot S is "
                "R x nodesPerRack + S)",
                "bash out/kube/cluster/nodes/label-and-taint.sh --at $POS $POOL $NODE",
                "labels aiplat.io/pool=$POOL, the failed node's rack and block, and the pool's "
                "taints"
                + ("; pools with nodeNames: add it there, render and apply "
                   "cluster/nodefeaturerules.yaml" if any(p.node_names for p in platform.pools)
                   else ""))


def replace_node(platform: Platform, spec: str) -> Procedure:
    r = platform.reserve
    approved = platform.versions.approved
    entry_opt = sh(" --entry {entry}", entry=approved[-1].name) if approved else ""
    steps = (
        Step("Confirm the failure on the node (which GPU, which check)",
             sh("aiplat node check {spec} --pool $POOL; aiplat node inventory -o json > "
                "inventory-$NODE.json", spec=spec),
             "the failing device and its serial number for the ticket"),
        *_kueue_drain_steps(),
        Step("Remove the node from the cluster and open the hardware case",
             "kubectl delete node $NODE",
             f"support contract {r.support_contract}; replacement lead time "
             f"{r.replacement_lead_time_days:g} days"),
        Step("Prepare the replacement per the approved matrix",
             sh("aiplat node prepare {spec} --pool $POOL", spec=spec) + entry_opt
             + " -w prepare-$NODE.sh; sudo bash prepare-$NODE.sh && sudo systemctl reboot",
             "reviewed script run, node rebooted"),
        Step("Qualify it: checks, burn-in, baseline",
             sh("aiplat node check {spec} --pool $POOL --matrix && aiplat node burnin "
                "--duration 2h && aiplat node baseline record {spec} --pool $POOL "
                "-w baseline/$NODE.json", spec=spec),
             "all pass"),
        _label_step(platform, spec),
        Step("Check device binding and return it to service",
             "aiplat cdi verify && kubectl uncordon $NODE",
             "GpuMissing silent for $NODE"),
    )
    return Procedure("replace-node", "Replacing a failed GPU node", "nodes",
                     "A GPU fell off the bus, row remapping failed, uncorrectable errors "
                     "persist after a reset, or the node does not boot.", steps)


RECORD_FABRIC = (
    "for n in $NODE $PEER; do mkdir -p rdma/$n; ssh $n ibstat > rdma/$n/ibstat.txt; "
    "ssh $n 'grep -H . /sys/class/infiniband/*/ports/*/*counters/*' > "
    "rdma/$n/ib-counters.txt; done")


def fabric_link() -> Procedure:
    """An InfiniBand or RoCE port the alerts name: record, rank the cause, drain, repair,
    prove the rail, record again and compare."""
    steps = (
        Step("Record the ports of the node and of a healthy peer on the same rails ($PEER); "
             "on RoCE also each interface's counters (ssh $n ethtool -S $IF > "
             "rdma/$n/ethtool-S-$IF.txt)", RECORD_FABRIC,
             "one folder per node: rdma/$NODE, rdma/$PEER"),
        Step("Rank the causes from the recordings",
             "aiplat diagnose rdma rdma",
             "the port, the cause (rail down, degraded rate, bad cable, link flap, PFC storm, "
             "congestion) and its fix; exit 0: the recordings show none"),
        *_kueue_drain_steps(),
        Step("Repair what the cause names: clean and reseat, then replace the cable or "
             "transceiver (or have the switch port checked)", "ssh $NODE ibstat",
             "the port Active, LinkUp, at the rail's rate"),
        Step("Prove the rail against the peer ($DEV: the repaired port's device)",
             "ssh $PEER ib_write_bw -d $DEV --report_gbits -D 10 & sleep 2; ssh $NODE "
             "ib_write_bw -d $DEV --report_gbits -D 10 $PEER > rdma/$NODE/ib_write_bw-$DEV.txt",
             "an average near the link rate (97 % of 400 Gb/s on NDR)"),
        Step("Record again and compare with the first recording",
             "mv rdma rdma-before && " + RECORD_FABRIC + " && aiplat diagnose rdma rdma "
             "--before rdma-before",
             "no cause for $NODE: the error counters no longer move"),
        Step("Return it to service", "kubectl uncordon $NODE",
             "InfinibandPortDown, InfinibandSymbolErrors and RocePfcPauseStorm silent for "
             "$NODE"),
    )
    return Procedure("fabric-link", "Diagnosing and repairing a fabric link (InfiniBand, "
                     "RoCE)", "nodes",
                     "An InfiniBand or RoCE alert names a port (errors, flaps, discards, a "
                     "degraded rate, PFC pause), or a collective runs below the fabric.",
                     steps)


def spec_argument(spec: str) -> str:
    """The spec path as the commands name it: one starting with '-' would be read as an
    option, so it is given as ./-name (quoting does not help there)."""
    return f"./{spec}" if spec.startswith("-") else spec


def procedures(platform: Platform, spec: str = "platform.yaml",
               spares: Mapping[str, int] | None = None) -> list[Procedure]:
    s = dict(spares or {})
    spec = spec_argument(spec)
    return [node_patch(platform, spec, s), driver_upgrade(platform, spec),
            operator_upgrade(platform, spec), kueue_upgrade(platform, spec),
            cluster_upgrade(platform, spec), add_tenant(platform, spec),
            replace_node(platform, spec), fabric_link()]


# ---------------------------------------------------------------------------- document


def _steps_table(title: str, steps: tuple[Step, ...]) -> Table:
    return Table(title=title, columns=["#", "Action", "Command", "Expect"],
                 rows=[[str(i), s.action, Code(text=s.command) if s.command else "—",
                        s.expect or "—"]
                       for i, s in enumerate(steps, 1)],
                 align=["right", "left", "left", "left"])


def gaps(platform: Platform) -> list[str]:
    """What the spec leaves open that a handover needs."""
    out = raci(platform)[1]
    if not platform.operations.escalation:
        out.append("no escalation path: add operations.escalation steps (level, contact, "
                   "afterMinutes)")
    if not platform.operations.maintenance_windows:
        out.append("no maintenance window: add operations.maintenanceWindows "
                   "(name, schedule, durationHours)")
    if not platform.versions.approved:
        out.append("no approved version matrix: add versions.approved")
    return out


def runbook_document(platform: Platform, spec: str = "platform.yaml",
                     spares: Mapping[str, int] | None = None,
                     groups: list[RuleGroup] | None = None) -> Document:
    """The runbook for ``platform``; ``spec`` is the path the commands use, ``spares`` the
    plan's spare nodes per pool (batch sizes), ``groups`` the monitoring rules to link."""
    s = dict(spares or {})
    ops = platform.operations
    procs = procedures(platform, spec, s)
    rows, _ = raci(platform)
    open_items = gaps(platform)
    windows = ops.maintenance_windows
    first_hours = windows[0].duration_hours if windows else None

    sections: list[Section] = [Section(
        id="responsibilities", title="Responsibilities (RACI)",
        paragraphs=["Responsible does the work, accountable approves and answers for it, "
                    "consulted are asked before, informed are told after."],
        tables=[Table(columns=["Area", "Responsible", "Accountable", "Consulted",
                               "Informed"], rows=rows)],
        notes=[g for g in open_items if g.startswith("nobody")],
    )]
    esc_rows = [[str(e.level), e.contact, f"after {e.after_minutes} min"]
                for e in sorted(ops.escalation, key=lambda e: e.level)]
    sections.append(Section(
        id="escalation", title="Escalation",
        paragraphs=["Critical alerts page level 1 at once and climb the levels while "
                    "unacknowledged; warnings open a ticket for the area's responsible; info "
                    "alerts are reviewed weekly."],
        tables=[Table(columns=["Level", "Contact", "When"], rows=esc_rows)] if esc_rows
        else [],
        notes=[] if esc_rows else [g for g in open_items if g.startswith("no escalation")],
    ))
    if groups is None:
        groups = monitoring_rules(platform)
    alert_rows = []
    for g in groups:
        for a in g.alerts:
            area = COMPONENT_AREA.get(a.component, "cluster")
            alert_rows.append([a.name, a.severity, area, owner(platform, area)[0],
                               f"#{a.procedure}" if a.procedure else "—"])
    sections.append(Section(
        id="alerts", title="Alert response",
        paragraphs=["Every alert of aiplat monitoring render, who answers it and the "
                    "procedure it links to (its runbook_url)."],
        tables=[Table(columns=["Alert", "Severity", "Area", "Responsible", "Procedure"],
                      rows=alert_rows)],
    ))
    win_rows = [[w.name, w.schedule, describe_cron(w.schedule), f"{w.duration_hours:g} h"]
                for w in windows]
    sections.append(Section(
        id="maintenance", title="Maintenance windows and canary order",
        paragraphs=[f"Changes that drain nodes run inside a window. One canary node per pool "
                    f"first, then batches no larger than the pool's spare nodes; about "
                    f"{BATCH_MINUTES} minutes per batch (drain, update, reboot, checks)."],
        tables=[
            *([Table(title="Windows", columns=["Name", "Cron", "Reading", "Duration"],
                     rows=win_rows)] if win_rows else []),
            Table(title="Rollout per pool", columns=["Pool", "Nodes", "Canary", "Batch",
                                                      "Batches after canary", "Windows"],
                  rows=[rollout(p, s, first_hours) for p in platform.pools],
                  align=["left", "right", "right", "right", "right", "right"]),
        ],
        notes=[g for g in open_items if g.startswith("no maintenance")],
    ))
    matrix_cols = ["name", "kernel", "firmware", "driver", "cuda", "container_toolkit",
                   "container_runtime", "kubernetes", "gpu_operator", "dra_driver", "kueue"]
    approved = platform.versions.approved
    sections.append(Section(
        id="versions", title="Approved versions",
        paragraphs=["Updates go to the last approved entry; aiplat matrix check and diff "
                    "compare them with the compatibility facts."],
        tables=[Table(columns=[c.replace("_", " ") for c in matrix_cols],
                      rows=[[str(getattr(e, c) or "—") for c in matrix_cols]
                            for e in approved])] if approved else [],
        notes=[] if approved else ["no approved version matrix: add versions.approved"],
    ))
    for p in procs:
        resp, acc = owner(platform, p.area)
        tables = [_steps_table("Steps", p.steps)]
        if p.rollback:
            tables.append(_steps_table("Rollback", p.rollback))
        sections.append(Section(
            id=p.id, title=p.title,
            paragraphs=[p.when, f"Area {p.area}: responsible {resp}, accountable {acc}."],
            tables=tables, notes=list(p.notes)))
    gpus = sum(p.gpus for p in platform.pools)
    return Document(
        title=f"Runbook — {platform.metadata.name}",
        subtitle=f"Generated by aiplat runbook from {spec}. Commands use $POOL, $NODE, $NS, "
                 "$WL, $TENANT, $VERSION and $TARGET: set them first.",
        summary=[
            KeyFigure(label="Pools", value=str(len(platform.pools)),
                      detail=f"{sum(p.nodes for p in platform.pools)} nodes, {gpus} GPUs"),
            KeyFigure(label="Procedures", value=str(len(procs))),
            KeyFigure(label="Alerts linked", value=str(len(alert_rows))),
            KeyFigure(label="Open items", value=str(len(open_items)),
                      detail="notes in their sections" if open_items else "none"),
        ],
        sections=sections,
    )
