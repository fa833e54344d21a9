"""Selectors Kueue v0.19 checks before quota: a pod set's required node affinity against a
flavor's nodeLabels (only the flavor's own keys count: ``flavorSelector``), and a
ClusterQueue's namespaceSelector against the Namespace's labels (a null selector admits no
namespace, ``{}`` every one; ``ValidateAdmissibility``)."""

from __future__ import annotations

from typing import Any

from test_sched_replay import cq, rf, run, wl

Obj = dict[str, Any]


def _affine(o: Obj, *terms: list[Obj]) -> Obj:
    spec = o["spec"]["podSets"][0]["template"]["spec"]
    spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]}}}
    return o


def _flavors() -> list[Obj]:
    a, b = rf("a"), rf("b")
    a["spec"] = {"nodeLabels": {"pool": "a", "gen": "5"}}
    b["spec"] = {"nodeLabels": {"pool": "b", "gen": "3"}}
    return [a, b, *cq("q", [(["cpu"], [("a", {"cpu": 4}), ("b", {"cpu": 4})])],
                      namespaceSelector={})]


def test_required_node_affinity_skips_a_flavor_it_excludes() -> None:
    out = run([*_flavors(), _affine(wl("w", "q", (1, {"cpu": "1"})),
                                    [{"key": "pool", "operator": "NotIn", "values": ["a"]}])])
    assert out["w"].flavors == {"ps0": {"cpu": "b"}}


def test_node_affinity_terms_are_ored_and_cut_to_the_flavors_keys() -> None:
    gt = [{"key": "gen", "operator": "Gt", "values": ["4"]}]
    assert run([*_flavors(), _affine(wl("w", "q", (1, {"cpu": "1"})), gt)]
               )["w"].flavors == {"ps0": {"cpu": "a"}}
    # a term on a key no flavor has matches every flavor
    other = [{"key": "zone", "operator": "In", "values": ["z1"]}]
    lt = [{"key": "gen", "operator": "Lt", "values": ["4"]}]
    assert run([*_flavors(), _affine(wl("w", "q", (1, {"cpu": "1"})), lt, other)]
               )["w"].flavors == {"ps0": {"cpu": "a"}}


def test_node_affinity_no_flavor_matches_is_nofit_in_kueues_words() -> None:
    out = run([*_flavors(), _affine(wl("w", "q", (1, {"cpu": "1"})),
                                    [{"key": "pool", "operator": "In", "values": ["c"]}])])
    assert out["w"].decision == "pending"
    assert out["w"].message == ("couldn't assign flavors to pod set ps0: flavor a doesn't "
                                "match node affinity, flavor b doesn't match node affinity")
