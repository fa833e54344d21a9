"""``aiplat version``: what this aiplat is and which upstream versions it was built against.

The upstream versions are read at run time from the pinned tools modules that ship inside
the package (``cluster/tools/go.mod``, ``cluster/tools/crds/go.mod``,
``artifacts/tools/go.mod``, ``devices/tools/go.mod``, ``devices/ctk-tools/go.mod``), so they
cannot drift from what ``aiplat lab cluster build`` and the oracles build. A ``replace``
directive wins over ``require``, as in Go (cmd/go: the module graph after replacement).

The commit comes from ``aiplat.cli._build.commit`` (shared with ``aiplat --version``).
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import click

from aiplat import __version__
from aiplat.cli._build import commit
from aiplat.cli._output import emit, output_option


@dataclass(frozen=True)
class Target:
    name: str
    module: str
    go_mod: str  # inside the package, e.g. cluster/tools/go.mod


TARGETS = (
    Target("kubernetes", "k8s.io/kubernetes", "cluster/tools/go.mod"),
    Target("etcd", "go.etcd.io/etcd/server/v3", "cluster/tools/go.mod"),
    Target("kueue", "sigs.k8s.io/kueue", "cluster/tools/go.mod"),
    Target("jobset", "sigs.k8s.io/jobset", "cluster/tools/go.mod"),
    Target("kwok", "sigs.k8s.io/kwok", "cluster/tools/go.mod"),
    Target("helm", "helm.sh/helm/v4", "cluster/tools/go.mod"),
    Target("gateway-api", "sigs.k8s.io/gateway-api", "cluster/tools/crds/go.mod"),
    Target("gateway-api-inference-extension", "sigs.k8s.io/gateway-api-inference-extension",
           "cluster/tools/crds/go.mod"),
    Target("external-snapshotter", "github.com/kubernetes-csi/external-snapshotter/client/v8",
           "cluster/tools/crds/go.mod"),
    Target("prometheus-operator", "github.com/prometheus-operator/prometheus-operator",
           "cluster/tools/crds/go.mod"),
    Target("node-feature-discovery", "sigs.k8s.io/node-feature-discovery",
           "cluster/tools/crds/go.mod"),
    Target("network-attachment-definition",
           "github.com/k8snetworkplumbingwg/network-attachment-definition-client",
           "cluster/tools/crds/go.mod"),
    Target("lws", "sigs.k8s.io/lws", "cluster/tools/crds/go.mod"),
    Target("cosign", "github.com/sigstore/cosign/v3", "artifacts/tools/go.mod"),
    Target("oras", "oras.land/oras", "artifacts/tools/go.mod"),
    Target("modctl", "github.com/modelpack/modctl", "artifacts/tools/go.mod"),
    Target("distribution", "github.com/distribution/distribution/v3", "artifacts/tools/go.mod"),
    Target("container-device-interface", "tags.cncf.io/container-device-interface",
           "devices/tools/go.mod"),
    Target("nvidia-container-toolkit", "github.com/NVIDIA/nvidia-container-toolkit",
           "devices/ctk-tools/go.mod"),
)

_BLOCK = re.compile(r"^(require|replace)\s*\(\s*$(.*?)^\s*\)", re.M | re.S)
_SINGLE = re.compile(r"^(require|replace)\s+(?!\()(.+)$", re.M)


def go_mod_versions(text: str) -> dict[str, str]:
    """module -> version after ``replace`` (a replacement by another module at a version
    gives that version; one by a local path keeps the required one)."""
    text = re.sub(r"//.*", "", text)
    lines: list[tuple[str, str]] = [(m.group(1), m.group(2)) for m in _SINGLE.finditer(text)]
    for m in _BLOCK.finditer(text):
        lines += [(m.group(1), line) for line in m.group(2).splitlines() if line.strip()]
    required: dict[str, str] = {}
    replaced: dict[str, str] = {}
    for verb, line in lines:
        words = line.split()
        if verb == "require" and len(words) == 2:
            required[words[0]] = words[1]
        elif verb == "replace" and "=>" in words:
            new = words[words.index("=>") + 1:]
            if len(new) == 2:  # module version (a path has no version)
                replaced[words[0]] = new[1]
    return required | {m: v for m, v in replaced.items() if m in required}


def targets() -> list[dict[str, str]]:
    root = resources.files("aiplat")
    parsed: dict[str, dict[str, str]] = {}
    out = []
    for t in TARGETS:
        if t.go_mod not in parsed:
            parsed[t.go_mod] = go_mod_versions((root / t.go_mod).read_text())
        out.append({"name": t.name, "version": parsed[t.go_mod].get(t.module, "unknown"),
                    "module": t.module, "pinnedIn": f"aiplat/{t.go_mod}"})
    return out


def version_info() -> dict[str, Any]:
    return {"aiplat": __version__, "commit": commit(),
            "python": platform.python_version(), "targets": targets()}


@click.command("version")
@output_option()
def version(fmt: str) -> None:
    """Print aiplat's version, commit, Python and the upstream versions it targets.

    The upstream versions are the ones pinned in the Go tools modules shipped with aiplat:
    what `aiplat lab cluster build` builds and what the interop tests prove against.

    Exit codes: 0 printed, 2 unknown output format.

    \b
    Example:
      aiplat version -o json
    """
    info = version_info()
    rows = [("aiplat", info["aiplat"], f"commit {info['commit']}"),
            ("python", info["python"], "")]
    rows += [(t["name"], t["version"], t["module"]) for t in info["targets"]]
    emit(fmt, info, ("component", "version", "source"), rows)
