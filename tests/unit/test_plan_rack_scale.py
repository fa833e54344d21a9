"""A GB200 NVL72 site plans in the racks NVIDIA builds it in (issue #44 item 2).

NVIDIA's DGX SuperPOD GB200 reference architecture (docs.nvidia.com/dgx-superpod/
reference-architecture-scalable-infrastructure-gb200/latest/: abstract.html,
dgx-superpod-architecture.html, network-fabrics.html) defines the scalable unit as 8 DGX GB200
rack systems, each one 72-GPU NVLink domain of 18 compute trays (4 GPUs each) and 9 NVLink
switch trays, and asks 1.2 MW of TDP per SU. The plan is held to each of those figures for 1,
2 and 4 SUs (the RA says it "can scale ... beyond 128 racks"; its multi-SU counts are
multiples of the SU). What a table cannot show: NVIDIA's row figure (where the network and
management racks stand) is an image the RA does not tabulate, so the plan's network and
management racks are checked against its own fabric sizing, not against NVIDIA's drawing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from aiplat.catalog import load_catalog
from aiplat.cli.main import main
from aiplat.plan import Plan
from aiplat.plan.build import build_plan
from aiplat.spec import parse_platform

SU_TDP_KW = 1200.0
"""DGX SuperPOD GB200 RA, dgx-superpod-architecture.html: 'Each SU requires a Thermal Design
Power (TDP) of 1.2 Megawatts (MW)'."""
RACKS_PER_SU, GPUS_PER_SU = 8, 576
"""The same RA: 'each SU contains 8 DGX GB200 systems'; 8 x 72 GPUs."""
IT_TOLERANCE = 0.10

CATALOG_NODE = """\
      nodeType: dgx-gb200-nvl72
      gpu: {model: GB200, count: 4}"""
INLINE_NODE = """\
      gpu: {model: GB200, count: 4}
      rackUnits: 1
      rackScale: {gpus: 72, nodes: 18, switchTrays: 9, powerKW: 132, cooling: hybrid}"""
LOOSE_TRAYS = """\
      gpu: {model: GB200, count: 4}
      powerKW: 7.333"""


def site(trays: int, node: str = CATALOG_NODE, *, rack_kw: float = 140, tensor: int = 8,
         serving_tp: int | None = None) -> str:
    """A DGX SuperPOD GB200 as the RA wires a tray: 4 x 400G InfiniBand (ConnectX-7) to the
    compute fabric, 2 BlueField-3 ports for storage and in-band, a BMC port."""
    serving = "" if serving_tp is None else f"""
  - name: chat
    kind: online-inference
    tenant: research
    model: llama-3.1-405b
    serving: {{tensorParallel: {serving_tp}}}
    slo: {{queriesPerSecond: 1, promptTokens: 1000, outputTokens: 200, contextLength: 8192}}"""
    return f"""\
apiVersion: aiplat/v1alpha1
kind: Platform
metadata: {{name: gb200-superpod}}
kubernetes: {{version: "1.34"}}
site: {{powerBudgetKW: 10000, rackPowerLimitKW: {rack_kw}, cooling: direct-liquid, pue: 1.2}}
pools:
  - name: gb200
    node:
{node}
      cpuCores: 144
      memoryGiB: 960
      nics:
        - {{type: infiniband, rateGbps: 400, count: 4, segment: hpc}}
        - {{type: ethernet, rateGbps: 400, count: 2, segment: storage}}
        - {{type: ethernet, rateGbps: 1, count: 1, segment: management}}
    count: {trays}
tenants:
  - name: research
    quota:
      gb200: {{gpus: {trays * 4}}}
workloads:
  - name: pretrain
    kind: pretrain
    tenant: research
    model: llama-3.1-405b
    parallelism: {{tensor: {tensor}, pipeline: 8, microBatch: 1, globalBatch: 1152,
                  sequenceLength: 8192}}
    data: {{tokens: 2.0e+11}}
    slo: {{targetDays: 30}}{serving}
"""


def _plan(text: str) -> Plan:
    catalog = load_catalog()
    return build_plan(parse_platform(text, "gb200.yaml", catalog), catalog)


@pytest.mark.parametrize("sus", [1, 2, 4])
def test_a_gb200_superpod_plans_nvidias_racks_and_power(sus: int) -> None:
    plan = _plan(site(144 * sus))
    pool = plan.pools[0]
    # 8 DGX GB200 racks per SU, 576 GPUs: whole NVLink domains, spare trays on the shelf
    assert (pool.racks, pool.gpus, pool.nodes_per_rack) == (RACKS_PER_SU * sus,
                                                            GPUS_PER_SU * sus, 18)
    assert pool.spare_nodes > 0  # counted, yet no ninth rack for them
    assert pool.pool_power_kw == pytest.approx(132 * RACKS_PER_SU * sus)
    # the facility adds the fabrics' racks (and a management rack) beside the compute racks
    assert plan.fabric.racks >= 1
    assert plan.facility.racks >= pool.racks + plan.fabric.racks
    # 1.2 MW per SU (RA): the plan's IT power, compute racks + fabrics + management
    error = plan.facility.it_power_kw / (SU_TDP_KW * sus) - 1
    assert abs(error) <= IT_TOLERANCE, f"{sus} SU: {error:+.1%}"


def test_the_catalog_system_and_the_same_one_given_inline_plan_alike() -> None:
    catalog, inline = _plan(site(144)), _plan(site(144, INLINE_NODE))
    assert inline.pools[0].racks == catalog.pools[0].racks == 8
    assert inline.pools[0].pool_power_kw == pytest.approx(catalog.pools[0].pool_power_kw,
                                                          rel=1e-3)
    # an inline domain states its power: no "estimated from the GPUs" finding
    assert not any("is an estimate from the GPUs" in f.message for f in inline.findings)


def test_trays_written_as_loose_nodes_take_more_racks() -> None:
    """Before rackScale the same trays were 4-GPU nodes of a default height."""
    loose = _plan(site(144, LOOSE_TRAYS)).pools[0]
    assert loose.racks > RACKS_PER_SU


@pytest.mark.parametrize(("node", "tp_link"), [
    (CATALOG_NODE, 900e9),  # TP 8 over two trays stays on NVLink 5 (1.8 TB/s both ways)
    (LOOSE_TRAYS, 50e9),  # without the domain it crosses the 400G fabric (4 NICs, 4 GPUs)
])
def test_tensor_parallelism_spans_the_nvlink_domain(node: str, tp_link: float) -> None:
    plan = _plan(site(144, node))
    w = plan.workloads[0]
    assert w.results["model_parallel_traffic"]["inputs"]["tp_bytes_per_second"] == tp_link
    spans = [f for f in w.findings if "tensor parallelism 8 spans" in f.message]
    assert bool(spans) == (node == LOOSE_TRAYS)


def test_tensor_parallelism_beyond_the_domain_is_warned_with_the_domain() -> None:
    """The spec caps TP at 64, inside an NVL72; a 32-GPU domain (GH200 NVL32-like, 8 trays
    here) is outgrown by TP 64, which runs (Megatron allows it) with its all-reduces on the
    fabric: a warning naming the domain, the cost in the step."""
    nvl32 = INLINE_NODE.replace("gpus: 72, nodes: 18, switchTrays: 9, powerKW: 132",
                                "gpus: 32, nodes: 8, switchTrays: 9, powerKW: 60")
    plan = _plan(site(144, nvl32, tensor=64))
    assert any("tensor parallelism 64 spans its 32-GPU NVLink domain" in f.message
               for f in plan.workloads[0].findings)
    assert plan.workloads[0].results["model_parallel_traffic"]["inputs"][
        "tp_bytes_per_second"] == 50e9


@pytest.mark.parametrize(("text", "wanted"), [
    (site(100), r"pools\[0\]\.count: 100 nodes are not whole NVLink domains: node type "
                r"'dgx-gb200-nvl72' comes as 1 rack\(s\) of 18 trays \(72 GPUs\) "
                r"\(fix: use a multiple of 18 nodes, e\.g\. 108"),
    (site(144).replace("{model: GB200, count: 4}", "{model: GB200, count: 8}"),
     r"pools\[0\]\.node\.gpu\.count: node type 'dgx-gb200-nvl72' is a 72-GPU NVLink domain "
     r"of 18 trays: each node \(tray\) holds 4 GPUs, not 8"),
    (site(144, rack_kw=60),
     r"site\.rackPowerLimitKW: pool 'gb200': one rack of node type 'dgx-gb200-nvl72' draws "
     r"132 kW, over the site's 60 kW per rack"),
    (site(144, INLINE_NODE.replace("nodes: 18", "nodes: 16")),
     r"pools\[0\]\.node\.rackScale\.nodes: 72 GPUs do not split into 16 equal trays"),
    (site(144, LOOSE_TRAYS, serving_tp=8),
     r"serving\.tensorParallel \(8\) exceeds the 4 GPUs of a node"),
])
def test_impossible_rack_scale_specs_are_exit_2_with_the_fix(
    text: str, wanted: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "gb200.yaml"
    path.write_text(text)
    assert main(["plan", str(path), "-d", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert re.search(wanted, err), err
    assert not (tmp_path / "out").exists()


def test_serving_tensor_parallelism_may_span_trays_of_a_domain() -> None:
    plan = _plan(site(144, serving_tp=8))
    chat = next(w for w in plan.workloads if w.name == "chat")
    assert chat.gpus % 8 == 0


def test_plan_json_names_the_domains(tmp_path: Path) -> None:
    path = tmp_path / "gb200.yaml"
    path.write_text(site(288))
    assert main(["plan", str(path), "-d", str(tmp_path / "out")]) == 0
    pool = json.loads((tmp_path / "out" / "plan.json").read_text())["pools"][0]
    racks = pool["results"]["racks"]
    assert (racks["limitedBy"], racks["racks"], racks["rackLoadW"]) == \
        ("rack-scale", 16, 132_000)
    assert racks["notes"][0].startswith("16 NVLink domain(s) of 18 trays in 1 rack(s) each")


@pytest.mark.parametrize(("height", "per_rack", "bound"), [
    ("", 9, "space"),  # no height given: 4U for a 4-GPU node, 38U usable / 4U
    ("\n      rackUnits: 1", 19, "power"),  # a 1U tray: 140 kW / 7.333 kW binds first
])
def test_an_inline_node_states_its_height(height: str, per_rack: int, bound: str) -> None:
    pool = _plan(site(144, LOOSE_TRAYS + height)).pools[0]
    assert (pool.nodes_per_rack, pool.results["racks"]["limited_by"]) == (per_rack, bound)


@pytest.mark.parametrize(("node", "ep_link"), [
    (CATALOG_NODE, 900e9),  # EP 8 over two trays: the all-to-alls stay on NVLink 5
    (LOOSE_TRAYS, 50e9),  # the same trays without their domain: over the fabric
])
def test_expert_parallelism_spans_the_nvlink_domain(node: str, ep_link: float) -> None:
    text = site(144, node, tensor=1).replace("model: llama-3.1-405b", "model: mixtral-8x7b")
    text = text.replace("pipeline: 8,", "pipeline: 1, expert: 8,")
    w = _plan(text).workloads[0]
    assert w.results["model_parallel_traffic"]["inputs"]["ep_bytes_per_second"] == ep_link


def test_an_nvl36x2_fills_two_racks_per_domain() -> None:
    nvl36x2 = INLINE_NODE.replace("switchTrays: 9", "racks: 2, switchTrays: 18")
    pool = _plan(site(144, nvl36x2)).pools[0]
    assert (pool.racks, pool.nodes_per_rack, pool.results["racks"]["rack_load_w"]) == \
        (16, 9, 66_000)
