"""The in-cluster node agent sees the GPUs (issue #41): its DaemonSet on NVIDIA pools gets the
GPUs from the NVIDIA runtime and reads them with ``--live-gpu`` while /sys and /proc are the
host's under /host; XIDs come from the host's kern.log, dated by syslog.

What this cannot show: a real NVIDIA runtime injecting the devices (no GPU here); the
nvidia-smi on PATH below prints a recorded ``nvidia-smi -q -x``."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from aiplat.catalog import load_catalog
from aiplat.cli.node import node
from aiplat.kube import render
from aiplat.kube.facts import POOL_LABEL
from aiplat.node.kernlog import parse_xids, read_xids
from aiplat.node.service import check_node
from aiplat.samples.hosts import hgx_h100
from aiplat.spec import example_text, parse_platform

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fixtures.nvsmi_outputs import GpuState, smi_xml

BUS = [0x19, 0x2b, 0x3b, 0x5e, 0x9b, 0xac, 0xbb, 0xdc]  # the sample HGX's GPUs


def _objects(edit: Any = None) -> list[dict[str, Any]]:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    platform = parse_platform(yaml.safe_dump(data), "t.yaml", load_catalog())
    return render(platform, load_catalog()).objects()


def _agents(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == "DaemonSet"
            and o["metadata"]["name"].startswith("aiplat-node-agent")}


def test_gpu_pools_agent_gets_the_gpus_and_no_capability() -> None:
    objs = _objects()
    (ds,) = _agents(objs).values()
    pod = ds["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert pod["runtimeClassName"] == "nvidia"
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert env["NVIDIA_DRIVER_CAPABILITIES"] == "utility"  # NVML and nvidia-smi, nothing more
    assert "--live-gpu" in c["args"] and "--root=/host" in c["args"]
    # No GPU requested: the agent must not take one from the pods.
    assert not any(k.startswith("nvidia.com/") for k in c["resources"].get("requests", {}))
    sc = c["securityContext"]
    assert sc["capabilities"] == {"drop": ["ALL"]} and sc["allowPrivilegeEscalation"] is False
    assert "privileged" not in sc and sc["readOnlyRootFilesystem"] is True
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    assert mounts["/host/var/log"]["readOnly"] is True  # kern.log for the XIDs
    assert all(m["readOnly"] for m in mounts.values())
    # The RuntimeClass it names exists: node prepare configured the handler (host toolkit).
    rc = [o for o in objs if o["kind"] == "RuntimeClass"]
    assert [(o["metadata"]["name"], o["handler"]) for o in rc] == [("nvidia", "nvidia")]


def test_operator_toolkit_brings_its_own_runtime_class() -> None:
    def edit(data: dict[str, Any]) -> None:
        data["kubernetes"]["components"] = {"toolkit": "operator"}

    objs = _objects(edit)
    assert not [o for o in objs if o["kind"] == "RuntimeClass"]
    (ds,) = _agents(objs).values()
    assert ds["spec"]["template"]["spec"]["runtimeClassName"] == "nvidia"


def test_a_pool_without_gpus_gets_the_agent_without_the_runtime() -> None:
    def edit(data: dict[str, Any]) -> None:
        cpu = {k: v for k, v in data["pools"][1].items() if k not in ("gpuResources",)}
        cpu["name"] = "cpu"
        cpu["node"] = {k: v for k, v in cpu["node"].items() if k not in ("gpu", "nodeType")}
        cpu["taints"] = []
        data["pools"].append(cpu)

    agents = _agents(_objects(edit))
    assert set(agents) == {"aiplat-node-agent", "aiplat-node-agent-host"}
    host = agents["aiplat-node-agent-host"]["spec"]["template"]["spec"]
    assert "runtimeClassName" not in host
    assert host["containers"][0]["securityContext"]["runAsUser"] == 65534
    terms = host["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": POOL_LABEL, "operator": "In", "values": ["cpu"]}]
    # The two never select each other's pods.
    sel = {n: a["spec"]["selector"]["matchLabels"] for n, a in agents.items()}
    assert sel["aiplat-node-agent"] != sel["aiplat-node-agent-host"]


@pytest.fixture()
def fake_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An nvidia-smi on PATH that prints a recorded ``-q -x`` (what the NVIDIA runtime
    mounts into the agent's container)."""
    xml = tmp_path / "smi.xml"
    xml.write_text(smi_xml())
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "nvidia-smi"
    exe.write_text(f'#!/bin/sh\n[ "$1" = "-q" ] && exec cat "{xml}"\nexit 1\n')
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    return exe


def test_live_gpu_reads_the_gpus_under_a_host_root(tmp_path: Path, fake_smi: Path) -> None:
    """Under /host (not /) the GPU checks skipped on every node; with --live-gpu they run."""
    root = hgx_h100(tmp_path / "host")
    before = check_node(root=root)
    after = check_node(root=root, live_gpu=True)
    skipped = {r.name for r in before.report.results if r.status == "skip"}
    ran = {r.name for r in after.report.results if r.status != "skip"}
    assert {"gpu-ecc", "nvlink", "gpu-temperature"} <= skipped
    assert {"gpu-ecc", "gpu-temperature"} <= ran
    assert after.inventory.gpu_details


def test_the_agent_flag_reaches_the_checks(tmp_path: Path, fake_smi: Path) -> None:
    """A GPU with uncorrected ECC errors: without --live-gpu the agent under /host cannot see
    it and reports the node healthy; with it, the node fails and gets the taint."""
    gpus = [GpuState(b) for b in BUS]
    gpus[3] = GpuState(BUS[3], dram_uncorrectable=2)
    (tmp_path / "smi.xml").write_text(smi_xml(gpus))
    root = hgx_h100(tmp_path / "host")
    args = ["agent", "--root", str(root), "--once", "--dry-run", "--node-name", "n"]
    plain = CliRunner().invoke(node, args)
    live = CliRunner().invoke(node, [*args, "--live-gpu"])
    assert plain.exit_code == 0 and json.loads(plain.output)["status"] == "pass"
    assert live.exit_code == 1, live.output
    patch = json.loads(live.output)
    assert patch["status"] == "fail"
    assert any(t["key"] == "node.aiplat.io/unhealthy" for t in patch["patch"]["spec"]["taints"])


NOW = datetime(2026, 12, 5, 8, 0, 0, tzinfo=UTC)


def test_kern_log_lines_are_dated_by_syslog() -> None:
    text = "\n".join([
        "2026-12-05T06:00:00.5+00:00 hgx-01 kernel: NVRM: Xid (PCI:0000:5e:00): 79, pid=0",
        # The monotonic seconds would say 812 s old after a reboot; the date says a day.
        "Dec  4 08:00:00 hgx-01 kernel: [  812.331910] NVRM: Xid (PCI:0000:19:00): 13, x",
        "Dec 31 23:00:00 hgx-01 kernel: NVRM: Xid (PCI:0000:9b:00): 31, pid=1",  # last year
        "Feb 30 01:00:00 hgx-01 kernel: NVRM: Xid (PCI:0000:9b:00): 31, pid=1",  # no such day
    ])
    ages = [e.age_s for e in parse_xids(text, 10_000.0, NOW)]
    assert ages[0] == pytest.approx(7199.5)
    assert ages[1] == pytest.approx(86_400)
    assert ages[2] == pytest.approx((NOW - datetime(2025, 12, 31, 23, tzinfo=UTC))
                                    .total_seconds())
    assert ages[3] is None  # undated: counts as recent
    # dmesg's own form keeps its monotonic age
    assert parse_xids("[  812.5] NVRM: Xid (PCI:0000:5e:00): 79", 1000.0, NOW)[0].age_s \
        == pytest.approx(187.5)


def test_kern_log_under_the_host_root_gives_dated_xids(tmp_path: Path) -> None:
    root = hgx_h100(tmp_path / "host")
    (root / "var/log").mkdir(parents=True, exist_ok=True)
    (root / "var/log/kern.log").write_text(
        "2026-12-04T07:00:00+00:00 hgx-01 kernel: NVRM: Xid (PCI:0000:5e:00): 79, pid=0\n")
    (xid,) = read_xids(root, now=NOW) or []
    assert xid.xid == 79 and xid.age_s == pytest.approx(25 * 3600)
