"""Plan and tree, figure by figure: what the rendered workloads run against what was sized.

The tree is read as the cluster would read it, not from the renderer's inputs: a
Deployment's replicas, a Job's parallelism (times a JobSet's replicas), a LeaderWorkerSet's
replicas times its group size (its leader's pod read for the rest), a pod's GPUs from its
``nvidia.com/gpu``/MIG limit or the count of the ResourceClaimTemplate it names, and a vLLM
container's ``--tensor-parallel-size``/``--pipeline-parallel-size``. The plan's side is
``plan.pods.pod_groups``. Each difference is stated both ways; ``aiplat plan`` reports any as
an error (a renderer that works a figure out again is a bug, not a judgement).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

from aiplat.plan.models import Plan
from aiplat.plan.pods import COMPONENTS, pod_groups
from aiplat.spec.models import Platform

Obj = dict[str, Any]
Shape = tuple[str, int, int, int | None, int | None]
"""(component, pods, GPUs per pod, tensor parallel, pipeline parallel): the component is
``main`` or the pods' ``app.kubernetes.io/component`` (prefill, decode, embed); parallelism
None where the pods run no server the tree sets it for (training, batch, an encoder)."""

SERVERS = ("serve", "prefill", "decode")

GPU_RESOURCES = ("nvidia.com/gpu", "nvidia.com/mig-")
RUNS = ("Deployment", "Job", "JobSet", "LeaderWorkerSet")


def disagreements(plan: Plan, platform: Platform, objs: list[Obj]) -> list[str]:
    """Each figure on which the tree (``objs``) and the plan differ, per workload."""
    tree = tree_shapes(objs)
    gpn = {p.name: p.gpus_per_node for p in plan.pools}
    seen = Counter((o.get("kind"), (o.get("metadata") or {}).get("namespace"),
                    (o.get("metadata") or {}).get("name")) for o in objs if o.get("kind") in RUNS)
    out = [f"{kind} {ns}/{name} is in the tree {n} times: the last applied replaces the others"
           for (kind, ns, name), n in seen.items() if n > 1]
    for w in plan.workloads:
        spec = platform.pool(w.pool)
        mig = spec is not None and bool(spec.sharing.mig_layout)
        want: Counter[Shape] = Counter(
            (g.role if g.role in COMPONENTS else "main", g.pods, g.gpus,
             *((g.tensor_parallel, g.pipeline_parallel) if g.role in SERVERS else (None, None)))
            for g in pod_groups(w, gpn[w.pool], mig=mig))
        rendered = tree.get((w.tenant, w.name), Counter())
        if want != rendered:
            out.append(f"workload {w.name}: plan {_say(want)}; tree {_say(rendered)}")
        gpus = sum(p * g for _, p, g, *_ in rendered.elements())
        if gpus != w.gpus:
            out.append(f"workload {w.name}: plan {w.gpus} GPUs; tree {gpus}")
    return out


def tree_shapes(objs: list[Obj]) -> dict[tuple[str, str], Counter[Shape]]:
    """(namespace, workload) -> the shapes of the queued runs the tree holds for it."""
    claims = {(str(o["metadata"].get("namespace", "")), o["metadata"]["name"]): _claim_count(o)
              for o in objs if o.get("kind") == "ResourceClaimTemplate"}
    out: dict[tuple[str, str], Counter[Shape]] = {}
    for o in objs:
        meta = o.get("metadata") or {}
        if o.get("kind") not in RUNS or "kueue.x-k8s.io/queue-name" not in (
                meta.get("labels") or {}):
            continue
        pods, template = _pods(o)
        labels = template.get("metadata", {}).get("labels") or {}
        component = labels.get("app.kubernetes.io/component", "main")
        workload = labels.get("app.kubernetes.io/name", meta["name"]).removesuffix("-embed")
        ns = str(meta.get("namespace", ""))
        spec = template.get("spec") or {}
        gpus = sum(_gpus(c, spec, claims, ns) for c in spec.get("containers") or [])
        tp, pp = _parallel(spec)
        out.setdefault((ns, workload), Counter())[(component, pods, gpus, tp, pp)] += 1
    return out


def _pods(o: Obj) -> tuple[int, Obj]:
    spec = o.get("spec") or {}
    if o["kind"] == "Deployment":
        return int(spec.get("replicas", 1)), spec.get("template") or {}
    if o["kind"] == "Job":
        return int(spec.get("parallelism", 1)), spec.get("template") or {}
    if o["kind"] == "LeaderWorkerSet":  # replicas groups of size pods; the leader's shape
        lwt = spec.get("leaderWorkerTemplate") or {}
        template = lwt.get("leaderTemplate") or lwt.get("workerTemplate") or {}
        return int(spec.get("replicas", 1)) * int(lwt.get("size", 1)), template
    total, template = 0, cast(Obj, {})
    for rj in spec.get("replicatedJobs") or []:
        job = (rj.get("template") or {}).get("spec") or {}
        total += int(rj.get("replicas", 1)) * int(job.get("parallelism", 1))
        template = job.get("template") or {}
    return total, template


def _gpus(container: Obj, spec: Obj, claims: dict[tuple[str, str], int], ns: str) -> int:
    limits = (container.get("resources") or {}).get("limits") or {}
    n = sum(int(v) for k, v in limits.items() if k.startswith(GPU_RESOURCES))
    used = {c.get("name") for c in (container.get("resources") or {}).get("claims") or []}
    for rc in spec.get("resourceClaims") or []:
        if rc.get("name") in used:
            n += claims.get((ns, rc.get("resourceClaimTemplateName", "")), 0)
    return n


def _claim_count(o: Obj) -> int:
    reqs = (((o.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests") or []
    return sum(int((r.get("exactly") or {}).get("count", 1)) for r in reqs)


def _parallel(spec: Obj) -> tuple[int | None, int | None]:
    for c in spec.get("containers") or []:
        args = [str(a) for a in c.get("args") or []]
        if "--tensor-parallel-size" in args:
            tp = int(args[args.index("--tensor-parallel-size") + 1])
            pp = (int(args[args.index("--pipeline-parallel-size") + 1])
                  if "--pipeline-parallel-size" in args else 1)
            return tp, pp
    return None, None


def _say(shapes: Counter[Shape]) -> str:
    parts = []
    for (component, pods, gpus, tp, pp), n in sorted(shapes.items(), key=str):
        layout = f" (TP {tp}" + (f", PP {pp})" if pp and pp > 1 else ")") if tp else ""
        what = "" if component == "main" else f"{component}: "
        times = f"{n} × " if n > 1 else ""
        parts.append(f"{what}{times}{pods} pods × {gpus} GPUs{layout}")
    return ", ".join(parts) or "nothing"
