"""Readers of recorded RDMA tool output (pure: text in, typed records out).

What is read, and from which tool:

- **perftest** (``ib_write_bw``, ``ib_read_bw``, ``ib_send_bw``, ``ib_*_lat``): the result
  table under the ``#bytes`` header, one row per message size. Bandwidth unit from the header:
  ``Gb/sec`` (``--report_gbits``), ``MiB/sec`` (perftest since commit 1d202bb "Display proper
  unit for MiB/sec results") or ``MB/sec`` (older perftest printing the same MiB figure under
  that name). Any other unit is refused, never guessed. Latency: ``t_min`` .. ``99.9%
  percentile`` (iterations mode), or ``t_avg`` and ``tps average`` (``-D`` duration mode).
  Formats: ``src/perftest_parameters.h`` ``RESULT_FMT*`` and ``REPORT_FMT*`` in
  linux-rdma/perftest. The device comes from the banner's ``Device :`` field.
- **ibstat** (infiniband-diags): per CA, per port: state, physical state, rate (Gb/s), link
  layer.
- **IB port counters**: ``perfquery`` / ``perfquery -x`` (``Name:....value``), or the sysfs
  files ``/sys/class/infiniband/<dev>/ports/<port>/{counters,hw_counters}/<name>`` recorded as
  ``grep -H . /sys/class/infiniband/*/ports/*/*counters/*`` (``path:value`` lines, all HCAs
  in one file). Both are normalised to the sysfs names (``symbol_error``, ``link_downed``...).
- **ethtool -S** (``name: value``; mlx5 names such as ``rx_pause_ctrl_phy``,
  ``rx_prio3_pause``, ``np_cnp_sent``, ``rx_symbol_err_phy``, ``link_down_events_phy``).

Why hand-written: none of these tools has a machine-readable mode on every version in the
field (perftest's ``--out_json`` is recent and writes a file, not the report; ibstat, perfquery
and ethtool -S have none), and no maintained Python package parses their text. Each reader is
strict where a wrong number would mislead (an unknown unit, a header without rows, a value
that is not a number is an :class:`RdmaInputError` naming the file, line and fix) and lenient
where the tools are (banner lines, interleaved warnings such as perftest's "Conflicting CPU
frequency", ibstat's trailing ``ibpanic`` line).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from aiplat.errors import InputError

MIB = 1024 * 1024


class RdmaInputError(InputError):
    """A recorded output that cannot be read as the tool it should come from."""

    def __init__(self, source: str, line: int | None, problem: str, fix: str) -> None:
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {problem} (fix: {fix})")


# ---------------------------------------------------------------------------- perftest


@dataclass(frozen=True)
class BwRow:
    size: int
    iterations: int
    peak_gbps: float
    avg_gbps: float
    msg_rate_mpps: float | None


@dataclass(frozen=True)
class LatRow:
    size: int
    iterations: int
    t_avg_us: float
    t_min_us: float | None = None
    t_max_us: float | None = None
    t_typical_us: float | None = None
    t_stdev_us: float | None = None
    p99_us: float | None = None
    p999_us: float | None = None


@dataclass(frozen=True)
class PerftestResult:
    test: str  # the banner's title, e.g. "RDMA_Write BW Test"
    device: str | None
    link_type: str | None
    unit: str  # the unit as printed: "Gb/sec", "MiB/sec", "MB/sec", or "usec"
    bw: tuple[BwRow, ...] = ()
    lat: tuple[LatRow, ...] = ()

    @property
    def is_bandwidth(self) -> bool:
        return bool(self.bw)

    @property
    def best_avg_gbps(self) -> float | None:
        """The highest average bandwidth over the sizes run (an ``-a`` sweep's plateau)."""
        return max((r.avg_gbps for r in self.bw), default=None)


_BANNER_FIELD = re.compile(r"(Device|Link type)\s*:\s*(\S+)")
_BW_HEADER = re.compile(r"#bytes\s+(?:#sl\s+)?#iterations\s+"
                        r"BW peak\[([^\]]*)\]\s+BW average\[([^\]]*)\]")
_LAT_HEADER = re.compile(r"#bytes\s+#iterations\s+t_min\[usec\]")
_LAT_DUR_HEADER = re.compile(r"#bytes\s+#iterations\s+t_avg\[usec\]\s+tps average")
_TITLE = re.compile(r"^\s*((?:RDMA_\w+|Send|Atomic\w*)[\w ]*? (?:BW|Latency) Test)\s*$")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
GBPS_PER_UNIT = {"Gb/sec": 1.0, "MiB/sec": MIB * 8 / 1e9, "MB/sec": MIB * 8 / 1e9}


def _numbers(line: str) -> list[str] | None:
    cells = line.split()
    return cells if cells and all(_NUMBER.match(c) for c in cells) else None


def _header(lines: list[str], source: str) -> tuple[int, str, str]:
    """(line index, kind: bw | bw_sl | lat | lat_dur, unit) of the result table's header."""
    for i, line in enumerate(lines):
        if m := _BW_HEADER.search(line):
            peak_unit, avg_unit = m.group(1), m.group(2)
            if peak_unit != avg_unit or avg_unit not in GBPS_PER_UNIT:
                raise RdmaInputError(source, i + 1, f"bandwidth unit {avg_unit!r} is not one "
                                     "aiplat reads (Gb/sec, MiB/sec, MB/sec)",
                                     "rerun the test with --report_gbits")
            return i, "bw_sl" if "#sl" in line else "bw", avg_unit
        if _LAT_DUR_HEADER.search(line):
            return i, "lat_dur", "usec"
        if _LAT_HEADER.search(line):
            return i, "lat", "usec"
    raise RdmaInputError(source, None, "no perftest result table (no '#bytes #iterations "
                         "BW ...' or '... t_min[usec]' header)",
                         "record the whole output of ib_write_bw/ib_read_bw/ib_*_lat, "
                         "not another tool's or a summary")


def _banner(lines: list[str]) -> tuple[str | None, str | None, str | None]:
    """(test title, device, link type) from the banner above the table."""
    test = device = link = None
    for line in lines:
        if test is None and (m := _TITLE.match(line)):
            test = m.group(1).strip()
        for name, value in _BANNER_FIELD.findall(line):
            if name == "Device" and device is None:
                device = value
            elif name == "Link type" and link is None:
                link = value
    return test, device, link


def parse_perftest(text: str, source: str = "perftest output") -> PerftestResult:
    """The result table of one perftest run (the client's or the server's output)."""
    lines = text.splitlines()
    header_at, kind, unit = _header(lines, source)
    test, device, link = _banner(lines[:header_at])
    bw: list[BwRow] = []
    lat: list[LatRow] = []
    for j in range(header_at + 1, len(lines)):
        line = lines[j]
        cells = _numbers(line)
        if cells is None:
            if (bw or lat) and line.strip():
                break  # the table ended (its closing rule, another run's banner)
            continue  # interleaved warnings, blank lines
        try:
            if kind.startswith("bw"):
                bw.append(_bw_row(cells, kind == "bw_sl", GBPS_PER_UNIT[unit]))
            else:
                lat.append(_lat_row(cells, kind == "lat_dur"))
        except (ValueError, IndexError):
            raise RdmaInputError(source, j + 1, f"row {line.strip()!r} has not the "
                                 f"{'bandwidth' if kind.startswith('bw') else 'latency'} "
                                 "table's columns (cut off?)",
                                 "record the test's output to its end") from None
    if not bw and not lat:
        raise RdmaInputError(source, header_at + 1, "the result table has no rows (the run "
                             "ended before its report, or the output was cut off)",
                             "rerun the test and record its output to the end")
    return PerftestResult(test=test or "unknown", device=device, link_type=link, unit=unit,
                          bw=tuple(bw), lat=tuple(lat))


def _bw_row(cells: list[str], with_sl: bool, factor: float) -> BwRow:
    c = cells[:1] + cells[2:] if with_sl else cells
    if len(c) < 4:
        raise IndexError
    size, iters, peak, avg = int(c[0]), int(c[1]), float(c[2]), float(c[3])
    if size < 0 or iters < 0 or avg < 0 or peak < 0:
        raise ValueError  # perftest issue #82: negative averages from a broken clock
    rate = float(c[4]) if len(c) > 4 else None
    return BwRow(size, iters, peak * factor, avg * factor, rate)


def _lat_row(cells: list[str], duration: bool) -> LatRow:
    v = [float(x) for x in cells]
    if any(x < 0 for x in v):
        raise ValueError
    if duration:
        return LatRow(int(v[0]), int(v[1]), t_avg_us=v[2])
    if len(v) < 6:
        raise IndexError
    rest = v[6:9] + [None] * (3 - len(v[6:9]))
    return LatRow(int(v[0]), int(v[1]), t_min_us=v[2], t_max_us=v[3], t_typical_us=v[4],
                  t_avg_us=v[5], t_stdev_us=rest[0], p99_us=rest[1], p999_us=rest[2])


# ---------------------------------------------------------------------------- ibstat


@dataclass(frozen=True)
class IbPort:
    device: str
    port: int
    state: str | None
    physical_state: str | None
    rate_gbps: float | None
    link_layer: str | None

    @property
    def active(self) -> bool:
        return self.state == "Active" and self.physical_state == "LinkUp"


_CA = re.compile(r"^CA '([^']+)'\s*$")
_PORT = re.compile(r"^\s+Port (\d+):\s*$")
_FIELD = re.compile(r"^\s+([A-Za-z][A-Za-z ]*?):\s*(.*?)\s*$")
_RATE = re.compile(r"^(\d+(?:\.\d+)?)(?:\s|$)")


def parse_ibstat(text: str, source: str = "ibstat output") -> list[IbPort]:
    """Every port ``ibstat`` lists, with the fields it printed (a cut-off port keeps None)."""
    ports: list[IbPort] = []
    device: str | None = None
    current: dict[str, str] | None = None
    number = 0

    def close() -> None:
        if device is not None and current is not None:
            rate = _RATE.match(current.get("Rate", ""))
            ports.append(IbPort(device, number, current.get("State") or None,
                                current.get("Physical state") or None,
                                float(rate.group(1)) if rate else None,
                                current.get("Link layer") or None))

    for line in text.splitlines():
        if m := _CA.match(line):
            close()
            device, current = m.group(1), None
        elif device is not None and (m := _PORT.match(line)):
            close()
            number, current = int(m.group(1)), {}
        elif current is not None and (m := _FIELD.match(line)):
            current[m.group(1)] = m.group(2)
    close()
    if not ports:
        raise RdmaInputError(source, None, "no \"CA '<name>'\" with a \"Port N:\" section",
                             "record the output of 'ibstat' (infiniband-diags)")
    return ports


# ---------------------------------------------------------------------------- port counters

PERFQUERY_NAMES = {
    "SymbolErrorCounter": "symbol_error",
    "LinkErrorRecoveryCounter": "link_error_recovery",
    "LinkDownedCounter": "link_downed",
    "PortRcvErrors": "port_rcv_errors",
    "PortRcvRemotePhysicalErrors": "port_rcv_remote_physical_errors",
    "PortRcvSwitchRelayErrors": "port_rcv_switch_relay_errors",
    "PortXmitDiscards": "port_xmit_discards",
    "PortXmitConstraintErrors": "port_xmit_constraint_errors",
    "PortRcvConstraintErrors": "port_rcv_constraint_errors",
    "LocalLinkIntegrityErrors": "local_link_integrity_errors",
    "ExcessiveBufferOverrunErrors": "excessive_buffer_overrun_errors",
    "VL15Dropped": "VL15_dropped",
    "PortXmitWait": "port_xmit_wait",
    "PortXmitData": "port_xmit_data",
    "PortRcvData": "port_rcv_data",
}
"""infiniband-diags' ``perfquery`` field names -> the kernel's sysfs counter names (the IBA
PortCounters attribute; Documentation/ABI/stable/sysfs-class-infiniband)."""


@dataclass(frozen=True)
class PortCounters:
    device: str | None  # None: perfquery names the LID, not the HCA
    port: int | None
    counters: dict[str, int] = field(default_factory=dict)


_PQ_LINE = re.compile(r"^([A-Za-z0-9]+):\.*(\S+)\s*$")
_PQ_HEAD = re.compile(r"#\s*Port (?:extended )?counters: Lid (\d+) port (\d+)", re.I)
_SYSFS = re.compile(r"^(?:\S*/)?infiniband/([^/\s]+)/ports/(\d+)/(?:hw_)?counters/"
                    r"([\w.]+):\s*(\S+)\s*$")


def parse_perfquery(text: str, source: str = "perfquery output",
                    device: str | None = None) -> PortCounters:
    """``perfquery [-x]`` output: the named counters (hexadecimal selects are skipped)."""
    port: int | None = None
    counters: dict[str, int] = {}
    for i, line in enumerate(text.splitlines(), 1):
        if m := _PQ_HEAD.search(line):
            port = int(m.group(2))
            continue
        m = _PQ_LINE.match(line.strip())
        if not m:
            continue
        name, value = m.group(1), m.group(2)
        if name in ("PortSelect",):
            port = int(value) if value.isdigit() else port
        if name not in PERFQUERY_NAMES:
            continue
        if not value.isdigit():
            raise RdmaInputError(source, i, f"{name} is {value!r}, not a count",
                                 "record perfquery's output unedited")
        counters[PERFQUERY_NAMES[name]] = int(value)
    if not counters:
        raise RdmaInputError(source, None, "no perfquery counters (SymbolErrorCounter, "
                             "LinkDownedCounter, ...)", "record 'perfquery -x' for the port")
    return PortCounters(device, port, counters)


def parse_sysfs_counters(text: str, source: str = "sysfs counters") -> list[PortCounters]:
    """``grep -H . /sys/class/infiniband/*/ports/*/*counters/*``: one record per port."""
    by_port: dict[tuple[str, int], dict[str, int]] = {}
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _SYSFS.match(line.strip())
        if not m:
            raise RdmaInputError(source, i, f"{line.strip()[:80]!r} is not "
                                 "'/sys/class/infiniband/<dev>/ports/<n>/counters/<name>:<value>'",
                                 "record with grep -H . /sys/class/infiniband/*/ports/*/"
                                 "*counters/*")
        dev, port, name, value = m.group(1), int(m.group(2)), m.group(3), m.group(4)
        if not value.isdigit():
            raise RdmaInputError(source, i, f"{name} of {dev}/{port} is {value!r}, not a count",
                                 "record the files unedited")
        by_port.setdefault((dev, port), {})[name] = int(value)
    if not by_port:
        raise RdmaInputError(source, None, "no counter lines", "record with grep -H . "
                             "/sys/class/infiniband/*/ports/*/*counters/*")
    return [PortCounters(d, p, c) for (d, p), c in sorted(by_port.items())]


# ---------------------------------------------------------------------------- ethtool -S

_ETH_LINE = re.compile(r"^\s+([^:\s][^:]*?):\s*(-?\d+)\s*$")


def parse_ethtool_stats(text: str, source: str = "ethtool -S output") -> dict[str, int]:
    """``ethtool -S IF``: counter name -> value (per-queue lines such as ``[0]: rx_bytes``
    keep their prefix in the name)."""
    lines = text.splitlines()
    if not any(line.strip() == "NIC statistics:" for line in lines[:3]):
        raise RdmaInputError(source, 1, "not 'ethtool -S' output (no 'NIC statistics:' line)",
                             "record 'ethtool -S <interface>' unedited")
    stats: dict[str, int] = {}
    for line in lines:
        if m := _ETH_LINE.match(line):
            stats[m.group(1).strip()] = int(m.group(2))
    return stats


def prio_sum(stats: dict[str, int], template: str) -> int | None:
    """The sum over priorities 0-7 of ``template.format(p)`` (e.g. ``rx_prio{}_pause``), None
    when the NIC reports none of them."""
    values = [stats[k] for p in range(8) if (k := template.format(p)) in stats]
    return sum(values) if values else None


def iter_prio(stats: dict[str, int], template: str) -> Iterator[tuple[int, int]]:
    for p in range(8):
        if (k := template.format(p)) in stats:
            yield p, stats[k]
