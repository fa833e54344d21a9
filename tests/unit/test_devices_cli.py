"""The device commands end to end through `aiplat.cli.main.main`: output and exit codes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
import yaml

from aiplat.cli.devices import accounting_group, cdi_group, runtime_group, sharing_group
from aiplat.cli.main import cli, main

DATA = Path(__file__).parents[1] / "data" / "cdi"
GOLDEN = Path(__file__).parents[1] / "golden" / "runtime"
EXAMPLE = str(resources.files("aiplat") / "examples" / "platform.yaml")


@pytest.fixture(autouse=True)
def commands() -> Iterator[None]:
    groups = (cdi_group, runtime_group, sharing_group, accounting_group)
    added = [g for g in groups if g.name not in cli.commands]
    for g in added:
        cli.add_command(g)
    yield
    for g in added:
        cli.commands.pop(str(g.name), None)


def run(args: list[str]) -> int:
    try:
        return int(main(args))
    except SystemExit as e:
        return int(e.code or 0)


def test_validate_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["cdi", "validate", "--no-host", str(DATA / "good")]) == 0
    assert "4 file(s) valid" in capsys.readouterr().out
    assert run(["cdi", "validate", "--no-host", str(DATA / "bad" / "leak.json")]) == 1
    out = capsys.readouterr().out
    assert "leak.json" in out and "belongs to device '1'" in out
    # a writable bind of a host driver library is an escape (root on the host loads it)
    assert run(["cdi", "validate", "--no-host", str(DATA / "bad" / "mount-writable.json")]) == 1
    capsys.readouterr()
    dup = [str(DATA / "bad" / "dup-dirs" / "etc"), str(DATA / "bad" / "dup-dirs" / "run")]
    assert run(["cdi", "validate", "--no-host", "-o", "json", *dup]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["findings"] and {f["severity"] for f in data["findings"]} == {"warning"}
    assert run(["cdi", "validate", "--no-host", "--strict", *dup]) == 1  # warnings fail too
    assert run(["cdi", "validate", "/nonexistent.json"]) == 2
    broken = DATA / "bad" / "not-json.json"
    assert not broken.exists()


def test_generate_without_devices_is_input_error(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path) -> None:
    assert run(["cdi", "generate", "--root", str(tmp_path)]) == 2
    assert "no devices found" in capsys.readouterr().err
    assert run(["cdi", "generate", "--char", "bad kind=0:/dev/null"]) == 2
    bad = tmp_path / "inv.json"
    bad.write_text("{not json")
    assert run(["cdi", "generate", "--inventory", str(bad)]) == 2
    assert "inv.json:1:2: not JSON" in capsys.readouterr().err


def test_runtime_config_diff_and_write(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text((GOLDEN / "containerd-1.7.input.toml").read_text())
    assert run(["runtime", "config", "containerd", "--current", str(cfg),
                "--version", "1.7.12"]) == 0
    out = capsys.readouterr().out
    assert "+    enable_cdi = true" in out and "+    disable = false" in out
    assert run(["runtime", "config", "containerd", "--current", str(cfg), "--version",
                "1.7.12", "--write"]) == 0
    assert cfg.read_text() == (GOLDEN / "containerd-1.7.expected.toml").read_text()
    assert cfg.stat().st_mode & 0o777 == 0o644
    capsys.readouterr()
    assert run(["runtime", "config", "containerd", "--current", str(cfg),
                "--version", "1.7.12"]) == 0
    assert "no change needed" in capsys.readouterr().out
    assert run(["runtime", "config", "containerd", "--current", str(cfg),
                "--version", "1.6.9"]) == 2
    assert "containerd >= 1.7" in capsys.readouterr().err
    assert run(["runtime", "config", "podman", "--current", str(cfg), "--version", "4.0.0"]
               ) == 2


def test_sharing_plan_outputs(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["sharing", "plan", "--gpu", "H100-SXM-80GB", "--demand", "1g.10gb=10",
                "--demand", "3g.40gb=2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("3 × H100-SXM-80GB (lower bound 3)")
    assert "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4" in out
    assert run(["sharing", "plan", "--gpu", "H100-SXM-80GB", "--demand", "7g.80gb=3",
                "--gpus", "2"]) == 1
    assert "needs 3" in capsys.readouterr().err
    assert run(["sharing", "plan", "--gpu", "H100-SXM-80GB", "--demand", "2g.20gb=4",
                "-o", "yaml"]) == 0
    data = yaml.safe_load(capsys.readouterr().out)
    assert data["gpus"] == 2 and data["migManagerConfig"]["version"] == "v1"
    assert run(["sharing", "plan", "--gpu", "H100-SXM-80GB", "--demand", "team-a:1g.10gb=10",
                "--demand", "team-b:3g.40gb=2"]) == 0
    out = capsys.readouterr().out
    assert "tenant team-a: 10 instances on 3 GPU(s)" in out
    assert "tenant team-b: 2 instances on 2 GPU(s)" in out
    assert run(["sharing", "plan", "--gpu", "H100-SXM-80GB", "--demand", "2g=x"]) == 2
    assert run(["sharing", "plan", "--gpu", "no-such-gpu", "--demand", "1g.10gb=1"]) == 2


def test_sharing_config_compare_strategies(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["sharing", "config", "time-slicing", "--replicas", "4"]) == 0
    cfg = yaml.safe_load(capsys.readouterr().out)
    assert cfg["sharing"]["timeSlicing"]["failRequestsGreaterThanOne"] is True
    assert run(["sharing", "config", "mps", "--target", "dra", "--replicas", "4"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["sharing"]["strategy"] == "MPS"
    assert run(["sharing", "config", "mps", "--replicas", "1"]) == 2
    assert run(["sharing", "compare", EXAMPLE]) == 0
    assert "recommended for pool" in capsys.readouterr().out
    assert run(["sharing", "strategies", "-o", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 5


def test_accounting_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "alloc.csv"
    f.write_text("tenant,start,end,count,profile\n"
                 "a,2026-01-01T00:00:00Z,2026-01-01T02:00:00Z,2,\n"
                 "b,2026-01-01T00:00:00Z,2026-01-01T07:00:00Z,1,1g.10gb\n")
    assert run(["accounting", "report", str(f), "-o", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "tenant,allocations,gpu_hours,slice_hours,weighted_gpu_hours",
        "a,1,4.0,0.0,4.0", "b,1,0.0,7.0,1.0"]
    f.write_text("tenant,start,end,count\na,yesterday,2026-01-01T00:00:00Z,1\n")
    assert run(["accounting", "report", str(f)]) == 2
    assert "not an ISO 8601 time" in capsys.readouterr().err


def test_validate_dir_reports_every_file_past_an_unparsable_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.yaml").write_text("cdiVersion: [\n")  # YAML syntax error
    (tmp_path / "b.json").write_text('{"kind": "a.com/b", "devices": []}')
    (tmp_path / "c.yaml").write_text("cdiVersion: 0.3.0\nkind: a.com/b\n"
                                     "devices: [{name: d, containerEdits: {env: [A=1]}}]\n")
    assert run(["cdi", "validate", "--no-host", "-o", "json", str(tmp_path)]) == 1
    found = json.loads(capsys.readouterr().out)["findings"]
    files = {Path(f["file"]).name for f in found}
    assert files == {"a.yaml", "b.json"}
    assert {f["field"] for f in found if f["file"].endswith("b.json")} >= {"cdiVersion",
                                                                          "devices"}
    assert all(f["check"] == "spec" for f in found)


def test_generate_warns_when_the_target_runtime_cannot_load_the_version(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lib = tmp_path / "lib.so"
    lib.write_text("")
    # a device named with a leading digit needs cdiVersion 0.5.0 (specs-go requiresV050)
    dev = "/dev/null"
    args = ["cdi", "generate", "--char", f"example.com/x=0:{dev}", "--mount", str(lib),
            "-o", "json"]
    assert run([*args, "--target-runtime", "podman:4.2.0", "--target-runtime",
                "podman:4.3.0"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["cdiVersion"] == "0.5.0"
    warned = [ln for ln in out.err.splitlines() if ln.startswith("warning: example.com/x")]
    assert len(warned) == 1 and "podman 4.2.0" in warned[0] and "v0.4.0" in warned[0]
    assert run([*args, "--target-runtime", "podman"]) == 2
