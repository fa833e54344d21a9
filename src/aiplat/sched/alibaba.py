"""Loader for the Alibaba GPU cluster trace v2023 (``cluster-trace-gpu-v2023``): the edge
that reads files; everything it returns is plain data for the pure core.

Files: ``openb_node_list_all_node.csv`` (``sn, cpu_milli, memory_mib, gpu, model``) and
``openb_pod_list_<variant>.csv`` (``name, cpu_milli, memory_mib, num_gpu, gpu_milli`` and,
in most variants, ``gpu_spec, qos, pod_phase, creation_time, deletion_time,
scheduled_time``; the ``multigpuNN`` variants have no times and no ``gpu_spec``).
``gpu_milli`` is per GPU; ``gpu_spec`` is a ``|``-separated list of allowed GPU models.
Times are seconds from the trace start.

Mapping to aiplat concepts, where the trace has none: a pod is a one-pod workload (the trace
has no gangs; multi-GPU pods are single pods on one node); its tenant is its ``qos`` class
(``LS``, ``BE``, ``Burstable``...), so a queueing simulation on the trace has one
ClusterQueue per QoS class unless a mapping is given. A row that does not parse is an
:class:`~aiplat.errors.InputError` naming the file, line and column.
"""

from __future__ import annotations

import csv
from pathlib import Path

from aiplat.errors import InputError
from aiplat.sched.cluster import MILLI, Node, Request
from aiplat.sched.traces import TracePod

TRACE_DIR = Path("traces") / "alibaba-gpu-v2023"
NODE_FILE = "openb_node_list_all_node.csv"


def trace_dir(data: Path) -> Path:
    """The trace folder under a ``--data`` directory (or the folder itself)."""
    for cand in (data / TRACE_DIR, data):
        if (cand / NODE_FILE).is_file():
            return cand
    raise InputError(
        f"{data}: no {NODE_FILE} in {data / TRACE_DIR} or {data} "
        "(fix: pass --data pointing at the folder that holds traces/alibaba-gpu-v2023)"
    )


def variants(folder: Path) -> list[str]:
    found = folder.glob("openb_pod_list_*.csv")
    return sorted(p.stem.removeprefix("openb_pod_list_") for p in found)


def _rows(path: Path, required: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    try:
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in required if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(
                    f"{path}:1: missing column(s) {', '.join(missing)} "
                    f"(fix: the header must have {', '.join(required)})"
                )
            return [(i + 2, row) for i, row in enumerate(reader)]
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror} (fix: check the path)") from e


def _int(path: Path, line: int, row: dict[str, str], col: str) -> int:
    raw = (row.get(col) or "").strip()
    try:
        value = int(float(raw))
    except ValueError:
        raise InputError(
            f"{path}:{line}: column {col}: {raw!r} is not a number (fix: correct or drop the row)"
        ) from None
    if value < 0:
        raise InputError(f"{path}:{line}: column {col}: {value} is negative (fix: correct it)")
    return value


def load_nodes(folder: Path, *, gpu_only: bool = False) -> list[Node]:
    path = folder / (("openb_node_list_gpu_node.csv") if gpu_only else NODE_FILE)
    nodes = []
    for line, row in _rows(path, ("sn", "cpu_milli", "memory_mib", "gpu", "model")):
        gpus = _int(path, line, row, "gpu")
        nodes.append(Node(name=row["sn"], cpu_milli=_int(path, line, row, "cpu_milli"),
                          memory_mib=_int(path, line, row, "memory_mib"), gpus=gpus,
                          model=(row.get("model") or "").strip() if gpus else ""))
    if not nodes:
        raise InputError(f"{path}: no nodes (fix: use the trace's node list)")
    return nodes


def load_pods(folder: Path, variant: str = "default") -> list[TracePod]:
    path = folder / f"openb_pod_list_{variant}.csv"
    if not path.is_file():
        raise InputError(
            f"{path}: no such trace variant (fix: choose one of {', '.join(variants(folder))})"
        )
    pods = []
    for line, row in _rows(path, ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")):
        num = _int(path, line, row, "num_gpu")
        milli = _int(path, line, row, "gpu_milli") if num else 0
        if num and not 0 < milli <= MILLI:
            raise InputError(f"{path}:{line}: column gpu_milli: {milli} is outside 1..1000 "
                             "(fix: gpu_milli is per GPU)")
        spec = (row.get("gpu_spec") or "").strip()
        models = frozenset(s for s in spec.split("|") if s) if num else frozenset()
        created = row.get("creation_time") or ""
        deleted = row.get("deletion_time") or ""
        pods.append(TracePod(
            name=row["name"],
            request=Request(_int(path, line, row, "cpu_milli"), _int(path, line, row, "memory_mib"),
                            num, milli if num <= 1 else MILLI, models),
            qos=(row.get("qos") or "").strip(),
            created=float(_int(path, line, row, "creation_time")) if created.strip() else None,
            deleted=float(_int(path, line, row, "deletion_time")) if deleted.strip() else None,
        ))
    return pods
