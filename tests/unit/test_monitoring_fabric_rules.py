"""The fabric alerts (issue #44 item 5): InfiniBand port errors, link integrity, discards, a
port gone or trained down, and RoCE PFC pause storms, on the metric names the exporters
publish. promtool parses every expression and runs each alert's firing and silent case in
tests/integration/test_monitoring_promtool.py; these tests pin what promtool cannot: that
the names are node_exporter's own and the RoCE alert follows the spec.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import yaml

from aiplat.catalog import load_catalog
from aiplat.ops.monitoring import monitoring_rules, render_monitoring
from aiplat.ops.monitoring_platform import roce_rules, uses_roce
from aiplat.ops.runbook import procedures
from aiplat.spec import EXAMPLE, Platform, example_text, parse_platform

# node_exporter collector/infiniband_linux.go (prometheus/node_exporter at a7dcc3a, 2026-08):
# node_infiniband_<name> with labels device and port.
NODE_EXPORTER_INFINIBAND = {
    "link_downed_total", "link_error_recovery_total", "port_errors_received_total",
    "port_discards_transmitted_total", "port_discards_received_total", "symbol_error_total",
    "port_receive_remote_physical_errors_total", "port_transmit_wait_total",
    "rate_bytes_per_second", "state_id", "physical_state_id", "np_cnp_packets_sent_total",
    "rp_cnp_packets_handled_total", "np_ecn_marked_roce_packets_received_total",
}
FABRIC_ALERTS = {"InfinibandPortErrors", "InfinibandLinkDowned", "InfinibandSymbolErrors",
                 "InfinibandLinkErrorRecovery", "InfinibandTransmitDiscards",
                 "InfinibandPortDown", "InfinibandPortDegradedRate", "RocePfcPauseStorm"}


def example(edit: Callable[[dict[str, Any]], None] | None = None) -> Platform:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return parse_platform(yaml.safe_dump(data, sort_keys=False), EXAMPLE, load_catalog())


def ethtool_metric(stat: str) -> str:
    """node_exporter's ethtool collector: buildEthtoolFQName (rx/tx spelt out)."""
    name = re.sub(r"(^|_)rx(_|$)", r"\1received\2", stat.lower())
    return "node_ethtool_" + re.sub(r"(^|_)tx(_|$)", r"\1transmitted\2", name)


def alerts(platform: Platform) -> dict[str, Any]:
    return {a.name: a for g in monitoring_rules(platform) for a in g.alerts}


def test_every_fabric_alert_is_rendered_for_the_example() -> None:
    assert set(alerts(example())) >= FABRIC_ALERTS


def test_infiniband_alerts_read_only_node_exporters_names() -> None:
    for name, a in alerts(example()).items():
        for metric in re.findall(r"\bnode_infiniband_(\w+)", a.expr):
            assert metric in NODE_EXPORTER_INFINIBAND, (name, metric)


def test_roce_alert_reads_the_mlx5_counters_as_the_ethtool_collector_names_them() -> None:
    (rule,) = roce_rules(example())
    assert ethtool_metric("tx_pause_ctrl_phy") in rule.expr
    assert ethtool_metric("tx_pause_storm_warning_events") in rule.expr


def test_roce_alert_only_where_the_spec_has_roce() -> None:
    def no_roce(data: dict[str, Any]) -> None:
        for s in data["network"]["segments"]:
            s["rdma"] = "infiniband" if s.get("rdma") == "roce" else s.get("rdma", "none")
        for p in data["pools"]:
            for n in p.get("node", {}).get("nics", []):
                if n.get("type") == "roce":
                    n["type"] = "ethernet"

    plain = example(no_roce)
    assert uses_roce(example()) and not uses_roce(plain)
    assert "RocePfcPauseStorm" not in alerts(plain)
    assert FABRIC_ALERTS - {"RocePfcPauseStorm"} <= set(alerts(plain))


def test_the_checklist_names_the_ethtool_collector_flag() -> None:
    checklist = render_monitoring(example())["checklist.md"]
    assert "--collector.ethtool" in checklist and "RocePfcPauseStorm" in checklist


def test_fabric_alerts_link_the_fabric_procedure_which_runs_diagnose_rdma() -> None:
    new = FABRIC_ALERTS - {"InfinibandPortErrors", "InfinibandLinkDowned"}
    for name in new:
        assert alerts(example())[name].procedure == "fabric-link", name
    (proc,) = [p for p in procedures(example()) if p.id == "fabric-link"]
    assert any(s.command == "aiplat diagnose rdma rdma" for s in proc.steps)


def test_a_port_never_active_does_not_count_as_down() -> None:
    # An unused port (ibstat: Down/Disabled on every node) must not page anyone: the alert
    # needs the port to have been Active within the day.
    expr = alerts(example())["InfinibandPortDown"].expr
    assert "max_over_time(node_infiniband_state_id[1d]) == 4" in expr
