"""``aiplat slurm render``: the Slurm files agree with the plan's pools and tenants, and no
spec string reaches the accounts script unquoted. The real slurmctld/slurmd/slurmdbd run
them in tests/integration/test_slurm_live.py."""

from __future__ import annotations

import re
import shlex
import subprocess
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.cli.main import main
from aiplat.errors import InputError
from aiplat.slurm import slurm_outputs
from aiplat.slurm.accounts import fairshare
from aiplat.slurm.nodes import hostlist
from aiplat.spec import example_text, parse_platform
from aiplat.spec.models import Platform


def platform_from(edit: Any = None) -> Platform:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return parse_platform(yaml.safe_dump(data, sort_keys=False), "test.yaml", load_catalog())


def render(edit: Any = None, **kw: Any) -> tuple[dict[str, str], Any]:
    out = slurm_outputs(platform_from(edit), load_catalog(), **kw)
    return out.files, out.plan


def lines(text: str, key: str) -> list[dict[str, str]]:
    """Each ``key=...`` line as its fields."""
    return [dict(f.split("=", 1) for f in line.split())
            for line in text.splitlines() if line.startswith(f"{key}=")]


def expand(hosts: str) -> list[str]:
    """Slurm host list -> names (the subset aiplat writes: prefix[a-b,c])."""
    out: list[str] = []
    for prefix, ranges, single in re.findall(r"([^,\[]+)(?:\[([^\]]+)\]|())(?:,|$)", hosts):
        if not ranges:
            out.append(prefix)
            continue
        for part in ranges.split(","):
            a, _, b = part.partition("-")
            out += [f"{prefix}{i}" for i in range(int(a), int(b or a) + 1)]
        del single
    return out


def test_example_nodes_and_gres_agree_with_the_plans_pools() -> None:
    files, plan = render()
    nodes = {n["NodeName"]: n for n in lines(files["slurm.conf"], "NodeName")}
    parts = {p["PartitionName"]: p for p in lines(files["slurm.conf"], "PartitionName")}
    assert list(parts) == [p.name for p in plan.pools]
    assert parts["h100"]["Default"] == "YES" and parts["l40s"]["Default"] == "NO"
    for pool in plan.pools:
        (names, node), = [(k, v) for k, v in nodes.items() if k.startswith(f"{pool.name}-")]
        assert expand(names) == [f"{pool.name}-{i}" for i in range(pool.nodes)]
        assert expand(parts[pool.name]["Nodes"]) == expand(names)
        kind, gtype, count = node["Gres"].split(":")
        assert kind == "gpu" and int(count) == pool.gpus_per_node
        cpus = int(node["CPUs"])
        assert cpus == int(node["Sockets"]) * int(node["CoresPerSocket"])
        assert node["ThreadsPerCore"] == "1"
        gres = lines(files["gres.conf"], "NodeName")
        assert {"NodeName": names, "Name": "gpu", "Type": gtype,
                "File": f"/dev/nvidia[0-{pool.gpus_per_node - 1}]"} in gres
    assert nodes["h100-[0-5]"]["CPUs"] == "112" and nodes["h100-[0-5]"]["Sockets"] == "2"
    # memory less the plan's OS reservation (2048 GiB - 41 GiB)
    assert nodes["h100-[0-5]"]["RealMemory"] == str((2048 - 41) * 1024)


def test_example_conf_has_the_required_plugins_and_accounting() -> None:
    conf = render()[0]["slurm.conf"]
    for line in ("ClusterName=example", "SlurmctldHost=slurmctld", "GresTypes=gpu",
                 "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core_Memory",
                 "ProctrackType=proctrack/cgroup", "TaskPlugin=task/cgroup,task/affinity",
                 "TopologyPlugin=topology/tree", "PriorityType=priority/multifactor",
                 "AccountingStorageType=accounting_storage/slurmdbd",
                 "AccountingStorageEnforce=associations,limits,qos",
                 "AccountingStorageTRES=gres/gpu,gres/gpu:h100-sxm-80gb,gres/gpu:l40s-48gb"):
        assert line in conf.splitlines(), line
    assert "ThreadsPerCore=1: SMT threads" in conf  # the assumption is said in the file
    cgroup = render()[0]["cgroup.conf"].splitlines()
    assert {"ConstrainDevices=yes", "ConstrainCores=yes", "ConstrainRAMSpace=yes"} <= set(cgroup)


def test_topology_uses_the_kubernetes_trees_rack_and_block_names() -> None:
    from aiplat.kube.facts import pool_facts
    from aiplat.plan.resolve import resolve

    topo = render()[0]["topology.conf"]
    switches = {s["SwitchName"]: s for s in lines(topo, "SwitchName")}
    facts = {f.name: f for f in pool_facts(resolve(platform_from(), load_catalog()))}
    for name, f in facts.items():
        t = f.spec.topology
        for i in range(f.nodes):
            labels = f.rack_labels(i)
            rack, block = labels[t.rack_label], labels[t.block_label]
            assert f.node_name(i) in expand(switches[rack]["Nodes"])
            assert rack in expand(switches[block]["Switches"])
        assert name  # every pool laid out
    assert switches["h100-rack-0"]["Nodes"] == "h100-[0-1]"
    assert switches["h100-block-0"]["Switches"] == "h100-rack-[0-2]"
    assert expand(switches["spine"]["Switches"]) == ["h100-block-0", "l40s-block-0"]


def test_accounts_carry_weights_quotas_and_partition_access() -> None:
    files, _ = render()
    script = files["sacctmgr.sh"]
    assert "set fairshare=200 grptres=gres/gpu=44,gres/gpu:h100-sxm-80gb=44" in script
    # serving: h100 without borrowingLimit -> the pool's 48; l40s 16 + 8
    assert "fairshare=100 grptres=gres/gpu=72,gres/gpu:h100-sxm-80gb=48," \
           "gres/gpu:l40s-48gb=24" in script
    assert "fairshare=50 grptres=gres/gpu=24,gres/gpu:l40s-48gb=24" in script
    parts = {p["PartitionName"]: p for p in lines(files["slurm.conf"], "PartitionName")}
    assert parts["h100"]["AllowAccounts"] == "research,serving"
    assert parts["l40s"]["AllowAccounts"] == "serving,batch"


@pytest.mark.parametrize(("weight", "shares"), [(2, 200), (0.5, 50), (0.001, 1), (0, 0)])
def test_fairshare_is_weight_times_100(weight: float, shares: int) -> None:
    assert fairshare(weight) == shares


HOSTILE = "team's $(touch /tmp/pwned) `id`; rm -rf / \"x\""


def test_hostile_spec_strings_are_quoted_in_the_script() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["tenants"][0]["description"] = HOSTILE
        d["tenants"][0]["users"] = ["ml team $(reboot)", "a'b"]
        d["tenants"][0]["admins"] = ["oidc:leads;id"]

    script = render(edit)[0]["sacctmgr.sh"]
    assert f"description={shlex.quote(HOSTILE)}" in script
    for group in ("ml team $(reboot)", "a'b", "oidc:leads;id"):
        assert f"$(members {shlex.quote(group)})" in script
    # bash parses it: every spec value is one word, nothing of it runs at parse time
    done = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    for conf in ("slurm.conf", "gres.conf", "topology.conf"):
        assert "$(" not in render(edit)[0][conf]


def test_a_variant_with_sharing_mig_and_a_cpu_pool() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["pools"][1]["sharing"] = {"strategy": "time-slicing", "replicas": 4}
        d["pools"].append({"name": "a100", "node": {"gpu": {"model": "A100-SXM4-80GB",
                                                             "count": 4},
                                                     "cpuCores": 63, "memoryGiB": 1024},
                           "count": 3, "sharing": {"strategy": "mig",
                                                   "migLayout": ["3g.40gb", "3g.40gb"]}})
        d["pools"].append({"name": "cpu", "node": {"cpuCores": 32, "memoryGiB": 128},
                           "count": 1})
        d["tenants"][2]["quota"]["a100"] = {"gpus": 8}

    files, plan = render(edit)
    nodes = {n["NodeName"]: n for n in lines(files["slurm.conf"], "NodeName")}
    assert nodes["l40s-[0-5]"]["Gres"] == "gpu:l40s-48gb:4,shard:16"
    assert nodes["a100-[0-2]"]["Gres"] == "gpu:3g.40gb:8"
    assert nodes["a100-[0-2]"]["Sockets"] == "1"  # an odd core count: one socket
    assert "Gres" not in nodes["cpu-0"]
    assert "GresTypes=gpu,shard" in files["slurm.conf"]
    assert "NodeName=l40s-[0-5] Name=shard Count=16" in files["gres.conf"]
    assert "NodeName=a100-[0-2] AutoDetect=nvml" in files["gres.conf"]
    assert "gres/gpu:3g.40gb=24" in files["sacctmgr.sh"]  # no borrowingLimit: all 24 MIGs
    assert "gres/shard=" in files["sacctmgr.sh"]
    parts = {p["PartitionName"]: p for p in lines(files["slurm.conf"], "PartitionName")}
    assert parts["cpu"]["AllowAccounts"] == "root"  # no tenant has quota there
    assert [p.name for p in plan.pools] == list(parts)


def test_a_bare_metal_spec_is_recommended_bare_metal() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["tenants"] = d["tenants"][:1]
        d["tenants"][0]["quota"] = {"h100": {"gpus": 48}}
        d["workloads"] = [w for w in d["workloads"] if w["tenant"] == "research"]
        d["pools"] = d["pools"][:1]
        d.setdefault("operations", {})["kubernetesExperience"] = False

    files, plan = render(edit)
    assert plan.deployment.recommendation == "bare_metal"
    assert "recommends: bare_metal" in files["slurm.conf"]


@pytest.mark.parametrize("edit", [
    lambda d: d["pools"][0].update(name="default"),
    lambda d: d["tenants"][0].update(name="root"),
])
def test_names_slurm_reserves_are_refused(edit: Any) -> None:
    with pytest.raises(InputError, match="fix: rename"):
        platform = platform_from(lambda d: (edit(d), _follow(d)))
        slurm_outputs(platform, load_catalog())


def _follow(d: dict[str, Any]) -> None:
    """Keep references valid after a rename."""
    names = [p["name"] for p in d["pools"]]
    for t in d["tenants"]:
        t["quota"] = {names[0] if k == "h100" else k: v for k, v in t["quota"].items()}
    for w in d["workloads"]:
        if w.get("pool") == "h100":
            w["pool"] = names[0]
        if w["tenant"] not in [t["name"] for t in d["tenants"]]:
            w["tenant"] = d["tenants"][0]["name"]


def test_controller_must_be_a_host_name() -> None:
    with pytest.raises(InputError, match="not a host name"):
        render(controller="head; rm")
    conf = render(controller="head-0", controller_addr="10.10.0.5")[0]["slurm.conf"]
    assert "SlurmctldHost=head-0(10.10.0.5)" in conf


@pytest.mark.parametrize(("names", "text"), [
    (["h100-0", "h100-1", "h100-2", "l40s-0"], "h100-[0-2],l40s-0"),
    (["a-0", "a-2", "a-3"], "a-[0,2-3]"),
    (["x-rack-0"], "x-rack-0"),
])
def test_hostlist(names: list[str], text: str) -> None:
    assert hostlist(names) == text
    assert expand(text) == names


def test_cli_writes_the_files(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["slurm", "render", "-d", str(tmp_path / "s")]) == 0
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == [
        "cgroup.conf", "gres.conf", "sacctmgr.sh", "slurm.conf", "topology.conf"]
    err = capsys.readouterr().err
    assert "recommends kubernetes, not bare_metal" in err
    assert main(["slurm", "render", "-d", str(tmp_path / "t"), "--controller", "a b"]) == 2
