"""The compute fabric sizing reproduces NVIDIA's published DGX SuperPOD component counts
(issue #44). Each row below is copied from the source named above its table; the sizing gets
only what a spec says (nodes, NICs per node, switch ports, SU size, planes, UFM ports).
"""

from __future__ import annotations

import pytest

from aiplat.errors import InputError
from aiplat.sizing.fabric import compute_fabric, simple_fabric

H100 = "https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/network-fabrics.html"
"""DGX SuperPOD with DGX H100, "Table 4. Compute fabric component count": QM9700 (64 NDR
ports), SUs of 32 nodes of which one is left out for UFM connectivity; cable counts "Compute
and UFM" (node-leaf plus UFM) and "Spine-Leaf"."""
H100_TABLE = [
    # SU, nodes, GPUs, leaf, spine, compute+UFM cables, spine-leaf cables
    (1, 31, 248, 8, 4, 252, 256),
    (2, 63, 504, 16, 8, 508, 512),
    (3, 95, 760, 24, 16, 764, 768),   # 16 spines, not 12: NVIDIA pre-provisions the 4-SU set
    (4, 127, 1016, 32, 16, 1020, 1024),
]
H100_UFM_PORTS = 4  # 252 - 31 x 8 = 4 at every size (Table 4)

B200 = "https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-b200/latest/dgx-superpod-architecture.html"
"""DGX SuperPOD with DGX B200, "Larger SuperPOD component counts": SUs of 32 DGX B200, 8 NDR
rails, InfiniBand switch counts leaf/spine/core, cable counts node-leaf/leaf-spine/spine-core
(the published table starts at 2 SUs)."""
B200_TABLE = [
    # SU, nodes, GPUs, leaf, spine, core, node-leaf, leaf-spine, spine-core
    (2, 64, 512, 16, 8, 0, 512, 512, 0),
    (4, 128, 1024, 32, 16, 0, 1024, 1024, 0),
    (8, 256, 2048, 64, 32, 0, 2048, 2048, 0),
    (16, 512, 4096, 128, 128, 64, 4096, 4096, 4096),
    (32, 1024, 8192, 256, 256, 128, 8192, 8192, 8192),
    (64, 2048, 16384, 512, 512, 256, 16384, 16384, 16384),
]

B300 = "https://docs.nvidia.com/dgx-superpod/reference-architecture/scalable-infrastructure-b300/latest/dgx-superpod-architecture.html"
"""DGX SuperPOD with DGX B300 (busbar racks), "Table 3 Larger DGX SuperPOD component counts":
SUs of 64 DGX B300, 8 rails, leaf/spine and node-leaf/leaf-spine cable counts; two tiers up to
16 SUs, which only per-rail spine planes reach with 64-port switches."""
B300_TABLE = [
    # SU, nodes, GPUs, leaf, spine, node-leaf, leaf-spine
    (1, 64, 512, 16, 8, 512, 512),
    (2, 128, 1024, 32, 16, 1024, 1024),
    (4, 256, 2048, 64, 32, 2048, 2048),
    (8, 512, 4096, 128, 64, 4096, 4096),
    (16, 1024, 8192, 256, 128, 8192, 8192),
]

B300_XDR = "https://docs.nvidia.com/dgx-superpod/reference-architecture/scalable-infrastructure-b300-xdr/latest/dgx-superpod-architecture.html"
"""DGX SuperPOD with DGX B300 on XDR InfiniBand, "Table 3 Example Compute Fabric Components":
SUs of 72 DGX B300, 144-port XDR switches (72 down, 72 up). The 18-SU row prints 9216 GPUs
beside 1296 nodes and 10368 node-leaf cables (1296 x 8 = 10368); switches and cables are
what is compared."""
B300_XDR_TABLE = [
    # SU, nodes, leaf, spine, node-leaf, leaf-spine
    (1, 72, 8, 4, 576, 576),
    (2, 144, 16, 8, 1152, 1152),
    (4, 288, 32, 18, 2304, 2304),    # 18 spines where 16 carry the links: pre-provisioned
    (8, 576, 64, 36, 4608, 4608),    # 36 where 32 would do
    (18, 1296, 144, 72, 10368, 10368),
]


@pytest.mark.parametrize("row", H100_TABLE)
def test_dgx_h100_superpod_compute_fabric(row: tuple[int, ...]) -> None:
    sus, nodes, gpus, leaf, spine, compute_ufm, leaf_spine = row
    f = compute_fabric(nodes=nodes, rails=8, radix=64, su_nodes=32,
                       manager_ports=H100_UFM_PORTS)
    assert nodes * 8 == gpus
    assert (f.scalable_units, f.tiers, f.leaves, f.spines, f.cores) == (sus, 2, leaf, spine, 0)
    assert f.node_leaf_cables == compute_ufm
    assert f.cables_between("leaf-spine") == leaf_spine


def test_h100_three_sus_pre_provision_the_four_su_spines() -> None:
    f = compute_fabric(nodes=95, rails=8, radix=64, su_nodes=32, manager_ports=4)
    assert (f.spines_minimum, f.spines) == (12, 16)
    assert any("pre-provisioned" in n for n in f.notes)
    # the spines' spare ports are the fourth SU's: 16 x 64 - 768
    assert f.spines * f.radix - f.cables_between("leaf-spine") == 256


@pytest.mark.parametrize("row", B200_TABLE)
def test_dgx_b200_superpod_compute_fabric(row: tuple[int, ...]) -> None:
    sus, nodes, gpus, leaf, spine, core, node_leaf, leaf_spine, spine_core = row
    f = compute_fabric(nodes=nodes, rails=8, radix=64, su_nodes=32)
    assert nodes * 8 == gpus
    assert (f.scalable_units, f.leaves, f.spines, f.cores) == (sus, leaf, spine, core)
    assert f.tiers == (3 if core else 2)
    assert f.node_leaf_cables == node_leaf
    assert f.cables_between("leaf-spine") == leaf_spine
    assert f.cables_between("spine-core") == spine_core


@pytest.mark.parametrize("row", B300_TABLE)
def test_dgx_b300_superpod_compute_fabric(row: tuple[int, ...]) -> None:
    sus, nodes, gpus, leaf, spine, node_leaf, leaf_spine = row
    f = compute_fabric(nodes=nodes, rails=8, radix=64, su_nodes=64, planes="rail")
    assert nodes * 8 == gpus
    assert (f.scalable_units, f.tiers, f.leaves, f.spines) == (sus, 2, leaf, spine)
    assert f.node_leaf_cables == node_leaf
    assert f.cables_between("leaf-spine") == leaf_spine


def test_b300_sixteen_sus_need_rail_planes() -> None:
    # one shared plane of 256 leaves exceeds a 64-port spine: three tiers, not NVIDIA's two
    shared = compute_fabric(nodes=1024, rails=8, radix=64, su_nodes=64, planes="shared")
    assert shared.tiers == 3


@pytest.mark.parametrize("row", B300_XDR_TABLE)
def test_dgx_b300_xdr_superpod_compute_fabric(row: tuple[int, ...]) -> None:
    sus, nodes, leaf, spine, node_leaf, leaf_spine = row
    f = compute_fabric(nodes=nodes, rails=8, radix=144, su_nodes=72)
    assert (f.scalable_units, f.tiers, f.leaves, f.spines) == (sus, 2, leaf, spine)
    assert f.node_leaf_cables == node_leaf
    assert f.cables_between("leaf-spine") == leaf_spine


def test_ports_and_transceivers_add_up() -> None:
    f = compute_fabric(nodes=127, rails=8, radix=64, su_nodes=32, manager_ports=4)
    assert f.ports == 48 * 64
    assert f.ports_used == 1020 + 2 * 1024 and f.ports_spare == f.ports - f.ports_used
    node_leaf, leaf_spine = f.cables
    # node-leaf: 1020 node/UFM ends + 1020 leaf ends in 510 twin-port cages
    assert node_leaf.transceivers == 1020 + 510
    assert leaf_spine.transceivers == 1024  # 2048 switch ends, two links per cage


def test_a_small_fabric_is_one_switch() -> None:
    f = compute_fabric(nodes=7, rails=8, radix=64)
    assert (f.tiers, f.switches, f.ports_used, f.ports_spare) == (1, 1, 56, 8)


def test_oversubscription_halves_the_spines() -> None:
    f = compute_fabric(nodes=64, rails=8, radix=64, oversubscription=3)
    assert (f.leaf_down, f.leaf_up) == (48, 16)
    assert f.leaves == 16 and f.spines == 4


def test_the_ufm_needs_a_free_leaf_port() -> None:
    with pytest.raises(InputError, match="leave a node's slot"):
        compute_fabric(nodes=32, rails=8, radix=64, su_nodes=32, manager_ports=4)


def test_simple_fabric_leaves_spines_and_uplinks() -> None:
    f = simple_fabric(name="oob", ports=200, radix=52, oversubscription=12)
    # 48 device ports and 4 uplinks per leaf; 200 ports: 5 leaves, in pairs 6; 24 uplinks
    assert (f.leaf_down, f.leaf_up, f.leaves, f.spines, f.uplinks) == (48, 4, 6, 2, 24)
    pair = simple_fabric(name="in-band", ports=30, radix=64)
    assert (pair.leaves, pair.spines, pair.switches) == (2, 0, 2)  # one MLAG pair
    one = simple_fabric(name="storage", ports=14, radix=64, redundant=False)
    assert (one.leaves, one.spines, one.switches) == (1, 0, 1)
    assert simple_fabric(name="none", ports=0, radix=64).switches == 0
