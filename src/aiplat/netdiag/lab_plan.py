"""The lab's plan from a platform spec's network section (pure, no host I/O).

``aiplat lab up SPEC`` builds the segments the spec declares (``network.segments``) with the
spec's lab defaults (``network.lab``: nodes, link rate, which segments); without a spec, the
built-in four. Command-line values override the spec's. Named ``lab_plan`` so that it is
never taken for the platform's plan (:func:`aiplat.plan.build_plan`).
"""

from __future__ import annotations

from aiplat.errors import InputError
from aiplat.netdiag.model import PROM_PORT, LabPlan, SegmentInput, plan_lab


def lab_plan(spec: str | None, nodes: int | None, prefix: str, link_mbit: int | None,
             segments: tuple[str, ...], *, prom_port: int = PROM_PORT) -> LabPlan:
    """The lab plan from SPEC's network section (or the built-in four segments)."""
    if spec is None:
        return plan_lab(nodes=nodes or 3, prefix=prefix, link_mbit=link_mbit or 1000,
                        only=segments, prom_port=prom_port)
    from aiplat.catalog import load_catalog
    from aiplat.spec import load_platform

    platform = load_platform(spec, load_catalog())
    net = platform.network
    segs = [SegmentInput(name=s.name, purpose=s.purpose.value, mtu=s.mtu, cidr=s.cidr,
                         vlan=s.vlan, rate_gbps=s.rate_gbps) for s in net.segments]
    if not segs:
        raise InputError(f"{spec}: network.segments is empty (fix: add segments, or run "
                         "'aiplat lab up' without SPEC for the default four)")
    return plan_lab(segs, nodes=nodes or net.lab.nodes, prefix=prefix,
                    link_mbit=link_mbit or net.lab.link_mbit,
                    only=segments or tuple(net.lab.segments), prom_port=prom_port)
