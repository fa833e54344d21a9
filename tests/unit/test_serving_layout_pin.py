"""Issue #43: a serving replica's layout can be pinned (``serving.tensorParallel``,
``pipelineParallel``), and the plan and the tree then run that layout.

The defect: left to the smallest layout that holds the weights, a 70B FP8 model at
``gpuMemoryUtilization: 0.95`` lands on one H100 per replica with room for a handful of
sequences; pinned at TP 2, each replica batches more than twice as many, so the SLO needs fewer
GPUs. A pin the hardware or the model cannot take is refused at the field, exit 2.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from aiplat.errors import InputError
from aiplat.kube.agree import disagreements

sys.path.insert(0, str(Path(__file__).parent))
from test_plan_tree_agree import EXAMPLE, _both, _build, _named, _set

FP8 = (_set("precision", "fp8"), _set("serving.gpuMemoryUtilization", 0.95))


def _assistant(*edits):  # type: ignore[no-untyped-def]
    platform, plan, rendered = _build(_both(*FP8, *edits))
    return platform, plan, rendered, next(w for w in plan.workloads if w.name == "assistant")


def test_a_pinned_tensor_parallel_layout_is_sized_and_rendered() -> None:
    _, _, _, free = _assistant()
    platform, plan, rendered, pinned = _assistant(_set("serving.tensorParallel", 2))
    assert free.replica_groups[0].tensor_parallel == 1
    g = pinned.replica_groups[0]
    assert (g.tensor_parallel, g.gpus) == (2, 2)
    batch = int(pinned.key_figures["batch per replica"])
    assert batch > 2 * int(free.key_figures["batch per replica"])
    assert pinned.gpus < free.gpus  # the same SLO on fewer GPUs
    d = _named(rendered, "Deployment", "assistant")
    assert d["spec"]["replicas"] == g.replicas
    args = d["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--tensor-parallel-size") + 1] == "2"
    assert d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"][
        "nvidia.com/gpu"] == "2"
    assert disagreements(plan, platform, rendered.objects()) == []


def test_a_pinned_pipeline_is_passed_to_vllm() -> None:
    platform, plan, rendered, w = _assistant(_set("serving.tensorParallel", 4),
                                             _set("serving.pipelineParallel", 2))
    g = w.replica_groups[0]
    assert (g.tensor_parallel, g.pipeline_parallel, g.gpus) == (4, 2, 8)
    args = _named(rendered, "Deployment", "assistant")["spec"]["template"]["spec"][
        "containers"][0]["args"]
    assert args[args.index("--pipeline-parallel-size") + 1] == "2"
    assert disagreements(plan, platform, rendered.objects()) == []


def _plan_exit(tmp_path: Path, *edits) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    import copy
    data = copy.deepcopy(EXAMPLE)
    for e in edits:
        e(data)
    spec = tmp_path / "platform.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    r = subprocess.run([sys.executable, "-c", "import sys; from aiplat.cli.main import main; "
                        "sys.exit(main())", "plan", str(spec), "-d", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=120, check=False)
    return r.returncode, r.stdout + r.stderr


def test_a_pin_the_node_or_model_cannot_take_is_refused_at_the_field(tmp_path: Path) -> None:
    code, out = _plan_exit(tmp_path, _set("serving.tensorParallel", 16))
    assert code == 2 and "serving.tensorParallel (16) exceeds the 8 GPUs of a node" in out, out
    assert "Traceback" not in out
    code, out = _plan_exit(tmp_path, _set("serving.tensorParallel", 3))
    assert code == 2 and "does not split llama-3-70b's 64 attention heads" in out, out
    code, out = _plan_exit(tmp_path, _set("serving.pipelineParallel", 2))
    assert code == 2 and "pipelineParallel is set but tensorParallel is not" in out, out
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_the_pin_is_an_input_error_not_a_crash_in_the_library() -> None:
    try:
        _build(_set("serving.tensorParallel", 16))
    except InputError as e:
        assert "(fix: at most 8)" in str(e)
    else:
        raise AssertionError("TP 16 on an 8-GPU node was accepted")


def test_a_replica_wider_than_a_node_is_flagged_not_rendered_as_if_it_worked() -> None:
    _, _, _, w = _assistant(_set("serving.tensorParallel", 4),
                            _set("serving.pipelineParallel", 4))
    assert w.replica_groups[0].gpus == 16  # two 8-GPU nodes
    found = [f for f in w.findings if "spans 2 nodes" in f.message]
    assert found and found[0].severity == "warning" and "LeaderWorkerSet" in found[0].fix
