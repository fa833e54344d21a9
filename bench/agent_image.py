"""The node-agent image's build time from nothing, against its cached rebuild and a plain
``podman import`` of the same root file system, measured in one run.

From nothing: an empty ``XDG_CACHE_HOME`` (no debootstrap base, no root file system, and
an empty pip cache, which pip keeps under the same variable), then ``build_image`` with the
wheel of this checkout; the steps are timed (wheel, debootstrap, pip, import). Then the same
build again (everything cached: the wheel is rebuilt and hashed, nothing else runs), and the
floor a cached build cannot beat: ``podman import`` of the cached tar alone. Prints seconds
and ratios; the CI budget is what "from nothing" costs once per run.

    .venv/bin/python bench/agent_image.py [--keep]

Needs root, debootstrap and Podman (``aiplat lab cluster image`` does too).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from aiplat.cluster import agent_image as ai


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", action="store_true", help="keep the temporary cache and image")
    args = ap.parse_args()
    reason = ai.missing()
    if reason:
        print(f"cannot run: {reason}")
        return 2
    tag = f"localhost/aiplat-node-agent-bench:{os.getpid()}"
    cache_home = Path(tempfile.mkdtemp(prefix="aiplat-image-bench-"))
    os.environ["XDG_CACHE_HOME"] = str(cache_home)  # pip's cache too: a cold start
    steps: list[tuple[float, str]] = []
    t0 = time.monotonic()
    try:
        cold = ai.build_image(tag=tag, progress=lambda m: steps.append((time.monotonic(), m)))
        for (t, m), (t_next, _n) in zip(steps, [*steps[1:], (t0 + cold.seconds, "")],
                                        strict=True):
            print(f"  {t_next - t:7.1f} s  {m}")
        warm = ai.build_image(tag=tag)
        rootfs = cache_home / "aiplat" / "agent-image" / cold.key / "rootfs.tar"
        t1 = time.monotonic()
        subprocess.run(["podman", "import", "--quiet", str(rootfs), f"{tag}-floor"],
                       check=True, capture_output=True, timeout=600)
        floor = time.monotonic() - t1
        subprocess.run(["podman", "rmi", "--force", f"{tag}-floor"], capture_output=True,
                       timeout=120, check=False)
    finally:
        if not args.keep:
            subprocess.run(["podman", "rmi", "--force", tag], capture_output=True, timeout=120,
                           check=False)
            shutil.rmtree(cache_home, ignore_errors=True)
    print(f"from nothing   {cold.seconds:7.1f} s  built {', '.join(cold.built)}")
    print(f"cached         {warm.seconds:7.1f} s  built {', '.join(warm.built) or 'nothing'}"
          f"  ({cold.seconds / max(warm.seconds, 0.1):.1f}x faster than from nothing)")
    print(f"import floor   {floor:7.1f} s  (podman import of the cached tar alone)")
    print(f"image {cold.size_bytes / 2**20:.1f} MiB, {len(cold.manifest['debian'])} Debian "  # type: ignore[arg-type]
          f"packages, {len(cold.manifest['python'])} Python distributions")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
