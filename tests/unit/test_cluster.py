"""``aiplat.cluster`` without a cluster: pinned versions, kwok nodes and DRA slices from the
spec, webhook configurations pointed at 127.0.0.1, certificates, and the CLI's refusals
(one line, exit 2, nothing started)."""

from __future__ import annotations

import base64
import ssl
from pathlib import Path

import pytest
from cryptography import x509

from aiplat import gobuild
from aiplat.catalog import load_catalog
from aiplat.cli.main import main
from aiplat.cluster import assets
from aiplat.cluster.config import local_webhooks
from aiplat.cluster.nodes import lab_nodes, node, resource_slice
from aiplat.cluster.pki import make_pki
from aiplat.kube.facts import pool_facts
from aiplat.plan.resolve import resolve
from aiplat.spec import EXAMPLE, example_text, parse_platform


def _pools():  # type: ignore[no-untyped-def]
    catalog = load_catalog()
    return pool_facts(resolve(parse_platform(example_text(), EXAMPLE, catalog), catalog))


def test_versions_are_read_from_the_tools_module() -> None:
    v = assets.versions()
    assert v["k8s.io/kubernetes"].startswith("v1.36.")
    assert v["sigs.k8s.io/kueue"] == "v0.19.2"
    key = assets.version_key(v)
    assert key.startswith("k8s-v1.36.") and "_kueue-v0.19.2_" in key
    assert set(assets.crd_versions()) == set(assets.CRD_MODULES)


def test_version_stamps_and_binary_names() -> None:
    flags = assets.ldflags(assets.versions())
    assert "-X=k8s.io/component-base/version.gitVersion=v1.36." in flags
    assert "-X=k8s.io/component-base/version.gitMinor=36" in flags
    assert gobuild.binary_name("go.etcd.io/etcd/server/v3") == "server"
    assert gobuild.binary_name("sigs.k8s.io/kueue/cmd/kueue") == "kueue"


def test_locate_names_what_is_missing_and_how_to_build_it(tmp_path: Path) -> None:
    with pytest.raises(assets.InputError, match=r"kube-apiserver.*aiplat lab cluster build"):
        assets.locate(tmp_path / "nothing", cache=tmp_path / "cache")


def test_nodes_carry_what_render_and_the_agent_give_them() -> None:
    pools = _pools()
    nodes = [node(p, i) for p, i in lab_nodes(pools)]
    assert [n["metadata"]["name"] for n in nodes] == [
        *(f"h100-{i}" for i in range(6)), "l40s-0", "l40s-1"]  # autoscaled: its minimum
    h = nodes[5]
    labels = h["metadata"]["labels"]
    assert labels["topology.aiplat.io/rack"] == "h100-rack-2"  # nodesPerRack 2
    assert labels["topology.aiplat.io/block"] == "h100-block-0"  # racksPerBlock 3
    assert labels["aiplat.io/gpu-resources"] == "device-plugin"
    assert h["status"]["capacity"]["nvidia.com/gpu"] == "8"
    assert h["status"]["allocatable"]["cpu"] == str(pools[0].cpu_allocatable)
    assert h["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    lab = nodes[6]
    assert "nvidia.com/gpu" not in lab["status"]["capacity"]
    assert lab["metadata"]["labels"]["nvidia.com/gpu.deploy.device-plugin"] == "false"


def test_dra_slices_follow_the_nvidia_driver() -> None:
    h100, l40s = _pools()
    assert resource_slice(h100, 0) is None  # a device-plugin pool publishes no slice
    s = resource_slice(l40s, 1, node_uid="uid-1")
    assert s is not None
    assert s["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    spec = s["spec"]
    assert spec["pool"] == {"name": "l40s-1", "generation": 1, "resourceSliceCount": 1}
    devs = spec["devices"]
    assert [d["name"] for d in devs] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    a = devs[1]["attributes"]
    assert a["productName"] == {"string": "NVIDIA L40S"}
    assert a["architecture"] == {"string": "Ada Lovelace"}
    assert a["cudaComputeCapability"] == {"version": "8.9.0"}
    assert a["driverVersion"] == {"version": "580.95.5"}  # 580.95.05 as semver
    assert a["cudaDriverVersion"] == {"version": "13.0.0"}
    assert a["resource.kubernetes.io/pciBusID"]["string"].startswith("0000:")
    assert devs[1]["capacity"]["memory"] == {"value": "46068Mi"}
    uuids = {d["attributes"]["uuid"]["string"] for d in devs}
    assert len(uuids) == 4  # distinct per GPU, stable per node
    assert uuids == {d["attributes"]["uuid"]["string"] for d in resource_slice(l40s, 1)[
        "spec"]["devices"]}  # type: ignore[index]


def test_mig_devices_are_named_as_the_driver_names_them() -> None:
    catalog = load_catalog()
    text = example_text().replace(
        "    topology:\n      nodesPerRack: 2",
        "    gpuResources: dra\n    sharing: {strategy: mig, migLayout: [3g.40gb, 2g.20gb, "
        "2g.20gb]}\n    topology:\n      nodesPerRack: 2")
    h100 = pool_facts(resolve(parse_platform(text, "mig.yaml", catalog), catalog))[0]
    names = [d["name"] for d in h100.devices()][:3]
    # gpu-<minor>-mig-<profile without dots>-<GI profile id>-<placement start>
    # 2g.20gb may start at 0, 2, 4 and 3g.40gb at 0, 4: the only layout is 2g, 2g, 3g.
    assert names == ["gpu-0-mig-2g20gb-14-0", "gpu-0-mig-2g20gb-14-2", "gpu-0-mig-3g40gb-9-4"]
    d = h100.devices()[2]
    assert d["attributes"]["profile"] == {"string": "3g.40gb"}
    assert {f"memorySlice{i}" for i in range(4, 8)} <= set(d["capacity"])


def test_webhooks_point_at_loopback_with_the_runs_ca() -> None:
    docs = [{"apiVersion": "admissionregistration.k8s.io/v1",
             "kind": "MutatingWebhookConfiguration",
             "metadata": {"name": "mutating-webhook-configuration"},
             "webhooks": [
                 {"name": "mjob.kb.io", "clientConfig": {"service": {
                     "name": "webhook-service", "namespace": "system",
                     "path": "/mutate-batch-v1-job"}},
                  "rules": [{"apiGroups": ["batch"], "resources": ["jobs"]}]},
                 {"name": "mworkload.kb.io", "clientConfig": {"service": {
                     "name": "webhook-service", "namespace": "system",
                     "path": "/mutate-kueue-x-k8s-io-v1beta2-workload"}},
                  "rules": [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"]}]}]}]
    out = local_webhooks(docs, "kueue-", 9443, b"PEM", "kueue.x-k8s.io")
    assert out[0]["metadata"] == {"name": "kueue-mutating-webhook-configuration"}
    job, wl = out[0]["webhooks"]
    assert job["clientConfig"] == {"url": "https://127.0.0.1:9443/mutate-batch-v1-job",
                                   "caBundle": base64.b64encode(b"PEM").decode()}
    # Other groups' objects are kept out of the system namespaces; Kueue's own are not.
    assert job["namespaceSelector"]["matchExpressions"][0]["values"] == [
        "kube-system", "kueue-system"]
    assert "namespaceSelector" not in wl
    assert docs[0]["metadata"]["name"] == "mutating-webhook-configuration"  # not mutated


def test_certificates_chain_to_the_runs_ca(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    ctx.load_cert_chain(pki.path("apiserver.crt"), pki.path("apiserver.key"))
    cert = x509.load_pem_x509_certificate(pki.path("apiserver.crt").read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "127.0.0.1" in {str(i) for i in san.get_values_for_type(x509.IPAddress)}
    admin = x509.load_pem_x509_certificate(pki.path("admin.crt").read_bytes())
    assert "O=system:masters" in admin.subject.rfc4514_string()
    assert (pki.path("ca.key").stat().st_mode & 0o077) == 0
    assert (tmp_path / "pki" / "kueue-webhook" / "tls.crt").read_bytes() == \
        pki.path("webhooks.crt").read_bytes()


def _run(args: list[str], monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
         capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    try:
        code = main(args)
    except SystemExit as e:  # commands that exit 1 for a failed check
        code = int(e.code or 0)
    return code, capsys.readouterr().err


def test_cli_refuses_cleanly_without_binaries_or_a_cluster(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"),
           "AIPLAT_CLUSTER_DIR": str(tmp_path / "runs")}

    def run(*args: str) -> tuple[int, str]:
        return _run(list(args), monkeypatch, env, capsys)

    code, err = run("lab", "cluster", "up", "--assets", str(tmp_path))
    assert code == 2 and err.count("\n") == 1 and "aiplat lab cluster build" in err, err
    assert not (tmp_path / "runs").exists()  # nothing started, nothing written
    code, err = run("lab", "cluster", "kubeconfig")
    assert code == 2 and "is not up" in err
    code, err = run("lab", "cluster", "status")
    assert code == 1 and "is not up" in err
    code, err = run("lab", "cluster", "down")
    assert code == 0 and "nothing" in err


def test_two_clusters_never_remove_each_others_kueue_metrics_certs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kueue reads /etc/kueue/metrics/certs once, at start: the cluster that started last
    owns the files, and an older cluster's down leaves them for the running one."""
    from aiplat.cluster import run
    from aiplat.cluster.pki import Pki

    certs = tmp_path / "etc" / "certs"
    monkeypatch.setattr(run, "METRICS_CERTS", certs)
    monkeypatch.setenv("AIPLAT_CLUSTER_DIR", str(tmp_path / "runs"))
    states = {}
    for name in ("a", "b"):
        d = run.run_dir(name)
        (d / "pki").mkdir(parents=True)
        for ext in ("crt", "key"):
            (d / "pki" / f"webhooks.{ext}").write_text(f"{name}-{ext}")
        st = run.ClusterState(name=name, dir=str(d), server="", ports={}, versions={})
        run._metrics_certs(st, Pki(d / "pki"))
        run._save(st)
        states[name] = st
    assert (certs / "tls.crt").read_text() == "b-crt"  # the newest cluster's
    run.down("a")
    assert (certs / "tls.crt").read_text() == "b-crt" and (certs / "tls.key").exists()
    run.down("b")
    assert not certs.exists()


def test_the_cluster_runs_without_kubectl_and_asking_for_it_says_how(tmp_path: Path) -> None:
    """kubectl is built with the lab (snapshots as an admin takes them), but an --assets
    folder without it still starts the cluster; asking for it names the fix."""
    bindir = tmp_path / "cache" / "bin"
    bindir.mkdir(parents=True)
    for c in assets.COMPONENTS:
        if c.name != "kubectl":
            (bindir / c.name).write_text("")
            (bindir / c.name).chmod(0o755)
    (tmp_path / "cache" / "manifests" / "crds").mkdir(parents=True)
    found = assets.locate(cache=tmp_path / "cache")
    assert found.bin("kueue") == str(bindir / "kueue")
    with pytest.raises(assets.InputError, match=r"kubectl.*aiplat lab cluster build"):
        found.bin("kubectl")
