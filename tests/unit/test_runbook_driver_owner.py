"""The runbook's driver upgrade follows the driver's owner (issue #42 item 2, issue #41): the
GPU Operator's upgrade controller through its node labels, or ``node prepare`` per node; no
procedure deletes the operator's pods by hand (gpu-operator#901)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.ops.runbook import UPGRADE_STATES, Procedure, procedures
from aiplat.spec import EXAMPLE, Platform, example_text, parse_platform

HAND_DELETE = re.compile(r"kubectl\b[^;&|]*\bdelete\s+(pods?|po|daemonsets?|ds)\b")


def _platform(driver: str) -> Platform:
    data: dict[str, Any] = yaml.safe_load(example_text())
    data["kubernetes"]["components"] = {"driver": driver, "toolkit": driver}
    if driver == "operator":  # Secure Boot with the operator's driver is a spec error
        for pool in data["pools"]:
            checks = pool["node"].get("checks") or {}
            if checks.get("secureBoot") == "required":
                checks["secureBoot"] = "any"
    return parse_platform(yaml.safe_dump(data, sort_keys=False), EXAMPLE, load_catalog())


def _driver(driver: str) -> Procedure:
    return next(p for p in procedures(_platform(driver), "site.yaml") if p.id == "driver-upgrade")


def _commands(proc: Procedure) -> list[str]:
    return [s.command for s in (*proc.steps, *proc.rollback) if s.command]


@pytest.mark.parametrize("driver", ["host", "operator"])
def test_no_procedure_deletes_pods_by_hand(driver: str) -> None:
    for proc in procedures(_platform(driver), "site.yaml"):
        bad = [c for c in _commands(proc) if HAND_DELETE.search(c)]
        assert not bad, f"{proc.id} deletes pods by hand: {bad}"


def test_operator_owned_upgrade_follows_the_upgrade_controller() -> None:
    proc = _driver("operator")
    text = "\n".join(_commands(proc))
    expect = " ".join(s.expect for s in proc.steps)
    assert "helm upgrade gpu-operator" in text and "580.95.05" in expect
    assert "-L nvidia.com/gpu-driver-upgrade-state" in text
    assert " → ".join(UPGRADE_STATES) in expect and "upgrade-failed" in expect
    # the canary: every other GPU node held with the controller's skip label, then released
    cmds = [s.command for s in proc.steps]
    hold = next(i for i, c in enumerate(cmds)
                if "nvidia.com/gpu-driver-upgrade.skip=true" in c)
    apply = next(i for i, c in enumerate(cmds) if c.startswith("helm upgrade"))
    release = cmds.index("kubectl label nodes -l nvidia.com/gpu.present=true "
                         "nvidia.com/gpu-driver-upgrade.skip-")
    assert hold < apply < release
    # the rollback sets the previous version the same way, through the values
    back = "\n".join(s.command for s in proc.rollback)
    assert "aiplat kube render site.yaml.previous" in back and "helm upgrade" in back
    assert "kubectl drain" not in text and "kubectl cordon" not in text  # the controller's


def test_host_owned_upgrade_is_a_maintain_run_with_node_prepare_per_node() -> None:
    """Issue #42 item 2: the procedure is calls of `aiplat maintain` (review, run, resume,
    status, rollback); what the run cannot do itself (the update on the host) is the node
    prepare step between them, and the steps by hand stay in the notes."""
    proc = _driver("host")
    cmds = [s.command for s in proc.steps]

    def at(needle: str) -> int:
        return next(i for i, c in enumerate(cmds) if needle in c)

    run = "aiplat maintain run site.yaml --pool $POOL --change driver=580.95.05"
    assert (at(f"{run} --dry-run") < cmds.index(run) < at("aiplat node prepare")
            < at("aiplat maintain resume --applied $NODE") < at("aiplat maintain status"))
    prepare = cmds[at("aiplat node prepare")]
    assert "--entry r580-k8s134 -w prepare-$NODE.sh" in prepare and "systemctl reboot" in prepare
    # the run cordons, drains (Eviction API, PDBs, Kueue requeues) and uncordons: no kubectl
    assert not any(c.startswith("kubectl ") for c in cmds)
    assert "helm" not in " ".join(_commands(proc))
    assert "580.95.05" in " ".join(s.expect for s in proc.steps)
    back = [s.command for s in proc.rollback]
    assert back[0] == "aiplat maintain rollback $NODE"
    assert "aiplat node prepare site.yaml.previous" in back[1]
    assert any("By hand" in n and "canary first" in n for n in proc.notes)
