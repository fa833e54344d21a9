"""Exercise 7's actions: the acceptance runs, called through the acceptance Python API.

``aiplat matrix check`` and ``aiplat accept compare`` are shell steps of exercise 7. The two
acceptance runs are actions because they need what ``aiplat accept run`` cannot be told
yet: a network probe that takes the lab's path. :func:`lab_network_probe` runs iperf3 from
lab node-1 to the store's management address, so a lab fault on that path is a real
regression the repeat test sees. (``accept run --registry`` would let the pull test take the
lab's path instead, but it speaks HTTPS to any registry not on loopback, and the lab's store
is plain HTTP.) Each action calls what the command calls — ``run_acceptance`` with the same
``Options``, ``acceptance_document`` — and writes the same ``acceptance.json|md|html``; the
guide shows it as ``aiplat lab exercise 7 --step NAME``.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from aiplat.course.exercises import ACCEPT_CLEAN
from aiplat.errors import AiplatError
from aiplat.spec.host import host_spec
from aiplat.spec.models import Platform

SPEC = "ex7/lab.yaml"
ACCEPT_RUNS = 5
ACCEPT_SCALE = 0.1
MAX_CV = 0.5
CV_FOR = {"node.cpu.matmul": 1.5, "node.cpu.sha256": 1.0, "node.memory.copy": 1.0,
          "node.disk.write": 1.0, "node.disk.read": 1.0}
"""The short node probes on a shared 2-core VM vary by 20-40% (matmul's first run, with BLAS
warming up, up to 10x the others), so their CV thresholds are relaxed; the probes the
exercise is about (model pull, network) keep MAX_CV."""
PROBE_IMAGE = "localhost/aiplat-course-probe:1"
"""Made offline by the acceptance run, removed after it (the course leaves nothing behind)."""
OBSERVED = {"kubernetes": "1.34.2", "kueue": "0.19.2"}
lab_spec = host_spec  # the course's name for it (tests import it)


def lab_network_probe(lab: str) -> Callable[[float], tuple[float, str]]:
    """iperf3 from the first compute node of lab ``lab`` to the store over management:
    MiB/s."""
    return lambda scale: _iperf(lab, scale)


def _iperf(lab: str, scale: float) -> tuple[float, str]:
    from aiplat.netdiag.state import load_state

    state = load_state(lab)
    if state is None:
        raise AiplatError(f"no lab '{lab}' is up (fix: run 'aiplat lab up --prefix {lab}' "
                          "first)")
    plan = state.plan
    addr = str(plan.store.addrs[plan.management.name])
    node_ns = plan.compute[0].ns
    seconds = max(1, round(4 * scale))
    proc = subprocess.run(["ip", "netns", "exec", node_ns, "iperf3", "-c", addr, "-t",
                           str(seconds), "-J"], capture_output=True, text=True, check=False)
    try:
        bps = float(json.loads(proc.stdout)["end"]["sum_received"]["bits_per_second"])
    except (ValueError, KeyError, TypeError) as e:
        raise AiplatError(f"iperf3 from {node_ns} to {addr} failed: "
                          f"{(proc.stderr or proc.stdout)[-300:]}") from e
    return bps / 8 / 2**20, f"iperf3 {node_ns} -> {addr} ({seconds} s)"


def _platform(course: Path) -> Platform:
    from aiplat.catalog import load_catalog
    from aiplat.spec import load_platform

    return load_platform(str(course / SPEC), load_catalog())


def write_spec(course: Path, root: Path, lab: str) -> None:
    from aiplat.fsutil import write_tree
    from aiplat.node.collect import collect_inventory
    from aiplat.node.hostspec import spec_for

    write_tree(str(course / "ex7"), {"lab.yaml": spec_for(collect_inventory("/"))})


def _accept(course: Path, root: Path, lab: str, out: str, *, suites: list[str],
            baseline: str | None) -> None:
    from aiplat.devices.verify import PodmanOptions, remove_image
    from aiplat.fsutil import write_tree
    from aiplat.ops.acceptance import load_record
    from aiplat.ops.acceptance_report import acceptance_document
    from aiplat.ops.acceptance_run import Options, run_acceptance
    from aiplat.report import render_html, render_markdown

    base = load_record((course / baseline).read_text()) if baseline else None
    opts = Options(suites=suites, runs=ACCEPT_RUNS, scale=ACCEPT_SCALE, max_cv=MAX_CV,
                   cv_for=dict(CV_FOR), observed=dict(OBSERVED), baseline=base,
                   spec_file=str(course / SPEC),
                   crd_dir=str(root.parent / "shared" / "schemas")
                   if (root.parent / "shared" / "schemas").is_dir() else None,
                   network_probe=lab_network_probe(lab), podman_image=PROBE_IMAGE)
    try:
        rec = run_acceptance(_platform(course), "lab", opts)
    finally:
        remove_image(PodmanOptions(image=PROBE_IMAGE))
    doc = acceptance_document(rec)
    write_tree(str(course / out), {
        "acceptance.json": json.dumps(rec.dump(), indent=2) + "\n",
        "acceptance.md": render_markdown(doc), "acceptance.html": render_html(doc)})


def accept(course: Path, root: Path, lab: str) -> None:
    _accept(course, root, lab, "ex7/baseline",
            suites=["function", "performance", "isolation", "repeatability"], baseline=None)


def repeat(course: Path, root: Path, lab: str) -> None:
    _accept(course, root, lab, "ex7/regressed", suites=["performance", "repeatability"],
            baseline=ACCEPT_CLEAN)


ACTIONS: dict[str, Callable[[Path, Path, str], None]] = {
    "spec": write_spec, "accept": accept, "repeat": repeat,
}
