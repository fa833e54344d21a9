"""Samples the README tour and the lab guide use, reachable from a plain ``pip install``.

``aiplat samples`` lists them; ``aiplat samples get NAME [-d DIR]`` writes one:

- ``node-*``: a host's sysfs/procfs/dev tree for ``aiplat node inventory|check --root``
  (``hosts.py`` builds it: an 8-GPU HGX with rail-aligned InfiniBand, degraded with one GPU
  trained at x8 and one IB port down, an L40S server, an MI300X node, a GPU-less VM);
- ``containerd-1.7.toml``: a containerd 1.7 configuration to merge CDI and the NVIDIA runtime
  into (``aiplat runtime config containerd --current``);
- ``snapshot-*``: a cluster as ``kubectl get -o json`` lists, for ``aiplat kube why-pending
  --snapshot`` (``snapshots.py`` builds them with the status fields Kueue writes);
- ``platform.yaml``: the built-in example spec;
- ``rdma-fabric``: recorded RDMA tool outputs of four nodes, in the layout ``aiplat diagnose
  rdma`` reads (``rdma.py`` writes them, with five planted faults);
- ``model-mini``: a small model folder (a config, a tokenizer and two safetensors shards of
  seeded random weights, 32 MiB) for ``aiplat model push``: the same bytes, hence the same
  digests, on every machine;
- ``fgd-trace``: the public Alibaba GPU trace ``aiplat sim fgd --data`` reads is 13 MB and not
  shipped: ``get`` says where to download it and which files the folder needs.

A sample is built in a temporary folder beside its destination and renamed into place, so a
failure leaves nothing half-written. The destination may be new or an empty directory; one
that already holds exactly the sample (the same files, bytes and links) is left as it is,
so ``get`` run twice succeeds; anything else there is never overwritten.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from aiplat.errors import InputError
from aiplat.samples import hosts, models, rdma, snapshots

FGD_TRACE_URL = "https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2023"
FGD_TRACE_FILES = ("openb_node_list_all_node.csv", "openb_node_list_gpu_node.csv",
                   "openb_pod_list_*.csv")


@dataclass(frozen=True)
class Sample:
    name: str
    what: str
    use: str
    write: Callable[[Path], Path] | None
    """Writes the sample at the given path and returns it; None for a download."""


def _file(resource: str) -> Callable[[Path], Path]:
    def write(dest: Path) -> Path:
        data = (resources.files("aiplat.samples") / "data" / resource).read_bytes()
        _fresh(dest)
        dest.write_bytes(data)
        return dest
    return write


def _example(dest: Path) -> Path:
    from aiplat.spec import example_text

    _fresh(dest)
    dest.write_text(example_text())
    return dest


def _model_mini(dest: Path) -> Path:
    _fresh_dir(dest)
    for name, data in models.mini_model().items():
        (dest / name).write_bytes(data)
    return dest


def _host(build: Callable[[Path], Path]) -> Callable[[Path], Path]:
    def write(dest: Path) -> Path:
        _fresh_dir(dest)
        return build(dest)
    return write


def _snapshot(scenario: str) -> Callable[[Path], Path]:
    def write(dest: Path) -> Path:
        _fresh_dir(dest)
        for name, text in snapshots.scenario_files(scenario).items():
            (dest / name).write_text(text)
        return dest
    return write


def _fresh(dest: Path) -> None:
    if dest.exists():
        raise InputError(f"{dest} exists; samples never overwrite (fix: remove it or pass "
                         "another -d DIR)")
    dest.parent.mkdir(parents=True, exist_ok=True)


def _fresh_dir(dest: Path) -> None:
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise InputError(f"{dest} exists and is not an empty directory; samples never "
                         "overwrite (fix: remove it or pass another -d DIR)")
    dest.mkdir(parents=True, exist_ok=True)


def _catalogue() -> list[Sample]:
    node = "aiplat node inventory|check --root DIR"
    out = [
        Sample("node-hgx-h100", "8x H100 SXM, 8 rail-aligned ConnectX-7 NDR, 4 NVSwitches, "
               "2 NUMA nodes (healthy)", node, _host(hosts.hgx_h100)),
        Sample("node-hgx-h100-degraded", "the same HGX with GPU 3 trained at PCIe x8 and "
               "mlx5_5 port 1 DOWN", node,
               _host(lambda d: hosts.hgx_h100(d, degraded=True))),
        Sample("node-l40s-4", "4x L40S on 2 NUMA nodes, one Ethernet NIC", node,
               _host(hosts.l40s_4)),
        Sample("node-mi300x-8", "8x AMD MI300X with rail-aligned InfiniBand", node,
               _host(hosts.mi300x_8)),
        Sample("node-gpu-less-vm", "a virtio VM without GPUs", node, _host(hosts.gpu_less_vm)),
        Sample("containerd-1.7.toml", "a containerd 1.7 config (CDI off, runc default)",
               "aiplat runtime config containerd --current FILE", _file("containerd-1.7.toml")),
        Sample("platform.yaml", "the built-in example platform spec",
               "aiplat plan FILE, aiplat spec validate FILE", _example),
        Sample("model-mini", "a 32 MiB model: config, tokenizer, 2 safetensors shards "
               "(seeded weights)", "aiplat model push DIR REF", _model_mini),
        Sample("rdma-fabric", "ibstat, IB counters, ethtool -S, ib_write_bw and nccl-tests "
               "outputs of 4 nodes x 8 NDR rails, 5 faults planted (constructed)",
               "aiplat diagnose rdma DIR", _host(rdma.rdma_fabric)),
    ]
    for scenario, (_state, expected) in snapshots.scenarios().items():
        out.append(Sample(f"snapshot-{scenario}", f"why-pending: {expected['code']} "
                          f"({expected['namespace']}/{expected['name']})",
                          "aiplat kube why-pending NAME -n NS --snapshot DIR",
                          _snapshot(scenario)))
    out.append(Sample("fgd-trace", f"the Alibaba GPU trace v2023 (13 MB, download: "
                      f"{FGD_TRACE_URL})", "aiplat sim fgd --data DIR", None))
    return out


def catalogue() -> list[Sample]:
    return _catalogue()


def get(name: str, dest: Path | None = None) -> Path:
    """Write sample ``name`` to ``dest`` (default: ./NAME) and return the path."""
    return write(name, dest)[0]


def write(name: str, dest: Path | None = None) -> tuple[Path, bool]:
    """Sample ``name`` at ``dest`` (default: ./NAME): the path, and whether it was written
    (False: ``dest`` already held exactly this sample)."""
    by_name = {s.name: s for s in _catalogue()}
    sample = by_name.get(name)
    if sample is None:
        raise InputError(f"no sample {name!r} (fix: one of {', '.join(by_name)}; "
                         "`aiplat samples` lists them)")
    if sample.write is None:
        raise InputError(
            f"{name} is not shipped (13 MB): download {', '.join(FGD_TRACE_FILES)} from "
            f"{FGD_TRACE_URL} into DIR/traces/alibaba-gpu-v2023/ and run `aiplat sim fgd "
            "--data DIR`")
    target = dest if dest is not None else Path(name)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".aiplat-sample-") as tmp:
        built = sample.write(Path(tmp) / "sample")
        if (_empty_dir(target) and built.is_dir()) or not os.path.lexists(target):
            os.replace(built, target)
            return target, True
        if _same(built, target):
            return target, False
    kind = "is not an empty directory" if target.is_dir() else "exists"
    raise InputError(f"{target} {kind} and does not hold sample {name}; samples never "
                     "overwrite (fix: remove it or pass another -d DIR)")


def _empty_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink() and not any(path.iterdir())


def _entries(root: Path) -> dict[str, tuple[str, bytes | str]]:
    """Every entry under ``root`` (itself included): kind and content, links not followed."""
    out: dict[str, tuple[str, bytes | str]] = {}
    for p in [root, *root.rglob("*")] if root.is_dir() and not root.is_symlink() else [root]:
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = ("link", os.readlink(p))
        elif p.is_dir():
            out[rel] = ("dir", "")
        else:
            out[rel] = ("file", p.read_bytes())
    return out


def _same(built: Path, existing: Path) -> bool:
    return _entries(built) == _entries(existing)
