"""Suggestions for unknown node types never switch the GPU (issue #23: `pcie-l4-4` was
answered with `pcie-l40s-4`, an L40S server, for an L4 one)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiplat.catalog import Catalog, load_catalog
from aiplat.catalog.suggest import closest, gpu_named_in, hint, suggest_node_type

CAT = load_catalog()
GPU_NODE_TYPES = [n for n in CAT.node_types if n.gpu]


def _suggested(hint: str) -> str | None:
    m = re.match(r"did you mean '([^']+)'", hint)
    return m.group(1) if m else None


def _gpu_of(node_type: str, cat: Catalog = CAT) -> str | None:
    n = cat.node_type(node_type)
    assert n is not None
    return n.gpu


@pytest.mark.parametrize(("name", "gpu", "expect"), [
    # the report in issue #23: no L4 server in the catalog, so no suggestion of another GPU
    ("pcie-l4-4", None, "no built-in node type carries L4-24GB"),
    # the pool names L4 explicitly: same answer, even for a name close to the L40S server
    ("pcie-l40s4", "L4-24GB", "no built-in node type carries L4-24GB"),
    # the pool says L40S: then `l4` was a typo of l40s, and the L40S server is right
    ("pcie-l4-4", "l40s", "did you mean 'pcie-l40s-4'"),
    ("hgx-h100", None, "did you mean 'hgx-h100-8'"),
    ("HGX-H200", None, "did you mean 'hgx-h200-8'"),
    ("dgx-b200-8", None, "did you mean 'dgx-b200'"),
    ("cpu-mgmt", None, "did you mean 'cpu-mgmt-2s'"),
    # an H20 is not an H200: a GPU-like word that is no catalog GPU gets no node type
    ("hgx-h20-8", None, "'h20' is no GPU in the catalog"),
    ("my-server", None, "use one of: hgx-h100-8"),
])
def test_known_cases(name: str, gpu: str | None, expect: str) -> None:
    hint = suggest_node_type(name, CAT, gpu)
    assert expect in hint
    if expect.startswith("no built-in") or "is no GPU" in expect:
        assert _suggested(hint) is None and "aiplat catalog node-types" in hint


@pytest.mark.parametrize(("typed", "kind", "expect"), [
    ("h100-sxm-80g", "gpus", "H100-SXM-80GB"),  # a spelling: one character off
    ("llama-3-8", "models", "llama-3-8b"),  # a truncation keeps the numbers typed
    ("llama3-70b", "models", "llama-3-70b"),
    ("qwen-2.5-72b", "models", "qwen2.5-72b"),
    # the cases: another number, or another word, is another real product
    ("H20", "gpus", None),  # not an H200
    ("gemma-3-27b", "models", None),  # not llama-3-70b
    ("llama-3-7b", "models", None),  # not llama-3-70b nor llama-2-7b
    ("deepseek-v3.1", "models", None),  # a later model than deepseek-v3
])
def test_a_suggestion_is_a_spelling_never_another_product(typed: str, kind: str,
                                                          expect: str | None) -> None:
    entries = CAT.gpus if kind == "gpus" else CAT.models
    names = [e.name for e in entries] + [a for e in entries for a in getattr(e, "aliases", [])]
    assert closest(typed, names) == expect
    assert ("did you mean" in hint(typed, names)) is (expect is not None)


def test_the_longest_gpu_name_in_the_word_wins() -> None:
    assert gpu_named_in("hgx-h100-nvl-8", CAT).name == "H100-NVL-94GB"  # type: ignore[union-attr]
    assert gpu_named_in("pcie-l4-4", CAT).name == "L4-24GB"  # type: ignore[union-attr]
    assert gpu_named_in("pcie-l40s-4", CAT).name == "L40S-48GB"  # type: ignore[union-attr]
    assert gpu_named_in("cpu-mgmt-2s", CAT) is None


@settings(max_examples=300, deadline=None)
@given(name=st.text(alphabet="abcdefghlmnprsvx0123456789-", max_size=16),
       gpu=st.sampled_from([None] + [g.name for g in CAT.gpus]))
def test_a_suggested_node_type_carries_the_gpu_the_pool_names(name: str,
                                                              gpu: str | None) -> None:
    suggested = _suggested(suggest_node_type(name, CAT, gpu))
    if suggested is None:
        return
    if gpu is not None:
        assert _gpu_of(suggested) == gpu
    elif (named := gpu_named_in(name, CAT)) is not None:
        assert _gpu_of(suggested) == named.name


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_typo_outside_the_gpu_word_keeps_the_gpu(data: st.DataObject) -> None:
    node = data.draw(st.sampled_from(GPU_NODE_TYPES))
    words = node.name.split("-")
    gpu = CAT.gpu(node.gpu or "")
    assert gpu is not None
    others = [i for i, w in enumerate(words) if CAT.gpu(w) != gpu]
    i = data.draw(st.sampled_from(others))
    # letters only or digits only: a word that is not itself shaped like a GPU's name
    words[i] = data.draw(st.text(alphabet="abcdefghx", min_size=1, max_size=4)
                         | st.text(alphabet="0123456789", min_size=1, max_size=3))
    typo = "-".join(words)
    if CAT.node_type(typo) is not None:
        return
    suggested = _suggested(suggest_node_type(typo, CAT))
    assert suggested is not None and _gpu_of(suggested) == node.gpu, (typo, suggested)
