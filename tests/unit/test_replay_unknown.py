"""What the replay does not model makes THAT workload's decision "unknown (feature)" in the
table and the JSON, never a confident answer beside a warning; a workload whose outcome
depends on an unknown one (the same queue or cohort competing for the quota) is unknown
too; one the unknown ones cannot touch stays decided."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from test_sched_replay import cq, rf, wl

from aiplat.cli.main import cli
from aiplat.kueue.snapshot import parse
from aiplat.kueue.unknown import decide

Obj = dict[str, Any]


def _tas(o: Obj) -> Obj:
    o["spec"]["podSets"][0]["topologyRequest"] = {"required": "topology.kubernetes.io/rack"}
    return o


def _topology(flavor: Obj) -> Obj:
    flavor["spec"] = {"topologyName": "default"}
    return flavor


def _rows(objs: list[Obj]) -> dict[str, Any]:
    return {o.workload.split("/")[1]: o for o in decide(parse(objs, "t"))[1]}


def _queues() -> list[Obj]:
    """a: a topology-aware flavor and a plain one, StrictFIFO; b: a plain one."""
    return [_topology(rf("t0")), rf("f0"), rf("f1"),
            *cq("a", [(["cpu"], [("t0", {"cpu": 2}), ("f0", {"cpu": 2})])],
                queueingStrategy="StrictFIFO"),
            *cq("b", [(["cpu"], [("f1", {"cpu": 2})])])]


def test_a_topology_request_is_unknown_not_admitted() -> None:
    rows = _rows([*_queues(), _tas(wl("t", "a", (1, {"cpu": "1"})))])
    assert rows["t"].shown == "unknown (topology-aware scheduling)"
    d = rows["t"].as_dict()
    assert d["decision"] == "unknown (topology-aware scheduling)"
    assert d["onQuotaAlone"] == "admitted"


def test_a_workload_that_asks_no_topology_skips_the_topology_aware_flavor() -> None:
    rows = _rows([*_queues(), wl("w", "a", (1, {"cpu": "1"}))])
    assert rows["w"].shown == "admitted" and rows["w"].flavors == {"ps0": {"cpu": "f0"}}


def test_a_topology_request_cannot_use_a_plain_flavor() -> None:
    rows = _rows([*_queues(), _tas(wl("t", "b", (1, {"cpu": "1"})))])
    assert rows["t"].decision == "pending"
    assert 'Flavor "f1" does not support TopologyAwareScheduling' in rows["t"].message


def test_a_workload_behind_it_in_a_strict_fifo_queue_depends_on_it() -> None:
    """t (older, the head) is admitted if Kueue places it, w after it; if it never fits it
    blocks the StrictFIFO queue: w's outcome depends on t's topology."""
    rows = _rows([*_queues(), _tas(wl("t", "a", (1, {"cpu": "2"}))),
                  wl("w", "a", (1, {"cpu": "2"}), created="2026-01-01T00:00:05Z")])
    assert rows["w"].shown == "unknown (topology-aware scheduling)"
    assert rows["w"].depends_on == ["ns/t"]
    assert rows["w"].as_dict()["dependsOn"] == ["ns/t"]


def test_a_workload_the_unknown_one_cannot_touch_stays_decided() -> None:
    rows = _rows([*_queues(), _tas(wl("t", "a", (1, {"cpu": "2"}))),
                  wl("w", "a", (1, {"cpu": "2"}), created="2026-01-01T00:00:05Z"),
                  wl("x", "b", (1, {"cpu": "1"}))])
    assert rows["x"].shown == "admitted" and not rows["x"].depends_on


def test_an_already_admitted_workload_is_a_fact() -> None:
    o = _tas(wl("t", "a", (1, {"cpu": "1"}), admitted={"ps0": {"cpu": "t0"}}))
    assert _rows([*_queues(), o])["t"].shown == "admitted"


def test_a_selector_without_namespaces_is_unknown(tmp_path: Path) -> None:
    """A non-empty namespaceSelector needs the Namespace's labels: without Namespace
    objects the replay cannot tell, and says so in the table and the JSON."""
    objs = [rf("f0"), *cq("a", [(["cpu"], [("f0", {"cpu": 2})])],
                          namespaceSelector={"matchLabels": {"team": "a"}}),
            wl("w", "a", (1, {"cpu": "1"}))]
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump_all(objs))
    r = CliRunner().invoke(cli, ["sim", "replay", str(f), "-o", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)[0]["decision"] == "unknown (namespaceSelector)"
    table = CliRunner().invoke(cli, ["sim", "replay", str(f)]).stdout
    assert "unknown (namespaceSelector)" in table and "on quota alone: admitted" in table
    # with the Namespace's labels it is decided: selected, then not selected
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns",
                                                                "labels": {"team": "a"}}}
    assert _rows([*objs, ns])["w"].shown == "admitted"
    ns["metadata"]["labels"] = {"team": "b"}
    out = _rows([*objs, ns])["w"]
    assert (out.shown, out.pending, out.reason) == ("pending", "inadmissible",
                                                    "NamespaceMismatch")
    assert out.message == "workload namespace doesn't match ClusterQueue selector"


def test_a_cluster_queue_without_namespace_selector_admits_no_namespace() -> None:
    """Kueue v0.19: a null namespaceSelector is labels.Nothing() (ClusterQueue's doc:
    "Defaults to null which is a nothing selector"); {} admits every namespace."""
    objs = [rf("f0"), *cq("a", [(["cpu"], [("f0", {"cpu": 2})])]),
            wl("w", "a", (1, {"cpu": "1"}))]
    del objs[1]["spec"]["namespaceSelector"]
    out = _rows(objs)["w"]
    assert (out.shown, out.reason) == ("pending", "NamespaceMismatch")


def test_a_queue_of_topology_aware_flavors_only_places_every_pod_set() -> None:
    """isTASImplied: in a queue whose flavors are all topology-aware, a pod set that asks
    no topology is placed by TAS too; Kueue's bare podIndexLabel asks for none."""
    objs = [_topology(rf("t0")), *cq("a", [(["cpu"], [("t0", {"cpu": 2})])]),
            wl("w", "a", (1, {"cpu": "1"}))]
    objs[-1]["spec"]["podSets"][0]["topologyRequest"] = {
        "podIndexLabel": "batch.kubernetes.io/job-completion-index"}
    assert _rows(objs)["w"].shown == "unknown (topology-aware scheduling)"
    plain = [rf("f0"), *cq("b", [(["cpu"], [("f0", {"cpu": 2})])]),
             wl("x", "b", (1, {"cpu": "1"}))]
    plain[-1]["spec"]["podSets"][0]["topologyRequest"] = {
        "podIndexLabel": "batch.kubernetes.io/job-completion-index"}
    assert _rows(plain)["x"].shown == "admitted"


def test_a_dependent_names_the_unknown_ones_of_its_own_cohort_tree() -> None:
    objs = [*_queues(), _topology(rf("t1")), rf("f2"),
            *cq("c", [(["cpu"], [("t1", {"cpu": 2}), ("f2", {"cpu": 2})])],
                queueingStrategy="StrictFIFO"),
            _tas(wl("t", "a", (1, {"cpu": "2"}))), _tas(wl("u", "c", (1, {"cpu": "2"}))),
            wl("w", "a", (1, {"cpu": "2"}), created="2026-01-01T00:00:05Z")]
    assert _rows(objs)["w"].depends_on == ["ns/t"]
