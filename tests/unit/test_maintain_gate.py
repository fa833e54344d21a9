"""The health gate's second half: ``--gate-with CMD`` runs ``CMD NODE`` on the nodes the node
agent found healthy; exit 0 passes, anything else fails the node, which is rolled back and
left cordoned (issue #42). The executor runs on a recording stand-in for the API server; the
live proof of the rest of the run is tests/integration/test_maintain_live.py."""

from __future__ import annotations

from typing import Any

from test_maintain_state import _run, _walk

from aiplat.maintain.run import Edge, Result, Session, _gate
from aiplat.maintain.state import Options


class _Reply:
    status_code = 200

    def json(self) -> dict[str, Any]:
        return {"metadata": {"resourceVersion": "7"}}


class _Api:
    """What the gate's steps call: node reads, merge patches, the run's ConfigMap."""

    def __init__(self) -> None:
        self.patches: list[tuple[str, Any]] = []

    def path(self, obj: dict[str, Any], named: bool = True) -> str:
        return f"/{obj['kind']}/{obj['metadata']['name']}"

    def _request(self, method: str, path: str, **kw: Any) -> _Reply:
        self.patches.append((f"{method} {path}", kw.get("content") or kw.get("json")))
        return _Reply()

    def get(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": {"name": obj["metadata"]["name"]}, "status": {}}

    def exists(self, *_a: Any) -> bool:
        return True


def test_gate_with_runs_on_healthy_nodes_and_a_failure_rolls_the_node_back() -> None:
    state = _run()
    a, b = state.nodes[1].name, state.nodes[2].name  # the first batch after the canary
    for n in (a, b):
        state = _walk(state, n, "applied")
    state = state.model_copy(update={"options": Options(gate_with="./check.sh --strict")})
    ran: dict[str, tuple[str, dict[str, str]]] = {}

    def runner(commands: dict[str, tuple[str, dict[str, str]]], _timeout: float
               ) -> dict[str, Result]:
        ran.update(commands)
        return {n: Result(0 if n == a else 3, 1.5, "" if n == a else "baseline: -40% nccl")
                for n in commands}

    api = _Api()
    s = Session(Edge(api, emit=lambda _l: None, runner=runner,  # type: ignore[arg-type]
                     gate=lambda _node, _since: (True, "AiplatNodeHealthy=True")), state, "1")
    _gate(s, [a, b])
    assert ran[a][0] == f"./check.sh --strict {a}"
    assert ran[a][1]["AIPLAT_ACTION"] == "gate" and ran[a][1]["AIPLAT_VERSION"] == "580.95.05"
    assert s.state.node(a).phase == "gated"
    bad = s.state.node(b)
    assert bad.phase == "rolled-back"
    assert "--gate-with exited 3: baseline: -40% nccl" in bad.reason
    assert "left cordoned" in bad.reason
    assert any(b in call and "gate-with exited 3" in str(body) for call, body in api.patches)


def test_without_gate_with_the_agents_verdict_alone_passes() -> None:
    state = _run()
    n = state.nodes[0].name
    state = _walk(state, n, "applied")

    def runner(*_a: Any) -> dict[str, Result]:
        raise AssertionError("no --gate-with: nothing runs")

    s = Session(Edge(_Api(), emit=lambda _l: None, runner=runner,  # type: ignore[arg-type]
                     gate=lambda _node, _since: (True, "ok")), state, "1")
    _gate(s, [n])
    assert s.state.node(n).phase == "gated"
