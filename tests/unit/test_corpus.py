"""``kube validate`` and ``kube lint`` on the corpus of upstream manifests
(``tests/data/corpus``), against the real API server's recorded verdicts (``verdicts.json``;
``tests/integration/test_corpus_live.py`` checks the recording against a live server).

For every file, as a user runs them (the file alone in a folder): neither command ends in a
traceback; ``kube validate --k8s-version <the server's minor>`` finds errors exactly when
the server refuses the file (files it cannot judge are only run); ``kube lint`` (without a
node inventory: upstream files bring none, and another cluster's pools are the wrong
question; the node-dependent checks then do not run) raises no error on a file the server
accepts. Today's disagreements are listed, with the class of their cause, in
``known_disagreements.json``; the test fails on a disagreement not listed and on a listed
one that no longer happens, so the list stays true and shrinks as the causes are fixed.

Rewrite the list after a fix (classes of entries still there are kept; new ones get
"unclassified", to be named by hand):

    .venv/bin/python tests/unit/test_corpus.py
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from cli_inprocess import run

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
KNOWN = CORPUS / "known_disagreements.json"
Obj = dict[str, Any]


def _first_lines(text: str, n: int = 3) -> list[str]:
    return [line[:300] for line in text.splitlines() if line.strip()][:n]


def _validate(folder: Path, version: str) -> Obj | None:
    """The disagreement of ``kube validate`` with the server on one file, or None."""
    code, out, err = run("kube", "validate", str(folder), "--k8s-version", version,
                          "-o", "json")
    if code is None:
        return {"kind": "crash", "detail": _first_lines(err)}
    if code == 2:
        return {"kind": "input refused", "detail": _first_lines(err)}
    issues = [i for r in json.loads(out) for i in r["issues"] if i["severity"] == "error"]
    return {"kind": "errors", "detail": [
        f"{i['ref']} at {i['path']}: {i['message']}"[:300] for i in issues[:3]]
            } if code else None


def _lint(folder: Path) -> Obj | None:
    code, out, err = run("kube", "lint", str(folder), "-o", "json")
    if code is None:
        return {"kind": "crash", "detail": _first_lines(err)}
    if code == 2:
        return {"kind": "input refused", "detail": _first_lines(err)}
    errors = [f for f in json.loads(out) if f["severity"] == "error"]
    return {"kind": "errors", "detail": [
        f"[{f['source']}] {f['subject']}: {f['message']}"[:300] for f in errors[:3]]
            } if errors else None


def disagreements() -> dict[str, dict[str, Obj]]:
    """Per tool, per corpus file: how it disagrees with the server today."""
    recorded = json.loads((CORPUS / "verdicts.json").read_text())
    version = ".".join(recorded["kubernetes"].lstrip("v").split(".")[:2])
    out: dict[str, dict[str, Obj]] = {"validate": {}, "lint": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for rel, v in sorted(recorded["files"].items()):
            folder = Path(tmp) / rel.replace("/", "__")
            folder.mkdir()
            shutil.copyfile(CORPUS / rel, folder / Path(rel).name)
            verdict = v["verdict"]
            got = _validate(folder, version)
            if got and (got["kind"] == "crash" or verdict == "accepted"
                        or (got["kind"] == "input refused" and verdict != "refused")):
                out["validate"][rel] = {"server": verdict, **got}
            elif got is None and verdict == "refused":
                out["validate"][rel] = {"server": verdict, "kind": "missed refusal",
                                        "detail": [o["message"][:300] for o in v["objects"]
                                                   if o["verdict"] == "refused"][:3]}
            got = _lint(folder)
            if got and (got["kind"] == "crash" or verdict == "accepted"):
                out["lint"][rel] = {"server": verdict, **got}
    return out


@pytest.fixture(scope="module")
def found() -> dict[str, dict[str, Obj]]:
    return disagreements()


def _known() -> Obj:
    return dict(json.loads(KNOWN.read_text()))


def test_the_corpus_is_large_and_varied() -> None:
    sources = json.loads((CORPUS / "sources.json").read_text())
    assert len(sources) >= 300
    assert len({s["repo"] for s in sources}) >= 6
    assert len({s["ref"] for s in sources if s["project"] == "kueue"}) >= 3
    recorded = json.loads((CORPUS / "verdicts.json").read_text())
    assert set(recorded["files"]) == {s["file"] for s in sources}
    assert all((CORPUS / s["file"]).is_file() for s in sources)


@pytest.mark.parametrize("tool", ["validate", "lint"])
def test_no_traceback_on_any_file(found: dict[str, dict[str, Obj]], tool: str) -> None:
    crashes = {f: d["detail"] for f, d in found[tool].items() if d["kind"] == "crash"}
    assert not crashes, crashes


@pytest.mark.parametrize("tool", ["validate", "lint"])
def test_disagreements_are_the_listed_ones(found: dict[str, dict[str, Obj]], tool: str
                                           ) -> None:
    now = {f: d["kind"] for f, d in found[tool].items()}
    listed = {f: d["kind"] for f, d in _known()[tool].items()}
    new = {f: found[tool][f] for f in now if listed.get(f) != now[f]}
    gone = sorted(f for f in listed if f not in now)
    assert not new, f"{tool} disagrees with the API server on files not listed in {KNOWN}: {new}"
    assert not gone, (f"{tool} now agrees with the API server on these files: remove them "
                      f"from {KNOWN.name} (python tests/unit/test_corpus.py): {gone}")


def test_every_listed_disagreement_names_its_class() -> None:
    for tool, entries in _known().items():
        for f, d in entries.items():
            assert d.get("class") and d["class"] != "unclassified", (tool, f)


def main() -> int:
    """Rewrite known_disagreements.json from today's behaviour, keeping known classes."""
    old = _known() if KNOWN.exists() else {"validate": {}, "lint": {}}
    now = disagreements()
    for tool, entries in now.items():
        for f, d in entries.items():
            d["class"] = old.get(tool, {}).get(f, {}).get("class", "unclassified")
    KNOWN.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
    for tool, entries in now.items():
        print(f"{tool}: {len(entries)} disagreements", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
