"""Print the code-shape figures issue 16 tracks: longest functions, most parameters, ruff's
complexity and argument-count findings at their default thresholds, and the import contracts
(how many, how many modules they list by name).

Usage: python scripts/code_shape.py [REPO]   (default: this checkout; pass another worktree,
e.g. one of an older commit, to compare)
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path


def functions(src: Path) -> list[tuple[int, int, str]]:
    """(lines, parameters, 'path:name') of every function under ``src``."""
    out = []
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                a = node.args
                params = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
                params -= 1 if a.args and a.args[0].arg in ("self", "cls") else 0
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                out.append((lines, params, f"{path.relative_to(src)}:{node.name}"))
    return out


def ruff_count(repo: Path, rule: str) -> int:
    ruff = Path(sys.executable).with_name("ruff")
    # --isolated: ruff's default thresholds (complexity 10, 5 arguments), no per-file ignores
    # and --ignore-noqa: every function counted, whatever the ratchet in pyproject says.
    cp = subprocess.run([str(ruff), "check", "src", "--isolated", "--ignore-noqa", "--select",
                         rule, "--output-format", "json", "--exit-zero", "-q"], cwd=repo,
                        capture_output=True, text=True, check=False)
    return len(json.loads(cp.stdout or "[]"))


def contracts(repo: Path) -> tuple[int, int]:
    cfg = tomllib.loads((repo / "pyproject.toml").read_text())
    cs = cfg["tool"]["importlinter"]["contracts"]
    named = {m for c in cs for m in c.get("source_modules", [])
             if m.count(".") >= 2}  # a module inside a package, not a package
    return len(cs), len(named)


def main() -> None:
    repo = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parents[1]).resolve()
    fns = functions(repo / "src" / "aiplat")
    print(f"{repo}")
    print("longest functions (lines):",
          ", ".join(f"{n} {name}" for n, _p, name in sorted(fns, reverse=True)[:5]))
    print("most parameters:",
          ", ".join(f"{p} {name}" for _n, p, name in sorted(fns, key=lambda f: -f[1])[:5]))
    print(f"functions over 60 lines: {sum(n > 60 for n, _p, _ in fns)}; "
          f"with more than 8 parameters: {sum(p > 8 for _n, p, _ in fns)}")
    print(f"ruff C901 (complexity > 10): {ruff_count(repo, 'C901')}; "
          f"PLR0913 (> 5 arguments): {ruff_count(repo, 'PLR0913')}")
    n, named = contracts(repo)
    print(f"import contracts: {n}; modules listed by name in them: {named}")


if __name__ == "__main__":
    main()
