"""Wall time of `aiplat plan` on the built-in example, against the interpreter's own start-up.

Prints the median of N runs of the whole command (a fresh process each time, as a user runs
it) next to the ceiling no CLI can beat: `python -c pass` started the same way, so the ratio
shows how much of the time is aiplat's own work. The in-process time of `build_plan` alone is
printed too (imports excluded), and the command's time on a user's very first run, when the
CEL parser is not cached yet.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 7


def _time(cmd: list[str], env: dict[str, str] | None = None, fresh_cache: bool = False) -> float:
    samples = []
    for _ in range(RUNS):
        with tempfile.TemporaryDirectory() as cache:
            run_env = (env or dict(os.environ)) | ({"XDG_CACHE_HOME": cache} if fresh_cache
                                                   else {})
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True, env=run_env)
            samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    exe = Path(sys.executable).parent / "aiplat"
    with tempfile.TemporaryDirectory() as out:
        plan_s = _time([str(exe), "plan", "-d", out])
        # A user's first run: no cached CEL parser yet (aiplat.kube.celparser builds it).
        first_s = _time([str(exe), "plan", "-d", out], fresh_cache=True)
    python_s = _time([sys.executable, "-c", "pass"])

    from aiplat.catalog import load_catalog
    from aiplat.plan import build_plan
    from aiplat.spec import EXAMPLE, example_text, parse_platform

    catalog = load_catalog()
    platform = parse_platform(example_text(), EXAMPLE, catalog)
    t0 = time.perf_counter()
    for _ in range(RUNS):
        build_plan(platform, catalog)
    core_s = (time.perf_counter() - t0) / RUNS

    print(f"aiplat plan (example, whole command, median of {RUNS}): {plan_s:.3f} s")
    print(f"the same with an empty user cache (first run ever):   {first_s:.3f} s")
    print(f"python -c pass (interpreter start-up ceiling):        {python_s:.3f} s")
    print(f"ratio plan / interpreter start-up:                    {plan_s / python_s:.1f}x")
    print(f"build_plan alone (in process):                        {core_s * 1000:.1f} ms")
    print(f"target well under 2 s: {'yes' if plan_s < 2 else 'NO'}")


if __name__ == "__main__":
    main()
