"""The interop oracles: cosign, oras, modctl and an OCI 1.1 registry, built from Go modules.

aiplat's model store claims to speak the ecosystem's formats; these upstream programs are
the proof. Their versions live in ``tools/go.mod`` next to this file (shipped with the
package), a Go module whose ``tool`` lines name the main packages: ``cosign`` (key-pair
signatures), ``oras`` (the ORAS CLI), ``modctl`` (the CNCF ModelPack reference CLI),
distribution v3's ``registry``, and ``referrers-registry`` (a main of ours around
go-containerregistry's registry with the OCI 1.1 referrers API on: distribution v3.1 and
Debian's docker-registry 2.8 do not serve ``/v2/<name>/referrers/<digest>``, and zot is not
on the Go module proxy). ``build`` runs ``go build`` on it (``-mod=readonly``: nothing is
written next to the package) into ``$XDG_CACHE_HOME/aiplat/oracles/<versions>/bin`` (default
``~/.cache``), the same way :mod:`aiplat.cluster.assets` builds the lab cluster; nothing of
theirs is in this repository. ``locate`` finds the binaries again and says how to build
what is missing. ``python -m aiplat.artifacts.oracles`` builds and prints what it did.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from aiplat.cluster.assets import Component, go_build
from aiplat.errors import InputError

TOOLS = Path(str(resources.files("aiplat.artifacts") / "tools"))


@dataclass(frozen=True)
class Oracle:
    name: str  # the binary
    module: str
    package: str
    short: str  # in the cache folder's name


ORACLES = (
    Oracle("cosign", "github.com/sigstore/cosign/v3", "github.com/sigstore/cosign/v3/cmd/cosign",
           "cosign"),
    Oracle("oras", "oras.land/oras", "oras.land/oras/cmd/oras", "oras"),
    Oracle("modctl", "github.com/modelpack/modctl", "github.com/modelpack/modctl", "modctl"),
    Oracle("registry", "github.com/distribution/distribution/v3",
           "github.com/distribution/distribution/v3/cmd/registry", "distribution"),
    # Ours (tools/referrers-registry/main.go): go-containerregistry's registry with the
    # referrers API on; distribution v3.1 and docker-registry 2.8 do not serve it.
    Oracle("referrers-registry", "github.com/google/go-containerregistry",
           "aiplat.local/tools/artifacts/referrers-registry", "ggcr"),
)
NAMES = tuple(o.name for o in ORACLES)

Progress = Callable[[str], None]


def pinned() -> dict[str, str]:
    """The version of each oracle's module, read from the tools module (a ``require``
    block line or a one-line ``require``)."""
    text = (TOOLS / "go.mod").read_text()
    out = {}
    for o in ORACLES:
        m = re.search(rf"^\s*(?:require\s+)?{re.escape(o.module)} (v\S+)", text, re.M)
        if not m:
            raise InputError(f"{TOOLS / 'go.mod'}: no version pinned for {o.module}")
        out[o.module] = m.group(1)
    return out


def version_key(pins: dict[str, str]) -> str:
    """``cosign-v3.1.3_oras-v1.3.6_...``: the cache folder of one set of versions."""
    short = {o.module: o.short for o in ORACLES}
    return "_".join(f"{short[m]}-{v}" for m, v in pins.items())


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aiplat" / "oracles"


def default_cache() -> Path:
    return cache_root() / version_key(pinned())


def ldflags(pins: dict[str, str]) -> str:
    """No symbol tables or DWARF, and the version stamps the release builds set (built
    from a module, ``cosign version`` and ``registry --version`` would say ``devel``)."""
    stamps = {
        "sigs.k8s.io/release-utils/version.gitVersion": pins["github.com/sigstore/cosign/v3"],
        "github.com/distribution/distribution/v3/version.version":
            pins["github.com/distribution/distribution/v3"],
    }
    return " ".join(["-s", "-w", *(f"-X={k}={v}" for k, v in stamps.items())])


def locate(cache: Path | None = None, names: tuple[str, ...] = NAMES) -> dict[str, Path]:
    """Each named oracle's binary in the cache; InputError naming what is missing and the
    command that builds it."""
    bindir = (cache or default_cache()) / "bin"
    found, missing = {}, []
    for name in names:
        p = bindir / name
        if p.is_file() and os.access(p, os.X_OK):
            found[name] = p
        else:
            missing.append(name)
    if missing:
        raise InputError(f"not found in {bindir}: {', '.join(missing)} (fix: run 'python -m "
                         "aiplat.artifacts.oracles' (needs Go >= 1.26))")
    return found


def build(cache: Path | None = None, progress: Progress = lambda _m: None,
          force: bool = False) -> dict[str, object]:
    """Build what the cache lacks (everything with ``force``); a second run builds nothing."""
    pins = pinned()
    cache = cache or cache_root() / version_key(pins)
    t0 = time.monotonic()
    built = go_build(TOOLS, [Component(o.name, o.module, o.package) for o in ORACLES], cache,
                     ldflags(pins), progress=progress, force=force,
                     stamp_extra={"versions": pins})
    return {"cache": str(cache), "versions": pins, "built": built,
            "seconds": round(time.monotonic() - t0, 1)}


def main() -> int:
    def say(msg: str) -> None:
        print(msg, file=sys.stderr)

    try:
        report = build(progress=say)
    except InputError as e:
        say(f"error: {e}")
        return 2
    built = report["built"]
    what = f"built {', '.join(built)}" if isinstance(built, list) and built else "up to date"
    print(f"interop oracles {what} in {report['seconds']} s: {report['cache']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
