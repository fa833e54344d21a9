"""sim replay's command line: the kubeconfig kubectl would use, --context, and one warning per
unreplayed field instead of one per object."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiplat.cli.main import main
from aiplat.ops.kueue_input import grouped


def test_unreplayed_fields_are_grouped_with_their_objects() -> None:
    lines = [f"snap.yaml: Workload ns/w{i} spec.podSets[{i % 2}].topologyRequest"
             for i in range(5)]
    lines += ["snap.yaml: ResourceFlavor h100: spec.topologyName (TAS is not replayed)",
              "snap.yaml: ClusterQueue a: spec.namespaceSelector (every namespace)",
              "snap.yaml: ClusterQueue b: spec.namespaceSelector (every namespace)",
              "snap.yaml: Configuration: waitForPodsReady.blockAdmission"]
    assert grouped(lines, "snap.yaml") == [
        "spec.podSets[*].topologyRequest: Workload ns/w0, Workload ns/w1, Workload ns/w2 "
        "and 2 more",
        "spec.topologyName (TAS is not replayed): ResourceFlavor h100",
        "spec.namespaceSelector (every namespace): ClusterQueue a, ClusterQueue b",
        "Configuration: waitForPodsReady.blockAdmission"]


def test_without_snapshot_the_kubeconfig_kubectl_would_use(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    assert main(["sim", "replay"]) == 2
    assert f"no kubeconfig at {tmp_path / 'missing'}" in capsys.readouterr().err
    (tmp_path / "kc").write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n"
                                 "users: []\n")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kc"))
    assert main(["sim", "replay", "--context", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_snapshot_and_context_are_exclusive(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.yaml").write_text("kind: List\nitems: []\n")
    assert main(["sim", "replay", str(tmp_path / "s.yaml"), "--context", "x"]) == 2
    assert "not both" in capsys.readouterr().err


def test_other_kinds_in_a_snapshot_are_left_out_with_a_note(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A why-pending sample folder (Pods, a DeviceClass, expected.json) and a rendered kueue/
    folder (its Kustomization) replay; a kind of Kueue's own group it does not read is
    refused by name."""
    from aiplat.samples import get

    get("snapshot-waiting-for-preemption", tmp_path / "snap")
    assert main(["sim", "replay", str(tmp_path / "snap"), "-o", "json"]) == 0
    err = capsys.readouterr().err
    # its Pods are read: with Nodes and Topologies they are topology-aware scheduling's input
    assert "not read by the replay: 1 DeviceClass, 1 a document without kind" in err
    tree = tmp_path / "kube"
    assert main(["kube", "render", "-d", str(tree)]) == 0
    assert main(["sim", "replay", str(tree / "kueue")]) == 0
    assert "not read by the replay: 1 Kustomization" in capsys.readouterr().err
    (tmp_path / "typo.yaml").write_text(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueues\nmetadata: {name: a}\n")
    assert main(["sim", "replay", str(tmp_path / "typo.yaml")]) == 2
    assert "kind 'ClusterQueues' is not a kind of kueue.x-k8s.io" in capsys.readouterr().err


def test_kueues_sample_admission_check_replays_without_a_crash(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Kueue v0.19.2's site/static/examples/sample-admission-check.yaml (provenance:
    tests/data/upstream/kueue/validate/PROVENANCE.md): the AdmissionCheck's parameters carry
    Go RE2 patterns (``^(?i)...``) in Kueue's CRD schema, which Python's re refuses; the
    schema check reads them as the API server does, and the ProvisioningRequestConfig beside
    it (its controller's parameters) is not a replay input."""
    sample = Path(__file__).parents[1] / "data" / "upstream" / "kueue" / "validate" / \
        "sample-admission-check.yaml"
    assert main(["sim", "replay", str(sample), "-o", "json"]) == 0
    io = capsys.readouterr()
    assert "Traceback" not in io.err and io.out.strip() == "[]"
