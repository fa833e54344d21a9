"""The upstream Helm charts aiplat's values are meant for, found in their Go modules, and the
Helm that renders them (built with the lab cluster: ``aiplat lab cluster build``).

- Kueue's chart comes with the Kueue the lab runs (``charts/kueue`` of ``sigs.k8s.io/kueue``
  as pinned in ``src/aiplat/cluster/tools/go.mod``);
- the GPU Operator's (``deployments/gpu-operator``, with NFD's chart as its subchart) and
  NFD's own (``deployment/helm/node-feature-discovery``) come from the modules pinned in
  ``helm-charts/go.mod`` beside this file.

``go mod download -json`` gives each module's folder in the Go module cache (fetched from the
proxy when missing, checked against the go.sum beside the pins). Nothing of the charts is
copied into this repository.

:func:`unknown_keys` is the check Helm does not make: a values key the chart never reads is
silently ignored (none of these charts ships a ``values.schema.json``).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from aiplat.cluster.assets import TOOLS, locate, versions
from aiplat.errors import InputError
from aiplat.gobuild import go

PINS = Path(__file__).parent / "helm-charts"
GPU_OPERATOR = "github.com/NVIDIA/gpu-operator"
NFD = "sigs.k8s.io/node-feature-discovery"
KUEUE = "sigs.k8s.io/kueue"
# Where each chart sits in its module.
CHART_PATH = {GPU_OPERATOR: "deployments/gpu-operator",
              NFD: "deployment/helm/node-feature-discovery",
              KUEUE: "charts/kueue"}
Obj = dict[str, Any]


@dataclass(frozen=True)
class Charts:
    helm: str  # the built binary
    dirs: dict[str, Path]  # module -> the chart's folder
    versions: dict[str, str]  # module -> the pinned version

    def chart(self, module: str) -> Path:
        return self.dirs[module]


def _download(go_bin: str, modules: list[str], cwd: Path) -> dict[str, tuple[Path, str]]:
    cp = subprocess.run([go_bin, "mod", "download", "-json", *modules], cwd=cwd,
                        capture_output=True, text=True, check=False, timeout=600)
    if cp.returncode != 0:
        raise InputError(f"go mod download in {cwd} failed: {cp.stderr.strip()[-2000:]}"
                         f"{cp.stdout.strip()[-2000:]}")
    out: dict[str, tuple[Path, str]] = {}
    dec, text, i = json.JSONDecoder(), cp.stdout, 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        info, i = dec.raw_decode(text, i)
        out[info["Path"]] = (Path(info["Dir"]), info["Version"])
    return out


def find() -> Charts:
    """The built helm and each chart's folder; InputError saying what is missing."""
    helm = locate().bin("helm")
    go_bin = go()
    found = _download(go_bin, [KUEUE], TOOLS) | _download(go_bin, [GPU_OPERATOR, NFD], PINS)
    assert found[KUEUE][1] == versions()[KUEUE], found[KUEUE]
    dirs = {m: d / CHART_PATH[m] for m, (d, _v) in found.items()}
    for m, d in dirs.items():
        if not (d / "Chart.yaml").is_file():
            raise InputError(f"{m}: no chart at {d}")
    return Charts(helm, dirs, {m: v for m, (_d, v) in found.items()})


def template(charts: Charts, chart: Path, release: str, namespace: str, *,
             values: list[Path], env: dict[str, str], kube_version: str) -> list[Obj]:
    """``helm template`` with the chart's CRDs: the objects, in order."""
    cp = subprocess.run([charts.helm, "template", release, str(chart), "-n", namespace,
                         "--include-crds", "--kube-version", kube_version,
                         *(a for v in values for a in ("-f", str(v)))],
                        env=env, capture_output=True, text=True, check=False, timeout=300)
    if cp.returncode != 0:
        raise AssertionError(f"helm template {chart} failed:\n{cp.stderr}")
    return [d for d in yaml.safe_load_all(cp.stdout) if d]


def _leaves(tree: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(tree, dict) and tree:
        for k, v in tree.items():
            yield from _leaves(v, (*prefix, str(k)))
    else:
        yield prefix


def _reads(templates: str, path: tuple[str, ...]) -> bool:
    """A template reads ``.Values.<path>`` (not only a longer path beginning with it)."""
    return re.search(r"\.Values\." + re.escape(".".join(path)) + r"(?![\w.])",
                     templates) is not None


def _passes_whole(templates: str, path: tuple[str, ...]) -> bool:
    """A template hands ``.Values.<path>`` on whole (``toYaml``): keys below it reach the
    object it renders, whose schema decides on them."""
    return re.search(r"toYaml\s+\.Values\." + re.escape(".".join(path)) + r"(?![\w.])",
                     templates) is not None


def unknown_keys(values: Obj, chart_values: Obj, templates: str) -> list[str]:
    """The keys of ``values`` the chart would silently ignore. A leaf is known when the
    chart's own ``values.yaml`` has its path, or a template reads the path itself (keys
    that values.yaml leaves commented out), or a template hands a prefix of it on whole
    (``toYaml .Values.a.b``; the keys below then reach the rendered object, whose CRD
    schema judges them). Anything else, a misspelt key above all, is reported."""
    out = []
    for path in _leaves(values):
        node: Any = chart_values
        ok = True
        for key in path:
            if isinstance(node, dict) and key in node:
                node = node[key]
                continue
            # values.yaml stops here: a template must read the path, or pass a prefix whole.
            ok = (_reads(templates, path)
                  or any(_passes_whole(templates, path[:j]) for j in range(1, len(path) + 1)))
            break
        if not ok:
            out.append(".".join(path))
    return out


def templates_text(chart: Path) -> str:
    """The chart's own templates (not its subcharts', whose ``.Values`` is another scope),
    as one text."""
    return "\n".join(p.read_text() for p in sorted((chart / "templates").rglob("*"))
                     if p.is_file())


def load_values(chart: Path) -> Obj:
    data = yaml.safe_load((chart / "values.yaml").read_text())
    return data if isinstance(data, dict) else {}
