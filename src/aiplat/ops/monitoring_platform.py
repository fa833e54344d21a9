"""Alert rules for the platform's fabric and GPU components around the GPUs: InfiniBand ports
(node-exporter's ``infiniband`` collector, on by default), the GPU Operator's driver upgrade
state and the NVIDIA DRA driver's kubelet plugin (both from kube-state-metrics).

- InfiniBand: ``node_infiniband_*`` with labels ``device`` and ``port`` (node_exporter
  ``collector/infiniband_linux.go``, on by default): receive errors, link downs, symbol
  errors and link error recoveries (a bad cable before it fails), transmit discards (lossless
  delivery failing), a port that was Active in the last day and is not (``state_id`` 4 is
  Active), and a port trained below the same port's rate on the other nodes.
- RoCE PFC: node_exporter's ``ethtool`` collector (``collector/ethtool_linux.go``, OFF by
  default: ``--collector.ethtool``) exports every ``ethtool -S`` counter as
  ``node_ethtool_<name>`` with ``rx``/``tx`` spelt ``received``/``transmitted`` and the label
  ``device``: mlx5's ``tx_pause_ctrl_phy`` is ``node_ethtool_transmitted_pause_ctrl_phy``,
  its storm watchdog ``tx_pause_storm_warning_events``
  ``node_ethtool_transmitted_pause_storm_warning_events``. Rendered only where the spec has
  RoCE (a segment with ``rdma: roce`` or a RoCE NIC), and the checklist names the flag.
- NVLink CRC and PCIe replays are GPU alerts (:mod:`aiplat.ops.monitoring`, on DCGM fields
  that DCGM's default counters CSV leaves off and aiplat's CSV turns on).
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
from aiplat.spec.models import NicType, Platform

UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
UPGRADE_FAILED = "upgrade-failed"
KSM_UPGRADE_STATE = "label_nvidia_com_gpu_driver_upgrade_state"
DRA_DRIVER_NS = "nvidia-dra-driver-gpu"
DRA_KUBELET_PLUGIN = "nvidia-dra-driver-gpu-kubelet-plugin"
IB_RECEIVE_ERRORS_PER_10M = 10
IB_SYMBOL_ERRORS_PER_HOUR = 10
"""Post-FEC symbol errors: an NDR/HDR link corrects its bit errors in FEC, so a healthy link's
counter stays at 0 for weeks; a few an hour is a cable or transceiver going bad."""
IB_XMIT_DISCARDS_PER_10M = 100
IB_ACTIVE = 4  # node_exporter's state_id: 1 down, 2 init, 3 armed, 4 active
PFC_PAUSE_FRAMES_PER_S = 1000
"""Pause frames a port sends per second, sustained for 10 minutes: a host that cannot drain
its receive queue (PCIe backpressure, a stuck consumer) and stalls its switch port, and every
flow behind it on that priority."""


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
    ), *_ib_link_rules(ib), *_ib_port_rules(ib, p0)]


def _ib_link_rules(ib: Mapping[str, str]) -> list[AlertRule]:
    s, d = IB_SYMBOL_ERRORS_PER_HOUR, IB_XMIT_DISCARDS_PER_10M
    return [AlertRule(
        "InfinibandSymbolErrors",
        f"increase(node_infiniband_symbol_error_total[1h]) > {s}",
        "warning", "network",
        "InfiniBand port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.node }} "
        "counts symbol errors",
        f"More than {s} symbol errors in an hour after FEC: the cable, the transceiver or "
        "the port is going bad before the link fails. Record the port's counters and run "
        "aiplat diagnose rdma; clean or replace the cable at the next drain.",
        "fabric-link",
        firing=_case("70m", Series("node_infiniband_symbol_error_total", ib, "0+1x70"),
                     fires=[ib]),
        healthy=_case("70m", Series("node_infiniband_symbol_error_total", ib, "4x70")),
    ), AlertRule(
        "InfinibandLinkErrorRecovery",
        "increase(node_infiniband_link_error_recovery_total[1h]) > 0",
        "warning", "network",
        "InfiniBand port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.node }} "
        "retrained its link",
        "The link fell into error and recovered in the last hour: traffic stalled meanwhile "
        "and a link that keeps recovering ends up down. Check the cable and the switch port.",
        "fabric-link",
        firing=_case("30m", Series("node_infiniband_link_error_recovery_total", ib,
                                   "0 0 0 1x27"), fires=[ib]),
        healthy=_case("30m", Series("node_infiniband_link_error_recovery_total", ib, "2x30")),
    ), AlertRule(
        "InfinibandTransmitDiscards",
        f"increase(node_infiniband_port_discards_transmitted_total[10m]) > {d}",
        "warning", "network",
        "InfiniBand port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.node }} "
        "discards packets",
        f"More than {d} outbound packets discarded in 10 minutes: a lossless fabric that "
        "drops (a port down or congested past its timeouts) turns into retransmissions "
        "for every RDMA flow through it. Check the port state and the switch's congestion.",
        "fabric-link", for_="5m",
        firing=_case("20m", Series("node_infiniband_port_discards_transmitted_total", ib,
                                   "0+50x20"), fires=[ib]),
        healthy=_case("20m", Series("node_infiniband_port_discards_transmitted_total", ib,
                                    "0+2x20")),
    )]


def _ib_port_rules(ib: Mapping[str, str], p0: str) -> list[AlertRule]:
    other = {**ib, "node": f"{p0}-node-2", "instance": "10.0.0.12:9100"}
    third = {**ib, "node": f"{p0}-node-3", "instance": "10.0.0.13:9100"}
    state, rate = "node_infiniband_state_id", "node_infiniband_rate_bytes_per_second"
    ndr, hdr = "50000000000", "25000000000"  # 400 and 200 Gb/s in bytes per second
    return [AlertRule(
        "InfinibandPortDown",
        f"{state} != {IB_ACTIVE} and max_over_time({state}[1d]) == {IB_ACTIVE}",
        "critical", "network",
        "InfiniBand port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.node }} "
        "is no longer Active",
        "The port was Active in the last day and is not now: the rail is gone and NCCL "
        "runs on the remaining ones (or fails). Ports never Active (unused) do not fire. "
        "Check ibstat on {{ $labels.node }} and the switch port.",
        "fabric-link", for_="5m",
        firing=_case("20m", Series(state, ib, "4 4 4 1x17"), fires=[ib]),
        healthy=_case("20m", Series(state, ib, "4x20"), Series(state, other, "1x20")),
    ), AlertRule(
        "InfinibandPortDegradedRate",
        f"{rate} < on (device, port) group_left () max by (device, port) ({rate})"
        f" and on (instance, device, port) {state} == {IB_ACTIVE}",
        "warning", "network",
        "InfiniBand port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.node }} "
        "runs below its peers' rate",
        "The port is Active at a lower rate than the same port on other nodes: the link "
        "trained at a lower speed or width (a cable, a transceiver, a port). Collectives "
        "over this rail run at its rate. Reseat or replace the cable.",
        "fabric-link", for_="15m",
        firing=_case("30m", Series(rate, ib, f"{hdr}x30"), Series(rate, other, f"{ndr}x30"),
                     Series(state, ib, "4x30"), Series(state, other, "4x30"), fires=[ib]),
        healthy=_case("30m", Series(rate, ib, f"{ndr}x30"), Series(rate, other, f"{ndr}x30"),
                      Series(rate, third, f"{hdr}x30"), Series(state, ib, "4x30"),
                      Series(state, other, "4x30"), Series(state, third, "1x30")),
    )]


def uses_roce(platform: Platform) -> bool:
    return (any(s.rdma == "roce" for s in platform.network.segments)
            or any(n.type == NicType.ROCE for p in platform.pools for n in p.node.nics))


def roce_rules(platform: Platform) -> list[AlertRule]:
    """PFC on RoCE ports, from node_exporter's ethtool collector (off by default)."""
    if not uses_roce(platform):
        return []
    p0 = platform.pools[0].name
    eth = {"node": f"{p0}-node-1", "pool": p0, "job": "node-exporter",
           "instance": "10.0.0.11:9100", "device": "ens1f0np0"}
    sent = "node_ethtool_transmitted_pause_ctrl_phy"
    storm = "node_ethtool_transmitted_pause_storm_warning_events"
    n = PFC_PAUSE_FRAMES_PER_S
    return [AlertRule(
        "RocePfcPauseStorm",
        f"rate({sent}[5m]) > {n} or increase({storm}[10m]) > 0",
        "critical", "roce",
        "{{ $labels.device }} on {{ $labels.node }} floods the fabric with PFC pause",
        f"The port sent more than {n} pause frames a second, or the NIC's pause storm "
        "watchdog fired: this host cannot drain its receive queue and stalls its switch "
        "port and every RoCE flow behind it. Drain {{ $labels.node }}; look for PCIe "
        "backpressure (ethtool -S: outbound_pci_stalled_*) or a stuck process.",
        "fabric-link", for_="10m",
        firing=_case("30m", Series(sent, eth, "0+120000x30"), Series(storm, eth, "0x30"),
                     fires=[eth]),
        healthy=_case("30m", Series(sent, eth, "0+3000x30"), Series(storm, eth, "2x30")),
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
        *infiniband_rules(platform), *roce_rules(platform), *driver_upgrade_rules(platform),
        *dra_plugin_rules(platform)]
    return RuleGroup("aiplat-platform", tuple(rules))
