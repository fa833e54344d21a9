"""Write-behind: ranges are queued for writeback as they are written, on the real syscall."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from aiplat.artifacts.writeback import WriteBehind, _sync_file_range


def test_ranges_queued_every_kick_bytes_from_the_resume_offset(tmp_path: Path) -> None:
    calls: list[tuple[int, int, int, int]] = []
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
    try:
        behind = WriteBehind(fd, offset=100, kick=1000)
        behind.fn = lambda *a: calls.append(a) or 0  # type: ignore[assignment,func-returns-value]
        for n in (600, 600, 300, 900, 50):
            behind.wrote(n)
    finally:
        os.close(fd)
    assert calls == [(fd, 100, 1200, 2), (fd, 1300, 1200, 2)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sync_file_range is Linux's")
def test_real_sync_file_range_accepts_the_calls(tmp_path: Path) -> None:
    assert _sync_file_range() is not None
    path = tmp_path / "f"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    data = os.urandom(1 << 20)
    try:
        behind = WriteBehind(fd, kick=64 * 1024)
        for i in range(0, len(data), 100_000):
            behind.wrote(os.write(fd, data[i:i + 100_000]))
        assert behind.start > 0  # it queued writeback along the way
        assert _sync_file_range()(fd, 0, len(data), 2) == 0  # type: ignore[misc]
        os.fsync(fd)
    finally:
        os.close(fd)
    assert path.read_bytes() == data
