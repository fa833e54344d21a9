"""The GPU Operator's module (``gpu-operator/go.mod``) and the Prometheus Operator's
(``promop/go.mod``) select the lab's version of every module they build from too, so their
builds reuse the lab's Go build cache and cost CI a minute or two instead of about ten each (a
package compiles again when any module below it moved). Asked of Go itself: the modules the
packages of each build come from (``go list -deps``, versions after MVS and the replace
directives), compared where both builds compile a module.
A bump of the lab's pins that leaves an operator's behind fails here, naming each module.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gpuoperator
import promop
import pytest
from conftest import need

from aiplat.cluster.assets import TOOLS as LAB
from aiplat.errors import InputError
from aiplat.gobuild import go

pytestmark = pytest.mark.integration
# (module folder, the program's package, modules it must share with the lab)
OPERATORS = {
    "gpu-operator": (gpuoperator.TOOLS, gpuoperator.PROGRAM.package,
                     {"k8s.io/client-go", "k8s.io/apimachinery",
                      "sigs.k8s.io/controller-runtime"}),
    "prometheus-operator": (promop.TOOLS, promop.PROGRAM.package,
                            {"k8s.io/client-go", "k8s.io/apimachinery",
                             "sigs.k8s.io/controller-runtime", "github.com/fxamacker/cbor/v2",
                             "github.com/go-openapi/swag/loading"}),
}


def _json_stream(text: str) -> Iterator[dict[str, Any]]:
    dec, i = json.JSONDecoder(), 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        obj, i = dec.raw_decode(text, i)
        yield obj


def _go(go_bin: str, module_dir: Path, *args: str) -> str:
    cp = subprocess.run([go_bin, *args], cwd=module_dir,
                        env={**os.environ, "GOFLAGS": "-mod=readonly", "CGO_ENABLED": "0"},
                        capture_output=True, text=True, timeout=300, check=False)
    assert cp.returncode == 0, f"go {' '.join(args)} in {module_dir}: {cp.stderr[-2000:]}"
    return cp.stdout


def _version(mod: dict[str, Any]) -> str:
    """The version the build uses: the replacement's where the module is replaced."""
    return str((mod.get("Replace") or mod)["Version"])


def _compiled(go_bin: str, module_dir: Path, packages: str) -> dict[str, str]:
    """module -> version, for each module a package of the build comes from (modules only in
    the graph compile nothing, and may differ)."""
    out = _go(go_bin, module_dir, "list", "-deps", "-json=Module", packages)
    return {m["Module"]["Path"]: _version(m["Module"]) for m in _json_stream(out)
            if m.get("Module") and not m["Module"].get("Main")}


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_operator_module_selects_the_labs_versions(name: str) -> None:
    try:
        go_bin = go()
    except InputError as e:
        need(str(e))
        return
    module_dir, package, must_share = OPERATORS[name]
    operator = _compiled(go_bin, module_dir, package)
    lab = _compiled(go_bin, LAB, "tool")  # every program of the lab's tools module
    shared = sorted(set(lab) & set(operator))
    # The modules the operator compiles against that sit below most of the lab's packages:
    # without them shared the comparison would be empty and prove nothing.
    assert must_share <= set(shared), shared
    moved = [f"{m}: lab {lab[m]}, operator {operator[m]}" for m in shared
             if lab[m] != operator[m]]
    assert not moved, (f"{module_dir.relative_to(Path(__file__).parent)}/go.mod leaves the "
                       "lab's versions (fix: 'go get MODULE@LAB_VERSION' there, a replace "
                       "directive where the operator's graph requires more, or copy the lab's "
                       "replace block):\n" + "\n".join(moved))
