"""``aiplat sim`` through click's runner (the lead wires the group into ``aiplat``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from aiplat.cli.sim import sim
from aiplat.errors import InputError


def test_run_example_table() -> None:
    r = CliRunner().invoke(sim, ["run"])
    assert r.exit_code == 0, r.output
    for tenant in ("research", "serving", "batch"):
        assert tenant in r.stdout
    assert "Jain" in r.stdout
    assert "events in" in r.stderr


def test_run_example_json_has_waits_and_fairness() -> None:
    r = CliRunner().invoke(sim, ["run", "-o", "json", "--seed", "3"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert {t["name"] for t in data["tenants"]} == {"research", "serving", "batch"}
    assert 0 < data["jainIndex"] <= 1
    assert data["provisionedGpuHours"] >= data["allocatedGpuHours"] > 0


def test_compare_strategies_side_by_side() -> None:
    r = CliRunner().invoke(sim, ["compare", "--strategy", "fixed", "--strategy", "warm",
                                 "-o", "json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert [row["strategy"] for row in rows] == ["fixed", "warm"]
    fixed, warm = rows
    # the fixed pools keep every node up all month: more provisioned GPU-hours
    assert fixed["provisionedGpuHours"] > warm["provisionedGpuHours"]


def test_fgd_without_data_names_the_fix() -> None:
    r = CliRunner().invoke(sim, ["fgd"])
    assert isinstance(r.exception, InputError)
    assert "--data" in str(r.exception)
    assert r.exception.exit_code == 2


def test_unknown_trace_variant_lists_the_choices(tmp_path: Path) -> None:
    (tmp_path / "openb_node_list_all_node.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\n")
    (tmp_path / "openb_pod_list_default.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\n")
    r = CliRunner().invoke(sim, ["fgd", "--data", str(tmp_path), "--trace", "nope"])
    assert isinstance(r.exception, InputError)
    assert "choose one of default" in str(r.exception)


def test_bad_trace_row_names_file_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "openb_node_list_all_node.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\n")
    (tmp_path / "openb_pod_list_default.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\np1,lots,1024,1,5\n")
    r = CliRunner().invoke(sim, ["fgd", "--data", str(tmp_path), "--seeds", "1"])
    assert isinstance(r.exception, InputError)
    assert "openb_pod_list_default.csv:3: column cpu_milli: 'lots'" in str(r.exception)


def test_fgd_on_a_tiny_trace(tmp_path: Path) -> None:
    (tmp_path / "openb_node_list_all_node.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\nn1,32000,65536,4,V100\n")
    (tmp_path / "openb_pod_list_default.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
        "p0,1000,1024,1,500,\np1,2000,1024,1,1000,V100\np2,1000,1024,2,1000,\n")
    r = CliRunner().invoke(sim, ["fgd", "--data", str(tmp_path), "--seeds", "2", "-o", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert set(data["mean"]["default"]) == {"random", "dotprod", "clustering", "packing",
                                            "bestfit", "fgd"}
    assert all(0 < v <= 100 for v in data["mean"]["default"].values())


@pytest.mark.parametrize("args", [["run", "--strategy", "nope"], ["fgd", "--seeds", "0"]])
def test_bad_options_exit_2(args: list[str]) -> None:
    assert CliRunner().invoke(sim, args).exit_code == 2


def test_run_with_rendered_kueue_objects(tmp_path: Path) -> None:
    objs = tmp_path / "kueue"
    objs.mkdir()
    queues = "\n---\n".join(
        f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {t}}}
spec:
  cohortName: example
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - {{name: h100, resources: [{{name: nvidia.com/gpu, nominalQuota: 24}}]}}
    - {{name: l40s, resources: [{{name: nvidia.com/gpu, nominalQuota: 8}}]}}"""
        for t in ("research", "serving", "batch"))
    (objs / "queues.yaml").write_text(queues)
    r = CliRunner().invoke(sim, ["run", "--kueue", str(objs), "-o", "json"])
    assert r.exit_code == 0, r.output
    assert "warning:" in r.stderr and "namespaceSelector" in r.stderr
    # GPU quota only: the spec's pods also request cpu and memory, which Kueue would not
    # admit - said per queue, and nothing starts
    for t in ("research", "serving", "batch"):
        assert (f"warning: ClusterQueue {t} does not cover cpu, memory, which the spec's pods "
                "request: Kueue admits none of its jobs") in r.stderr
    data = json.loads(r.stdout)
    assert [t["weight"] for t in data["tenants"]] == [1.0, 1.0, 1.0]  # from the objects
    assert [t["started"] for t in data["tenants"]] == [0, 0, 0]


def test_run_with_queues_covering_what_the_pods_request_starts_them(tmp_path: Path) -> None:
    objs = tmp_path / "kueue"
    objs.mkdir()
    res = ("[{name: cpu, nominalQuota: 1000}, {name: memory, nominalQuota: 10Ti}, "
           "{name: nvidia.com/gpu, nominalQuota: 24}]")
    (objs / "queues.yaml").write_text("\n---\n".join([
        *(f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {t}}}
spec:
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors: [{{name: h100, resources: {res}}}, {{name: l40s, resources: {res}}}]"""
          for t in ("research", "serving", "batch")),
        *(f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {{name: {f}}}"
          for f in ("h100", "l40s"))]))
    r = CliRunner().invoke(sim, ["run", "--kueue", str(objs), "-o", "json"])
    assert r.exit_code == 0, r.output
    assert "does not cover" not in r.stderr
    assert all(t["started"] > 0 for t in json.loads(r.stdout)["tenants"])


def test_run_simulates_the_queues_the_tree_renders(tmp_path: Path) -> None:
    """Without --kueue, sim run reads the Kueue objects kube render writes: a spec with fair
    sharing off renders a classic Configuration, and the title says classic."""
    import yaml

    from aiplat.spec import example_text

    doc = yaml.safe_load(example_text())
    doc["kubernetes"]["fairSharing"] = False
    spec = tmp_path / "c.yaml"
    spec.write_text(yaml.safe_dump(doc, sort_keys=False))
    r = CliRunner().invoke(sim, ["run", str(spec)])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0].rstrip().endswith("· classic · queues as kube render "
                                                      "writes them")
    r = CliRunner().invoke(sim, ["run"])
    assert "· fair sharing · queues as kube render writes them" in r.stdout.splitlines()[0]


def _rendered_kueue(tmp_path: Path) -> Path:
    """The example's kueue/ folder as kube render writes it."""
    from aiplat.cli.main import main

    assert main(["kube", "render", "-d", str(tmp_path / "kube")]) == 0
    return tmp_path / "kube" / "kueue"


def _rename_queue(tree: Path, old: str, new: str) -> None:
    import yaml

    for f in tree.glob("*.yaml"):
        docs = list(yaml.safe_load_all(f.read_text()))
        for d in docs:
            if not isinstance(d, dict):
                continue
            if d.get("kind") == "ClusterQueue" and d["metadata"]["name"] == old:
                d["metadata"]["name"] = new
            if d.get("kind") == "LocalQueue" and d["spec"]["clusterQueue"] == old:
                d["spec"]["clusterQueue"] = new
        f.write_text(yaml.safe_dump_all(docs, sort_keys=False))


def test_a_tenants_jobs_go_to_the_queue_its_local_queue_names(tmp_path: Path) -> None:
    """ClusterQueue names are the cluster's, not the spec's tenants': a tenant's jobs go to
    the ClusterQueue of the LocalQueue in its namespace (they ended in a traceback)."""
    tree = _rendered_kueue(tmp_path)
    _rename_queue(tree, "research", "cq-research")
    r = CliRunner().invoke(sim, ["run", "--kueue", str(tree), "-o", "json"])
    assert r.exit_code == 0, r.output
    rows = {t["name"]: t for t in json.loads(r.stdout)["tenants"]}
    assert set(rows) == {"cq-research", "serving", "batch"}
    assert rows["cq-research"]["jobs"] > 0


def test_a_tenant_without_a_queue_is_named(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    tree = _rendered_kueue(tmp_path)
    _rename_queue(tree, "research", "cq-research")
    (tree / "localqueues.yaml").unlink()
    from aiplat.cli.main import main

    assert main(["sim", "run", "--kueue", str(tree)]) == 2
    err = capsys.readouterr().err
    assert "no queue for tenant(s) research (none in its namespace)" in err
    assert "Traceback" not in err


def test_a_flavor_no_pool_has_is_warned(tmp_path: Path) -> None:
    import yaml

    tree = tmp_path / "kueue"
    tree.mkdir()
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
          "metadata": {}, "spec": {"resourceGroups": [
              {"coveredResources": ["nvidia.com/gpu"], "flavors": [
                  {"name": "fast", "resources": [{"name": "nvidia.com/gpu",
                                                  "nominalQuota": 8}]}]}]}}
    (tree / "q.yaml").write_text(yaml.safe_dump_all(
        [{**cq, "metadata": {"name": t}} for t in ("research", "serving", "batch")]))
    r = CliRunner().invoke(sim, ["run", "--kueue", str(tree), "--months", "0.1"])
    assert r.exit_code == 0, r.output
    assert ("warning: ClusterQueue research: flavor fast is not a pool of the spec (h100, "
            "l40s)") in r.stderr


def test_classic_changes_who_may_preempt(tmp_path: Path) -> None:
    """The l40s quota moved to the cohort (both l40s tenants borrow all of it) and batch
    weighted 10: with fair sharing, batch's low share lets it preempt serving's borrowed
    RAG replicas (Kueue ignores priority across queues there); classic Kueue lets a
    borrowing workload reclaim nothing (borrowWithinCohort: Never), so batch waits."""
    import yaml

    tree = _rendered_kueue(tmp_path)
    path = tree / "clusterqueues.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    for d in docs:
        for f in (f for g in d["spec"]["resourceGroups"] for f in g["flavors"]):
            if f["name"] == "l40s":
                f["resources"] = [{"name": r["name"], "nominalQuota": "0"}
                                  for r in f["resources"]]
        if d["metadata"]["name"] == "batch":
            d["spec"]["fairSharing"] = {"weight": "10"}
    path.write_text(yaml.safe_dump_all(docs))
    quota = [("cpu", "370"), ("memory", "3006Gi"), ("gpu-l40s-48gb", "24")]
    (tree / "cohorts.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
        "metadata": {"name": "example"}, "spec": {"resourceGroups": [{
            "coveredResources": [r for r, _ in quota],
            "flavors": [{"name": "l40s", "resources": [
                {"name": r, "nominalQuota": q} for r, q in quota]}]}]}}))
    out = {}
    for mode in ("fair", "classic"):
        r = CliRunner().invoke(sim, ["run", "--kueue", str(tree), "-o", "json",
                                     *(["--classic"] if mode == "classic" else [])])
        assert r.exit_code == 0, r.output
        out[mode] = json.loads(r.stdout)
    fair, classic = ({t["name"]: t for t in out[m]["tenants"]} for m in ("fair", "classic"))
    assert out["fair"]["preemptions"] > 0 and out["classic"]["preemptions"] == 0
    assert fair["batch"]["waitP95H"] < 1 < classic["batch"]["waitP95H"]
    assert fair["serving"]["gpuHours"] < classic["serving"]["gpuHours"]
