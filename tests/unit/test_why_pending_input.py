"""Malformed snapshots given to ``kube why-pending --snapshot`` (and ``sim replay``): exit 2
naming the file, the object and the field, as the replay already did, never a traceback.
The objects are held to the schemas the API server holds them to before the walk reads
them: Kueue's CRDs for Kueue's kinds, Kubernetes' own for Nodes, Pods and DRA objects."""

from __future__ import annotations

import copy
import json
import os
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aiplat.cli.main import main

SNAPSHOTS = Path(__file__).parents[1] / "data" / "snapshots"
SAMPLES = sorted(p.name for p in SNAPSHOTS.iterdir() if (p / "expected.json").exists())


def _copy(sample: str, tmp: Path) -> Path:
    out = tmp / sample
    shutil.copytree(SNAPSHOTS / sample, out)
    return out


def _edit(snap: Path, file: str, path: str, value: Any) -> None:
    doc = json.loads((snap / file).read_text())
    node: Any = doc
    *head, last = path.split(".")
    for p in head:
        node = node[int(p)] if p.isdigit() else node[p]
    node[int(last) if last.isdigit() else last] = value
    (snap / file).write_text(json.dumps(doc))


def _why(snap: Path, sample: str) -> list[str]:
    expected = json.loads((SNAPSHOTS / sample / "expected.json").read_text())
    return ["kube", "why-pending", expected["name"], "-n", expected["namespace"],
            "--snapshot", str(snap), "-o", "json"]


RES = "items.0.spec.containers.0.resources"
CASES = {  # the reviewer's findings: (sample, file, path, value, what the error names)
    "preemption is text": ("quota-exhausted", "clusterqueues.json", "items.0.spec.preemption",
                           "Any", "ClusterQueue research at spec.preemption"),
    "flavor name is a list": (
        "quota-exhausted", "clusterqueues.json",
        "items.0.spec.resourceGroups.0.flavors.0.name", [1],
        "ClusterQueue research at spec.resourceGroups[0].flavors[0].name"),
    "matchExpressions key is a mapping": (
        "quota-exhausted", "workloads.json",
        "items.0.spec.podSets.0.template.spec.affinity.nodeAffinity."
        "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.0.matchExpressions."
        "0.key", {}, "nodeSelectorTerms[0].matchExpressions[0].key"),
    "LocalQueue metadata is a number": ("quota-exhausted", "localqueues.json",
                                        "items.0.metadata", -1, "LocalQueue"),
    "Pod containers is a number": ("quota-exhausted", "pods.json", "items.0.spec.containers",
                                   5, "spec.containers"),
    "device attribute version is a list": (
        "dra-no-free-device", "resourceslices.json",
        "items.0.spec.devices.0.attributes.cudaComputeCapability.version", [],
        "ResourceSlice/h100-0-gpu.nvidia.com-x7k2p at spec.devices[0].attributes."
        "cudaComputeCapability.version: must be a string"),
}


@pytest.mark.parametrize("case", CASES)
def test_why_pending_refuses_a_malformed_object_by_file_and_field(
        case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sample, file, path, value, named = CASES[case]
    snap = _copy(sample, tmp_path)
    _edit(snap, file, path, value)
    assert main(_why(snap, sample)) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert file in err and named in err, err


def _paths(o: Any, p: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield p
    items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else ()
    for k, v in items:
        yield from _paths(v, (*p, k))


JUNK = [None, 5, -1, "x", [], {}, [1], {"a": 1}, True, "1e999999999", 10**30, "-5", 1.5,
        [None], [{"x": 1}], "\x1b[31mred", "1Ei"]


def test_no_mutation_of_a_sample_makes_why_pending_or_replay_crash(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A fixed-seed mutation loop (the reviewer's fuzzer, in-process): one value anywhere in
    one list file of a why-pending sample replaced by junk; both commands answer (0/1) or
    refuse the input (2), never raise."""
    rng = random.Random(int(os.environ.get("AIPLAT_FUZZ_SEED", "40")))
    docs = {s: {f.name: json.loads(f.read_text()) for f in (SNAPSHOTS / s).glob("*.json")
                if f.name != "expected.json"} for s in SAMPLES}
    for i in range(int(os.environ.get("AIPLAT_FUZZ_N", "240"))):
        sample = rng.choice(SAMPLES)
        file = rng.choice(sorted(f for f, d in docs[sample].items() if d["items"]))
        doc = copy.deepcopy(docs[sample][file])
        path = rng.choice([p for p in _paths(doc) if len(p) > 2])
        value = rng.choice(JUNK)
        node = doc
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
        snap = tmp_path / str(i)
        snap.mkdir()
        for f, d in docs[sample].items():
            (snap / f).write_text(json.dumps(doc if f == file else d))
        shutil.copy(SNAPSHOTS / sample / "expected.json", snap)
        what = f"{sample} {file} {'.'.join(map(str, path))} = {value!r}"
        for args in (_why(snap, sample), ["sim", "replay", str(snap), "-o", "json"]):
            try:
                rc = main(args)
            except SystemExit as e:  # why-pending's NotFound exits 2 this way
                rc = e.code
            except Exception as e:  # the property: nothing escapes
                pytest.fail(f"{args[:2]} on {what}: {type(e).__name__}: {e}")
            assert rc in (0, 1, 2), what
        capsys.readouterr()
        shutil.rmtree(snap)


def test_a_clusterqueue_without_flavors_is_named_as_the_cause(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``resourceGroups: []`` is a ClusterQueue Kueue's schema accepts: no flavor suits
    the pods, said as such (the walk used to fail with IndexError)."""
    snap = _copy("quota-exhausted", tmp_path)
    _edit(snap, "clusterqueues.json", "items.0.spec.resourceGroups", [])
    main(_why(snap, "quota-exhausted"))
    out = json.loads(capsys.readouterr().out)
    assert out["code"] == "FlavorMismatch", out
    assert "no flavor of ClusterQueue research suits the pods: it has none" in out["reason"]


def test_a_node_with_a_huge_allocatable_is_counted_not_crashed_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """10**30 GPUs on a node (a quantity the API server stores): the pods that fit there
    are past any pod set's count; Decimal's floor division of it raised
    DivisionImpossible."""
    snap = _copy("tas-rack-too-small", tmp_path)
    nodes = json.loads((snap / "nodes.json").read_text())
    nodes["items"][0]["status"]["allocatable"]["nvidia.com/gpu"] = 10**30
    (snap / "nodes.json").write_text(json.dumps(nodes))
    assert main(_why(snap, "tas-rack-too-small")) in (0, 1)
    out = json.loads(capsys.readouterr().out)
    # rack 0 now holds the 3 pods (the node's CPU takes 6): the walk and the replay agree
    assert out["code"] != "TopologyDomainTooSmall", out
    assert any(e.startswith("replay of Kueue's cycle: admitted") for e in out["evidence"]), out
