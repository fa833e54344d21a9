"""``aiplat node …`` through click's runner: formats, exit codes, errors on stderr."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import yaml
from click.testing import CliRunner, Result

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from aiplat.cli.node import node
from aiplat.errors import AiplatError
from aiplat.node.baseline import Baseline
from fixtures.nodes import hgx_h100, l40s_4
from fixtures.nvsmi_outputs import nvlink_status, smi_xml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SPEC = str(FIXTURES / "platform-nodes.yaml")
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "src/aiplat/node/schema"
                     / "node-inventory-v1.schema.json").read_text())


def _run(args: list[str]) -> tuple[int, Result]:
    """Exit code as ``aiplat``'s main() maps it (AiplatError -> its exit_code)."""
    r = CliRunner().invoke(node, args)
    if isinstance(r.exception, AiplatError):
        return r.exception.exit_code, r
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r


def _hgx(tmp: Path, degraded: bool = False) -> list[str]:
    root = hgx_h100(tmp / "root", degraded=degraded)
    (tmp / "smi.xml").write_text(smi_xml())
    (tmp / "nvl.txt").write_text(nvlink_status())
    return ["--root", str(root), "--from", f"smi-xml={tmp / 'smi.xml'}",
            "--from", f"nvlink={tmp / 'nvl.txt'}"]


def test_inventory_formats(tmp_path: Path) -> None:
    args = _hgx(tmp_path)
    code, r = _run(["inventory", *args, "-o", "json"])
    assert code == 0
    data = json.loads(r.stdout)
    jsonschema.validate(data, SCHEMA)
    assert data["schemaVersion"] == "aiplat.io/node-inventory/v1"
    code, r = _run(["inventory", *args, "-o", "yaml"])
    assert code == 0 and yaml.safe_load(r.stdout)["host"]["hostname"] == "hgx-h100-01"
    code, r = _run(["inventory", *args])
    assert code == 0
    for text in ("GPU placement", "mlx5_7", "topologyManagerPolicy=restricted",
                 "NCCL_IB_HCA=mlx5_0:1", "580.95.05 (open)"):
        assert text in r.stdout
    code, r = _run(["inventory", "--schema"])
    assert code == 0 and json.loads(r.stdout) == SCHEMA


def test_placement_command(tmp_path: Path) -> None:
    code, r = _run(["placement", "--root", str(l40s_4(tmp_path)), "-o", "json"])
    assert code == 0  # warnings only
    assert json.loads(r.stdout)["labels"]["node.aiplat.io/gpu-numa-aligned"] == "false"
    code, r = _run(["placement", "--root", str(hgx_h100(tmp_path / "d", degraded=True))])
    assert code == 1  # an error finding, in aiplat's one finding line: the check that made it
    assert ("error: [pcie-width-degraded] GPU3 0000:5e:00.0: link trained at x8, capable of "
            "x16 (fix: reseat") in r.stdout


def test_check_exit_codes_and_matrix(tmp_path: Path) -> None:
    clean = _hgx(tmp_path / "clean")
    code, r = _run(["check", *clean, SPEC, "--pool", "h100", "--matrix"])
    assert code == 0, r.stdout
    assert "matches approved entry 'r580-k8s134'" in r.stdout and "overall: pass" in r.stdout
    code, r = _run(["check", *_hgx(tmp_path / "bad", degraded=True), "--spec", SPEC,
                    "--pool", "h100", "-o", "json"])
    assert code == 1
    data = json.loads(r.stdout)
    assert data["status"] == "fail"
    assert [x["subject"] for x in data["results"] if x["status"] == "fail"] == [
        "gpu 0000:5e:00.0", "mlx5_5/1"]
    assert data["nodeCondition"]["type"] == "AiplatNodeHealthy"
    assert data["nodeCondition"]["status"] == "False"
    assert data["nodeTaints"] == [{"key": "node.aiplat.io/unhealthy", "value": "checks-failed",
                                    "effect": "NoSchedule"}]
    code, r = _run(["check", *clean, SPEC, "--pool", "h100", "--matrix",
                    "--observed", "kueue=0.18.0", "-o", "json"])
    assert code == 1 and json.loads(r.stdout)["matrix"]["closest"] == "r580-k8s134"


def test_check_image_config(tmp_path: Path) -> None:
    img = tmp_path / "config.json"
    img.write_text(json.dumps({"config": {"Env": ["CUDA_VERSION=13.1.0"]}}))
    code, r = _run(["check", "--root", str(l40s_4(tmp_path / "l")), "--image-config", str(img),
                    "--only", "gpu-count"])
    assert code == 1 and "needs driver >= 580" in r.stdout


def test_bad_input_exits_2_with_the_fix(tmp_path: Path) -> None:
    code, r = _run(["check", "--matrix"])
    assert code == 2 and "--matrix needs SPEC" in str(r.exception)
    code, r = _run(["check", SPEC, "--pool", "nope"])
    assert code == 2 and "use one of h100, l40s, mi300x" in str(r.exception)
    code, r = _run(["inventory", "--from", "smi=x"])
    assert code == 2 and "KIND=FILE" in str(r.exception)
    bad = tmp_path / "img.json"
    bad.write_text("{not json")
    code, r = _run(["check", "--image-config", str(bad), "--only", "gpu-count"])
    assert code == 2 and "img.json:1:2: not JSON" in str(r.exception)
    code, r = _run(["check", "--only", "nope"])
    assert code == 2


def test_prepare_writes_the_script_atomically(tmp_path: Path) -> None:
    out = tmp_path / "prepare-h100.sh"
    code, r = _run(["prepare", SPEC, "--pool", "h100", "--dry-run", "-w", str(out)])
    assert code == 0 and r.stdout == out.read_text()
    assert oct(out.stat().st_mode & 0o777) == "0o755"
    assert [p.name for p in tmp_path.iterdir()] == ["prepare-h100.sh"]


def test_failed_check_names_the_last_good_baseline(tmp_path: Path) -> None:
    base = Baseline(recorded_at="2026-10-01T08:00:00Z", matrix_entry="r580-k8s134", runs=5,
                    scale=1.0, metrics={}, fingerprint={
                        "hostname": "hgx-h100-01", "kernel": "6.8.0-40-generic",
                        "nvidia_driver": "580.82.07", "gpus": 8})
    good = tmp_path / "accepted.json"
    good.write_text(base.dump_json())
    code, r = _run(["check", *_hgx(tmp_path / "bad", degraded=True), "--baseline", str(good)])
    assert code == 1
    assert f"rollback: last good state: {good}, recorded 2026-10-01T08:00:00Z" in r.stdout
    assert "matrix entry 'r580-k8s134'" in r.stdout
    assert "kernel changed 6.8.0-40-generic -> 6.8.0-49-generic" in r.stdout
    assert "reinstall 580.82.07" in r.stdout
    code, r = _run(["check", *_hgx(tmp_path / "ok"), "--baseline", str(good), "-o", "json"])
    assert code == 0 and "rollback" not in json.loads(r.stdout)

