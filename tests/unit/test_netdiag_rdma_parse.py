"""The readers of perftest, nccl-tests, ibstat, perfquery, sysfs counters and ethtool -S
(issue #44 item 5), on published outputs (tests/data/rdma/PROVENANCE) and hostile ones.

What a recorded fixture cannot show: that the tools on a given host print the same layout
(this kernel has no RDMA device); the readers key on the header text, not on column offsets,
so a layout change fails loudly here rather than reading a wrong column.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aiplat.netdiag.collective import fabric_busbw_gbs, parse_nccl_tests
from aiplat.netdiag.rdma import (
    RdmaInputError,
    parse_ethtool_stats,
    parse_ibstat,
    parse_perfquery,
    parse_perftest,
    parse_sysfs_counters,
    prio_sum,
)

DATA = Path(__file__).parents[1] / "data" / "rdma"


def text(name: str) -> str:
    return (DATA / name).read_text()


def test_provenance_names_every_fixture() -> None:
    prov = text("PROVENANCE")
    for f in DATA.glob("*.txt"):
        assert f.name in prov, f.name


# ---------------------------------------------------------------------------- perftest


def test_write_bw_in_gbits_with_its_banner() -> None:
    r = parse_perftest(text("perftest-issue273-write-bw-roce-gbits.txt"))
    assert (r.test, r.device, r.link_type, r.unit) == (
        "RDMA_Write Post List BW Test", "ib0", "Ethernet", "Gb/sec")
    (row,) = r.bw
    assert (row.size, row.iterations, row.avg_gbps, row.msg_rate_mpps) == (
        8, 224958464, 0.48, 7.498617)
    assert r.best_avg_gbps == 0.48


def test_mb_per_sec_is_perftests_mebibytes() -> None:
    # perftest printed MiB under "MB/sec" until it renamed the unit (commit 1d202bb).
    (row,) = parse_perftest(text("perftest-issue65-send-bw-mbsec.txt")).bw
    assert row.avg_gbps == pytest.approx(5544.28 * 1024 * 1024 * 8 / 1e9)


def test_latency_table_with_a_warning_between_header_and_row() -> None:
    r = parse_perftest(text("perftest-constructed-read-lat.txt"))
    assert r.device == "mlx5_0" and not r.is_bandwidth
    (row,) = r.lat
    assert (row.t_min_us, row.t_max_us, row.t_typical_us, row.t_avg_us, row.p99_us,
            row.p999_us) == (4.70, 13.20, 4.83, 4.82, 4.91, 13.20)


def test_duration_mode_latency_has_only_the_average() -> None:
    (row,) = parse_perftest(text("perftest-constructed-write-lat-duration.txt")).lat
    assert (row.size, row.iterations, row.t_avg_us, row.t_min_us) == (2, 9876543, 1.01, None)


@pytest.mark.parametrize(("name", "says"), [
    ("perftest-issue234-write-bw-truncated.txt", ":26: row '65536      664644'"),
    ("perftest-constructed-kbsec-unit.txt", "'Kb/sec' is not one aiplat reads"),
    ("perftest-constructed-negative.txt", "has not the bandwidth table's columns"),
    ("nccl-a3mega-all-reduce-2x8-h100.txt", "no perftest result table"),
])
def test_perftest_refuses_what_it_cannot_read(name: str, says: str) -> None:
    with pytest.raises(RdmaInputError, match="fix:") as e:
        parse_perftest(text(name), name)
    assert says in str(e.value) and name in str(e.value)


@pytest.mark.parametrize("garbage", ["", "\x00\xff binary", "#bytes\n", "BW average[Gb/sec]"])
def test_perftest_garbage_is_an_input_error(garbage: str) -> None:
    with pytest.raises(RdmaInputError):
        parse_perftest(garbage)


# ---------------------------------------------------------------------------- nccl-tests


def test_nccl_two_hosts_sixteen_ranks() -> None:
    r = parse_nccl_tests(text("nccl-a3mega-all-reduce-2x8-h100.txt"))
    assert r.hosts == ["ztan-mig-235z", "ztan-mig-gq73"] and len(r.ranks) == 16
    assert len(r.rows) == 31 and r.rows[0].size == 8 and r.rows[-1].size == 8589934592
    assert (r.peak_busbw, r.large_busbw, r.avg_busbw, r.out_of_bounds, r.wrong) == (
        338.82, 338.82, 70.742, 0, 0)
    last = r.rows[-1]
    assert (last.oop_time_us, last.oop_algbw, last.ip_busbw) == (47535.0, 180.71, 337.35)


def test_nccl_partial_header_keeps_the_rank_it_shows() -> None:
    r = parse_nccl_tests(text("nccl-coreweave-pr43-all-reduce-nvl72.txt"))
    assert r.ranks == ((71, "slurm-gb200-207-171"),)
    assert r.peak_busbw == 846.82 and r.avg_busbw == 745.53


def test_nccl_mpirun_prefix_and_no_root_column_and_na_wrong() -> None:
    out = "\n".join([
        "[1,0]<stdout>:#  Rank  0 Group  0 Pid 1 on a device  0 [0x00] X",
        "[1,0]<stdout>:#  Rank  1 Group  0 Pid 2 on b device  0 [0x00] X",
        "[1,0]<stdout>:#       size         count      type   redop     time   algbw   busbw  "
        "#wrong     time   algbw   busbw  #wrong",
        "[1,0]<stdout>:   268435456      67108864     float     sum    85119    3.15    3.15  "
        "    N/A    85743    3.13    3.13    N/A",
        "[1,0]<stdout>:# Avg bus bandwidth    : 3.14",
    ])
    r = parse_nccl_tests(out)
    assert r.hosts == ["a", "b"] and r.rows[0].oop_wrong is None and r.peak_busbw == 3.15


@pytest.mark.parametrize(("output", "says"), [
    ("# nThread 1 nGpus 1\n", "no nccl-tests table header"),
    ("#       size         count      type   redop    root     time   algbw   busbw #wrong\n",
     "has no rows"),
    ("#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
     "  8  2  float  sum  -1  12.9  0.00\n", "has not the table's columns"),
    ("#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
     "  8  2  float  sum  -1  12.9  0.00  0.00  0  12.8  0.00  0.00  0\n"
     "# Avg bus bandwidth    : lots\n", "'lots' is not a number"),
])
def test_nccl_refuses_what_it_cannot_read(output: str, says: str) -> None:
    with pytest.raises(RdmaInputError, match=says):
        parse_nccl_tests(output, "x.txt")


def test_fabric_busbw_is_rails_times_link_rate() -> None:
    assert fabric_busbw_gbs(8, 400) == 400.0 and fabric_busbw_gbs(8, 200) == 200.0


# ---------------------------------------------------------------------------- ibstat


def test_ibstat_roce_ports_and_a_cut_off_port() -> None:
    ports = parse_ibstat(text("ibstat-mooncake1999-roce-truncated.txt"))
    assert [(p.device, p.port, p.active, p.rate_gbps, p.link_layer) for p in ports] == [
        ("mlx5_0", 1, True, 200.0, "Ethernet"), ("mlx5_1", 1, True, 200.0, "Ethernet"),
        ("mlx5_10", 1, False, None, None)]


def test_ibstat_two_ports_of_one_ca() -> None:
    ports = parse_ibstat(text("ibstat-rdmacore847-mlx4-two-ports.txt"))
    assert [(p.port, p.state, p.physical_state, p.rate_gbps) for p in ports] == [
        (1, "Down", "Disabled", 10.0), (2, "Active", "LinkUp", 56.0)]


def test_ibstat_ignores_ibpanic_and_elided_fields() -> None:
    (p,) = parse_ibstat(text("ibstat-gpud752-ibpanic.txt"))
    assert (p.device, p.active, p.rate_gbps, p.link_layer) == ("mlx5_7", True, 200.0,
                                                               "InfiniBand")


def test_ibstat_of_another_tool_is_refused() -> None:
    with pytest.raises(RdmaInputError, match="ibstat"):
        parse_ibstat(text("perfquery-x-infinibanddiags16.txt"))


# ---------------------------------------------------------------------------- counters


def test_perfquery_extended_named_as_sysfs() -> None:
    c = parse_perfquery(text("perfquery-x-infinibanddiags16.txt"), device="mlx5_0")
    assert (c.device, c.port) == ("mlx5_0", 1)
    assert c.counters["symbol_error"] == 0 and c.counters["port_xmit_wait"] == 0
    assert set(c.counters) >= {"link_downed", "link_error_recovery", "port_rcv_errors",
                               "port_xmit_discards", "port_rcv_remote_physical_errors"}


def test_perfquery_refuses_a_non_count_and_other_tools() -> None:
    with pytest.raises(RdmaInputError, match=":2: SymbolErrorCounter is 'many'"):
        parse_perfquery("PortSelect:......1\nSymbolErrorCounter:....many\n", "pq.txt")
    with pytest.raises(RdmaInputError, match="no perfquery counters"):
        parse_perfquery(text("ibstat-gpud752-ibpanic.txt"))


def test_sysfs_counters_all_ports_in_one_file() -> None:
    out = ("/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error:12\n"
           "/sys/class/infiniband/mlx5_0/ports/1/counters/link_downed:3\n"
           "/sys/class/infiniband/mlx5_1/ports/1/hw_counters/np_cnp_sent:77\n")
    got = {(c.device, c.port): c.counters for c in parse_sysfs_counters(out)}
    assert got == {("mlx5_0", 1): {"symbol_error": 12, "link_downed": 3},
                   ("mlx5_1", 1): {"np_cnp_sent": 77}}
    with pytest.raises(RdmaInputError, match=r":1: .* is not '/sys/class/infiniband"):
        parse_sysfs_counters("symbol_error 12\n", "c.txt")


def test_ethtool_stats_and_priorities() -> None:
    stats = parse_ethtool_stats(text("ethtool-S-ethq8-mlx5-head.txt"))
    assert stats["rx_bytes"] == 2195783498134 and "rx_pause_ctrl_phy" not in stats
    assert prio_sum(stats, "rx_prio{}_pause") is None
    assert prio_sum({"rx_prio3_pause": 5, "rx_prio4_pause": 2}, "rx_prio{}_pause") == 7
    with pytest.raises(RdmaInputError, match="NIC statistics"):
        parse_ethtool_stats(text("ibstat-gpud752-ibpanic.txt"))
