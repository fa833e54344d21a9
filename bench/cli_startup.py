"""Start-up time of `aiplat --help` and `aiplat --version` against bare `python -c pass`.

Each figure is the median of N fresh processes started the way a user starts them (the
installed `aiplat` script), measured in the same run as the interpreter's own start-up, so
the ratio shows what aiplat adds on this machine however loaded it is. The target (issue #23)
is under 0.2 s for both; kubectl answers `--help` in a few tens of ms.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 0.2


def median_s(cmd: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    exe = str(Path(sys.executable).parent / "aiplat")
    python_s = median_s([sys.executable, "-c", "pass"], runs)
    rows = [(f"aiplat {arg}", median_s([exe, arg], runs)) for arg in ("--help", "--version")]
    print(f"python -c pass (interpreter start-up, median of {runs}): {python_s:.3f} s")
    for name, s in rows:
        verdict = "PASS" if s < TARGET_S else "FAIL"
        print(f"{name:<16} {s:.3f} s  {s / python_s:4.1f}x python  "
              f"(target < {TARGET_S} s: {verdict})")


if __name__ == "__main__":
    main()
