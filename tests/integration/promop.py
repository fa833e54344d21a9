"""The Prometheus Operator as an oracle for the live monitoring test: its ``cmd/operator``
built from the pinned Go module (``promop/go.mod`` beside this file) with
:func:`aiplat.gobuild.go_build` into ``$XDG_CACHE_HOME/aiplat/prometheus-operator/<version>``
(default ``~/.cache``), with its CRDs (``example/prometheus-operator-crd``) copied out of the
same module.

``python tests/integration/promop.py`` builds it and prints what it did (and how long it took).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from aiplat.errors import InputError
from aiplat.gobuild import Component, go, go_build

TOOLS = Path(__file__).parent / "promop"
MODULE = "github.com/prometheus-operator/prometheus-operator"
PROGRAM = Component("prometheus-operator", MODULE, f"{MODULE}/cmd/operator")
CRDS = "example/prometheus-operator-crd"


def pinned() -> str:
    m = re.search(rf"^\s*{re.escape(MODULE)} (v\S+)", (TOOLS / "go.mod").read_text(), re.M)
    if not m:
        raise InputError(f"{TOOLS / 'go.mod'}: no version pinned for {MODULE}")
    return m.group(1)


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aiplat" / "prometheus-operator" / pinned()


def locate(cache: Path | None = None) -> Path:
    """The cache folder holding ``bin/prometheus-operator`` and ``crds/``; InputError with
    the command that builds them."""
    cache = cache or default_cache()
    if not ((cache / "bin" / PROGRAM.name).is_file() and (cache / "crds").is_dir()):
        raise InputError(f"the Prometheus Operator is not built in {cache} (fix: run "
                         "'python tests/integration/promop.py' (needs Go >= 1.26 and the Go "
                         "module proxy))")
    return cache


def build(cache: Path | None = None, force: bool = False) -> dict[str, object]:
    version = pinned()
    cache = cache or default_cache()
    t0 = time.monotonic()
    ldflags = f"-s -w -X=github.com/prometheus/common/version.Version={version.lstrip('v')}"
    built = go_build(TOOLS, [PROGRAM], cache, ldflags, force=force,
                     stamp_extra={"versions": {MODULE: version}})
    if built or not (cache / "crds").is_dir():
        _copy_crds(cache, version)
    return {"cache": str(cache), "version": version, "built": built,
            "seconds": round(time.monotonic() - t0, 1)}


def _copy_crds(cache: Path, version: str) -> None:
    cp = subprocess.run([go(), "mod", "download", "-json", f"{MODULE}@{version}"], cwd=TOOLS,
                        capture_output=True, text=True, check=False)
    if cp.returncode != 0:
        raise InputError(f"go mod download failed: {cp.stderr.strip()[-2000:]}")
    src = Path(json.loads(cp.stdout)["Dir"]) / CRDS
    dst = cache / "crds"
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    for f in sorted(src.glob("*.yaml")):
        shutil.copyfile(f, dst / f.name)
        (dst / f.name).chmod(0o644)  # the module cache is read-only; the copy need not be


if __name__ == "__main__":
    if shutil.which("go") is None and Path("/usr/local/go/bin/go").exists():
        os.environ["PATH"] += ":/usr/local/go/bin"
    try:
        print(json.dumps(build(force="--force" in sys.argv[1:]), indent=2))
    except InputError as e:
        sys.exit(f"error: {e}")
