"""The example's lab cluster, as the live tests want it: ``aiplat plan`` written, a lab
cluster of its own up, the tree read; torn down after, every process checked gone.

One block for what ``test_pending_live``, ``test_lint_live``, ``test_replay_dra_live`` and
``test_maintain_live`` (on a spec of its own) each did by hand; each applies the part of the
tree it needs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from test_cluster_live import _aiplat, _need_components, _zombie

from aiplat.kube.apply import Api, apply_tree
from aiplat.kube.tree import read_tree

Obj = dict[str, Any]


@dataclass
class ExampleLab:
    env: dict[str, str]  # AIPLAT_CLUSTER_DIR, NO_COLOR and KUBECONFIG set
    api: Api
    kubeconfig: str
    plan: Path  # the ``aiplat plan`` folder; its tree is plan / "kube"
    items: list[tuple[str, Obj]]  # the tree and its opt-in examples: (file, object)

    def apply(self, keep: Callable[[str], bool] | None = None) -> None:
        """Apply the tree's objects (those ``keep(file)`` keeps); none may be refused."""
        chosen = [(f, o) for f, o in self.items if keep is None or keep(f)]
        refused = [o for o in apply_tree(self.api, chosen, force=True) if "refused" in o.action]
        assert not refused, refused


@contextmanager
def example_lab(tmp: Path, name: str, spec: Path | None = None) -> Iterator[ExampleLab]:
    """The lab cluster of ``spec`` (default: the built-in example), its plan written."""
    _need_components()
    env = {**os.environ, "AIPLAT_CLUSTER_DIR": str(tmp / "runs"), "NO_COLOR": "1"}
    given = [str(spec)] if spec is not None else []
    _aiplat(env, "plan", "-d", str(tmp / "plan"), *given, check=True)
    up = _aiplat(env, "lab", "cluster", "up", "--name", name, *given, check=True)
    kubeconfig = up.stdout.strip().removeprefix("export KUBECONFIG=")
    api = Api.from_kubeconfig(kubeconfig)
    try:
        items, _ = read_tree(tmp / "plan" / "kube")
        # The opt-in examples (none for a spec without workloads), named by their path in the
        # tree as the tests' filters expect ("workloads/examples.yaml").
        examples = tmp / "plan" / "kube" / "workloads"
        items += [(f"workloads/{f}", o) for f, o in read_tree(examples)[0]] \
            if examples.is_dir() else []
        yield ExampleLab({**env, "KUBECONFIG": kubeconfig}, api, kubeconfig, tmp / "plan",
                         items)
    finally:
        api.close()
        state = json.loads((tmp / "runs" / name / "state.json").read_text())
        down = _aiplat(env, "lab", "cluster", "down", "--name", name)
        assert down.returncode == 0, down.stderr
        assert all(not Path(f"/proc/{p['pid']}").exists() or _zombie(p["pid"])
                   for p in state["procs"])
