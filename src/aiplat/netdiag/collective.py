"""Reader of nccl-tests output (``all_reduce_perf``, ``all_gather_perf``, ...) and the bus
bandwidth a fabric should give (pure).

The table (nccl-tests ``src/common.cu``): per size a row with count, type, redop, root, then
out-of-place time (us), algbw and busbw (GB/s) and #wrong, then the same in place; ``#wrong``
is ``N/A`` without validation (``-c 0``) and a test without a reduction (all_gather) prints
``none`` / ``-1`` in those columns. The header lists each rank's host and device ("#  Rank  0
Group  0 Pid 123 on HOST device 0 [...] NAME"); the footer ``# Avg bus bandwidth : X``.
Launchers may prefix every line (mpirun's ``[1,0]<stdout>:``); the prefix is dropped.

Why hand-written: nccl-tests has no machine-readable output on the versions in the field (a
JSON mode is recent) and no maintained Python parser exists.

What "the fabric should give" means here: a ring all-reduce (or all-gather, reduce-scatter)
across nodes moves each rank's share once per hop, and each node's hops leave through its
rails, so busbw across nodes is bounded by the node's injection bandwidth, ``rails x link
rate`` (NVIDIA's nccl-tests PERFORMANCE.md: busbw should reach the hardware's bottleneck).
Tree, NVLS and SHARP algorithms can beat it (the published 2 x 8 H100 run on 8 x 200 Gb/s
reaches 339 GB/s against 200 GB/s), so a run above the bound proves nothing wrong; a run far
below it on large sizes is a fabric (or placement) deficit. A run on one host is bounded by
NVLink, not modelled here: "unknown".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aiplat.netdiag.rdma import RdmaInputError

LARGE_BYTES = 256 * 1024 * 1024
"""Sizes from here up are bandwidth-bound on every fabric aiplat sizes (latency is < 1 %)."""


@dataclass(frozen=True)
class NcclRow:
    size: int
    oop_time_us: float
    oop_algbw: float
    oop_busbw: float
    oop_wrong: int | None
    ip_time_us: float | None
    ip_algbw: float | None
    ip_busbw: float | None
    ip_wrong: int | None

    @property
    def busbw(self) -> float:
        return max(self.oop_busbw, self.ip_busbw or 0.0)

    @property
    def wrong(self) -> int:
        return (self.oop_wrong or 0) + (self.ip_wrong or 0)


@dataclass(frozen=True)
class NcclResult:
    test: str | None  # e.g. "all_reduce_perf" when the output names it
    ranks: tuple[tuple[int, str], ...]  # (rank, host)
    rows: tuple[NcclRow, ...]
    avg_busbw: float | None
    out_of_bounds: int | None

    @property
    def hosts(self) -> list[str]:
        return sorted({h for _, h in self.ranks})

    @property
    def peak_busbw(self) -> float:
        return max(r.busbw for r in self.rows)

    @property
    def large_busbw(self) -> float | None:
        """The best busbw at sizes of at least :data:`LARGE_BYTES`; None when none was run."""
        big = [r.busbw for r in self.rows if r.size >= LARGE_BYTES]
        return max(big) if big else None

    @property
    def wrong(self) -> int:
        return sum(r.wrong for r in self.rows)


_PREFIX = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:")
_RANK = re.compile(r"^#\s+Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)")
_TEST = re.compile(r"Collective test (?:starting|concluded):\s*(\w+)")
_HEADER = re.compile(r"^#\s+size\s+count\s+type\s+redop\s+(root\s+)?time\s+algbw\s+busbw")


def _wrong(cell: str) -> int | None:
    return None if cell == "N/A" else int(cell)


def parse_nccl_tests(text: str, source: str = "nccl-tests output") -> NcclResult:
    lines = [_PREFIX.sub("", line) for line in text.splitlines()]
    ranks: list[tuple[int, str]] = []
    rows: list[NcclRow] = []
    avg = test = None
    oob: int | None = None
    root_col: bool | None = None
    for i, line in enumerate(lines, 1):
        s = line.strip()
        if m := _RANK.match(s):
            ranks.append((int(m.group(1)), m.group(2)))
        elif m := _HEADER.match(s):
            root_col = bool(m.group(1))
        elif m := _AVG.match(s):
            try:
                avg = float(m.group(1))
            except ValueError:
                raise RdmaInputError(source, i, f"average bus bandwidth {m.group(1)!r} is not "
                                     "a number", "record the output unedited") from None
        elif m := _OOB.match(s):
            oob = int(m.group(1))
        elif m := _TEST.search(s):
            test = m.group(1)
        elif root_col is not None and s and not s.startswith("#") and s[0].isdigit():
            rows.append(_row(s.split(), root_col, source, i))
    if root_col is None:
        raise RdmaInputError(source, None, "no nccl-tests table header ('#  size  count  type "
                             "redop ... time algbw busbw')",
                             "record the whole output of all_reduce_perf (or another "
                             "nccl-tests binary)")
    if not rows:
        raise RdmaInputError(source, None, "the nccl-tests table has no rows (the run failed "
                             "or was cut off before the first size)",
                             "rerun it and record the output to the end")
    return NcclResult(test, tuple(ranks), tuple(rows), avg, oob)


def _row(cells: list[str], root_col: bool, source: str, line: int) -> NcclRow:
    # size count type redop [root] | time algbw busbw wrong | time algbw busbw wrong
    lead = 5 if root_col else 4
    rest = cells[lead:]
    try:
        if len(rest) not in (4, 8):
            raise ValueError
        oop = [float(rest[0]), float(rest[1]), float(rest[2])]
        ip = [float(x) for x in rest[4:7]] if len(rest) == 8 else [None, None, None]
        if any(v is not None and v < 0 for v in (*oop, *ip)):
            raise ValueError
        return NcclRow(int(cells[0]), oop[0], oop[1], oop[2], _wrong(rest[3]), ip[0], ip[1],
                       ip[2], _wrong(rest[7]) if len(rest) == 8 else None)
    except (ValueError, IndexError):
        raise RdmaInputError(source, line, f"row {' '.join(cells)!r} has not the table's "
                             "columns (size, count, type, redop, root, then time, algbw, "
                             "busbw, #wrong out of place and in place)",
                             "record the output unedited and to its end") from None


def fabric_busbw_gbs(rails: int, link_gbps: float) -> float:
    """A node's injection bandwidth in GB/s, the ring bound on busbw across nodes."""
    return rails * link_gbps / 8
