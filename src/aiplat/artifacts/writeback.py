"""Start writing a file's dirty pages to disk while the download is still running.

A blob must be fsynced before it is renamed into the cache. Left alone, Linux starts
writeback only when dirty pages pass ``dirty_background_ratio`` (10% of RAM: several GB), so
a pull would download everything into the page cache first and then wait for the whole model
to reach the disk in ``fsync`` — download time plus disk time. Asking for writeback of each
range as soon as it is written (``sync_file_range(SYNC_FILE_RANGE_WRITE)``: queue the I/O,
do not wait) overlaps the two, so the final ``fsync`` finds little left to do and a cold pull
takes about the longer of the two instead of their sum.

``sync_file_range`` is Linux-only and not in :mod:`os`; it is called through ``ctypes``
(which releases the GIL for the call). Where it is missing this does nothing; the fsync at
the end is what makes the blob durable either way.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from collections.abc import Callable

KICK_BYTES = 32 * 1024 * 1024
_SYNC_FILE_RANGE_WRITE = 2


@functools.cache
def _sync_file_range() -> Callable[[int, int, int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


class WriteBehind:
    """Call :meth:`wrote` after each write to ``fd``; every ``kick`` bytes the range written
    since the last call is queued for writeback."""

    def __init__(self, fd: int, offset: int = 0, kick: int = KICK_BYTES) -> None:
        self.fd, self.start, self.end, self.kick = fd, offset, offset, kick
        self.fn = _sync_file_range()

    def wrote(self, n: int) -> None:
        self.end += n
        if self.fn is not None and self.end - self.start >= self.kick:
            # A failure (e.g. EINVAL on a file system without writeback) only loses the
            # overlap; the caller's fsync still reports real I/O errors.
            self.fn(self.fd, self.start, self.end - self.start, _SYNC_FILE_RANGE_WRITE)
            self.start = self.end
