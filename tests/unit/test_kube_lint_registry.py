"""Lint as a registry (issue #39): every rule module in ``aiplat.kube.lint.rules`` registers its
rules with ``@rule`` (name, doc, severities) and imports only the base; ``lint`` runs every
registered rule. A new rule is one file, a name is one rule, a rule makes only the findings it
declares, and the order rules run in never shows in the findings."""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest
import test_kube_lint
import test_kube_lint_classes
from test_kube_lint import clean
from test_lint_sites import LINT, MODULES, finding_sites

from aiplat.findings import Finding
from aiplat.kube import lint
from aiplat.kube.lint import base
from aiplat.kube.lint.base import Context, finding, rule

PACKAGE = importlib.import_module("aiplat.kube.lint")
RULES_PACKAGE = importlib.import_module("aiplat.kube.lint.rules")


def test_each_rule_is_registered_once_in_the_module_that_makes_its_findings() -> None:
    registered = {r.name: r for r in PACKAGE.rules()}
    sites = finding_sites()
    assert set(registered) == set(sites.values())
    files: dict[str, set[str]] = defaultdict(set)
    for (file, _first, _last), rule_id in sites.items():
        files[rule_id].add(file)
    for name, r in registered.items():
        source = Path(inspect.getsourcefile(r.check) or "")
        assert files[name] == {str(source.relative_to(LINT))}, name
        assert r.doc and r.check.__module__.startswith("aiplat.kube.lint.rules."), name


def test_declared_severities_are_those_the_findings_have() -> None:
    used: dict[str, set[str]] = defaultdict(set)
    computed: set[str] = set()  # a severity chosen at run time (selector-matches)
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "finding":
                rule_id, severity = node.args[1], node.args[0]
                assert isinstance(rule_id, ast.Constant)
                if isinstance(severity, ast.Constant):
                    used[str(rule_id.value)].add(str(severity.value))
                else:
                    computed.add(str(rule_id.value))
    for r in PACKAGE.rules():
        assert used[r.name] <= set(r.severities), r.name
        if r.name not in computed:
            assert used[r.name] == set(r.severities), r.name


def test_a_new_rule_is_one_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A module dropped beside the others (here: a folder added to the rules package's path)
    runs with them; no other file names it."""
    (tmp_path / "forbidden_names.py").write_text(textwrap.dedent('''\
        """A rule of its own: no namespace is named 'forbidden'."""
        from aiplat.findings import Finding
        from aiplat.kube.lint.base import Context, finding, name, rule
        from aiplat.kube.validate import ref


        @rule("namespace-forbidden", "no namespace is named forbidden")
        def namespace_forbidden(ctx: Context) -> list[Finding]:
            return [finding("error", "namespace-forbidden", ref(n), "it is named forbidden",
                            "rename it") for n in ctx.kind("Namespace")
                    if name(n) == "forbidden"]
        '''))
    monkeypatch.setattr(RULES_PACKAGE, "__path__", [*RULES_PACKAGE.__path__, str(tmp_path)])
    monkeypatch.setattr(base, "_RULES", dict(base._RULES))
    module = f"{RULES_PACKAGE.__name__}.forbidden_names"
    try:
        objs, inv = clean()
        objs.append({"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": "forbidden"}})
        assert [(f.source, f.subject) for f in lint(objs, inv)] == [
            ("namespace-forbidden", "Namespace/forbidden")]
        assert "namespace-forbidden" in {r.name for r in PACKAGE.rules()}
    finally:
        sys.modules.pop(module, None)
        if hasattr(RULES_PACKAGE, "forbidden_names"):
            delattr(RULES_PACKAGE, "forbidden_names")


def test_a_name_is_one_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "_RULES", dict(base._RULES))
    with pytest.raises(ValueError, match="flavor-pool is registered twice"):
        @rule("flavor-pool", "a second rule under a taken name")
        def flavor_pool(ctx: Context) -> list[Finding]:
            return []
    with pytest.raises(ValueError, match="severities"):
        rule("no-severity", "a rule that may make nothing", severities=())


def test_a_finding_the_rule_does_not_declare_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "_RULES", {})

    @rule("errors-only", "declares errors, makes a warning")
    def errors_only(ctx: Context) -> list[Finding]:
        return [finding("warning", "errors-only", "Namespace/x", "why", "fix")]

    (r,) = base.registered()
    with pytest.raises(ValueError, match="made a warning finding for rule errors-only"):
        r.run(Context([], clean()[1]))


def test_the_order_rules_run_in_never_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Today's output order is (severity, rule, object), ties in the order a rule makes
    them: running the rules backwards gives the same list."""
    objs, inv = clean()
    for seed, *_ in test_kube_lint.SEEDED + test_kube_lint_classes.SEEDED:
        trial = copy.deepcopy(objs)
        try:
            seed(trial, inv)
        except (KeyError, StopIteration):
            continue  # a seed for a part an earlier one took out
        objs = trial
    findings = lint(copy.deepcopy(objs), inv)
    assert len({f.source for f in findings}) > 30
    forward = PACKAGE.rules
    monkeypatch.setattr(PACKAGE, "rules", lambda: tuple(reversed(forward())))
    assert lint(copy.deepcopy(objs), inv) == findings
