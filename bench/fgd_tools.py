"""The published FGD simulator (``simon``), built from its Go module and run on one experiment.

- :func:`build`: unpacks the simulator's source at commit 8f3d641 from a git checkout (the
  Go module proxy refuses its module zip: 403) next to a copy of ``bench/fgd_tools/go.mod``
  (which repeats its replace directives: they only act in the main module) and runs
  ``go build`` through :func:`aiplat.cluster.assets.go_build` into
  ``$XDG_CACHE_HOME/aiplat/fgd-sim/bin/simon``. Nothing of its code enters this repository.
- :func:`write_inputs`: the trace as the simulator reads it (node and pod YAML, as its
  ``data/prepare_input.sh`` + ``pod_csv_to_yaml.py`` make them: GPU nodes only) and the two
  config files ``scripts/generate_config_and_run.py`` writes for a policy (flags as in
  ``experiments/run_scripts/expected_run_scripts_0511.sh``). Written by our own code.
- :func:`run`: ``simon apply`` on them; the ``[Alloc]`` lines of its log, as an
  :class:`aiplat.sched.fgd_protocol.AllocLog`.

Bench only, never part of ``scripts/test.sh``: the fresh build takes ~4 minutes here
(``bench/fgd_side_by_side.py --build-only``: 232 s with empty GOCACHE/GOMODCACHE on this
shared 2-core machine) and one experiment of the binary several minutes more.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from aiplat.gobuild import Component, go_build
from aiplat.sched.alibaba import load_nodes, load_pods
from aiplat.sched.cluster import Node
from aiplat.sched.fgd_protocol import AllocLog

TOOLS = Path(__file__).resolve().parent / "fgd_tools"
MODULE = "github.com/hkust-adsl/kubernetes-scheduler-simulator"
COMMIT = "8f3d6417353c5083c6d56617f255fadd8dc306bc"
SIMON = Component("simon", MODULE, f"{MODULE}/cmd")

# scripts/generate_config_and_run.py: score plugin, -gpusel, -dimext per policy
PLUGINS = {
    "random": ("RandomScore", "random", "share"),
    "dotprod": ("DotProductScore", "best", "merge"),
    "clustering": ("GpuClusteringScore", "best", "share"),
    "packing": ("GpuPackingScore", "best", "share"),
    "bestfit": ("BestFitScore", "best", "share"),
    "fgd": ("FGDScore", "FGDScore", "share"),  # FGD's own GPU choice (-gpusel FGD)
}
SCORE_PLUGINS = ("RandomScore", "DotProductScore", "GpuClusteringScore", "GpuPackingScore",
                 "BestFitScore", "FGDScore")
DEFAULT_SCORES_OFF = ("ImageLocality", "NodeAffinity", "PodTopologySpread", "TaintToleration",
                      "NodeResourcesBalancedAllocation", "InterPodAffinity",
                      "NodeResourcesLeastAllocated", "NodePreferAvoidPods")
GPU_MILLI = "alibabacloud.com/gpu-milli"
GPU_COUNT = "alibabacloud.com/gpu-count"
GPU_MODEL = "alibabacloud.com/gpu-card-model"
ALLOC = re.compile(r"\[Alloc\].*Used GPU Milli: (\d+); Total GPUs: (\d+); "
                   r"Arrived GPU Milli: (\d+)")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aiplat" / "fgd-sim"


def build(source: Path, cache: Path | None = None, force: bool = False) -> Path:
    """``simon`` built from ``source`` (a git directory or work tree holding ``COMMIT``)."""
    cache = cache or cache_dir()
    module = cache / "module"
    if force or not (module / "src" / "go.mod").is_file():
        shutil.rmtree(module, ignore_errors=True)
        (module / "src").mkdir(parents=True)
        with tempfile.TemporaryDirectory() as tmp:
            tar = Path(tmp) / "src.tar"
            # a partial mirror may warn about blobs outside these paths: only failure matters
            cp = subprocess.run(["git", f"--git-dir={_git_dir(source)}", "archive", "-o",
                                 str(tar), COMMIT, "cmd", "pkg", "go.mod"],
                                capture_output=True, text=True, check=False)
            if cp.returncode != 0:
                raise RuntimeError(f"git archive of {COMMIT} failed: {cp.stderr.strip()}")
            with tarfile.open(tar) as t:
                t.extractall(module / "src", filter="data")
    for name in ("go.mod", "go.sum"):
        shutil.copy(TOOLS / name, module / name)
    go_build(module, [SIMON], cache, "-s -w", force=force,
             stamp_extra={"commit": COMMIT, "go.sum": (TOOLS / "go.sum").read_text()[:64]})
    return cache / "bin" / "simon"


def _git_dir(source: Path) -> Path:
    return source / ".git" if (source / ".git").exists() else source


def gpu_nodes(folder: Path, every: int = 1) -> list[Node]:
    """The GPU nodes (``data/prepare_input.sh``: the GPU node list only); with ``every`` > 1,
    every n-th of them in name order: a smaller cluster that both simulators get."""
    gpu_list = folder / "openb_node_list_gpu_node.csv"  # its names, as the simulator's input
    loaded = load_nodes(folder, gpu_only=gpu_list.is_file())
    nodes = sorted((n for n in loaded if n.gpus), key=lambda n: n.name)
    return nodes[::every]


def _node_yaml(nodes: list[Node]) -> list[dict[str, Any]]:
    out = []
    for n in nodes:
        res = {GPU_COUNT: str(n.gpus), GPU_MILLI: str(n.gpus * 1000),
               "cpu": f"{n.cpu_milli}m", "memory": f"{n.memory_mib}Mi", "pods": "1001"}
        out.append({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": n.name, "labels": {
                        GPU_MODEL: n.model, "kubernetes.io/hostname": n.name,
                        "kubernetes.io/os": "linux", "beta.kubernetes.io/os": "linux"}},
                    "status": {"allocatable": res, "capacity": dict(res)}})
    return out


def _pod_yaml(folder: Path, trace: str) -> list[dict[str, Any]]:
    out = []
    for p in load_pods(folder, trace):
        r = p.request
        req = {"cpu": f"{r.cpu_milli}m", "memory": f"{r.memory_mib}Mi"}
        meta: dict[str, Any] = {"name": p.name, "namespace": "paib-gpu"}
        if r.num_gpu:
            ann = {GPU_MILLI: str(r.gpu_milli), GPU_COUNT: str(r.num_gpu)}
            if r.gpu_models:
                ann[GPU_MODEL] = "|".join(sorted(r.gpu_models))
            meta["annotations"] = ann
        out.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {
            "containers": [{"name": "main", "image": "tensorflow:latest",
                            "resources": {"requests": req, "limits": dict(req)}}],
            "restartPolicy": "OnFailure", "dnsPolicy": "Default"}})
    return out


def write_inputs(folder: Path, trace: str, policy: str, seed: int, out: Path, *,
                 nodes: list[Node]) -> tuple[Path, Path]:
    """The cluster folder and the two config files for one experiment; returns the configs."""
    cluster = out / "cluster"
    cluster.mkdir(parents=True, exist_ok=True)
    (cluster / "nodes.yaml").write_text(yaml.safe_dump_all(_node_yaml(nodes)))
    (cluster / "pods.yaml").write_text(yaml.safe_dump_all(_pod_yaml(folder, trace)))
    cc = out / "cluster-config.yaml"
    cc.write_text(yaml.safe_dump({
        "apiVersion": "simon/v1alpha1", "kind": "Config",
        "metadata": {"name": "simon-openb-config"},
        "spec": {"cluster": {"customConfig": str(cluster)}, "customConfig": {
            "shufflePod": True, "exportConfig": {},
            "workloadInflationConfig": {"ratio": 1, "seed": 233},
            "workloadTuningConfig": {"ratio": 1.3, "seed": seed},
            "descheduleConfig": {"ratio": 0},
            "typicalPodsConfig": {"isInvolvedCpuPods": True, "podPopularityThreshold": 95,
                                  "podIncreaseStep": 1, "gpuResWeight": 0}}}}))
    plugin, gpusel, dimext = PLUGINS[policy]
    args = {"dimExtMethod": dimext, "normMethod": "max"}
    sc = out / "scheduler-config.yaml"
    sc.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1beta1",
        "kind": "KubeSchedulerConfiguration", "percentageOfNodesToScore": 100,
        "profiles": [{"schedulerName": "simon-scheduler", "plugins": {
            "filter": {"enabled": [{"name": "Open-Gpu-Share"}]},
            "preScore": {"disabled": [{"name": "RandomScore"}],
                         "enabled": [{"name": "RandomScore"}] if policy == "random" else None},
            "score": {"disabled": [{"name": n} for n in (*SCORE_PLUGINS, *DEFAULT_SCORES_OFF)],
                      "enabled": [{"name": plugin, "weight": 1000}]},
            "reserve": {"enabled": [{"name": "Open-Gpu-Share"}]},
            "bind": {"disabled": [{"name": "DefaultBinder"}], "enabled": [{"name": "Simon"}]}},
            "pluginConfig": [{"name": plugin, "args": args},
                             {"name": "Open-Gpu-Share", "args": {"gpuSelMethod": gpusel,
                                                                 **args}}]}]}))
    return cc, sc


def run(simon: Path, cc: Path, sc: Path, log: Path, timeout: float) -> AllocLog:
    """``simon apply``; the allocation log it printed."""
    with log.open("wb") as f:
        subprocess.run([str(simon), "apply", "--extended-resources", "gpu", "-f", str(cc),
                        "--default-scheduler-config", str(sc)], stdout=f, stderr=subprocess.STDOUT,
                       cwd=cc.parent, timeout=timeout, check=True)
    return parse_log(log.read_text(errors="replace"))


def parse_log(text: str) -> AllocLog:
    rows = [(int(m[3]), int(m[1]), int(m[2])) for m in ALLOC.finditer(text)]
    if not rows:
        raise RuntimeError("no [Alloc] lines in the simulator's log")
    arr = np.array(rows, dtype=np.int64)
    return AllocLog(arrived=arr[:, 0], allocated=arr[:, 1], gpus=int(arr[0, 2]))


CREATE = re.compile(r"\[(\d+)\] attempt to create pod\(")
BOUND = re.compile(r"is scheduled to node\(\d{4}-([^)]+)\)")


def placements(text: str) -> list[str | None]:
    """The node each pod went to, in creation order (None: not placed), from simon's log."""
    out: list[str | None] = []
    for line in text.splitlines():
        if CREATE.search(line):
            out.append(None)
        elif out and (m := BOUND.search(line)):
            out[-1] = m[1]
    return out
