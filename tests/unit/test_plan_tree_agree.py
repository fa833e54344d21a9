"""Issue #43: what the tree runs is what the plan sized.

The defect first (docs-search, 11 replicas of one L40S in the plan, was a batch Job of 3 pods
of 4 GPUs running vLLM with tensor parallel 4 and no route), then ``kube.agree`` — the tree read
as the cluster reads it, against ``plan.pods`` — over spec variants written here and generated
by hypothesis: every variant's tree must agree on pods, GPUs per pod and the servers' tensor and
pipeline parallelism, and the GPUs must add up to the plan's. A tree edited after rendering must
be caught (the check can fail).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiplat.catalog import load_catalog
from aiplat.errors import InputError
from aiplat.kube.agree import disagreements
from aiplat.kube.render import Rendered, render_plan
from aiplat.plan.build import plan_resolved
from aiplat.plan.models import Plan
from aiplat.plan.resolve import resolve
from aiplat.spec.load import example_text, parse_platform
from aiplat.spec.models import Platform

Obj = dict[str, Any]
CATALOG = load_catalog()
EXAMPLE = yaml.safe_load(example_text())


def _build(edit: Callable[[Obj], None] | None = None) -> tuple[Platform, Plan, Rendered]:
    data = copy.deepcopy(EXAMPLE)
    if edit is not None:
        edit(data)
    platform = parse_platform(yaml.safe_dump(data, sort_keys=False), "variant.yaml", CATALOG)
    resolved = resolve(platform, CATALOG)
    plan = plan_resolved(resolved)
    return platform, plan, render_plan(resolved, plan)


def _named(rendered: Rendered, kind: str, name: str) -> Obj:
    return next(o for o in rendered.objects()
                if o["kind"] == kind and o["metadata"]["name"] == name)


def test_docs_search_runs_the_replicas_it_was_sized_for_behind_the_gateway() -> None:
    _, plan, rendered = _build()
    w = next(w for w in plan.workloads if w.name == "docs-search")
    serve = next(g for g in w.replica_groups if g.role == "serve")
    embed = next(g for g in w.replica_groups if g.role == "embed")
    assert (serve.replicas, serve.gpus, serve.tensor_parallel) == (11, 1, 1)
    assert w.gpus == serve.replicas * serve.gpus + embed.replicas * embed.gpus

    d = _named(rendered, "Deployment", "docs-search")
    assert d["spec"]["replicas"] == 11
    pod = d["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "l40s-gpu-1"}]
    args = pod["containers"][0]["args"]
    assert args[args.index("--tensor-parallel-size") + 1] == "1"
    assert "restartPolicy" not in pod  # a Deployment's pods restart
    assert not any(o["kind"] == "Job" and o["metadata"]["name"] == "docs-search"
                   for o in rendered.objects())
    # reached like any served model: an InferencePool, its route and endpoint picker
    assert _named(rendered, "InferencePool", "docs-search")["spec"]["selector"] == {
        "matchLabels": {"app.kubernetes.io/name": "docs-search"}}
    _named(rendered, "HTTPRoute", "docs-search")
    _named(rendered, "Deployment", "docs-search-epp")
    # the query encoder: its own pods (not in the pool), a Service the RAG app calls
    e = _named(rendered, "Deployment", "docs-search-embed")
    assert e["spec"]["replicas"] == embed.replicas
    assert "--runner" in e["spec"]["template"]["spec"]["containers"][0]["args"]
    assert _named(rendered, "Service", "docs-search-embed")["spec"]["selector"] == \
        e["spec"]["selector"]["matchLabels"]
    # Four one-GPU pods share an L40S node with two NVMe disks: each caches its model in an
    # emptyDir, not in a local volume there is not a disk for.
    vol = next(v for v in pod["volumes"] if v["name"] == "model")
    assert "emptyDir" in vol


def test_batch_inference_runs_one_pod_per_replica() -> None:
    _, plan, rendered = _build()
    w = next(w for w in plan.workloads if w.name == "nightly-eval")
    job = _named(rendered, "Job", "nightly-eval")
    assert job["spec"]["parallelism"] == w.replica_groups[0].replicas == w.gpus  # TP 1


def test_the_example_tree_agrees_with_its_plan_and_the_check_can_fail() -> None:
    platform, plan, rendered = _build()
    objs = rendered.objects()
    assert disagreements(plan, platform, objs) == []
    bad = copy.deepcopy(objs)
    _dep = next(o for o in bad if o["kind"] == "Deployment"
                and o["metadata"]["name"] == "docs-search")
    _dep["spec"]["replicas"] = 3
    _dep["spec"]["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = \
        "l40s-gpu-4"
    found = disagreements(plan, platform, bad)
    assert any("docs-search" in f and "11 pods × 1 GPUs" in f and "3 pods × 4 GPUs" in f
               for f in found), found
    assert any("plan 12 GPUs; tree 13" in f for f in found), found


def _workload(d: Obj, name: str) -> Obj:
    return next(w for w in d["workloads"] if w["name"] == name)


def _pool(d: Obj, name: str) -> Obj:
    return next(p for p in d["pools"] if p["name"] == name)


def _set(path: str, value: Any, where: str = "workload", name: str = "assistant"
         ) -> Callable[[Obj], None]:
    def edit(d: Obj) -> None:
        target = _workload(d, name) if where == "workload" else _pool(d, name)
        *head, last = path.split(".")
        for k in head:
            target = target.setdefault(k, {})
        target[last] = value
    return edit


def _both(*edits: Callable[[Obj], None]) -> Callable[[Obj], None]:
    def edit(d: Obj) -> None:
        for e in edits:
            e(d)
    return edit


def _l40s_on_device_plugin(d: Obj) -> None:
    _pool(d, "l40s").pop("gpuResources", None)


def _assistant_on_l40s(d: Obj) -> None:
    _workload(d, "assistant")["pool"] = "l40s"
    _workload(d, "assistant")["model"] = "llama-3-8b"


def _pretrain_on_12(d: Obj) -> None:
    _workload(d, "domain-pretrain")["parallelism"]["tensor"] = 4
    _workload(d, "domain-pretrain")["slo"] = {"targetDays": 60}


VARIANTS: dict[str, Callable[[Obj], None] | None] = {
    "example": None,
    "assistant-qps-1": _set("slo.queriesPerSecond", 1),
    "assistant-qps-20": _set("slo.queriesPerSecond", 20),
    "assistant-fp8": _set("precision", "fp8"),
    "assistant-disaggregated": _set("serving.disaggregatedPrefill", True),
    "assistant-disaggregated-tp2": _both(_set("serving.disaggregatedPrefill", True),
                                         _set("serving.prefillTensorParallel", 8)),
    "assistant-chunked": _set("serving.chunkedPrefillTokens", 2048),
    "assistant-on-l40s": _assistant_on_l40s,
    "assistant-on-l40s-device-plugin": _both(_assistant_on_l40s, _l40s_on_device_plugin),
    "docs-search-qps-40": _set("slo.queriesPerSecond", 40, name="docs-search"),
    "docs-search-qps-2": _set("slo.queriesPerSecond", 2, name="docs-search"),
    "docs-search-device-plugin": _l40s_on_device_plugin,
    "docs-search-on-h100": _set("pool", "h100", name="docs-search"),
    "docs-search-ivf-pq": _set("rag.index", "ivf-pq", name="docs-search"),
    "nightly-eval-4h": _set("slo.completionHours", 4, name="nightly-eval"),
    "nightly-eval-24h": _set("slo.completionHours", 24, name="nightly-eval"),
    "nightly-eval-on-h100": _set("pool", "h100", name="nightly-eval"),
    "pretrain-tp4-60-days": _pretrain_on_12,
    "pretrain-7-days": _both(_set("slo.targetDays", 7, name="domain-pretrain"),
                             _set("parallelism.globalBatch", 896, name="domain-pretrain")),
    "finetune-tp4": _set("parallelism.tensor", 4, name="assistant-finetune"),
    "l40s-8-gpus": _both(_set("node.gpu.count", 8, "pool", "l40s"),
                         _set("node.nodeType", None, "pool", "l40s")),
    "l40s-2-gpus": _both(_set("node.gpu.count", 2, "pool", "l40s"),
                         _set("node.nodeType", None, "pool", "l40s")),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_variants_tree_runs_the_planned_pods(variant: str) -> None:
    try:
        platform, plan, rendered = _build(VARIANTS[variant])
    except InputError as e:  # a variant the spec refuses proves nothing: make it valid
        pytest.fail(f"variant {variant} is not a valid spec: {e}")
    assert disagreements(plan, platform, rendered.objects()) == []
    for w in plan.workloads:
        if w.replica_groups:
            assert sum(g.replicas * g.gpus for g in w.replica_groups) == w.gpus, w.name


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries({
    "qps": st.floats(0.5, 60), "ttft": st.integers(400, 4000), "out": st.integers(50, 800),
    "rag_qps": st.floats(0.5, 60), "hours": st.floats(2, 48),
    "gpus": st.sampled_from([2, 4, 8])}))
def test_generated_specs_trees_run_the_planned_pods(v: dict[str, Any]) -> None:
    edit = _both(_set("slo.queriesPerSecond", round(v["qps"], 2)),
                 _set("slo.timeToFirstTokenMs", v["ttft"]), _set("slo.outputTokens", v["out"]),
                 _set("slo.queriesPerSecond", round(v["rag_qps"], 2), name="docs-search"),
                 _set("slo.completionHours", round(v["hours"], 1), name="nightly-eval"),
                 _set("node.gpu.count", v["gpus"], "pool", "l40s"),
                 _set("node.nodeType", None, "pool", "l40s"))
    platform, plan, rendered = _build(edit)
    assert disagreements(plan, platform, rendered.objects()) == []


def test_disaggregated_prefill_and_decode_are_two_deployments_in_one_pool() -> None:
    platform, plan, rendered = _build(VARIANTS["assistant-disaggregated-tp2"])
    prefill = _named(rendered, "Deployment", "assistant-prefill")
    decode = _named(rendered, "Deployment", "assistant-decode")
    labels = [d["spec"]["template"]["metadata"]["labels"] for d in (prefill, decode)]
    assert [x["app.kubernetes.io/component"] for x in labels] == ["prefill", "decode"]
    pool = _named(rendered, "InferencePool", "assistant")["spec"]["selector"]["matchLabels"]
    assert all(pool.items() <= x.items() for x in labels)
    # two runs under one name would be one object on the cluster: the check says so
    twin = copy.deepcopy(decode)
    twin["metadata"]["name"] = "assistant-prefill"
    found = disagreements(plan, platform, [*rendered.objects(), twin])
    assert any("Deployment serving/assistant-prefill is in the tree 2 times" in f
               for f in found), found
