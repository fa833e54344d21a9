"""Burn-in verdicts, the preparation script, and the agent's Node patch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from aiplat.errors import InputError
from aiplat.node.agent import node_patch, run_agent
from aiplat.node.burnin import (
    Counters,
    Sample,
    evaluate_burnin,
    parse_duration,
    read_counters,
    read_max_temp,
    run_burnin,
)
from aiplat.node.checks import CheckContext, CheckReport, Expectations, run_checks
from aiplat.node.collect import collect_inventory
from aiplat.node.prepare import plan_steps, render_script
from aiplat.spec import load_platform
from fixtures.nodes import hgx_h100

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _samples(rates: list[float], temp: float = 60) -> list[Sample]:
    out, total = [Sample(t=0, iterations=0, max_temp_c=temp)], 0.0
    for i, r in enumerate(rates, 1):
        total += r
        out.append(Sample(t=float(i), iterations=int(total), max_temp_c=temp))
    return out


def test_burnin_verdicts() -> None:
    c0 = Counters()
    ok = evaluate_burnin(_samples([100] * 60), c0, c0, 85, 0.15, 2, False, 60)
    assert ok.status == "pass" and ok.problems == []
    throttled = evaluate_burnin(_samples([100] * 20 + [90] * 20 + [70] * 20), c0, c0, 85, 0.15,
                                2, False, 60)
    assert throttled.status == "fail" and "fell 30%" in throttled.problems[0]
    short = evaluate_burnin(_samples([100, 100, 50]), c0, c0, 85, 0.15, 2, False, 3)
    assert short.status == "pass"  # too short to tell throttling from a noisy neighbour
    hot = evaluate_burnin(_samples([100] * 5, temp=91), c0, c0, 85, 0.15, 2, False, 5)
    assert hot.problems == ["temperature reached 91 C (limit 85 C)"]
    errs = evaluate_burnin(_samples([100] * 5), c0, Counters(edac_ue=1, xids=2), 85, 0.15, 2,
                           False, 5)
    assert errs.problems == ["1 uncorrected host memory errors (EDAC)",
                             "2 new GPU XID events in the kernel log"]


def test_burnin_readers_on_a_fake_tree(tmp_path: Path) -> None:
    (tmp_path / "sys/devices/system/edac/mc/mc0").mkdir(parents=True)
    (tmp_path / "sys/devices/system/edac/mc/mc0/ce_count").write_text("3\n")
    (tmp_path / "sys/devices/system/edac/mc/mc0/ue_count").write_text("0\n")
    (tmp_path / "sys/class/hwmon/hwmon0").mkdir(parents=True)
    (tmp_path / "sys/class/hwmon/hwmon0/temp1_input").write_text("67500\n")
    (tmp_path / "sys/class/hwmon/hwmon0/temp2_input").write_text("41000\n")
    assert read_counters(tmp_path) == Counters(edac_ce=3, edac_ue=0, xids=0)
    assert read_max_temp(tmp_path) == 67.5


def test_short_real_burnin_runs_and_counts(tmp_path: Path) -> None:
    ticks: list[float] = []
    r = run_burnin(1.5, root=tmp_path, workers=1, on_tick=lambda t, n: ticks.append(t))
    assert r.status == "pass" and r.iterations > 0 and len(ticks) >= 1
    assert parse_duration("15m") == 900 and parse_duration("90") == 90
    with pytest.raises(InputError):
        parse_duration("soon")
    with pytest.raises(InputError):
        run_burnin(0)


def test_prepare_script_is_ordered_pinned_and_valid_bash(tmp_path: Path) -> None:
    platform = load_platform(FIXTURES / "platform-nodes.yaml")
    steps = plan_steps(platform, "h100")
    titles = [s.title for s in steps]
    assert titles[0].startswith("check the operating system")
    assert titles[-1] == "verify"
    assert titles.index("kernel modules loaded at boot") < titles.index(
        "container runtime integration and CDI specs")
    script = render_script(steps, platform, "h100", None)
    assert "Pin: version 580.95.05-*" in script and "nvidia-fabricmanager-580" in script
    assert "Package: /-580(-open|-server|-server-open)?$/" in script  # not a nvidia-* glob
    assert "Pin: version 1.18.0-*" in script and "apt-mark hold kubelet" in script
    assert "nvidia_peermem" in script and "mlx5_ib" in script
    assert "NVreg_DeviceFileMode=0660" in script and 'GROUP="video", MODE="0660"' in script
    assert "mokutil --import" in script and "intel_iommu=on iommu=pt" in script
    assert "nvidia-ctk cdi generate | aiplat_write /etc/cdi/nvidia.yaml 0644" in script
    (tmp_path / "prep.sh").write_text(script)
    assert subprocess.run(["bash", "-n", str(tmp_path / "prep.sh")], check=False).returncode == 0
    l40s = render_script(plan_steps(platform, "l40s", "r570-l40s"), platform, "l40s",
                         "r570-l40s")
    assert "nvidia-driver-570-open" in l40s and "fabricmanager" not in l40s
    assert "mokutil" not in l40s and "containerd 1.7" in l40s
    with pytest.raises(InputError, match=r"not in versions\.approved"):
        plan_steps(platform, "h100", "r999")
    with pytest.raises(InputError, match="no such pool"):
        plan_steps(platform, "gpu-less", None)


def test_prepare_write_helper_is_idempotent(tmp_path: Path) -> None:
    platform = load_platform(FIXTURES / "platform-nodes.yaml")
    script = render_script(plan_steps(platform, "h100"), platform, "h100", None)
    helper = script.split("aiplat_write() {", 1)[1].split("\n}\n", 1)[0]
    target = tmp_path / "etc/modules-load.d/aiplat.conf"
    run = (f"aiplat_write() {{{helper}\n}}\n"
           f"printf 'nvidia\\n' | aiplat_write {target} 0644")
    first = subprocess.run(["bash", "-c", run], capture_output=True, text=True, check=True)
    second = subprocess.run(["bash", "-c", run], capture_output=True, text=True, check=True)
    assert "wrote" in first.stderr and second.stderr == ""
    assert target.read_text() == "nvidia\n" and oct(target.stat().st_mode & 0o777) == "0o644"


class FakeClient:
    def __init__(self, node: dict[str, Any]) -> None:
        self.node = node
        self.patches: list[tuple[str, dict[str, Any]]] = []

    def get_node(self, name: str) -> dict[str, Any]:
        return self.node

    def patch_node(self, name: str, patch: dict[str, Any]) -> None:
        self.patches.append(("node", patch))

    def patch_node_status(self, name: str, patch: dict[str, Any]) -> None:
        self.patches.append(("status", patch))


def _report(tmp_path: Path, degraded: bool) -> CheckReport:
    inv = collect_inventory(hgx_h100(tmp_path / str(degraded), degraded=degraded))
    return run_checks(CheckContext(inv=inv, exp=Expectations(), xids=[]))


def test_agent_patch_taints_on_failure_and_keeps_other_taints(tmp_path: Path) -> None:
    bad, good = _report(tmp_path, True), _report(tmp_path, False)
    node = {"metadata": {"resourceVersion": "42"},
            "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]},
            "status": {"conditions": [{"type": "AiplatNodeHealthy", "status": "True",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    p = node_patch(node, bad, {"node.aiplat.io/gpu-count": "8"}, "2026-11-29T17:00:00Z")
    assert p.metadata_spec["metadata"]["resourceVersion"] == "42"
    assert p.metadata_spec["metadata"]["labels"]["node.aiplat.io/health"] == "fail"
    assert p.metadata_spec["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
        {"key": "node.aiplat.io/unhealthy", "value": "checks-failed", "effect": "NoSchedule"}]
    cond = p.status["status"]["conditions"][0]
    assert cond["status"] == "False" and cond["lastTransitionTime"] == "2026-11-29T17:00:00Z"
    tainted = {**node, "spec": {"taints": p.metadata_spec["spec"]["taints"]}}
    healed = node_patch(tainted, good, {}, "2026-11-29T18:00:00Z")
    assert healed.metadata_spec["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    same = node_patch(node, good, {}, "2026-11-29T18:00:00Z")
    assert same.status["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"


def test_agent_loop_patches_each_round_and_survives_api_errors(tmp_path: Path) -> None:
    bad = _report(tmp_path, True)
    client = FakeClient({"metadata": {}, "spec": {}})
    sleeps: list[float] = []
    code = run_agent(lambda: (bad, {}), client=client, node_name="n1", interval_s=30,
                     iterations=2, sleep=sleeps.append)
    assert code == 1 and sleeps == [30]
    assert [k for k, _ in client.patches] == ["node", "status", "node", "status"]

    class Broken(FakeClient):
        def patch_node(self, name: str, patch: dict[str, Any]) -> None:
            raise RuntimeError("409 Conflict")

    errors: list[Exception] = []
    code = run_agent(lambda: (bad, {}), client=Broken({}), node_name="n1", interval_s=1,
                     iterations=2, on_error=errors.append, sleep=lambda s: None)
    assert [str(e) for e in errors] == ["409 Conflict", "409 Conflict"]
    # --once that could not publish its result does not exit as if it had (was 0 on a 403).
    assert code == 2
