"""The bench's verdicts: the cold pull is judged against the slower of network and disk."""

from __future__ import annotations

from aiplat.artifacts.bench import BenchReport, Figure, effective_raw, format_report, verdicts


def report(*, raw: float, raw_disk: float, cold: float, oras: float, load: float,
           page: float, warm_s: float) -> BenchReport:
    gb = 10**9
    r = BenchReport("h:1/m@sha256:" + "0" * 64, gb, 4)
    for key, gbps, kind in [("raw", raw, "ceiling"), ("raw_disk", raw_disk, "ceiling"),
                            ("cold", cold, "aiplat"), ("oras", oras, "peer"),
                            ("page_cache", page, "ceiling"), ("load", load, "aiplat")]:
        r.figures[key] = Figure(key, gb, 1 / gbps, kind)
    r.figures["warm"] = Figure("warm", 0, warm_s, "aiplat")
    return r


def test_disk_bound_cache_uses_the_disk_ceiling() -> None:
    r = report(raw=1.0, raw_disk=0.3, cold=0.29, oras=0.1, load=3.0, page=3.5, warm_s=0.01)
    assert effective_raw(r).name == "raw_disk"
    checks = {text: ok for text, _, _, ok in verdicts(r)}
    assert all(checks.values())
    text = "\n".join(format_report(r))
    assert "cold pull vs network-only raw download: 0.29×" in text
    assert "MISS" not in text


def test_misses_are_reported() -> None:
    r = report(raw=1.0, raw_disk=2.0, cold=0.5, oras=0.4, load=1.0, page=4.0, warm_s=0.2)
    assert effective_raw(r).name == "raw"
    results = {text: (round(v or 0, 3), ok) for text, v, _, ok in verdicts(r)}
    assert results["cold pull vs same-run raw download ceiling"] == (0.5, False)
    assert results["cold pull vs the oras client"] == (1.25, False)
    assert results["load from cache vs page-cache read ceiling"] == (0.25, False)
    assert results["warm pull seconds (≤ 0.1)"] == (0.2, False)


def test_paired_rounds_decide_by_median() -> None:
    r = report(raw=1.0, raw_disk=2.0, cold=0.5, oras=0.4, load=1.0, page=4.0, warm_s=0.01)
    r.pairs["load/page_cache"] = [0.5, 0.9, 0.95]  # one round disturbed by a neighbour
    results = {text: (v, ok) for text, v, _, ok in verdicts(r)}
    assert results["load from cache vs page-cache read ceiling"] == (0.9, True)
    assert "per-round ratio load/page_cache: 0.50, 0.90, 0.95 (median 0.90)" in \
        "\n".join(format_report(r))


def test_settle_waits_for_a_quiet_disk_and_skips_file_systems_without_one(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import time
    from pathlib import Path

    from aiplat.artifacts.bench import _disk_sectors, settle

    (tmp_path / "f").write_bytes(b"x" * 1_000_000)  # dirty pages for os.sync to write
    t0 = time.monotonic()
    settle(tmp_path, quiet=0.2, timeout=5)
    took = time.monotonic() - t0
    if _disk_sectors(tmp_path) is None:  # tmpfs and the like: nothing to wait for
        assert took < 0.5
    else:  # at least the quiet window; the upper bound is the fake disk's test (os.sync's
        assert took >= 0.2  # time depends on what else the machine writes)
    t0 = time.monotonic()
    settle(Path("/proc"), quiet=5, timeout=10)  # no block device behind /proc
    assert time.monotonic() - t0 < 1


class _Disk:
    """A disk counter and a clock that advances only when settle naps: the verdict is the
    rule's, not how busy the machine's real disk is."""

    def __init__(self, per_read: int) -> None:
        self.now, self.count, self.per_read = 0.0, 0, per_read

    def sectors(self, _path: object) -> int:
        self.count += self.per_read
        return self.count

    def nap(self, s: float) -> None:
        self.now += s


def _settle_on(disk: _Disk, quiet: float, timeout: float) -> float:
    from pathlib import Path

    from aiplat.artifacts.bench import settle

    settle(Path("."), quiet=quiet, timeout=timeout, sectors=disk.sectors,
           clock=lambda: disk.now, nap=disk.nap)
    return disk.now


def test_settle_is_not_held_up_by_a_trickle_of_background_writes() -> None:
    # a node's logging: 8 sectors (4 KiB) every 0.1 s, far under QUIET_SECTORS per window
    assert 0.3 <= _settle_on(_Disk(per_read=8), quiet=0.3, timeout=10) < 0.5


def test_settle_waits_while_the_disk_keeps_writing_and_gives_up_at_the_timeout() -> None:
    from aiplat.artifacts.bench import QUIET_SECTORS

    assert 10 <= _settle_on(_Disk(per_read=QUIET_SECTORS), quiet=0.3, timeout=10) < 10.2
