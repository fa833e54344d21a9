"""Benchmark: the lab cluster's start-up and ``aiplat kube apply`` of the example tree.

Prints, measured in the same run:
- ``lab cluster up`` for the example (all seven components, CRDs, webhooks, kwok nodes and
  their ResourceSlices, everything Ready) against its floor, etcd plus kube-apiserver alone
  becoming ready (nothing can answer before that);
- ``kube apply`` of the example tree (order, per-object server-side apply, the dry-run pod
  probe) against a peer: the same objects PATCHed in the same order with one plain httpx
  client and no probe (what any SSA client must pay per object);
- a second apply of the unchanged tree against the same peer.

Run: ``.venv/bin/python bench/cluster.py`` (the components built: ``aiplat lab cluster
build``; as root, or with a writable /etc/kueue/metrics/certs). No assertions: numbers.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from aiplat.catalog import load_catalog
from aiplat.cluster import config as cfg
from aiplat.cluster.assets import locate
from aiplat.cluster.pki import make_pki
from aiplat.cluster.run import _free_ports, _http_ok, down, kubeconfig_path, up
from aiplat.fsutil import write_tree
from aiplat.kube import read_tree, render
from aiplat.kube.apply import Api, apply_order, apply_tree
from aiplat.kube.facts import pool_facts
from aiplat.kube.render_kueue import kueue_configuration
from aiplat.netdiag import sh
from aiplat.plan.resolve import resolve
from aiplat.spec import EXAMPLE, example_text, parse_platform


def floor_seconds(tmp: Path) -> float:
    """etcd + kube-apiserver from cold to /readyz, with the same flags ``up`` uses."""
    assets = locate()
    ports = cfg.Ports(*_free_ports(len(cfg.Ports.__dataclass_fields__)))
    pki = make_pki(tmp / "pki")
    kc = tmp / "kubeconfig"
    kc.write_text(json.dumps(cfg.kubeconfig(f"https://127.0.0.1:{ports.apiserver}", pki)))
    t0 = time.monotonic()
    procs = [sh.spawn("etcd", [assets.bin("etcd"), *cfg.etcd_args(tmp / "etcd", ports)],
                      tmp / "etcd.log")]
    try:
        sh.wait_for("etcd", lambda: _http_ok(f"http://127.0.0.1:{ports.etcd}/health"), 30)
        procs.append(sh.spawn("kube-apiserver", [assets.bin("kube-apiserver"),
                                                 *cfg.apiserver_args(pki, ports)],
                              tmp / "apiserver.log"))
        with Api.from_kubeconfig(str(kc)) as api:
            sh.wait_for("kube-apiserver", api.ready, 120)
        return time.monotonic() - t0
    finally:
        for p in reversed(procs):
            sh.stop(p)


def peer_apply(api: Api, items: list[tuple[str, dict]]) -> float:  # type: ignore[type-arg]
    t0 = time.monotonic()
    for o in apply_order(o for _f, o in items):
        api.apply(o, force=True)
    return time.monotonic() - t0


def main() -> None:
    catalog = load_catalog()
    platform = parse_platform(example_text(), EXAMPLE, catalog)
    pools = pool_facts(resolve(platform, catalog))
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ["AIPLAT_CLUSTER_DIR"] = str(tmp / "runs")
        floor = floor_seconds(tmp / "floor")
        write_tree(tmp / "tree", render(platform, catalog).files())
        items, _inv = read_tree(tmp / "tree")
        t0 = time.monotonic()
        up("bench", pools, kueue_configuration(platform, pools), locate())
        up_s = time.monotonic() - t0
        try:
            with Api.from_kubeconfig(str(kubeconfig_path("bench"))) as api:
                t0 = time.monotonic()
                first = apply_tree(api, items)
                apply_s = time.monotonic() - t0
                t0 = time.monotonic()
                apply_tree(api, items)
                again_s = time.monotonic() - t0
                peer_s = peer_apply(api, items)
        finally:
            down("bench")
    refused = sum(o.action.endswith("refused") for o in first)
    print(f"lab cluster up (example, 8 nodes): {up_s:6.1f} s; floor etcd+apiserver ready "
          f"{floor:5.1f} s; ratio {up_s / floor:4.1f}x")
    print(f"kube apply, {len(items)} objects ({refused} refused): {apply_s:6.2f} s; peer "
          f"plain SSA loop {peer_s:5.2f} s; ratio {apply_s / peer_s:4.1f}x")
    print(f"kube apply again (unchanged):      {again_s:6.2f} s; ratio to peer "
          f"{again_s / peer_s:4.1f}x")


if __name__ == "__main__":
    main()
