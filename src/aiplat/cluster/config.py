"""What each component of a lab cluster run is started with: pure, from the run's folder,
ports and certificates. Nothing here starts anything (``run`` does).

Choices worth knowing:
- etcd listens on 127.0.0.1 only, plain HTTP, ``--unsafe-no-fsync`` (a lab's data is thrown
  away with it); the API server serves TLS on 127.0.0.1 with the run's own CA and the default
  admission chain (NamespaceLifecycle, LimitRanger, ServiceAccount, PodSecurity, Priority,
  ResourceQuota, webhooks...), so what it refuses a real cluster refuses too.
- Every controller uses the run's admin kubeconfig (group system:masters), leader election
  off, its own serving ports 0 where it has them (nothing to scrape in a lab).
- Kueue's Configuration is the one ``aiplat kube render`` writes for the platform, with only
  what a process on 127.0.0.1 needs changed on top: webhook host/port/certDir, health and
  metrics addresses, leader election, internal cert management off (it would patch
  Service-based webhooks), the visibility API server off (an aggregated API needs in-cluster
  config).
- Kueue's and JobSet's webhook configurations are their upstream ones with ``clientConfig``
  pointed at ``https://127.0.0.1:<port><path>`` and the run's CA.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from aiplat.cluster.pki import SERVICE_CIDR, Pki

Obj = dict[str, Any]
KUEUE_NS = "kueue-system"
# Namespaces whose pods Kueue's job webhooks never see, as the upstream kustomization sets.
UNMANAGED_NS = ["kube-system", KUEUE_NS]


@dataclass(frozen=True)
class Ports:
    etcd: int
    etcd_peer: int
    apiserver: int
    kueue_webhook: int
    kueue_health: int
    kueue_metrics: int
    jobset_webhook: int
    jobset_health: int
    kwok: int


def kubeconfig(server: str, pki: Pki, name: str = "aiplat-lab") -> Obj:
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": name,
        "clusters": [{"name": name, "cluster": {
            "server": server, "certificate-authority": str(pki.ca)}}],
        "users": [{"name": f"{name}-admin", "user": {
            "client-certificate": str(pki.path("admin.crt")),
            "client-key": str(pki.path("admin.key"))}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": f"{name}-admin"}}],
    }


def etcd_args(data: Path, ports: Ports) -> list[str]:
    client = f"http://127.0.0.1:{ports.etcd}"
    peer = f"http://127.0.0.1:{ports.etcd_peer}"
    return ["--name=aiplat", f"--data-dir={data}", f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}", f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}", f"--initial-cluster=aiplat={peer}",
            "--unsafe-no-fsync", "--log-level=warn"]


def apiserver_args(pki: Pki, ports: Ports) -> list[str]:
    p = pki.path
    return [
        f"--etcd-servers=http://127.0.0.1:{ports.etcd}",
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
        f"--secure-port={ports.apiserver}",
        f"--tls-cert-file={p('apiserver.crt')}", f"--tls-private-key-file={p('apiserver.key')}",
        f"--client-ca-file={pki.ca}",
        f"--service-account-key-file={p('sa.pub')}",
        f"--service-account-signing-key-file={p('sa.key')}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--authorization-mode=RBAC", "--allow-privileged=true", "--profiling=false",
        # Pods on kwok nodes never become ready for real; no reason to wait for an endpoint.
        "--endpoint-reconciler-type=none",
    ]


def kcm_args(kubeconfig_path: Path, pki: Pki) -> list[str]:
    return [f"--kubeconfig={kubeconfig_path}", "--leader-elect=false", "--secure-port=0",
            f"--service-account-private-key-file={pki.path('sa.key')}",
            f"--root-ca-file={pki.ca}", "--use-service-account-credentials=false",
            # No cloud, no real kubelets: nothing for these to do.
            "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller",
            f"--cluster-signing-cert-file={pki.ca}",
            f"--cluster-signing-key-file={pki.path('ca.key')}"]


def scheduler_args(kubeconfig_path: Path) -> list[str]:
    return [f"--kubeconfig={kubeconfig_path}", "--leader-elect=false", "--secure-port=0"]


# The label ``aiplat maintain``'s validation Jobs carry (maintain/validate.py; a test holds
# the two equal: cluster does not import maintain).
VALIDATION_LABEL = "maintain.aiplat.io/validation"


def kwok_stages(manifests: Path) -> str:
    """kwok's stages for the lab: upstream's fast node and pod stages as they are, and its
    general pod-complete stage narrowed to pods labelled ``VALIDATION_LABEL`` (a Job's pods
    on kwok would otherwise run forever; every other Job in the lab must keep running)."""
    docs = [p.read_text() for p in sorted((manifests / "kwok").glob("*.yaml"))]
    complete = manifests / "kwok-general" / "pod-complete.yaml"
    if complete.is_file():
        stage = yaml.safe_load(complete.read_text())
        stage["metadata"]["name"] = "aiplat-validation-complete"
        stage["spec"]["selector"]["matchExpressions"].append(
            {"key": f'.metadata.labels["{VALIDATION_LABEL}"]', "operator": "In",
             "values": ["true"]})
        stage["spec"]["delay"] = {"durationMilliseconds": 1000}
        docs.append(yaml.safe_dump(stage, sort_keys=False))
    return "\n---\n".join(docs)


def kwok_args(kubeconfig_path: Path, stages: Path, ports: Ports) -> list[str]:
    return [f"--kubeconfig={kubeconfig_path}", f"--config={stages}",
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            "--cidr=10.244.0.0/16", "--node-ip=10.240.0.1",
            # Renew each node's Lease as a kubelet does: without one, the node lifecycle
            # controller takes the nodes for unreachable about once a minute and marks every
            # pod on them NotReady, which kwok never turns back (operators waiting for their
            # DaemonSets' pods to be ready never see them so).
            "--node-lease-duration-seconds=40",
            f"--server-address=127.0.0.1:{ports.kwok}"]


def kueue_configuration(rendered: Obj, pki: Pki, ports: Ports) -> Obj:
    """The rendered Configuration with what a process on 127.0.0.1 needs on top."""
    cfg = copy.deepcopy(rendered)
    cfg["namespace"] = KUEUE_NS
    cfg["webhook"] = {"host": "127.0.0.1", "port": ports.kueue_webhook,
                      "certDir": str(pki.path("kueue-webhook"))}
    cfg["health"] = {"healthProbeBindAddress": f"127.0.0.1:{ports.kueue_health}"}
    cfg["metrics"] = {"bindAddress": f"127.0.0.1:{ports.kueue_metrics}"}
    cfg["leaderElection"] = {"leaderElect": False}
    cfg["internalCertManagement"] = {"enable": False}
    cfg.setdefault("featureGates", {})["VisibilityOnDemand"] = False
    return cfg


def jobset_configuration(pki: Pki, ports: Ports) -> Obj:
    return {"apiVersion": "config.jobset.x-k8s.io/v1alpha1", "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"host": "127.0.0.1", "port": ports.jobset_webhook,
                        "certDir": str(pki.path("jobset-webhook"))},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{ports.jobset_health}"}}


def local_webhooks(docs: list[Obj], prefix: str, port: int, ca_pem: bytes,
                   own_group: str) -> list[Obj]:
    """Upstream webhook configurations pointed at ``https://127.0.0.1:port``: each object
    renamed with ``prefix`` (Kueue's and JobSet's share names), every webhook's
    ``clientConfig`` a URL with the run's CA, and webhooks on other groups' objects kept out
    of the system namespaces as the upstream kustomization does."""
    ca = base64.b64encode(ca_pem).decode()
    out = []
    for doc in docs:
        if not doc or doc.get("kind") not in ("MutatingWebhookConfiguration",
                                              "ValidatingWebhookConfiguration"):
            continue
        d = copy.deepcopy(doc)
        d["metadata"] = {"name": prefix + d["metadata"]["name"]}
        for w in d.get("webhooks", []):
            path = w["clientConfig"]["service"]["path"]
            w["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca}
            groups = {g for r in w.get("rules", []) for g in r.get("apiGroups", [])}
            if groups != {own_group}:
                w["namespaceSelector"] = {"matchExpressions": [{
                    "key": "kubernetes.io/metadata.name", "operator": "NotIn",
                    "values": UNMANAGED_NS}]}
        out.append(d)
    return out
