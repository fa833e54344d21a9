"""MIG planner: every layout obeys the placement rules; the GPU count is optimal on small
cases (checked against brute force written independently here)."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiplat.catalog import GpuModel
from aiplat.catalog.load import load_catalog
from aiplat.devices import mig

CATALOG = load_catalog()
MIG_GPUS = [g for g in CATALOG.gpus if g.mig_profiles]


def _fits_one_gpu(gpu: GpuModel, names: list[str]) -> bool:
    """Independent check: backtrack over start slices, honour max instances and 7 g."""
    by = {p.name: p for p in gpu.mig_profiles}
    if sum(by[n].compute_slices for n in names) > 7:
        return False
    if any(names.count(n) > by[n].max_instances for n in set(names)):
        return False
    order = sorted(names, key=lambda n: -by[n].memory_slices)

    def place(i: int, used: set[int]) -> bool:
        if i == len(order):
            return True
        p = by[order[i]]
        for s in p.placements:
            cells = set(range(s, s + p.memory_slices))
            if max(cells) < 8 and not cells & used and place(i + 1, used | cells):
                return True
        return False

    return place(0, set())


def _brute_force(gpu: GpuModel, demand: dict[str, int]) -> int:
    items = [n for n, c in demand.items() for _ in range(c)]
    for n in range(1, len(items) + 1):
        for assign in itertools.product(range(n), repeat=len(items)):
            if assign and assign[0] != 0:
                continue  # symmetry: the first instance goes on GPU 0
            bins: list[list[str]] = [[] for _ in range(n)]
            for item, b in zip(items, assign, strict=True):
                bins[b].append(item)
            if all(_fits_one_gpu(gpu, b) for b in bins):
                return n
    return 0


def _check_plan(gpu: GpuModel, demand: dict[str, int], plan: mig.Plan) -> None:
    total: dict[str, int] = {}
    for lay in plan.layouts:
        assert mig.feasible(gpu, lay.placements) is None, [str(p) for p in lay.placements]
        assert _fits_one_gpu(gpu, [p.profile for p in lay.placements])
        for p in lay.placements:
            prof = next(x for x in gpu.mig_profiles if x.name == p.profile)
            assert p.start in prof.placements
        for name, c in lay.counts().items():
            total[name] = total.get(name, 0) + c
    assert total == {n: c for n, c in demand.items() if c}
    assert plan.gpus >= plan.lower_bound


def test_issue_example_ten_1g_and_two_3g_on_h100() -> None:
    gpu = CATALOG.gpu("H100-SXM-80GB")
    assert gpu is not None
    plan = mig.plan(gpu, {"1g.10gb": 10, "3g.40gb": 2})
    _check_plan(gpu, {"1g.10gb": 10, "3g.40gb": 2}, plan)
    assert plan.gpus == 3 == plan.lower_bound
    assert [str(p) for p in plan.layouts[0].placements] == [
        "1g.10gb@0", "1g.10gb@1", "1g.10gb@2", "1g.10gb@3", "3g.40gb@4"]


SMALL = st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e", "f"]),
                        st.integers(0, 3), min_size=1)


@pytest.mark.parametrize("gpu", MIG_GPUS[:1] + MIG_GPUS[-1:], ids=lambda g: g.name)
@settings(max_examples=40, deadline=None)
@given(raw=SMALL)
def test_optimal_against_brute_force(gpu: GpuModel, raw: dict[str, int]) -> None:
    names = [p.name for p in gpu.mig_profiles]
    demand = {names["abcdef".index(k)]: v for k, v in raw.items()}
    while sum(demand.values()) > 6:  # brute force stays small
        k = max(demand, key=lambda n: demand[n])
        demand[k] -= 1
    if not sum(demand.values()):
        return
    plan = mig.plan(gpu, demand)
    _check_plan(gpu, demand, plan)
    assert plan.gpus == _brute_force(gpu, demand)


@pytest.mark.parametrize("gpu", MIG_GPUS, ids=lambda g: g.name)
@settings(max_examples=25, deadline=None)
@given(counts=st.lists(st.integers(0, 60), min_size=6, max_size=6))
def test_layouts_respect_rules_for_any_demand(gpu: GpuModel, counts: list[int]) -> None:
    demand = {p.name: c for p, c in zip(gpu.mig_profiles, counts, strict=False)}
    if not sum(demand.values()):
        return
    _check_plan(gpu, demand, mig.plan(gpu, demand))


def test_layout_table_is_exactly_the_feasible_mixes() -> None:
    gpu = CATALOG.gpu("A100-SXM4-40GB")
    assert gpu is not None
    table = mig.layouts(gpu)
    names = [p.name for p in gpu.mig_profiles]
    for counts in itertools.product(*(range(p.max_instances + 1) for p in gpu.mig_profiles)):
        mix = [n for n, c in zip(names, counts, strict=True) for _ in range(c)]
        assert (tuple(counts) in table) == _fits_one_gpu(gpu, mix), mix
    assert (0, 0, 0, 0, 0, 1) in table  # 7g.40gb alone
    assert (7, 0, 0, 0, 0, 0) in table  # 7 × 1g.5gb


def test_unmeetable_demands_are_explained() -> None:
    h100 = CATALOG.gpu("H100-SXM-80GB")
    l4 = CATALOG.gpu("L4-24GB")
    assert h100 is not None and l4 is not None
    with pytest.raises(mig.MigPlanError, match="does not support MIG"):
        mig.plan(l4, {"1g.10gb": 1})
    with pytest.raises(mig.MigPlanError, match=r"no MIG profile '1g\.5gb'.*use one of 1g\.10gb"):
        mig.plan(h100, {"1g.5gb": 1})
    with pytest.raises(mig.MigPlanError, match=r"needs 3 .* but 2 are available \(fix: add 1"):
        mig.plan(h100, {"1g.10gb": 10, "3g.40gb": 2}, available=2)
    assert "overlaps" in (mig.feasible(h100, [mig.Placement("3g.40gb", 4, 4),
                                              mig.Placement("1g.10gb", 4, 1)]) or "")
    assert "cannot start" in (mig.feasible(h100, [mig.Placement("4g.40gb", 4, 4)]) or "")


def test_mig_manager_config_groups_nodes() -> None:
    gpu = CATALOG.gpu("H100-SXM-80GB")
    assert gpu is not None
    plan = mig.plan(gpu, {"1g.10gb": 56, "3g.40gb": 16})
    config, nodes = mig.mig_parted_config(plan, 8)
    assert config["version"] == "v1"
    assert sum(nodes.values()) == 2
    for entries in config["mig-configs"].values():  # type: ignore[attr-defined]
        assert sum(len(e["devices"]) for e in entries) <= 8
        assert all(e["mig-enabled"] is True for e in entries)


def test_thousand_gpus_of_demand_plans_quickly() -> None:
    gpu = CATALOG.gpu("H100-SXM-80GB")
    assert gpu is not None
    demand = {"1g.10gb": 3000, "2g.20gb": 700, "3g.40gb": 500, "1g.20gb": 300,
              "4g.40gb": 100, "7g.80gb": 50}
    t0 = time.perf_counter()
    plan = mig.plan(gpu, demand)
    elapsed = time.perf_counter() - t0
    _check_plan(gpu, demand, plan)
    assert plan.gpus >= 900
    print(f"1000-GPU demand planned in {elapsed * 1000:.1f} ms")  # figure, not an assertion


def test_spec_check_agrees_with_planner_table() -> None:
    """`aiplat spec validate` (spec.refs) and the planner accept exactly the same layouts."""
    from aiplat.spec.refs import _check_mig

    for gpu in MIG_GPUS:
        table = mig.layouts(gpu)
        names = [p.name for p in gpu.mig_profiles]
        for counts in itertools.product(*(range(p.max_instances + 1) for p in gpu.mig_profiles)):
            layout = [n for n, c in zip(names, counts, strict=True) for _ in range(c)]
            if layout:
                assert (not _check_mig(("x",), gpu, layout)) == (tuple(counts) in table), layout


def test_tenants_get_their_instances_on_few_gpus() -> None:
    gpu = CATALOG.gpu("H100-SXM-80GB")
    assert gpu is not None
    plan = mig.plan(gpu, {"1g.10gb": 11, "3g.40gb": 2})
    got = mig.assign(plan, {"team-a": {"1g.10gb": 10}, "team-b": {"3g.40gb": 2,
                                                                  "1g.10gb": 1}})
    assert len(got) == 13
    per: dict[str, list[int]] = {}
    for i, _p, t in got:
        per.setdefault(t, []).append(i)
    assert per["team-a"].count(0) == 4 and per["team-a"].count(1) == 4
    assert len({(i, p.start) for i, p, _t in got}) == 13  # no instance given twice
    with pytest.raises(mig.MigPlanError, match=r"free 7g\.80gb"):
        mig.assign(plan, {"x": {"7g.80gb": 1}})
