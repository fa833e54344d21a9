"""Acceptance end to end on the test machine: function and isolation with Podman (device
nodes made for the run when the host has no accelerator), performance against a real
docker-registry started for the run, repeatability with N=5 — then a deliberately regressed
baseline must be flagged, ``accept compare`` must show it, and the HTML report must open in
headless Chromium with no console errors.

The spec is written for this host (its CPUs and memory) so that "inventory matches the spec"
is a real comparison. The CV threshold is relaxed to 50% for the run: on a shared 2-core VM
the short disk and memory probes vary by ~20-25% run to run (cpu.sha256 ~1%, pulls ~7%);
the repeatability *statistics* are what this test proves, the unit tests prove the threshold.

Locally the test skips without root/podman/runc/busybox-static/docker-registry; in CI
(CI=true) it fails instead.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from browser import Browser
from click.testing import CliRunner
from conftest import need

from aiplat.cli.handover import accept_group, matrix_group
from aiplat.course.actions import lab_spec
from aiplat.devices.verify import PodmanOptions, podman_missing, remove_image
from aiplat.node.collect import collect_inventory
from aiplat.ops.acceptance_run import iperf3_probe, tcp_probe

pytestmark = pytest.mark.integration

SHARED = Path(__file__).parents[2].parent / "shared"
IMAGE = f"localhost/aiplat-accept-probe-test:{os.getpid()}"


def _missing() -> str | None:
    if shutil.which("docker-registry") is None:
        return "docker-registry is not installed (apt-get install docker-registry)"
    return podman_missing(PodmanOptions(image=IMAGE))


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = _missing()
    need(reason)
    inv = collect_inventory("/")
    assert inv.host.cpu is not None and inv.host.memory_kib and inv.host.kernel
    kernel = ".".join(inv.host.kernel.split(".")[:2])
    path = tmp_path_factory.mktemp("accept") / "lab.yaml"
    path.write_text(lab_spec(inv.host.cpu.threads, inv.host.memory_kib // 2**20, kernel,
                             nic_gbps=1))
    return path


def _run(args: list[str]) -> tuple[int, str]:
    res = CliRunner().invoke(accept_group, args)
    if res.exception and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout


def test_acceptance_record_regression_compare_and_report(spec: Path, browser: Browser) -> None:
    out = spec.parent / "first"
    # Host probes that share this VM's two cores with the other tests (matmul, memory, disk)
    # get a looser CV bound; the model-pull CV keeps 0.5 and is asserted below.
    noisy = [f"node.{m}=1.0" for m in ("cpu.matmul", "memory.copy", "disk.read", "disk.write")]
    common = [str(spec), "--pool", "lab", "--runs", "5", "--max-cv", "0.5",
              *(arg for m in noisy for arg in ("--max-cv-for", m)),
              "--observed", "kubernetes=1.34.2", "--observed", "kueue=0.19.2"]
    try:
        code, stdout = _run(["run", *common, "--crd-dir", str(SHARED / "schemas"),
                             "--image", IMAGE, "-w", str(out), "-o", "json"])
    finally:
        remove_image(PodmanOptions(image=IMAGE))
    rec: dict[str, Any] = json.loads(stdout)
    assert code == 0, [c for c in rec["criteria"] if c["status"] != "pass"]
    ids = {c["id"]: c for c in rec["criteria"]}
    for cid in ("function.inventory", "function.node-checks", "function.matrix",
                "function.cdi-verify", "function.manifests", "isolation.devices",
                "isolation.network", "isolation.quotas", "performance.model.pull",
                "performance.network.throughput", "repeatability.cv.model.pull"):
        assert ids[cid]["status"] == "pass", ids[cid]
    assert rec["matrix"]["matched"] == "lab-k8s134"
    assert rec["fingerprint"]["kernel"]
    assert all(len(m["samples"]) == 5 for m in rec["measurements"].values())
    assert {"node.cpu.sha256", "model.pull", "network.throughput"} <= set(rec["measurements"])
    if not collect_inventory("/").gpus:
        assert any("device nodes made for the run" in n for n in rec["notes"])
    assert "2 of 2 pairs denied" in ids["isolation.network"]["observed"]

    # A deliberately regressed baseline: the same node "used to be" 3x faster. (Between two
    # honest runs on this VM, loopback throughput drifted by up to 1.7x, so a smaller factor
    # would test the VM's noise rather than the flag.)
    regressed = json.loads((out / "acceptance.json").read_text())
    for m in regressed["measurements"].values():
        m["samples"] = [s * 3 for s in m["samples"]]
    (spec.parent / "regressed.json").write_text(json.dumps(regressed))
    second = spec.parent / "second"
    code, stdout = _run(["run", *common, "--suite", "performance,repeatability",
                         "--baseline", str(spec.parent / "regressed.json"),
                         "-w", str(second), "-o", "json"])
    rec2 = json.loads(stdout)
    assert code == 1
    failed = {c["id"] for c in rec2["criteria"] if c["status"] == "fail"}
    assert {"repeatability.baseline.model.pull", "repeatability.baseline.node.cpu.sha256",
            "repeatability.baseline.network.throughput"} <= failed, failed
    flagged = next(c for c in rec2["criteria"]
                   if c["id"] == "repeatability.baseline.model.pull")
    assert "Mann-Whitney U" in flagged["observed"]

    code, stdout = _run(["compare", str(spec.parent / "regressed.json"),
                         str(second / "acceptance.json")])
    assert code == 1
    assert "criterion repeatability.baseline.model.pull: absent -> fail" in stdout

    for html in (out / "acceptance.html", second / "acceptance.html"):
        page = browser.inspect(html)
        assert page.problems == [], page.problems
        assert "Acceptance" in page.title
    text = (out / "acceptance.html").read_text()
    assert "Environment fingerprint" in text and "lab-k8s134" in text


def test_matrix_report_opens_clean(browser: Browser, tmp_path: Path) -> None:
    code = CliRunner().invoke(matrix_group, ["show", "-w", str(tmp_path)]).exit_code
    assert code == 0
    page = browser.inspect(tmp_path / "matrix.html")
    assert page.problems == [], page.problems
    assert "580.95.05" in (tmp_path / "matrix.html").read_text()


def test_network_probes_measure_loopback() -> None:
    value, method = tcp_probe(0.05)
    assert value > 0 and "127.0.0.1" in method
    if shutil.which("iperf3") is None:
        need("iperf3 is not installed")
    value, method = iperf3_probe(0.05)
    assert value > 0 and method.startswith("iperf3")


def test_pull_samples_honour_the_registry_protocol(tmp_path: Path) -> None:
    from registry import Registry, missing

    from aiplat.errors import AiplatError
    from aiplat.ops.acceptance_run import pull_samples

    if (why := missing()) is not None:
        need(why)
    with Registry(tmp_path / "reg") as reg:
        measured, _ = pull_samples(reg.host, tmp_path / "plain", 1, 2)  # loopback: HTTP
        assert len(measured.samples) == 1 and measured.samples[0] > 0
        with pytest.raises((AiplatError, OSError)):
            pull_samples(reg.host, tmp_path / "tls", 1, 2, plain_http=False)
