"""Read a folder of recorded RDMA outputs into :class:`~aiplat.netdiag.rdma_diagnose.NodeRecord`
s (the I/O around the pure readers; files through :mod:`aiplat.inputs`, bounded).

The layout (what ``aiplat diagnose rdma DIR`` reads; each file is a command's output as it
printed it)::

    DIR/
      <node>/                          one folder per node, named as the node is
        ibstat.txt                     ibstat
        ib-counters.txt                grep -H . /sys/class/infiniband/*/ports/*/*counters/*
        perfquery-<dev>-<port>.txt     perfquery -x (per port; instead of ib-counters.txt)
        ethtool-S-<if>.txt             ethtool -S <if>   (one per RoCE/Ethernet interface)
        ib_write_bw-<dev>.txt          a perftest client's output (any ib_*_bw / ib_*_lat,
                                       optional suffix); the device is read from its banner
        nccl-<name>.txt                nccl-tests output run from this node (optional)
      nccl-<name>.txt                  nccl-tests output of a run across nodes (optional)

Any other file is listed as not read (a note), so a misnamed file is visible. A file that is
named as one of these but does not read as that tool's output is an input error naming the
file, the line and the fix: no diagnosis from half the evidence.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from aiplat.errors import InputError
from aiplat.inputs import read_text
from aiplat.netdiag.collective import NcclResult, parse_nccl_tests
from aiplat.netdiag.rdma import (
    parse_ethtool_stats,
    parse_ibstat,
    parse_perfquery,
    parse_perftest,
    parse_sysfs_counters,
)
from aiplat.netdiag.rdma_diagnose import NodeRecord

MAX_NODES = 4096
MAX_FILE_BYTES = 8 * 1024 * 1024

_PERFQUERY = re.compile(r"^perfquery-(.+)-(\d+)\.txt$")
_ETHTOOL = re.compile(r"^ethtool-S-(.+)\.txt$")
_PERFTEST = re.compile(r"^ib_\w+_(?:bw|lat)(?:[-.].*)?\.txt$")
_NCCL = re.compile(r"^nccl-.+\.txt$")


def _read(path: Path, what: str) -> str:
    return read_text(path, what, max_bytes=MAX_FILE_BYTES)


def read_node(folder: Path, notes: list[str]) -> NodeRecord:
    node = NodeRecord(folder.name)
    for f in sorted(folder.iterdir()):
        name, src = f.name, str(f)
        if not f.is_file():
            notes.append(f"{src}: not a file, not read")
        elif name == "ibstat.txt":
            node.ports = parse_ibstat(_read(f, "ibstat output"), src)
        elif name == "ib-counters.txt":
            for c in parse_sysfs_counters(_read(f, "InfiniBand sysfs counters"), src):
                node.counters.setdefault(f"{c.device}/{c.port}", {}).update(c.counters)
        elif m := _PERFQUERY.match(name):
            c = parse_perfquery(_read(f, "perfquery output"), src, device=m.group(1))
            node.counters.setdefault(f"{m.group(1)}/{m.group(2)}", {}).update(c.counters)
        elif m := _ETHTOOL.match(name):
            node.ethtool[m.group(1)] = parse_ethtool_stats(_read(f, "ethtool -S output"), src)
        elif _PERFTEST.match(name):
            node.perftest.append((f"{folder.name}/{name}",
                                  parse_perftest(_read(f, "perftest output"), src)))
        elif _NCCL.match(name):
            node.nccl.append((f"{folder.name}/{name}",
                              parse_nccl_tests(_read(f, "nccl-tests output"), src)))
        else:
            notes.append(f"{src}: not a name aiplat reads (see 'aiplat diagnose rdma --help'), "
                         "not read")
    return node


def read_folder(root: str | Path,
                reader: Callable[[Path, list[str]], NodeRecord] = read_node,
                ) -> tuple[list[NodeRecord], list[tuple[str, NcclResult]], list[str]]:
    """(the nodes, the runs across nodes at the top, notes) of a recorded folder."""
    top = Path(root)
    if not top.is_dir():
        raise InputError(f"{top}: not a folder (fix: give the folder with one sub-folder per "
                         "node, see 'aiplat diagnose rdma --help')")
    notes: list[str] = []
    nodes: list[NodeRecord] = []
    runs: list[tuple[str, NcclResult]] = []
    entries = sorted(top.iterdir())
    if len(entries) > MAX_NODES:
        raise InputError(f"{top}: {len(entries)} entries, more than {MAX_NODES} (fix: one "
                         "sub-folder per node)")
    for e in entries:
        if e.is_dir() and not e.is_symlink():
            nodes.append(reader(e, notes))
        elif e.is_file() and _NCCL.match(e.name):
            runs.append((e.name, parse_nccl_tests(_read(e, "nccl-tests output"), str(e))))
        else:
            notes.append(f"{e}: not a node folder or an nccl-*.txt, not read")
    if not nodes and not runs:
        raise InputError(f"{top}: no node folder and no nccl-*.txt (fix: record each node's "
                         "outputs into DIR/<node>/, see 'aiplat diagnose rdma --help')")
    return nodes, runs, notes
