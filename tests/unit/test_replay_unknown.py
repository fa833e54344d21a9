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


def _rows(objs: list[Obj]) -> dict[str, Any]:
    return {o.workload.split("/")[1]: o for o in decide(parse(objs, "t"))[1]}


def _queues() -> list[Obj]:
    return [rf("f0"), *cq("a", [(["cpu"], [("f0", {"cpu": 2})])]),
            *cq("b", [(["cpu"], [("f0", {"cpu": 2})])])]


def test_a_topology_request_is_unknown_not_admitted() -> None:
    rows = _rows([*_queues(), _tas(wl("t", "a", (1, {"cpu": "1"})))])
    assert rows["t"].shown == "unknown (topology-aware scheduling)"
    d = rows["t"].as_dict()
    assert d["decision"] == "unknown (topology-aware scheduling)"
    assert d["onQuotaAlone"] == "admitted"


def test_a_competitor_in_the_same_queue_depends_on_it() -> None:
    """t (older) takes the queue's 2 cpu if Kueue places it; if not, w fits: w's outcome
    depends on t's topology."""
    rows = _rows([*_queues(), _tas(wl("t", "a", (1, {"cpu": "2"}))),
                  wl("w", "a", (1, {"cpu": "2"}), created="2026-01-01T00:00:05Z")])
    assert rows["w"].shown == "unknown (topology-aware scheduling)"
    assert rows["w"].depends_on == ["ns/t"]


def test_a_workload_the_unknown_one_cannot_touch_stays_decided() -> None:
    rows = _rows([*_queues(), _tas(wl("t", "a", (1, {"cpu": "2"}))),
                  wl("x", "b", (1, {"cpu": "1"}))])
    assert rows["x"].shown == "admitted" and not rows["x"].depends_on


def test_an_already_admitted_workload_is_a_fact() -> None:
    o = _tas(wl("t", "a", (1, {"cpu": "1"}), admitted={"ps0": {"cpu": "f0"}}))
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
