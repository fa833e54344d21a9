"""The plan report's network section: renders the Plan's network advice
(:mod:`aiplat.plan.network`)."""

from __future__ import annotations

from aiplat.plan.network import NetworkAdvice
from aiplat.report.document import Section, Table
from aiplat.report.grouping import group_repeats
from aiplat.report.prose import prose


def network_section(advice: NetworkAdvice) -> Section:
    """The plan report's network section."""
    segs = Table(
        title="Segments",
        columns=["segment", "purpose", "MTU", "subnet", "VLAN", "rate", "RDMA"],
        rows=[[s.name, s.purpose.value, str(s.mtu), str(s.cidr or "-"), str(s.vlan or "-"),
               f"{s.rate_gbps:g} Gb/s" if s.rate_gbps else "-", s.rdma] for s in advice.segments],
        align=["left", "left", "right", "left", "right", "right", "left"],
    )
    qos = Table(
        title="QoS classes",
        columns=["segment", "traffic", "DSCP", "priority", "lossless", "note"],
        rows=[[q.segment, q.traffic, q.dscp, q.priority, "yes" if q.lossless else "no", q.note]
              for q in advice.qos],
    )
    recs = group_repeats(Table(
        title="Recommendations",
        columns=["severity", "topic", "subject", "advice", "reason"],
        rows=[[r.severity, r.topic, r.subject, prose(r.advice), prose(r.reason)]
              for r in sorted(advice.recommendations,
                              key=lambda r: ("error", "warning", "info").index(r.severity))],
    ), ["subject"], count_after="severity")
    prof = advice.profile
    para = (f"Load profile: {len(prof.multi_node_training)} workload(s) training across nodes"
            + (f" ({', '.join(prof.multi_node_training)})" if prof.multi_node_training else "")
            + f", {len(prof.inference)} serving or batch inference, "
            f"{prof.storage_classes} storage class(es).")
    return Section(id="network", title="Network", paragraphs=[para],
                   tables=[segs, qos, recs],
                   notes=["Try the design in a lab: 'aiplat lab up SPEC' builds these segments "
                          "as namespaces and bridges; 'aiplat net check' and 'aiplat "
                          "diagnose' verify MTU, loss, throughput and paths."])
