"""Kernel log reader for GPU XID events (``NVRM: Xid (PCI:0000:1b:00): 79, ...``).

Sources, first found wins: a file the user names (``dmesg`` output, with or without
``-T``... only the ``[seconds]`` monotonic form carries an age), ``/dev/kmsg`` on the live
host (records ``prio,seq,usec,flags;text``, read non-blocking so it never waits for new
messages, and at most ``TEXT_MAX_BYTES`` of them), else the newest ``TEXT_MAX_BYTES`` of
``/var/log/kern.log`` under ``root`` (through ``aiplat.node.tree``). The age of an event is
``/proc/uptime`` minus its timestamp; events without a timestamp have no age and count as
recent (better a false alarm than a missed fallen-off-the-bus). kern.log lines are dated
by syslog: RFC 3339 (rsyslog's default since Ubuntu 23.10, ``2026-12-05T06:12:01.12+00:00``)
is exact; the older ``Dec  5 06:12:01`` has no year and no zone, so it is read as UTC in the
latest year that does not put it in the future (servers keep UTC; a host on local time is off
by its offset, hours against a window of a day). A wall-clock date survives reboots, which the
``[seconds]`` after ``kernel:`` does not, so it wins where a line has both. When no source
can be read the result is None and the XID check says "skip", never "pass".
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from aiplat.errors import InputError
from aiplat.node.pciaddr import normalise
from aiplat.node.tree import TEXT_MAX_BYTES, Tree

# ASCII digits only: \d would take other scripts' digits, which int() and float() accept
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9a-fA-F:.]+)\): ([0-9]{1,9})\b")
_DMESG_TS = re.compile(r"^\[\s*([0-9]+\.[0-9]+)\]")
_KMSG = re.compile(r"^[0-9]+,[0-9]+,([0-9]{1,20}),[^;]*;")
_RFC3339 = re.compile(r"^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?"
                      r"(?:Z|[+-][0-9]{2}:[0-9]{2}))\s")
_BSD = re.compile(r"^(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}([0-9]{1,2}) "
                  r"([0-9]{2}):([0-9]{2}):([0-9]{2}) ")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass(frozen=True)
class XidEvent:
    address: str
    xid: int
    age_s: float | None
    line: str


def _syslog_date(line: str, now: datetime) -> datetime | None:
    """The date syslog put before a kern.log line, or None."""
    m = _RFC3339.match(line)
    if m:
        try:
            return datetime.fromisoformat(m.group(1).replace("Z", "+00:00"))
        except ValueError:
            return None
    b = _BSD.match(line)
    if not b:
        return None
    month, day, hh, mm, ss = (_MONTHS.index(b.group(1)) + 1, *map(int, b.groups()[1:]))
    for year in (now.year, now.year - 1):
        try:
            when = datetime(year, month, day, hh, mm, ss, tzinfo=UTC)
        except ValueError:  # 29 February of a common year, 31 April, 25:00
            continue
        if when <= now + timedelta(minutes=5):  # a little clock skew is not next year
            return when
    return None


def parse_xids(text: str, uptime_s: float | None, now: datetime | None = None
               ) -> list[XidEvent]:
    """XID events in ``text`` with their age in seconds where the line dates them: the
    syslog date against ``now`` (when given), else the kernel's monotonic seconds (dmesg,
    /dev/kmsg) against ``uptime_s``."""
    out = []
    for line in text.splitlines():
        m = _XID.search(line)
        if not m:
            continue
        ts: float | None = None
        d = _DMESG_TS.match(line)
        k = _KMSG.match(line)
        if d:
            ts = float(d.group(1))
        elif k:
            ts = int(k.group(1)) / 1e6
        age = uptime_s - ts if ts is not None and uptime_s is not None else None
        when = _syslog_date(line, now) if now is not None and ts is None else None
        if when is not None and now is not None:
            age = max(0.0, (now - when).total_seconds())
        try:
            address = normalise(m.group(1))
        except ValueError:
            address = m.group(1)
        out.append(XidEvent(address=address, xid=int(m.group(2)), age_s=age, line=line.strip()))
    return out


def _read_kmsg(path: Path) -> str:
    lines = []
    total = 0
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        while total < TEXT_MAX_BYTES:  # a flood of new records must not keep us here
            try:
                rec = os.read(fd, 8192)
            except OSError as e:
                if e.errno == errno.EAGAIN:
                    break
                if e.errno == errno.EPIPE:  # overwritten record: skip it
                    continue
                raise
            if not rec:
                break
            total += len(rec)
            lines.append(rec.decode(errors="replace").split("\n", 1)[0])
    finally:
        os.close(fd)
    return "\n".join(lines)


def _uptime(tree: Tree) -> float | None:
    text = tree.text(tree.path("/proc/uptime"))
    m = re.match(r"([0-9]{1,12}\.[0-9]{1,3})\s", text + " ") if text else None
    return float(m.group(1)) if m else None  # float() would take '٣.٥', 'inf', '1_0'


def read_xids(root: str | Path | Tree = "/", log_file: str | Path | None = None,
              now: datetime | None = None) -> list[XidEvent] | None:
    """XID events, or None when no kernel log could be read (not root and
    ``kernel.dmesg_restrict=1``, no kern.log): "not read" must never look like "no XIDs".
    ``now`` dates syslog lines (default: the clock)."""
    tree = Tree.of(root)
    uptime = _uptime(tree)
    now = now or datetime.now(UTC)
    if log_file is not None:
        from aiplat import inputs

        try:
            text = inputs.read_bytes(log_file, "a kernel log (`dmesg > kernel.log`)").decode(
                "utf-8", errors="replace")
        except InputError as e:
            raise InputError(f"--kernel-log {e}") from None
        return parse_xids(text, uptime, now)
    if tree.live:
        try:
            return parse_xids(_read_kmsg(Path("/dev/kmsg")), uptime)
        except OSError:
            pass
    logged = tree.text(tree.path("/var/log/kern.log"), TEXT_MAX_BYTES, tail=True)
    return parse_xids(logged, uptime, now) if logged is not None else None
