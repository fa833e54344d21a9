"""Names from a tree reach the terminal escaped (issue #38, the red team's second round):
RBAC names are any path segment, so a RoleBinding named ``x\\x1b]0;PWNED\\x07`` is one the
API server takes, and lint and validate printed it raw (a terminal title set, the screen
cleared, a line reordered by a bidi override). Validate also called Kubernetes' own RBAC
names (system:basic-user) invalid DNS names."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from test_kube_lint_rbac_round2 import aiplat, lint_dir
from test_lint_system import binding, group, upstream


def test_escape_sequences_in_names_reach_the_terminal_escaped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objs = [binding("RoleBinding", "kube-system", ("ClusterRole", "cluster-admin"),
                    group("oidc:\x1b]0;PWN2\x07\u202e"), name="x\x1b]0;PWNED\x07")]
    code, out, _err = lint_dir(tmp_path, objs, capsys)
    assert code == 1
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "RoleBinding/kube-system/x\\x1b]0;PWNED\\x07" in out
    assert "oidc:\\x1b]0;PWN2\\x07\\u202e" in out


def test_validate_shows_escapes_escaped_and_rbac_names_as_kubernetes_allows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """RBAC objects are named by path segments (system:basic-user), not DNS names; other
    names must be DNS-1123."""
    tree = tmp_path / "tree"
    tree.mkdir()
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "a\x1b[2Jb", "namespace": "research"}}
    (tree / "x.yaml").write_text(yaml.safe_dump_all([cm, *upstream()]))
    capsys.readouterr()
    code = aiplat(["kube", "validate", str(tree)])
    out, _err = capsys.readouterr()
    assert code == 1
    assert "\x1b" not in out
    errors = [ln for ln in out.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "ConfigMap/research/a\\x1b[2Jb" in errors[0]
