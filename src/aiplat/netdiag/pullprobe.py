"""A bounded model-pull probe: ``python -m aiplat.netdiag.pullprobe URL --seconds S``.

Downloads an OCI blob over plain HTTP (the registry's ``GET /v2/<repo>/blobs/<digest>``) for
at most S seconds, verifies the sha256 when the whole blob arrived, and prints one JSON line:
``{"bytes", "seconds", "start", "end", "complete", "error"}``. The lab runs it inside a node
namespace (``ip netns exec``) so the pull takes that node's path. Once ``aiplat model pull``
exists, :func:`aiplat.netdiag.lab.pull` can run that instead and read its throughput.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
import urllib.error
import urllib.request


def probe(url: str, seconds: float) -> dict[str, object]:
    start = time.time()
    t0 = time.monotonic()
    got = 0
    complete = False
    error = ""
    h = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=max(seconds, 2.0)) as r:
            while time.monotonic() - t0 < seconds:
                chunk = r.read(1 << 16)
                if not chunk:
                    complete = True
                    break
                got += len(chunk)
                h.update(chunk)
    except (urllib.error.URLError, OSError) as e:
        error = str(e)
    elapsed = time.monotonic() - t0
    if complete and "sha256:" in url and not url.endswith(h.hexdigest()):
        error = "digest mismatch"
    return {"bytes": got, "seconds": elapsed, "start": start, "end": start + elapsed,
            "complete": complete, "error": error}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("url")
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    print(json.dumps(probe(args.url, args.seconds)))


if __name__ == "__main__":
    main()
