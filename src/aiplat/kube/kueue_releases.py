"""The Kueue Configuration each Kueue release installs, for a tree that brings none.

Kueue's built-in default, when a Configuration lists no integrations, is ``batch/job`` alone
(``apis/config/v1beta2/defaults.go``), but nobody runs Kueue without a Configuration: its
released manifests (``config/components/manager/controller_manager_config.yaml``, the
``kueue-manager-config`` ConfigMap) and its Helm chart (``charts/kueue/values.yaml``,
``managerConfig.controllerManagerConfigYaml``) both carry one, enabling JobSet, MPIJob, Pod,
Deployment, StatefulSet, LeaderWorkerSet and more. Lint reads a tree without a Configuration
as that release's.

Facts read from github.com/kubernetes-sigs/kueue (Apache-2.0) at each tag below, both files;
they enable the same frameworks (in another order) and leave every other field lint reads
(namespace, manageJobsWithoutQueueName, managedJobsNamespaceSelector, resources) commented
out, so Kueue's defaults apply to those. The target release is the spec's
``kubernetes.kueueVersion`` (one place: ``aiplat.spec.models.KubernetesSpec``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiplat.spec.models import KubernetesSpec

SOURCES = ("config/components/manager/controller_manager_config.yaml",
           "charts/kueue/values.yaml")
DEFAULT_VERSION: str = KubernetesSpec.model_fields["kueue_version"].default

_COMMON = ("batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/raycluster",
           "ray.io/rayservice", "jobset.x-k8s.io/jobset")
_KUBEFLOW_V1 = ("kubeflow.org/paddlejob", "kubeflow.org/pytorchjob", "kubeflow.org/tfjob",
                "kubeflow.org/xgboostjob", "kubeflow.org/jaxjob")
_TAIL = ("workload.codeflare.dev/appwrapper", "trainer.kubeflow.org/trainjob", "pod",
         "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset")


@dataclass(frozen=True)
class Release:
    """One Kueue release's shipped Configuration (the fields lint reads)."""

    tag: str
    commit: str
    frameworks: tuple[str, ...]

    def configuration(self) -> dict[str, Any]:
        return {"integrations": {"frameworks": list(self.frameworks)}}

    @property
    def source(self) -> str:
        return (f"Kueue {self.tag}'s released configuration ({', '.join(SOURCES)} at "
                f"commit {self.commit[:12]})")


# By minor release: the newest patch read. v0.19 comments the Kubeflow v1 jobs out (Kubeflow
# Trainer v2's TrainJob replaces them).
RELEASES = {
    "0.17": Release("v0.17.8", "818686e072da52af3564ba21f37f826fe05190af",
                    _COMMON + _KUBEFLOW_V1 + _TAIL),
    "0.18": Release("v0.18.6", "4152c9bad956a361bb56b0f7994d492709835d96",
                    _COMMON + _KUBEFLOW_V1 + _TAIL),
    "0.19": Release("v0.19.2", "8eab68778fc1b52affe165fdf5af29d1e9b4f3cb", _COMMON + _TAIL),
}


def release(version: str | None = None) -> tuple[Release, str]:
    """The release whose shipped Configuration stands for ``version`` (default: the spec's
    target), and a note when it is another minor (the newest known one stands in)."""
    v = (version or DEFAULT_VERSION).removeprefix("v")
    minor = ".".join(v.split(".")[:2])
    if minor in RELEASES:
        return RELEASES[minor], ""
    newest = max(RELEASES, key=lambda m: tuple(int(x) for x in m.split(".")))
    return RELEASES[newest], (f"no packaged configuration for Kueue {v}; "
                              f"{RELEASES[newest].tag}'s stands in")
