"""``aiplat diagnose rdma``: RDMA causes ranked from recorded outputs (issue #44 item 5).

The rules run on published outputs (tests/data/rdma) and on the ``rdma-fabric`` sample, a
constructed four-node recording with five planted faults. What these cannot show: a real
fabric's noise (counters that creep on healthy links, perftest's run-to-run spread); the
thresholds are relative to peers for that reason, and each test states the margin it uses.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiplat.cli.lab import diagnose
from aiplat.cli.main import main
from aiplat.errors import InputError
from aiplat.netdiag.collective import parse_nccl_tests
from aiplat.netdiag.rdma import BwRow, IbPort, PerftestResult, parse_perftest
from aiplat.netdiag.rdma_diagnose import NodeRecord, diagnose_rdma
from aiplat.netdiag.rdma_folder import read_folder
from aiplat.samples import get

DATA = Path(__file__).parents[1] / "data" / "rdma"


@pytest.fixture
def fabric(tmp_path: Path) -> Path:
    return get("rdma-fabric", tmp_path / "rdma")


def kinds(d: object) -> set[tuple[str, str | None, str | None]]:
    return {(c.kind, c.node, c.port) for c in d.causes}  # type: ignore[attr-defined]


def port(device: str, rate: float = 400, active: bool = True) -> IbPort:
    return IbPort(device, 1, "Active" if active else "Down",
                  "LinkUp" if active else "Polling", rate if active else None, "InfiniBand")


# ---------------------------------------------------------------------------- the sample


def test_each_planted_fault_and_nothing_else(fabric: Path) -> None:
    nodes, runs, notes = read_folder(fabric)
    assert notes == []
    d = diagnose_rdma(nodes, None, runs)
    assert kinds(d) == {
        ("pfc-storm", "gpu-1", "ens1f0np0"), ("link-flap", "gpu-3", "mlx5_5/1"),
        ("bad-cable", "gpu-3", "mlx5_5/1"), ("slow-rail", "gpu-2", "mlx5_3"),
        ("degraded-rate", "gpu-4", "mlx5_6/1"), ("nccl-below-fabric", None, None)}
    assert [c.score for c in d.causes] == sorted((c.score for c in d.causes), reverse=True)
    for c in d.causes:
        assert c.evidence and c.fix


def test_the_same_recording_before_and_after_has_no_counter_cause(fabric: Path) -> None:
    # Link-downs and symbol errors that did not move between the recordings are history.
    nodes, runs, _ = read_folder(fabric)
    d = diagnose_rdma(nodes, read_folder(fabric)[0], runs)
    assert {k for k, _n, _p in kinds(d)} == {"slow-rail", "degraded-rate",
                                             "nccl-below-fabric"}
    assert "between the recordings" not in " ".join(d.notes)


def test_a_counter_that_rose_between_recordings_is_named(fabric: Path, tmp_path: Path) -> None:
    before = tmp_path / "before"
    shutil.copytree(fabric, before)
    f = before / "gpu-3" / "ib-counters.txt"
    f.write_text(f.read_text().replace("mlx5_5/ports/1/counters/link_downed:3",
                                       "mlx5_5/ports/1/counters/link_downed:2"))
    d = diagnose_rdma(read_folder(fabric)[0], read_folder(before)[0])
    (flap,) = [c for c in d.causes if c.kind == "link-flap"]
    assert flap.summary.endswith("went down 1 time(s) between the recordings")


def test_a_cleared_counter_is_a_note_and_its_new_value_counts(fabric: Path,
                                                              tmp_path: Path) -> None:
    before = tmp_path / "before"
    shutil.copytree(fabric, before)
    f = before / "gpu-3" / "ib-counters.txt"
    f.write_text(f.read_text().replace("mlx5_5/ports/1/counters/link_downed:3",
                                       "mlx5_5/ports/1/counters/link_downed:9"))
    d = diagnose_rdma(read_folder(fabric)[0], read_folder(before)[0])
    assert any("link_downed went from 9 to 3 (cleared" in n for n in d.notes)
    assert ("link-flap", "gpu-3", "mlx5_5/1") in kinds(d)


# ---------------------------------------------------------------------------- rules


def test_a_port_down_on_one_node_but_up_on_its_peers_is_a_rail_down() -> None:
    nodes = [NodeRecord(f"n{i}", ports=[port("mlx5_0"), port("mlx5_1", active=i != 2)])
             for i in range(4)]
    assert kinds(diagnose_rdma(nodes)) == {("rail-down", "n2", "mlx5_1/1")}


def test_a_port_disabled_everywhere_is_not_blamed() -> None:
    # ibstat of the Mooncake host: mlx5_10 Down/Disabled; on every node it is not a fault.
    nodes = [NodeRecord(f"n{i}", ports=[port("mlx5_0"), port("mlx5_10", active=False)])
             for i in range(3)]
    assert diagnose_rdma(nodes).causes == []


def test_slow_rail_against_its_link_rate_when_it_has_no_peers() -> None:
    r = PerftestResult("RDMA_Write BW Test", "mlx5_0", "IB", "Gb/sec",
                       bw=(BwRow(65536, 5000, 47.1, 46.5, 0.088),))
    # 46.5 Gb/s at 64 KiB: slow on a 100 Gb/s port (below 60 %), healthy on a 56 Gb/s one.
    slow = NodeRecord("a", ports=[IbPort("mlx5_0", 1, "Active", "LinkUp", 100, "Ethernet")],
                      perftest=[("a/x.txt", r)])
    (cause,) = diagnose_rdma([slow]).causes
    assert (cause.kind, cause.port) == ("slow-rail", "mlx5_0")
    assert cause.summary == "mlx5_0 on a: 46.5 Gb/s against its 100 Gb/s link"
    fine = NodeRecord("a", ports=[IbPort("mlx5_0", 1, "Active", "LinkUp", 56, "Ethernet")],
                      perftest=slow.perftest)
    assert diagnose_rdma([fine]).causes == []


def test_outliers_need_peers_and_a_floor() -> None:
    quiet = {"np_cnp_sent": 5}
    nodes = [NodeRecord(f"n{i}", counters={"mlx5_0/1": dict(quiet)}) for i in range(3)]
    nodes[0].counters["mlx5_0/1"]["np_cnp_sent"] = 900  # 180x, but fewer than 1,000
    assert diagnose_rdma(nodes).causes == []
    nodes[0].counters["mlx5_0/1"]["np_cnp_sent"] = 90_000
    assert kinds(diagnose_rdma(nodes)) == {("congestion", "n0", "mlx5_0/1")}
    alone = [NodeRecord("n0", counters={"mlx5_0/1": {"np_cnp_sent": 90_000}})]
    assert diagnose_rdma(alone).causes == []


def test_lossless_drops_and_ignored_cnps_on_a_roce_port() -> None:
    n = NodeRecord("n", ethtool={"eth2": {"rx_discards_phy": 0, "rx_prio3_buf_discard": 41,
                                          "rp_cnp_ignored": 7}})
    assert kinds(diagnose_rdma([n])) == {("lossless-drops", "n", "eth2"),
                                         ("cnp-ignored", "n", "eth2")}


# ---------------------------------------------------------------------------- nccl-tests


def a3mega() -> tuple[str, object]:
    name = "nccl-a3mega-all-reduce-2x8-h100.txt"
    return name, parse_nccl_tests((DATA / name).read_text())


@pytest.mark.parametrize(("link_gbps", "below"), [(200, False), (400, False), (800, True)])
def test_published_two_host_run_against_the_rails(link_gbps: int, below: bool) -> None:
    # 338.8 GB/s busbw at 8 GiB: above 8 x 200 and 8 x 400 Gb/s rings (0.7 x 400 = 280),
    # below 0.7 x 8 x 800 Gb/s = 560.
    d = diagnose_rdma([], nccl=[a3mega()], rails=8, link_gbps=link_gbps)  # type: ignore[list-item]
    assert (("nccl-below-fabric", None, None) in kinds(d)) is below


def test_a_run_without_its_hosts_rates_is_not_judged() -> None:
    d = diagnose_rdma([], nccl=[a3mega()])  # type: ignore[list-item]
    assert d.causes == [] and any("bus bandwidth not judged" in n for n in d.notes)


def test_a_one_host_run_is_nvlink_bound_and_not_judged() -> None:
    name = "nccl-coreweave-pr43-all-reduce-nvl72.txt"
    d = diagnose_rdma([], nccl=[(name, parse_nccl_tests((DATA / name).read_text()))],
                      rails=8, link_gbps=400)
    assert d.causes == [] and any("one host" in n for n in d.notes)


def test_wrong_results_are_named() -> None:
    text = (DATA / "nccl-a3mega-all-reduce-2x8-h100.txt").read_text().replace(
        "180.71  338.82      0", "180.71  338.82      3")
    d = diagnose_rdma([], nccl=[("x.txt", parse_nccl_tests(text))], rails=8, link_gbps=200)
    assert kinds(d) == {("nccl-wrong-results", None, None)}


# ---------------------------------------------------------------------------- CLI


def test_cli_table_json_and_exit_codes(fabric: Path) -> None:
    r = CliRunner().invoke(diagnose, ["rdma", str(fabric)])
    assert r.exit_code == 1, r.output
    assert "diagnose rdma — 6 candidate cause(s), 4 node(s)" in r.stdout
    assert "fix: " in r.stdout and "note: counters are totals" in r.stderr
    j = CliRunner().invoke(diagnose, ["rdma", str(fabric), "-o", "json"])
    data = json.loads(j.stdout)
    assert j.exit_code == 1 and data["nodes"] == ["gpu-1", "gpu-2", "gpu-3", "gpu-4"]
    assert {c["kind"] for c in data["causes"]} >= {"slow-rail", "pfc-storm", "link-flap"}


def test_cli_healthy_recording_exits_0(tmp_path: Path) -> None:
    n = tmp_path / "rec" / "n1"
    n.mkdir(parents=True)
    shutil.copy(DATA / "ibstat-gpud752-ibpanic.txt", n / "ibstat.txt")
    shutil.copy(DATA / "perfquery-x-infinibanddiags16.txt", n / "perfquery-mlx5_7-1.txt")
    r = CliRunner().invoke(diagnose, ["rdma", str(tmp_path / "rec")])
    assert r.exit_code == 0, r.output
    assert "no finding in the recorded outputs" in r.stdout


@pytest.mark.parametrize(("name", "fixture", "says"), [
    ("ibstat.txt", "perfquery-x-infinibanddiags16.txt", "ibstat.txt: no \"CA '<name>'\""),
    ("ib_write_bw-mlx5_0.txt", "perftest-issue234-write-bw-truncated.txt",
     "ib_write_bw-mlx5_0.txt:26: row"),
    ("ethtool-S-eth0.txt", "ibstat-gpud752-ibpanic.txt", "ethtool-S-eth0.txt:1: not 'ethtool"),
    ("nccl-run.txt", "perftest-issue273-write-bw-roce-gbits.txt", "no nccl-tests table"),
])
def test_cli_a_file_that_is_not_its_tool_is_exit_2(tmp_path: Path, name: str, fixture: str,
                                                   says: str) -> None:
    n = tmp_path / "rec" / "n1"
    n.mkdir(parents=True)
    shutil.copy(DATA / fixture, n / name)
    r = CliRunner().invoke(diagnose, ["rdma", str(tmp_path / "rec")])
    assert isinstance(r.exception, InputError) and r.exception.exit_code == 2
    assert says in str(r.exception) and "fix:" in str(r.exception)


def test_through_main_a_bad_file_is_exit_2_with_one_line_and_no_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    n = tmp_path / "rec" / "n1"
    n.mkdir(parents=True)
    shutil.copy(DATA / "perftest-constructed-kbsec-unit.txt", n / "ib_read_bw-mlx5_2.txt")
    assert main(["diagnose", "rdma", str(tmp_path / "rec")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "ib_read_bw-mlx5_2.txt:4: bandwidth unit 'Kb/sec'" in err
    assert "--report_gbits" in err


def test_cli_unread_files_are_notes_and_an_empty_folder_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    r = CliRunner().invoke(diagnose, ["rdma", str(tmp_path / "empty")])
    assert isinstance(r.exception, InputError) and "no node folder" in str(r.exception)
    n = tmp_path / "rec" / "n1"
    n.mkdir(parents=True)
    (n / "notes.md").write_text("hello")
    r = CliRunner().invoke(diagnose, ["rdma", str(tmp_path / "rec")])
    assert r.exit_code == 0 and "notes.md: not a name aiplat reads" in r.stderr


def test_cli_the_plain_diagnose_still_needs_a_lab_or_prometheus() -> None:
    r = CliRunner().invoke(diagnose, [])
    assert isinstance(r.exception, InputError) and r.exception.exit_code == 2


# ---------------------------------------------------------------------------- fuzz

SLOTS = ("ibstat.txt", "ib-counters.txt", "perfquery-mlx5_0-1.txt", "ethtool-S-eth0.txt",
         "ib_write_bw-mlx5_0.txt", "ib_read_lat.txt", "nccl-run.txt")
_REAL = [p.read_bytes() for p in sorted(DATA.glob("*.txt"))]


def _mangled(draw_bytes: bytes, cut: int, which: int) -> bytes:
    """A real output cut at ``cut``, with random bytes spliced in there."""
    real = _REAL[which % len(_REAL)]
    at = cut % (len(real) + 1)
    return real[:at] + draw_bytes + real[at:at + 200]


@given(slot=st.sampled_from(SLOTS), junk=st.binary(max_size=64),
       cut=st.integers(0, 10_000), which=st.integers(0, 100))
@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_mangled_recording_is_read_or_refused_never_a_traceback(
        tmp_path_factory: pytest.TempPathFactory, slot: str, junk: bytes, cut: int,
        which: int) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    (root / "n1").mkdir()
    (root / "n1" / slot).write_bytes(_mangled(junk, cut, which))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["diagnose", "rdma", str(root)])
    assert code in (0, 1, 2) and "Traceback" not in err.getvalue()
    if code == 2:
        assert str(root / "n1" / slot) in err.getvalue() or "UTF-8" in err.getvalue()


def test_a_small_message_run_is_not_held_to_the_link_rate() -> None:
    # perftest issue 273: 8-byte writes at 0.48 Gb/s are message-rate bound, not a slow rail.
    r = parse_perftest((DATA / "perftest-issue273-write-bw-roce-gbits.txt").read_text())
    n = NodeRecord("a", ports=[IbPort("ib0", 1, "Active", "LinkUp", 100, "Ethernet")],
                   perftest=[("a/ib_write_bw.txt", r)])
    assert r.device == "ib0" and diagnose_rdma([n]).causes == []
