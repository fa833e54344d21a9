"""docs/lint-classes.md lists every lint rule the code has, once, with a symptom and a
source, and its "live" column says what the live tests confirm (issue #18's closing note)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from test_lint_sites import rule_ids

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "lint-classes.md"
ROW = re.compile(r"^\| `([a-z-]+)` \| (.+?) \| (.+?) \| (.+?) \|$")


def rows() -> dict[str, tuple[str, str, str]]:
    out: dict[str, tuple[str, str, str]] = {}
    for line in DOC.read_text().splitlines():
        m = ROW.match(line)
        if m:
            assert m.group(1) not in out, f"{m.group(1)} listed twice"
            out[m.group(1)] = (m.group(2), m.group(3), m.group(4))
    return out


def live_rules() -> set[str]:
    """The rules the live tests apply to the lab cluster: test_lint_live's EXPECTED, and
    the workload-shape findings test_cluster_live asserts."""
    tree = ast.parse((ROOT / "tests" / "integration" / "test_lint_live.py").read_text())
    expected = next(n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                    and any(getattr(t, "id", "") == "EXPECTED" for t in n.targets))
    assert isinstance(expected, ast.Dict)
    out = {str(k.value) for k in expected.keys if isinstance(k, ast.Constant)}
    cluster = (ROOT / "tests" / "integration" / "test_cluster_live.py").read_text()
    out |= set(re.findall(r'assert \("([a-z-]+)", "[^"]+"\) in flagged', cluster))
    return out


def test_every_rule_is_listed_once_with_symptom_and_source() -> None:
    listed = rows()
    assert set(listed) == rule_ids()
    for rule, (symptom, source, _live) in listed.items():
        assert len(symptom) > 20 and len(source) > 10, rule


def test_live_column_matches_the_live_tests() -> None:
    yes = {r for r, (_s, _src, live) in rows().items() if live.startswith("yes")}
    assert yes == live_rules()


def test_counts_match_the_table() -> None:
    text = DOC.read_text()
    listed = rows()
    by = {k: sum(1 for *_x, live in listed.values() if live.startswith(k))
          for k in ("yes", "lint only", "no")}
    assert f"**{len(listed)} rules.**" in text
    assert f"{len(listed)} rules; {by['yes']} confirmed on the live lab cluster" in text
    assert f"{by['lint only']} that only lint can show" in text
    assert f"{by['no']} the cluster could show but no live test does yet" in text
    assert sum(by.values()) == len(listed)
