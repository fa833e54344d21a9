"""The current accelerators and rack-scale systems in the catalog (issue #44 item 2).

Each row holds an entry to the dense figures its source states (the per-GPU share of a rack's
published total where the vendor prints only the rack: 72-GPU NVL72 totals / 72). The figures
themselves come from vendor pages a test cannot fetch; what the test can show is that the
catalog carries them as written in each entry's source and that the rack-scale entries add up
(trays x GPUs = the domain, trays x the tray's share = the rack's power).
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from aiplat.catalog import Catalog, load_catalog
from aiplat.catalog.models import NodeType, RackScale


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


# name: memory GB, TB/s, dense BF16, FP8, FP4, TDP W, interconnect GB/s, vendor
GPUS = [
    ("b300", 288, 8.0, 2250, 4500, 13500, 1100, 1800, "nvidia"),
    ("gb200", 186, 8.0, 2500, 5000, 10000, 1200, 1800, "nvidia"),
    ("gb300", 288, 8.0, 2500, 5000, 15000, 1400, 1800, "nvidia"),
    ("mi355x", 288, 8.0, 2516.6, 5033.2, 10066.3, 1400, 1075.2, "amd"),
    ("gaudi3", 128, 3.7, 1835, 1835, None, 900, 1050, "intel"),
]


@pytest.mark.parametrize("row", GPUS, ids=[r[0] for r in GPUS])
def test_current_accelerators(catalog: Catalog, row: tuple[object, ...]) -> None:
    name, mem, bw, bf16, fp8, fp4, tdp, link, vendor = row
    g = catalog.gpu(str(name))
    assert g is not None, name
    assert (g.memory_gb, g.memory_bandwidth_tbps, g.bf16_tflops, g.fp8_tflops, g.fp4_tflops,
            g.tdp_w, g.interconnect_gbps, g.vendor) == (mem, bw, bf16, fp8, fp4, tdp, link,
                                                         vendor)
    assert "http" in g.source, f"{g.name}: the source names its URL"


# node type: GPU, GPUs per node, height U, GPUs per NVLink domain, trays, switch trays, kW
NODES = [
    ("dgx-gb200-nvl72", "GB200-186GB", 4, 1, 72, 18, 9, 132.0),
    ("dgx-gb300-nvl72", "GB300-288GB", 4, 1, 72, 18, 9, 146.4),
    ("dgx-b300", "B300-SXM-288GB", 8, 10, None, None, None, 14.5),
    ("dgx-b200", "B200-SXM-180GB", 8, 10, None, None, None, 14.3),
]


@pytest.mark.parametrize("row", NODES, ids=[r[0] for r in NODES])
def test_node_types(catalog: Catalog, row: tuple[object, ...]) -> None:
    name, gpu, gpn, units, domain, trays, switches, kw = row
    n = catalog.node_type(str(name))
    assert n is not None and n.gpu == gpu and n.gpus == gpn and n.rack_units == units
    rs = n.rack_scale
    if domain is None:
        assert rs is None and n.system_power_kw == kw
        return
    assert rs is not None
    assert (rs.gpus, rs.nodes, rs.switch_trays, rs.power_kw) == (domain, trays, switches, kw)
    assert rs.nodes * n.gpus == rs.gpus
    assert n.system_power_kw * rs.nodes == pytest.approx(rs.power_kw, rel=0.001)
    assert rs.cooling != "air" and n.cooling != "air"


def test_psus_where_published(catalog: Catalog) -> None:
    # DGX H100: 6 x 3.3 kW, 4+2; DGX B200: 6 x 3.3 kW, 5+1 (user guides)
    for name, psus, kw, red in (("hgx-h100-8", 6, 3.3, "4+2"), ("dgx-b200", 6, 3.3, "5+1"),
                                ("hgx-a100-8", 6, 3.0, "3+3")):
        n = catalog.node_type(name)
        assert n is not None and (n.psus, n.psu_kw, n.psu_redundancy) == (psus, kw, red)


def _tray(**update: object) -> dict[str, object]:
    base: dict[str, object] = {
        "name": "t", "gpu": "GB200-186GB", "gpus": 4, "cpuCores": 144, "memoryGib": 960,
        "systemPowerKw": 7.333, "rackUnits": 1, "source": "test",
        "rackScale": {"gpus": 72, "nodes": 18, "switchTrays": 9, "powerKw": 132}}
    return base | update


@pytest.mark.parametrize(("update", "message"), [
    ({"gpus": 8}, "holds 4 GPUs, not 8"),
    ({"systemPowerKw": 10.0}, "a tray's share"),
    ({"rackScale": {"gpus": 72, "nodes": 16, "switchTrays": 9, "powerKw": 132}},
     "do not split into 16 equal trays"),
])
def test_rack_scale_entries_must_add_up(update: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        NodeType.model_validate(_tray(**update))


def test_nvl36x2_spans_two_racks() -> None:
    rs = RackScale.model_validate({"gpus": 72, "nodes": 18, "racks": 2, "switchTrays": 18,
                                   "powerKw": 132})
    assert (rs.gpus_per_node, rs.nodes_per_rack) == (4, 9)
