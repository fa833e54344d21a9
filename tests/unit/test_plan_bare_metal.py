"""Issue #43: when the plan recommends bare metal, ``aiplat plan`` writes the Slurm cluster
for the same pools and tenants (``slurm/``); on the example (Kubernetes) it writes none."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from test_plan_tree_agree import EXAMPLE


def _one_team_no_kubernetes(d: dict[str, Any]) -> None:
    d["tenants"] = d["tenants"][:1]
    d["tenants"][0]["quota"] = {"h100": {"gpus": 48}}
    d["workloads"] = [w for w in d["workloads"] if w["tenant"] == "research"]
    d["pools"] = d["pools"][:1]
    d.setdefault("operations", {})["kubernetesExperience"] = False


def _plan(tmp_path: Path, data: dict[str, Any]) -> tuple[subprocess.CompletedProcess[str], Path]:
    spec = tmp_path / "platform.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-c", "import sys; from aiplat.cli.main import main; "
                        "sys.exit(main())", "plan", str(spec), "-d", str(out)],
                       capture_output=True, text=True, timeout=300, check=False)
    return r, out


def test_a_bare_metal_plan_writes_its_slurm_cluster(tmp_path: Path) -> None:
    data = copy.deepcopy(EXAMPLE)
    _one_team_no_kubernetes(data)
    r, out = _plan(tmp_path, data)
    assert r.returncode in (0, 1), r.stderr
    assert "deployment: bare_metal" in r.stdout, r.stdout
    assert "slurm/" in r.stderr
    conf = (out / "slurm" / "slurm.conf").read_text()
    assert "recommends: bare_metal" in conf
    assert "PartitionName=h100 Nodes=h100-[0-5]" in conf
    assert "AllowAccounts=research" in conf
    assert {p.name for p in (out / "slurm").iterdir()} == {
        "slurm.conf", "gres.conf", "topology.conf", "cgroup.conf", "sacctmgr.sh"}


def test_a_kubernetes_plan_writes_no_slurm_files(tmp_path: Path) -> None:
    r, out = _plan(tmp_path, copy.deepcopy(EXAMPLE))
    assert "deployment: kubernetes" in r.stdout, r.stdout
    assert not (out / "slurm").exists()
    assert "slurm/" not in r.stderr


def test_a_virtual_machine_plan_says_plainly_that_no_vm_is_rendered(tmp_path: Path) -> None:
    """Issue #43 item 5: aiplat renders no VM definitions; when it recommends VMs (tenants
    that must not share a kernel, no multi-node RDMA training) the plan says so, with what
    to do, on the CLI and in plan.json, instead of leaving an empty folder to be found."""
    data = copy.deepcopy(EXAMPLE)
    data.setdefault("operations", {})["strictTenantIsolation"] = True
    data["workloads"] = [w for w in data["workloads"] if w["name"] != "domain-pretrain"]
    r, out = _plan(tmp_path, data)
    assert "deployment: virtual_machines" in r.stdout, r.stdout
    assert "warning: deployment: virtual machines are recommended, and aiplat renders none" \
        in r.stderr, r.stderr
    assert "passing through every GPU and HCA" in r.stderr
    found = yaml.safe_load((out / "plan.json").read_text())["findings"]
    assert any(f["subject"] == "deployment" and f["severity"] == "warning" for f in found)
    assert not (out / "slurm").exists()
    (tmp_path / "k").mkdir()  # the example recommends Kubernetes: no such warning
    r, _out = _plan(tmp_path / "k", copy.deepcopy(EXAMPLE))
    assert "virtual machines are recommended" not in r.stderr
