"""The NVIDIA GPU Operator's controller as an oracle for the live test: built from its pinned
Go module (``gpu-operator/go.mod`` beside this file) as a :class:`gooracle.GoOracle`, with what the
controller reads besides its flags copied out of the same module: its state manifests (the
image's ``/opt/gpu-operator``: ``assets/`` plus ``manifests/``), its CRDs (ClusterPolicy,
NVIDIADriver) and its Helm chart (``deployments/gpu-operator``), whose
``templates/clusterpolicy.yaml`` :func:`cluster_policy` evaluates without Helm.

The controller reads its states from ``/opt/gpu-operator/<state>``, a path in its source
(``controllers/state_manager.go``, ``ClusterPolicyController.init``) with no flag or variable
to move it, and the node's os-release from ``/host-etc/os-release``; :func:`command` runs it
in namespaces of its own (``unshare --user --map-root-user --mount``, then ``chroot``) where
those paths hold what its image and Deployment put there, so nothing on the host changes.

``python tests/integration/gpuoperator.py`` builds it and prints what it did.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from aiplat.gobuild import Component

sys.path.insert(0, str(Path(__file__).parent))
from gooracle import GoOracle, writable

TOOLS = Path(__file__).parent / "gpu-operator"
MODULE = "github.com/NVIDIA/gpu-operator"
PROGRAM = Component("gpu-operator", MODULE, f"{MODULE}/cmd/gpu-operator")
# (module path, destination under the cache): the image's layout (docker/Dockerfile) and the
# chart files the test maps aiplat's values through.
COPIES = (
    ("assets", "opt"),
    ("manifests", "opt/manifests"),
    ("deployments/gpu-operator/crds", "crds"),
    ("deployments/gpu-operator", "chart"),
)


def _copy_files(src: Path, cache: Path) -> None:
    for _s, dst in COPIES:
        shutil.rmtree(cache / dst.split("/")[0], ignore_errors=True)
    for s, dst in COPIES:
        d = cache / dst
        d.parent.mkdir(parents=True, exist_ok=True)
        if (src / s).is_dir():
            shutil.copytree(src / s, d)
        else:
            shutil.copyfile(src / s, d)
    writable([cache / d for d in ("opt", "crds", "chart")])


ORACLE = GoOracle(TOOLS, MODULE, PROGRAM, "the GPU Operator controller", "gpuoperator.py",
                  needs=("opt", "crds", "chart/templates"),
                  ldflags=lambda v: f"-s -w -X={MODULE}/internal/info.version={v}",
                  copy=_copy_files)
build, locate = ORACLE.build, ORACLE.locate


def command(cache: Path, kubeconfig: Path, *args: str) -> list[str]:
    """The argv that runs the controller with the files its Deployment gives it (the chart's
    templates/operator.yaml): the image's states at ``/opt/gpu-operator`` and the node's
    ``/etc/os-release`` at ``/host-etc/os-release`` (read by the DCGM exporter's and the
    driver's transforms, ``parseOSRelease`` in controllers/object_controls.go). A user and
    mount namespace of its own (no root needed, nothing on the host changes) with a tmpfs
    root holding those, /dev, /proc and the kubeconfig's folder, then chroot: the image's
    filesystem less the rest. The controller is exec'd, so the child's pid is its pid."""
    script = r"""set -e
root="$1" opt="$2" bin="$3" kc="$4"; shift 4
mount -t tmpfs tmpfs "$root"
mkdir -p "$root/opt/gpu-operator" "$root/host-etc" "$root/dev" "$root/proc" "$root/tmp" \
  "$root/usr/bin" "$root$kc"
touch "$root/host-etc/os-release" "$root/usr/bin/gpu-operator"
mount --bind "$opt" "$root/opt/gpu-operator"
mount --bind /etc/os-release "$root/host-etc/os-release"
mount --bind "$bin" "$root/usr/bin/gpu-operator"
mount --rbind /dev "$root/dev"
mount --rbind /proc "$root/proc"
mount --bind "$kc" "$root$kc"
exec chroot "$root" /usr/bin/gpu-operator "$@"
"""
    root = cache / "root"
    root.mkdir(exist_ok=True)
    return ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private",
            "sh", "-c", script, "sh", str(root), str(cache / "opt"),
            str(cache / "bin" / PROGRAM.name), str(kubeconfig.parent), *args]


# --- the chart's ClusterPolicy, without helm ---------------------------------------------
# templates/clusterpolicy.yaml uses a handful of template forms, all of them evaluated here
# on the chart's values.yaml coalesced with aiplat's (helm's merge: maps deep, the rest
# replaced): ``{{- if V }}``/``{{- if and (V) (V) }}`` ... ``{{- end }}``, ``{{ V }}``,
# ``{{ V | quote }}``, ``{{ V | default X }}``, ``{{ toYaml V | nindent N }}`` and the two
# label helpers of templates/_helpers.tpl. A form not in that list fails the render, so a
# new pin that changes the template is noticed, not mis-rendered.
RELEASE = "gpu-operator"
_EXPR = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")
_VALUE = r"\.Values\.([\w.]+)"


def coalesce(defaults: Any, overrides: Any) -> Any:
    if isinstance(defaults, dict) and isinstance(overrides, dict):
        out = dict(defaults)
        for k, v in overrides.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = coalesce(defaults.get(k), v)
        return out
    return overrides


def _lookup(values: dict[str, Any], path: str) -> Any:
    cur: Any = values
    for part in path.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _go_string(v: Any) -> str:
    """How text/template prints a value (helm leaves a missing one empty)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def cluster_policy(chart: Path, values: dict[str, Any]) -> dict[str, Any]:
    """The ClusterPolicy ``helm template`` renders from the chart at ``chart`` (the files
    :data:`COPIES` puts there) and the user ``values``."""
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    vals = coalesce(yaml.safe_load((chart / "values.yaml").read_text()), values)
    chart_label = f"{meta['name']}-{meta['version']}".replace("+", "_")[:63].rstrip("-")
    app_version = str(meta.get("appVersion") or "")
    helpers = {
        "gpu-operator.labels": {
            "app.kubernetes.io/name": meta["name"], "helm.sh/chart": chart_label,
            "app.kubernetes.io/instance": RELEASE,
            **({"app.kubernetes.io/version": app_version} if app_version else {}),
            "app.kubernetes.io/managed-by": "Helm",
            **(_lookup(vals, "operator.labels") or {})},
        "gpu-operator.operand-labels": {
            "helm.sh/chart": chart_label, "app.kubernetes.io/managed-by": meta["name"],
            **(_lookup(vals, "daemonsets.labels") or {})},
    }

    def truthy(cond: str) -> bool:
        m = re.fullmatch(rf"if {_VALUE}", cond)
        if m:
            return bool(_lookup(vals, m.group(1)))
        m = re.fullmatch(rf"if and \({_VALUE}\) \({_VALUE}\)", cond)
        if m:
            return bool(_lookup(vals, m.group(1))) and bool(_lookup(vals, m.group(2)))
        raise ValueError(f"template condition not understood: {cond}")

    def value(expr: str) -> str:
        m = re.fullmatch(rf"toYaml {_VALUE} \| nindent \d+", expr)
        if m:
            return json.dumps(_lookup(vals, m.group(1)))  # flow YAML: the same data
        m = re.fullmatch(rf"{_VALUE}((?: \| default [^|]+)?)((?: \| quote)?)", expr)
        if not m:
            raise ValueError(f"template expression not understood: {expr}")
        v = _lookup(vals, m.group(1))
        if m.group(2) and not v:
            d = m.group(2).split("default", 1)[1].strip()
            v = app_version if d == ".Chart.AppVersion" else yaml.safe_load(d)
        return json.dumps(_go_string(v)) if m.group(3) else _go_string(v)

    out: list[str] = []
    stack: list[bool] = []
    for line in (chart / "templates" / "clusterpolicy.yaml").read_text().splitlines():
        exprs = _EXPR.findall(line)
        control = line.strip().startswith("{{-") and len(exprs) == 1
        if control and exprs[0].startswith("if "):
            stack.append(all(stack) and truthy(exprs[0]))
            continue
        if control and exprs[0] == "end":
            stack.pop()
            continue
        if not all(stack):
            continue
        m = re.fullmatch(r'include "([\w.-]+)" \. \| nindent (\d+)', exprs[0]) if control else None
        if m:  # a helper's lines, indented under the key above
            out += [" " * int(m.group(2)) + json.dumps(k) + ": " + json.dumps(v)
                    for k, v in helpers[m.group(1)].items()]
            continue
        out.append(_EXPR.sub(lambda m: value(m.group(1)), line))
    if stack:
        raise ValueError("template: unbalanced if/end")
    return dict(yaml.safe_load("\n".join(out)))


if __name__ == "__main__":
    ORACLE.main()
