"""The Prometheus Operator as an oracle for the live monitoring test: its ``cmd/operator``
built from the pinned Go module (``promop/go.mod`` beside this file) as a
:class:`gooracle.GoOracle`, with its CRDs (``example/prometheus-operator-crd``) copied out of the
same module into ``crds/``. scripts/test.sh builds it after the lab: its module pins the lab's
library versions (``promop/go.mod``), so it shares the lab's Go build cache. Measured on a
hard-linked copy of the warm cache less the outputs of the operator's own 311 packages: 313
compile actions, 78 s user CPU (4 min 43 s wall at load 12-20 on 2 cores); with everything
cached, 14-24 s (link and copy).

``python tests/integration/promop.py`` builds it and prints what it did (and how long it took).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from aiplat.gobuild import Component

sys.path.insert(0, str(Path(__file__).parent))
from gooracle import GoOracle, writable

TOOLS = Path(__file__).parent / "promop"
MODULE = "github.com/prometheus-operator/prometheus-operator"
PROGRAM = Component("prometheus-operator", MODULE, f"{MODULE}/cmd/operator")
CRDS = "example/prometheus-operator-crd"


def _copy_crds(src: Path, cache: Path) -> None:
    dst = cache / "crds"
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    for f in sorted((src / CRDS).glob("*.yaml")):
        shutil.copyfile(f, dst / f.name)
    writable([dst])


ORACLE = GoOracle(
    TOOLS, MODULE, PROGRAM, "the Prometheus Operator", "promop.py", needs=("crds",),
    ldflags=lambda v: f"-s -w -X=github.com/prometheus/common/version.Version={v.lstrip('v')}",
    copy=_copy_crds)
build, locate = ORACLE.build, ORACLE.locate


if __name__ == "__main__":
    ORACLE.main()
