"""The thin lab commands without root: dry runs, spec input, errors and exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from aiplat.cli.lab import diagnose, lab, parse_duration
from aiplat.errors import InputError
from aiplat.netdiag.lab_plan import lab_plan
from aiplat.netdiag.model import LabInputError
from aiplat.spec import example_text


@pytest.fixture(autouse=True)
def lab_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIPLAT_LAB_DIR", str(tmp_path / "labs"))


def test_up_dry_run_prints_every_command_and_creates_nothing(tmp_path: Path) -> None:
    r = CliRunner().invoke(lab, ["up", "--dry-run", "--nodes", "2"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == "ip link add alab-mgmt type bridge"
    assert "ip netns add alab-node-2" in lines
    assert any(line.startswith("ip netns exec alab-store docker-registry serve ") for line in lines)
    assert any(line.startswith("prometheus --config.file=") for line in lines)
    assert not (tmp_path / "labs").exists()


def test_plan_from_the_example_spec(tmp_path: Path) -> None:
    spec = tmp_path / "platform.yaml"
    spec.write_text(example_text())
    p = lab_plan(str(spec), None, "alab", None, ())
    assert [(s.name, str(s.cidr), s.mtu) for s in p.segments] == [
        ("mgmt", "10.10.0.0/24", 1500), ("storage", "10.20.0.0/24", 9000),
        ("service", "10.30.0.0/24", 1500), ("hpc", "10.247.3.0/24", 4096)]
    assert len(p.compute) == 3 and p.link_mbit == 1000
    only = lab_plan(str(spec), 2, "alab", 500, ("storage",))
    assert [s.name for s in only.segments] == ["mgmt", "storage"]
    assert only.link_mbit == 500 and len(only.compute) == 2


def test_status_and_faults_need_a_lab() -> None:
    r = CliRunner().invoke(lab, ["status"])
    assert r.exit_code == 1 and "down (no state file)" in r.output
    r = CliRunner().invoke(lab, ["fault", "add", "loss", "--node", "node-1", "--segment", "mgmt"])
    assert isinstance(r.exception, LabInputError) and "not up" in str(r.exception)
    r = CliRunner().invoke(lab, ["down"])
    assert r.exit_code == 0 and "nothing to remove" in r.output
    r = CliRunner().invoke(lab, ["fault", "list", "-o", "json"])
    assert r.exit_code == 0 and r.output.strip() == "[]"


def test_diagnose_without_lab_or_prometheus_is_a_usage_error() -> None:
    r = CliRunner().invoke(diagnose, [])
    assert isinstance(r.exception, InputError) and r.exception.exit_code == 2


def test_parse_duration() -> None:
    assert parse_duration("90s") == 90 and parse_duration("2h") == 7200
    with pytest.raises(InputError, match="not a duration"):
        parse_duration("ten minutes")
