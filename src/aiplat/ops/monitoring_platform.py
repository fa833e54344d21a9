"""Alert rules for the platform's fabric and GPU components around the GPUs: InfiniBand ports
(node-exporter's ``infiniband`` collector, on by default), the GPU Operator's driver upgrade
state and the NVIDIA DRA driver's kubelet plugin (both from kube-state-metrics).

- InfiniBand: ``node_infiniband_*_total`` with labels ``device`` and ``port``
  (node_exporter ``collector/infiniband_linux.go``).
- The driver upgrade: the operator's upgrade controller (k8s-operator-libs ``upgrade``) keeps
  each node's state in the node label ``nvidia.com/gpu-driver-upgrade-state``;
  ``upgrade-failed`` is its failed state. kube-state-metrics exports it in
  ``kube_node_labels`` once allowed (``--metric-labels-allowlist``, the checklist says so).
  The operator's own ``gpu_operator_nodes_upgrades_failed`` counts nodes but names none, and
  its chart creates no Service to scrape it.
- The DRA driver's kubelet plugin is the DaemonSet ``<chart name>-kubelet-plugin`` of the
  chart nvidia-dra-driver-gpu, in the namespace aiplat installs it into.

Built like :mod:`aiplat.ops.monitoring`'s groups: each alert with a firing and a silent case.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from aiplat.ops.monitoring_model import AlertRule, Case, RecordingRule, RuleGroup, Series
from aiplat.spec.models import Platform

UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
UPGRADE_FAILED = "upgrade-failed"
KSM_UPGRADE_STATE = "label_nvidia_com_gpu_driver_upgrade_state"
DRA_DRIVER_NS = "nvidia-dra-driver-gpu"
DRA_KUBELET_PLUGIN = "nvidia-dra-driver-gpu-kubelet-plugin"
IB_RECEIVE_ERRORS_PER_10M = 10


def _case(eval_time: str, *series: Series, fires: Iterable[Mapping[str, str]] = ()) -> Case:
    return Case(tuple(series), eval_time, tuple(fires))


def _uses_dra(platform: Platform) -> bool:
    return any(p.node.gpu is not None
               and (p.gpu_resources or platform.kubernetes.gpu_resources) == "dra"
               for p in platform.pools)


def infiniband_rules(platform: Platform) -> list[AlertRule]:
    p0 = platform.pools[0].name
    ib = {"node": f"{p0}-node-1", "pool": p0, "job": "node-exporter",
          "instance": "10.0.0.11:9100", "device": "mlx5_0", "port": "1"}
    n = IB_RECEIVE_ERRORS_PER_10M
    return [AlertRule(
        "InfinibandPortErrors",
        f"increase(node_infiniband_port_errors_received_total[10m]) > {n}",
        "warning", "network",
        "InfiniBand port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.node }} "
        "receives errors",
        f"More than {n} packets with errors received in 10 minutes: a bad cable, optic or "
        "switch port slows every collective that crosses it. Check the link with "
        "ibstat/perfquery on {{ $labels.node }} and replace the cable or optic.",
        "replace-node", for_="5m",
        firing=_case("20m", Series("node_infiniband_port_errors_received_total", ib,
                                   "0+5x20"), fires=[ib]),
        healthy=_case("20m", Series("node_infiniband_port_errors_received_total", ib,
                                    "0+0.5x20")),
    ), AlertRule(
        "InfinibandLinkDowned",
        "increase(node_infiniband_link_downed_total[30m]) > 0",
        "warning", "network",
        "InfiniBand port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.node }} "
        "went down",
        "The link failed to recover from an error state and went down in the last 30 "
        "minutes: jobs using it lost their connections. Check the port's physical state "
        "and the switch log; a flapping link must be repaired before the node takes work.",
        "replace-node",
        firing=_case("10m", Series("node_infiniband_link_downed_total", ib, "0 0 1x8"),
                     fires=[ib]),
        healthy=_case("10m", Series("node_infiniband_link_downed_total", ib, "3x10")),
    )]


def driver_upgrade_rules(platform: Platform) -> list[AlertRule]:
    """Only where the operator owns the driver: its upgrade controller rolls nothing else."""
    if platform.kubernetes.components.driver != "operator":
        return []
    p0 = platform.pools[0].name
    node = {"node": f"{p0}-node-1"}
    ksm = {**node, "job": "kube-state-metrics", "instance": "10.0.0.7:8080"}
    return [AlertRule(
        "GpuDriverUpgradeFailed",
        f'max by (node) (kube_node_labels{{{KSM_UPGRADE_STATE}="{UPGRADE_FAILED}"}})',
        "critical", "gpu-operator",
        "The GPU Operator's driver upgrade failed on {{ $labels.node }}",
        f"The operator's upgrade controller set {UPGRADE_STATE_LABEL}={UPGRADE_FAILED}: the "
        "node stays cordoned and rolls no further. Read the driver pod's log on "
        "{{ $labels.node }}, fix the cause, then follow the driver upgrade procedure.",
        "driver-upgrade", for_="5m",
        firing=_case("10m", Series("kube_node_labels",
                                   {**ksm, KSM_UPGRADE_STATE: UPGRADE_FAILED}, "1x10"),
                     fires=[node]),
        healthy=_case("10m", Series("kube_node_labels",
                                    {**ksm, KSM_UPGRADE_STATE: "upgrade-done"}, "1x10")),
    )]


def dra_plugin_rules(platform: Platform) -> list[AlertRule]:
    """Only where a pool hands out GPUs through DRA."""
    if not _uses_dra(platform):
        return []
    ds = {"namespace": DRA_DRIVER_NS, "daemonset": DRA_KUBELET_PLUGIN,
          "job": "kube-state-metrics", "instance": "10.0.0.7:8080"}
    sel = f'namespace="{DRA_DRIVER_NS}", daemonset="{DRA_KUBELET_PLUGIN}"'
    return [AlertRule(
        "DraKubeletPluginNotReady",
        f"kube_daemonset_status_desired_number_scheduled{{{sel}}}"
        f" - kube_daemonset_status_number_ready{{{sel}}} > 0",
        "critical", "dra",
        "The NVIDIA DRA driver's kubelet plugin is not ready on every node",
        "Some pods of {{ $labels.namespace }}/{{ $labels.daemonset }} have not been ready for "
        "10 minutes: their nodes publish no GPUs (ResourceSlices) and prepare no claims, so "
        "GPU pods there stay pending. kubectl -n {{ $labels.namespace }} get pods -o wide "
        "shows which nodes; read the plugin's log there.",
        "node-patch", for_="10m",
        firing=_case("15m", Series("kube_daemonset_status_desired_number_scheduled", ds,
                                   "4x15"),
                     Series("kube_daemonset_status_number_ready", ds, "3x15"), fires=[ds]),
        healthy=_case("15m", Series("kube_daemonset_status_desired_number_scheduled", ds,
                                    "4x15"),
                      Series("kube_daemonset_status_number_ready", ds, "4x15")),
    )]


def platform_rules(platform: Platform) -> RuleGroup:
    rules: list[RecordingRule | AlertRule] = [
        *infiniband_rules(platform), *driver_upgrade_rules(platform),
        *dra_plugin_rules(platform)]
    return RuleGroup("aiplat-platform", tuple(rules))
