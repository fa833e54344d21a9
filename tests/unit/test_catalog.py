"""The packaged catalog: it loads, its keys are unambiguous, and its figures are the published ones.

Figures are asserted literally against the datasheets, papers and FACTS.md (not against numbers
read back from the data files), and parameter counts are cross-checked against an independent
count from each model's shape, so a typo in either place fails.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import pytest

from aiplat.catalog import (
    Catalog,
    GpuModel,
    MigProfile,
    ModelArchitecture,
    NodeType,
    load_catalog,
)
from aiplat.sizing.shape import MlaShape, MoeShape

MEMORY_SLOTS = 8  # MIG memory slices per GPU
COMPUTE_SLOTS = 7  # MIG compute slices ("g") per GPU


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def gpu(catalog: Catalog, name: str) -> GpuModel:
    found = catalog.gpu(name)
    assert found is not None, f"no GPU {name!r} in the catalog"
    return found


def model(catalog: Catalog, name: str) -> ModelArchitecture:
    found = catalog.model(name)
    assert found is not None, f"no model {name!r} in the catalog"
    return found


# --- loading and keys ---------------------------------------------------------------------


def test_loads_once_and_holds_the_required_entries(catalog: Catalog) -> None:
    assert load_catalog() is catalog
    for name in [
        "A100-SXM4-40GB", "A100-SXM4-80GB", "H100-SXM-80GB", "H100-PCIe-80GB", "H100-NVL-94GB",
        "H200-SXM-141GB", "h800", "l40s", "l4", "b200", "mi300x", "a10",
    ]:  # fmt: skip
        assert catalog.gpu(name) is not None, name
    for name in [
        "llama-3-8b", "llama-3-70b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
        "mixtral-8x7b", "mixtral-8x22b", "qwen2.5-7b", "qwen2.5-72b", "mistral-7b",
        "deepseek-v3", "qwen3-235b-a22b", "llama-4-scout", "llama-4-maverick", "gpt-3-175b",
        "bge-large-en-v1.5", "bge-m3", "all-minilm-l6-v2",
    ]:  # fmt: skip
        assert catalog.model(name) is not None, name
    for name in [
        "hgx-h100-8", "hgx-h200-8", "hgx-a100-8", "dgx-b200", "pcie-l40s-4", "mi300x-8",
        "cpu-mgmt-2s",
    ]:  # fmt: skip
        assert catalog.node_type(name) is not None, name


@pytest.mark.parametrize("kind", ["gpus", "models", "node_types"])
def test_names_and_aliases_are_unique_lowercase_keys(catalog: Catalog, kind: str) -> None:
    entries = getattr(catalog, kind)
    keys: list[str] = []
    for e in entries:
        aliases = list(getattr(e, "aliases", []))
        assert all(a == a.lower() and a.strip() == a and a for a in aliases), e.name
        keys.extend({e.name.lower(), *aliases})
    duplicated = [k for k, n in Counter(keys).items() if n > 1]
    assert duplicated == []


def test_every_alias_resolves_to_its_own_entry(catalog: Catalog) -> None:
    for g in catalog.gpus:
        for key in [g.name, g.name.upper(), *g.aliases]:
            assert catalog.gpu(key) is g
    for m in catalog.models:
        for key in [m.name, *m.aliases]:
            assert catalog.model(key) is m


def test_every_entry_names_a_source(catalog: Catalog) -> None:
    entries: list[GpuModel | ModelArchitecture | NodeType] = [
        *catalog.gpus,
        *catalog.models,
        *catalog.node_types,
    ]
    for e in entries:
        assert len(e.source) > 20, e.name


# --- node types ---------------------------------------------------------------------------


def test_node_types_reference_gpus_by_canonical_name(catalog: Catalog) -> None:
    gpu_names = {g.name for g in catalog.gpus}
    for n in catalog.node_types:
        if n.gpu is None:
            assert n.gpus == 0, n.name
        else:
            assert n.gpu in gpu_names, n.name
            assert n.gpus > 0, n.name


def test_node_power_covers_its_gpus_and_matches_the_datasheets(catalog: Catalog) -> None:
    for n in catalog.node_types:
        if n.gpu is not None:
            # A server cannot draw less than its accelerators at TDP.
            assert n.system_power_kw * 1000 > n.gpus * gpu(catalog, n.gpu).tdp_w, n.name
    published = {  # DGX datasheets / user guides: (kW max, rack units, cores, GiB)
        "hgx-h100-8": (10.2, 8, 112, 2048),
        "hgx-h200-8": (10.2, 8, 112, 2048),
        "hgx-a100-8": (6.5, 6, 128, 2048),
        "dgx-b200": (14.3, 10, 112, 2048),
    }
    for name, (kw, ru, cores, gib) in published.items():
        node = catalog.node_type(name)
        assert node is not None
        figures = (node.system_power_kw, node.rack_units, node.cpu_cores, node.memory_gib)
        assert figures == (kw, ru, cores, gib), name
    mgmt = catalog.node_type("cpu-mgmt-2s")
    assert mgmt is not None and mgmt.gpu is None and mgmt.system_power_kw == 0.8


# --- MIG ----------------------------------------------------------------------------------

# FACTS.md, "GPU sharing": profile -> max instances.
FACTS_MIG: dict[str, dict[str, int]] = {
    "A100-SXM4-40GB": {
        "1g.5gb": 7, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1,
    },
    "A100-SXM4-80GB": {
        "1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1,
    },
    "H100-SXM-80GB": {
        "1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1,
    },
    "H200-SXM-141GB": {
        "1g.18gb": 7, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1,
    },
    # Not in FACTS.md; NVIDIA/mig-parted config-default.yaml.
    "H100-NVL-94GB": {
        "1g.12gb": 7, "1g.24gb": 4, "2g.24gb": 3, "3g.47gb": 2, "4g.47gb": 1, "7g.94gb": 1,
    },
}  # fmt: skip

# FACTS.md placements over 8 memory slots, keyed by (compute slices, memory slices).
FACTS_PLACEMENTS: dict[tuple[int, int], list[int]] = {
    (1, 1): [0, 1, 2, 3, 4, 5, 6],  # 1g
    (1, 2): [0, 2, 4, 6],  # 1g "double"
    (2, 2): [0, 2, 4],
    (3, 4): [0, 4],
    (4, 4): [0],
    (7, 8): [0],
}


def _mig_gpus(catalog: Catalog) -> list[GpuModel]:
    return [g for g in catalog.gpus if g.mig_profiles]


def _max_disjoint(profile: MigProfile) -> int:
    """Most instances of one profile whose memory ranges do not overlap (greedy is optimal
    for equal-length intervals taken by start)."""
    count, free_from = 0, 0
    for start in sorted(profile.placements):
        if start >= free_from:
            count += 1
            free_from = start + profile.memory_slices
    return count


@pytest.mark.parametrize(("gpu_name", "expected"), sorted(FACTS_MIG.items()))
def test_mig_profiles_match_facts(
    catalog: Catalog, gpu_name: str, expected: dict[str, int]
) -> None:
    g = gpu(catalog, gpu_name)
    assert {p.name: p.max_instances for p in g.mig_profiles} == expected


def test_h200_mig_figures_literally(catalog: Catalog) -> None:
    profiles = {p.name: p for p in gpu(catalog, "h200").mig_profiles}
    assert (profiles["1g.18gb"].max_instances, profiles["1g.18gb"].memory_gb) == (7, 18)
    assert (profiles["3g.71gb"].max_instances, profiles["3g.71gb"].memory_slices) == (2, 4)
    assert profiles["3g.71gb"].placements == [0, 4]


def test_every_mig_profile_is_consistent(catalog: Catalog) -> None:
    assert {g.name for g in _mig_gpus(catalog)} >= set(FACTS_MIG)
    for g in _mig_gpus(catalog):
        for p in g.mig_profiles:
            where = f"{g.name} {p.name}"
            parsed = re.fullmatch(r"(\d)g\.(\d+)gb", p.name)
            assert parsed is not None, where
            assert int(parsed[1]) == p.compute_slices, where
            assert int(parsed[2]) == p.memory_gb, where
            # The name's size is the GPU's memory share, rounded (141 GB x 4/8 -> "71gb").
            assert abs(p.memory_gb - g.memory_gb * p.memory_slices / MEMORY_SLOTS) <= 1, where
            assert p.placements == sorted(set(p.placements)), where
            assert all(s % p.memory_slices == 0 for s in p.placements), where
            assert all(s + p.memory_slices <= MEMORY_SLOTS for s in p.placements), where
            assert p.placements == FACTS_PLACEMENTS[(p.compute_slices, p.memory_slices)], where
            # Max instances is what both the memory placements and the 7 compute slices allow.
            fits = min(_max_disjoint(p), COMPUTE_SLOTS // p.compute_slices)
            assert p.max_instances == fits, where


def test_only_datacenter_nvidia_parts_list_mig(catalog: Catalog) -> None:
    for name in ["l40s", "l4", "a10", "mi300x"]:
        assert gpu(catalog, name).mig_profiles == [], name
    assert gpu(catalog, "h100-pcie").mig_profiles == gpu(catalog, "h100").mig_profiles


# --- published GPU figures ----------------------------------------------------------------


def test_published_gpu_figures(catalog: Catalog) -> None:
    h100 = gpu(catalog, "h100-sxm")
    assert (h100.bf16_tflops, h100.fp8_tflops, h100.memory_bandwidth_tbps) == (989, 1979, 3.35)
    assert (h100.memory_gb, h100.tdp_w, h100.interconnect_gbps) == (80, 700, 900)
    a100 = gpu(catalog, "a100-80gb")
    assert (a100.bf16_tflops, a100.memory_bandwidth_tbps, a100.fp8_tflops) == (312, 2.039, None)
    assert gpu(catalog, "a100-40gb").memory_bandwidth_tbps == 1.555
    h200 = gpu(catalog, "h200")
    assert (h200.memory_gb, h200.memory_bandwidth_tbps, h200.bf16_tflops) == (141, 4.8, 989)
    mi300x = gpu(catalog, "mi300x")
    assert (mi300x.memory_gb, mi300x.memory_bandwidth_tbps, mi300x.tdp_w) == (192, 5.3, 750)
    assert (mi300x.bf16_tflops, mi300x.fp8_tflops) == (1307.4, 2614.9)
    l40s = gpu(catalog, "l40s")
    assert (l40s.memory_gb, l40s.memory_bandwidth_tbps, l40s.bf16_tflops) == (48, 0.864, 362.05)
    b200 = gpu(catalog, "b200")
    assert (b200.memory_bandwidth_tbps, b200.interconnect_gbps, b200.tdp_w) == (8.0, 1800, 1000)


def test_gpu_figures_are_coherent(catalog: Catalog) -> None:
    for g in catalog.gpus:
        if g.architecture == "gaudi3":
            # Gaudi 3's matrix engines run FP8 at the BF16 rate (1,835 both, Intel's white paper)
            assert g.fp8_tflops == g.bf16_tflops, g.name
        elif g.fp8_tflops is not None:
            # Dense FP8 is twice dense BF16 on every generation listed (Ada, Hopper, Blackwell,
            # CDNA 3/4; the L40S datasheet rounds to 362.05 vs 733); a sparse figure would break
            # this.
            assert g.fp8_tflops == pytest.approx(2 * g.bf16_tflops, rel=0.015), g.name
        if g.architecture == "ampere":
            assert g.fp8_tflops is None, g.name
        assert g.bf16_tflops > g.fp32_tflops, g.name
    assert {g.vendor for g in catalog.gpus} == {"nvidia", "amd", "intel"}


# --- models -------------------------------------------------------------------------------


def test_llama_3_70b_shape(catalog: Catalog) -> None:
    m = model(catalog, "llama-3-70b")
    assert (m.layers, m.hidden, m.heads, m.kv_heads, m.vocab, m.ffn_hidden) == (
        80, 8192, 64, 8, 128256, 28672,
    )  # fmt: skip
    assert m.head_dim == 128
    assert m.max_context == 8192
    assert model(catalog, "llama-3.1-70b").max_context == 131072


def test_gpt3_shape_from_the_paper(catalog: Catalog) -> None:
    m = model(catalog, "gpt-3-175b")
    assert (m.layers, m.hidden, m.heads, m.head_dim, m.vocab, m.max_context) == (
        96, 12288, 96, 128, 50257, 2048,
    )  # fmt: skip
    assert m.ffn_hidden == 4 * m.hidden


def test_mixture_of_experts_fields(catalog: Catalog) -> None:
    m = model(catalog, "mixtral-8x7b")
    assert (m.experts, m.experts_per_token) == (8, 2)
    assert m.active_params == pytest.approx(12.9e9, rel=0.005)
    for m in catalog.models:
        assert m.experts_per_token <= m.experts, m.name
        assert (m.active_params is not None) == (m.experts > 1), m.name
        if m.active_params is not None:
            assert m.active_params < m.params, m.name


# Published totals: model cards / announcements / papers.
PUBLISHED_PARAMS = {
    "llama-3-8b": 8.03e9,
    "llama-3-70b": 70.6e9,
    "llama-3.1-405b": 405e9,
    "mixtral-8x7b": 46.7e9,
    "mixtral-8x22b": 141e9,
    "qwen2.5-7b": 7.61e9,
    "qwen2.5-72b": 72.7e9,
    "mistral-7b": 7.25e9,
    "gpt-3-175b": 175e9,
    "bge-large-en-v1.5": 335e6,
    "bge-m3": 568e6,
    "all-minilm-l6-v2": 22.7e6,
}


@pytest.mark.parametrize(("name", "published"), sorted(PUBLISHED_PARAMS.items()))
def test_published_parameter_counts(catalog: Catalog, name: str, published: float) -> None:
    assert model(catalog, name).params == pytest.approx(published, rel=0.005)


@dataclass(frozen=True)
class DecoderLayout:
    """What a SwiGLU decoder's config.json says, enough to count its weights: a check of
    the catalog's counts written apart from the product's counter (catalog/hf_config.py),
    from the published SwiGLU decoder shape (norms and biases left out)."""

    layers: int
    hidden: int
    ffn_hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    moe: MoeShape | None = None
    expert_ffn_hidden: int | None = None
    shared_ffn_hidden: int | None = None
    dense_layers: int = 0
    mla: MlaShape | None = None


def count_params(d: DecoderLayout) -> tuple[float, float]:
    """(total, active) weights of a SwiGLU decoder: attention, gate/up/down FFNs (dense layers,
    routed and shared experts, the router), untied embedding and LM head. Norms and biases
    are left out (under 0.1 %)."""
    h = d.hidden
    if d.mla is not None:
        attention = d.mla.attention_params(h, d.heads)
    else:
        attention = 2 * h * d.heads * d.head_dim + 2 * h * d.kv_heads * d.head_dim
    dense_ffn = 3 * h * d.ffn_hidden
    base = d.layers * attention + 2 * d.vocab * h
    if d.moe is None:
        total = base + d.layers * dense_ffn
        return float(total), float(total)
    moe_layers = d.layers - d.dense_layers
    expert = 3 * h * (d.expert_ffn_hidden or d.ffn_hidden)
    shared = d.moe.shared_experts * 3 * h * (d.shared_ffn_hidden or d.expert_ffn_hidden
                                              or d.ffn_hidden)
    common = base + d.dense_layers * dense_ffn + moe_layers * (shared + h * d.moe.experts)
    total = common + moe_layers * d.moe.experts * expert
    active = common + moe_layers * d.moe.experts_per_token * expert
    return float(total), float(active)


def _layout(m: ModelArchitecture) -> DecoderLayout:
    moe = MoeShape(m.experts, m.experts_per_token, m.shared_experts) if m.experts > 1 else None
    mla = MlaShape(m.mla.q_lora_rank, m.mla.kv_lora_rank, m.mla.qk_nope_head_dim,
                   m.mla.qk_rope_head_dim, m.mla.v_head_dim) if m.mla else None
    return DecoderLayout(
        layers=m.layers, hidden=m.hidden, ffn_hidden=m.ffn_hidden, heads=m.heads,
        kv_heads=m.kv_heads, head_dim=m.head_dim, vocab=m.vocab, moe=moe,
        expert_ffn_hidden=m.expert_ffn_hidden, shared_ffn_hidden=m.shared_ffn_hidden,
        dense_layers=m.dense_layers, mla=mla)


SWIGLU_FAMILIES = {"llama", "mistral", "mixtral", "qwen2", "deepseek-v3", "qwen3-moe", "llama4"}


def test_params_agree_with_shape(catalog: Catalog) -> None:
    """Every decoder's total and active count is what its config.json shape implies
    (count_params: attention, SwiGLU FFNs, experts, router, embeddings; norms, biases and
    Qwen2's q/k/v biases are the 0.2 % slack)."""
    for m in catalog.models:
        if m.family in SWIGLU_FAMILIES:
            total, active = count_params(_layout(m))
            assert m.params == pytest.approx(total, rel=0.002), m.name
            if m.active_params is not None:
                assert m.active_params == pytest.approx(active, rel=0.002), m.name
        else:
            # Classic transformer blocks (4d^2 attention + 8d^2 MLP) plus token and position
            # embeddings; biases, norms and poolers are the slack.
            blocks = 12 * m.layers * m.hidden**2
            embeddings = (m.vocab + m.max_context) * m.hidden
            assert m.params == pytest.approx(blocks + embeddings, rel=0.015), m.name


# Published (total, active, tolerance) of the mixtures of experts, from the model cards and
# papers; the catalog counts are the config.json shapes' own.
PUBLISHED_MOE = {
    # Mixtral of Experts (arXiv:2401.04088) / Mistral announcement: 46.7B total, 12.9B active.
    "mixtral-8x7b": (46.7e9, 12.9e9, 0.005),
    # Mistral "Cheaper, Better, Faster, Stronger" (Mixtral 8x22B): 141B total, 39B active.
    "mixtral-8x22b": (141e9, 39e9, 0.005),
    # DeepSeek-V3 technical report (arXiv:2412.19437) abstract: 671B total, 37B activated;
    # the shape gives 37.55B, "37B" is rounded down: 1.5 %.
    "deepseek-v3": (671e9, 37e9, 0.016),
    # Qwen3-235B-A22B model card: 235B total, 22B activated.
    "qwen3-235b-a22b": (235e9, 22e9, 0.01),
    # Llama 4 model card: Scout 109B total (with the vision encoder; text decoder 107.8B,
    # 1.2 % under), 17B active; Maverick 400B total, 17B active.
    "llama-4-scout": (109e9, 17e9, 0.015),
    "llama-4-maverick": (400e9, 17e9, 0.011),
}


@pytest.mark.parametrize(("name", "published"), sorted(PUBLISHED_MOE.items()))
def test_published_moe_parameter_counts(
    catalog: Catalog, name: str, published: tuple[float, float, float]
) -> None:
    total, active, tol = published
    m = model(catalog, name)
    assert m.params == pytest.approx(total, rel=tol)
    assert m.active_params == pytest.approx(active, rel=tol)


def test_deepseek_v3_latent_attention_caches_576_values_per_token_and_layer(
    catalog: Catalog,
) -> None:
    """DeepSeek-V2 paper (arXiv:2405.04434) Table 1: MLA caches (d_c + d_h^R)·l elements per
    token, 512 + 64 = 576 per layer with DeepSeek-V3's ranks; MHA with 128 heads of 128 would
    cache 2·128·128 = 32,768."""
    m = model(catalog, "deepseek-v3")
    assert m.mla is not None
    assert m.mla.kv_lora_rank + m.mla.qk_rope_head_dim == 576


def test_model_shapes_are_well_formed(catalog: Catalog) -> None:
    for m in catalog.models:
        assert m.hidden % m.heads == 0, m.name
        assert m.heads % m.kv_heads == 0, m.name
        if m.embedding_dim is not None:
            assert m.family in {"bert", "xlm-roberta"}, m.name
            assert m.embedding_dim == m.hidden, m.name
    dims = {m.name: m.embedding_dim for m in catalog.models if m.embedding_dim is not None}
    assert dims == {"bge-large-en-v1.5": 1024, "bge-m3": 1024, "all-minilm-l6-v2": 384}
