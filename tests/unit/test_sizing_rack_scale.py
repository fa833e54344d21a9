"""``sizing.power.rack_scale_layout``: racks of a rack-scale system are whole NVLink domains.

The plan reaches it through ``plan.resolve`` after the spec's checks; called directly it
refuses what has no layout (a part of a domain, a rack over the site's limit) itself.
"""

from __future__ import annotations

import pytest

from aiplat.errors import InputError
from aiplat.sizing.power import rack_scale_layout

# trays, trays per domain, racks per domain, domain kW: racks, trays per rack, kW per rack
LAYOUTS = [
    (144, 18, 1, 132.0, 8, 18, 132.0),  # one DGX SuperPOD GB200 SU: 8 NVL72 racks
    (36, 18, 2, 132.0, 4, 9, 66.0),  # NVL36x2: one domain over two racks
    (0, 18, 1, 132.0, 0, 18, 132.0),  # an empty pool holds no rack
]


@pytest.mark.parametrize("row", LAYOUTS, ids=[f"{r[0]}-trays-{r[2]}-racks" for r in LAYOUTS])
def test_racks_are_whole_domains(row: tuple[int, int, int, float, int, int, float]) -> None:
    trays, per_domain, racks_per_domain, kw, racks, per_rack, rack_kw = row
    lay = rack_scale_layout(nodes=trays, nodes_per_domain=per_domain,
                            racks_per_domain=racks_per_domain, domain_power_w=kw * 1000,
                            rack_power_limit_w=140_000, cooling="liquid")
    assert (lay.racks, lay.nodes_per_rack, lay.rack_load_w, lay.limited_by) == \
        (racks, per_rack, rack_kw * 1000, "rack-scale")
    assert not lay.air_cooling_exceeded


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"nodes": 100}, r"100 nodes are not whole rack-scale domains of 18 trays \(fix: use a "
                     r"multiple of 18 \(108 nodes\)"),
    ({"rack_power_limit_w": 60_000}, r"draws 132\.0 kW, more than the site's 60 kW rack limit"),
])
def test_what_has_no_layout_is_refused(kwargs: dict[str, float], message: str) -> None:
    args = {"nodes": 144, "nodes_per_domain": 18, "racks_per_domain": 1,
            "domain_power_w": 132_000.0, "rack_power_limit_w": 140_000.0} | kwargs
    with pytest.raises(InputError, match=message):
        rack_scale_layout(**args)  # type: ignore[arg-type]


def test_an_air_cooled_site_is_warned() -> None:
    lay = rack_scale_layout(nodes=18, nodes_per_domain=18, racks_per_domain=1,
                            domain_power_w=132_000, rack_power_limit_w=140_000, cooling="air")
    assert lay.air_cooling_exceeded and "liquid cooled by design" in lay.notes[-1]
