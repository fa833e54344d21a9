"""Every FGD figure says which variant produced it: ``sim fgd``, ``sim compare`` and the
report's sections."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from aiplat.cli.sim import sim
from aiplat.errors import InputError
from aiplat.report.sim_doc import fgd_section
from aiplat.sched.cluster import Node, Request
from aiplat.sched.fgd import FgdOptions, fgd_table


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    (tmp_path / "openb_node_list_all_node.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\nn1,32000,65536,4,V100\n"
        "c0,96000,262144,0,\n")
    (tmp_path / "openb_pod_list_default.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
        "p0,1000,1024,1,500,\np1,2000,1024,1,1000,V100\np2,1000,1024,2,1000,\n"
        "p3,4000,1024,0,0,\n")
    return tmp_path


def _fgd(tiny: Path, *args: str) -> dict[str, object]:
    r = CliRunner().invoke(sim, ["fgd", "--data", str(tiny), "--seeds", "2", "-o", "json",
                                 *args])
    assert r.exit_code == 0, r.output
    out: dict[str, object] = json.loads(r.stdout)
    return out


def test_sim_fgd_names_its_variant(tiny: Path) -> None:
    assert _fgd(tiny)["variant"] == "published"
    assert _fgd(tiny, "--ties", "random", "--nodes", "all")["variant"] == \
        "published (ties=random, nodes=all)"
    got = _fgd(tiny, "--variant", "aiplat", "--policy", "least-allocated")
    assert got["variant"] == "aiplat"
    assert got["gpus"] == 6


def test_sim_fgd_table_title_names_the_variant(tiny: Path) -> None:
    r = CliRunner().invoke(sim, ["fgd", "--data", str(tiny), "--seeds", "1", "--fgd-score",
                                 "exact"])
    assert r.exit_code == 0, r.output
    assert "variant published (fgd-score=exact)" in r.stdout


def test_kubernetes_policies_are_not_in_the_published_simulator(tiny: Path) -> None:
    r = CliRunner().invoke(sim, ["fgd", "--data", str(tiny), "--policy", "most-allocated"])
    assert isinstance(r.exception, InputError)
    assert "--variant aiplat" in str(r.exception)


def test_sim_compare_names_the_engine_variant() -> None:
    r = CliRunner().invoke(sim, ["compare", "--policy", "fgd", "-o", "json"])
    assert r.exit_code == 0, r.output
    assert [row["variant"] for row in json.loads(r.stdout)] == ["aiplat"]
    r = CliRunner().invoke(sim, ["compare", "--policy", "fgd"])
    assert "placement variant aiplat" in r.stdout


def test_report_section_carries_the_variant() -> None:
    nodes = [Node("n0", 32_000, 65_536, 2, "T4"), Node("n1", 32_000, 65_536, 2, "T4")]
    reqs = {"t": [Request(1000, 1024, 1, 500), Request(1000, 1024, 1, 1000)]}
    table = fgd_table(nodes, reqs, ["bestfit", "fgd"], [42], options=FgdOptions(ties="random"))
    sec = fgd_section(table)
    assert "variant published (ties=random)" in sec.title
    assert sec.tables[0].columns == ["policy", "t"]
    assert [row[0] for row in sec.tables[0].rows] == ["bestfit", "fgd"]
