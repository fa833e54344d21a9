"""Lab up/down time and the fault -> top-ranked cause table (root).

Brings a 3-node lab up (default segments), prints how long each phase took, the baseline
model pull against the ceiling it runs under (the lab's emulated NIC rate, so the ratio shows
what HTTP + TCP + veth keep of the link), then injects each fault kind in turn, runs the
detector that covers it (``net check`` or ``diagnose``), and prints the top-ranked cause and
whether it names the injected kind, node and segment. Ends with ``down`` time and a check
that nothing is left. Exit 1 when a row is wrong or something is left behind.

    sudo .venv/bin/python bench/lab.py [--prefix abench]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

from aiplat.netdiag import lab as labio
from aiplat.netdiag.diagnose import diagnose_lab
from aiplat.netdiag.faults import plan_fault
from aiplat.netdiag.model import plan_lab
from aiplat.netdiag.probes import net_check
from aiplat.netdiag.testing import free_port

CASES: list[tuple[str, str, str, str]] = [
    # kind, node, segment, detector
    ("loss", "node-2", "storage", "net check"),
    ("rate", "node-3", "hpc", "net check"),
    ("mtu", "node-1", "storage", "net check"),
    ("asym", "node-2", "storage", "net check"),
    ("down", "node-3", "service", "net check"),
    ("slow-storage", "store", "storage", "diagnose"),
    ("rate", "node-2", "storage", "diagnose"),
    ("noisy", "node-3", "storage", "diagnose"),
    ("loss", "node-1", "storage", "diagnose"),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--prefix", default="abench")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/lab.py needs root", file=sys.stderr)
        return 2
    own_dir = None
    if "AIPLAT_LAB_DIR" not in os.environ:
        own_dir = tempfile.mkdtemp(prefix="aiplat-lab-bench-")
        os.environ["AIPLAT_LAB_DIR"] = own_dir
    prefix = args.prefix
    labio.down(prefix)
    plan = plan_lab(nodes=3, prefix=prefix, prom_port=free_port())
    wrong = 0
    try:
        up = labio.up(plan)
        phases = ", ".join(f"{k} {v:.1f} s" for k, v in up.phases.items())
        print(f"lab up: {up.seconds:.1f} s ({phases}); {len(plan.nodes)} namespaces, "
              f"{len(plan.segments)} segments, {len(up.state.procs)} processes")
        base = [b.mbit for b in up.state.baseline]
        mean = sum(base) / len(base)
        print(f"baseline pull: {mean:.0f} Mbit/s = {mean / plan.link_mbit:.2f} of the "
              f"{plan.link_mbit} Mbit/s emulated NIC rate (ceiling)")
        t0 = time.monotonic()
        clean_nc, _ = net_check(prefix)
        clean_dx = diagnose_lab(prefix).causes
        print(f"clean lab: net check {len(clean_nc)} finding(s), diagnose {len(clean_dx)} "
              f"cause(s) in {time.monotonic() - t0:.1f} s")
        wrong += bool(clean_nc) + bool(clean_dx)
        print()
        head = (f"{'fault':<30} {'detector':<10} {'top-ranked cause':<32} {'ok':<3} "
                f"{'s':>5}  summary")
        print(head)
        print("-" * len(head))
        for kind, node, seg, detector in CASES:
            fault = plan_fault(plan, kind, node, seg, seconds=60)
            labio.add_fault(prefix, fault)
            try:
                if kind == "noisy":
                    time.sleep(1.0)
                t0 = time.monotonic()
                top: tuple[str, str | None, str | None, str] | None
                if detector == "net check":
                    found, _ = net_check(prefix)
                    top = ((found[0].kind, found[0].node, found[0].segment, found[0].message)
                           if found else None)
                else:
                    causes = diagnose_lab(prefix).causes
                    top = ((causes[0].kind, causes[0].node, causes[0].segment,
                            causes[0].summary) if causes else None)
                took = time.monotonic() - t0
            finally:
                labio.clear_faults(prefix)
            ok = top is not None and top[:3] == (kind, node, seg)
            wrong += not ok
            shown = f"{top[0]}@{top[1]}/{top[2]}" if top else "(nothing)"
            print(f"{fault.id:<30} {detector:<10} {shown:<32} {'yes' if ok else 'NO':<3} "
                  f"{took:>5.1f}  {top[3] if top else ''}")
    finally:
        down = labio.down(prefix)
        left = labio.leftovers(prefix)
        print(f"\nlab down: {down.seconds:.1f} s, {len(down.removed)} objects removed; "
              f"left behind: {left or 'nothing'}")
    if own_dir:
        shutil.rmtree(own_dir, ignore_errors=True)
    wrong += bool(left)
    print(f"{len(CASES) - min(wrong, len(CASES))}/{len(CASES)} faults ranked correctly"
          if not wrong else f"{wrong} wrong")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
