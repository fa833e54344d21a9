"""Benchmark: render + validate + lint for a generated 50-tenant, 10-pool platform.

Prints the wall time of each stage and two ratios measured in the same run:
- validation against the peer, ``kubernetes_validate.validate`` (which re-reads its schema
  files on every call), on a sample of the same built-in objects: how much the cached
  validators save;
- each stage against a ceiling: ``yaml`` serialisation of the same objects with the C dumper
  (the least any render that writes YAML must cost).

Run: ``.venv/bin/python bench/kube.py [--crd-dir ../shared/schemas]``. No assertions: numbers.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import yaml

from aiplat.catalog import load_catalog
from aiplat.kube import CrdIndex, lint, load_crds, validate_objects
from aiplat.kube.pipeline import rendered_items
from aiplat.kube.render import render_plan
from aiplat.plan.build import plan_resolved
from aiplat.plan.resolve import resolve
from aiplat.spec import parse_platform

POOL_TYPES: list[tuple[dict[str, Any], int, int, dict[str, Any]]] = [
    ({"model": "H100-SXM-80GB", "count": 8}, 112, 2048, {}),
    ({"model": "L40S", "count": 4}, 64, 512, {"strategy": "time-slicing", "replicas": 4}),
    ({"model": "A100-SXM4-80GB", "count": 8}, 128, 1024,
     {"strategy": "mig", "migLayout": ["3g.40gb", "2g.20gb", "2g.20gb"]}),
    ({"model": "H200-SXM-141GB", "count": 8}, 112, 2048, {}),
    ({"model": "L4-24GB", "count": 8}, 64, 512, {"strategy": "mps", "replicas": 2}),
]


def generated_spec(tenants: int = 50, pools: int = 10, nodes: int = 20) -> dict[str, Any]:
    pool_list = []
    for i in range(pools):
        gpu, cores, mem, sharing = POOL_TYPES[i % len(POOL_TYPES)]
        pool: dict[str, Any] = {
            "name": f"pool-{i}", "zone": f"zone-{i % 3}",
            "node": {"gpu": gpu, "cpuCores": cores, "memoryGiB": mem, "powerKW": 6},
            "count": nodes, "topology": {"nodesPerRack": 4, "racksPerBlock": 4},
            "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}
        if sharing:
            pool["sharing"] = sharing
        pool_list.append(pool)
    units = []
    for i in range(pools):
        gpu, _c, _m, sharing = POOL_TYPES[i % len(POOL_TYPES)]
        per_gpu = (len(sharing["migLayout"]) if sharing.get("migLayout")
                   else sharing.get("replicas", 1))
        units.append(nodes * gpu["count"] * per_gpu)
    tenant_list = []
    for t in range(tenants):
        quota = {}
        for k in (t % pools, (t + 3) % pools):
            share = units[k] // (2 * tenants // pools + 1)
            quota[f"pool-{k}"] = {"gpus": share, "borrowingLimit": share // 2}
        tenant_list.append({"name": f"team-{t:02d}", "weight": 1 + t % 3, "quota": quota,
                            "admins": [f"team-{t:02d}-leads"], "users": [f"team-{t:02d}"]})
    return {
        "apiVersion": "aiplat/v1alpha1", "kind": "Platform",
        "metadata": {"name": "bench"},
        "kubernetes": {"version": "1.34"},
        "site": {"powerBudgetKW": 5000, "rackPowerLimitKW": 40},
        "pools": pool_list, "tenants": tenant_list,
        "storage": {"classes": [{"name": "shared-fs", "tier": "file", "capacityTB": 2000,
                                 "parameters": {"server": "nfs", "share": "/exports"}},
                                {"name": "scratch", "tier": "local-nvme", "capacityTB": 100}]},
        "network": {"segments": [{"name": "storage", "purpose": "storage",
                                  "cidr": "10.20.0.0/16"}]},
        "versions": {"approved": [{"name": "r580", "driver": "580.95.05"}]},
    }


def timed(fn: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--crd-dir", default=str(Path(__file__).parents[1].parent / "shared" /
                                             "schemas"))
    ap.add_argument("--peer-sample", type=int, default=40)
    args = ap.parse_args()
    catalog = load_catalog()
    text = yaml.safe_dump(generated_spec(), sort_keys=False)
    platform, t_spec = timed(lambda: parse_platform(text, "bench.yaml", catalog))
    crds, t_crd = timed(lambda: load_crds(args.crd_dir) if Path(args.crd_dir).is_dir()
                        else CrdIndex())
    resolved = resolve(platform, catalog)
    plan = plan_resolved(resolved)  # sizing is plan's time (bench/plan.py), not the renderer's
    rendered, t_render = timed(lambda: render_plan(resolved, plan))
    files, t_files = timed(rendered.files)
    items = rendered_items(rendered)
    result, t_val = timed(lambda: validate_objects(items, "1.34", crds))
    findings, t_lint = timed(lambda: lint(rendered.objects(), rendered.inventory))
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    _, t_ceiling = timed(lambda: [yaml.dump(o, Dumper=dumper, sort_keys=False)
                                  for _f, o in items])

    builtin = [o for _f, o in items if not str(o["apiVersion"]).startswith(
        ("kueue.", "jobset.", "gateway.", "inference.", "snapshot.", "groupsnapshot."))]
    sample = builtin[: args.peer_sample]

    def peer() -> None:
        for o in sample:
            kubernetes_validate.validate(o, "1.34", strict=True)
    _, t_peer = timed(peer)
    ours = validate_objects([("f", o) for o in sample], "1.34", crds)
    _, t_ours = timed(lambda: validate_objects([("f", o) for o in sample], "1.34", crds))
    assert ours.ok

    n = len(items)
    print(f"spec: {len(platform.tenants)} tenants, {len(platform.pools)} pools; "
          f"{n} objects in {len(files)} files; crds: {len(crds.schemas)} schemas")
    print(f"{'stage':<28}{'seconds':>10}{'objects/s':>12}{'× YAML dump':>13}")
    for name, t in (("parse spec", t_spec), ("load CRDs (once)", t_crd),
                    ("render (objects)", t_render), ("render (YAML files)", t_files),
                    ("validate 1.34 (all)", t_val), ("lint", t_lint),
                    ("ceiling: YAML dump (C)", t_ceiling)):
        print(f"{name:<28}{t:>10.3f}{n / t if t else 0:>12,.0f}{t / t_ceiling:>13.1f}")
    total = t_render + t_files + t_val + t_lint
    print(f"render + validate + lint: {total:.2f} s; validation {len(result.errors)} errors, "
          f"lint {len(findings)} findings")
    print(f"validation of {len(sample)} built-in objects: ours {t_ours * 1000:.1f} ms (warm "
          f"cache), kubernetes-validate {t_peer * 1000:.1f} ms → {t_peer / t_ours:.0f}× faster")


if __name__ == "__main__":
    main()
