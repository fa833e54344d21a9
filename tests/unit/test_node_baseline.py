"""Baseline compare (pure), a real record/compare on this machine, and a run made slower on
purpose: the same probes pinned to one CPU shared with busy competitors must be flagged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from aiplat.errors import InputError
from aiplat.node.baseline import Baseline, Metric, compare, load_baseline, record

CPU_METRICS = ["cpu.sha256", "cpu.matmul"]
NODE_CLI = [sys.executable, "-c",
            "import sys; from aiplat.cli.node import node; node(sys.argv[1:], 'aiplat node')"]


def _b(medians: dict[str, float], mad: float = 0.0, **fp: str) -> Baseline:
    return Baseline(recorded_at="2026-11-29T12:00:00Z",
                    fingerprint={"kernel": "6.8.0", "nvidia_driver": "580.95.05", **fp},
                    matrix_entry="r580-k8s134", runs=3, scale=1.0,
                    metrics={k: Metric(unit="MiB/s", samples=[v], median=v, mad=mad * v)
                             for k, v in medians.items()})


def test_compare_flags_only_real_regressions() -> None:
    base = _b({"cpu.sha256": 1000, "disk.read": 500})
    same = compare(base, _b({"cpu.sha256": 960, "disk.read": 520}), 0.10)
    assert same.status == "pass" and same.rollback == []
    slow = compare(base, _b({"cpu.sha256": 850, "disk.read": 520}, kernel="6.8.1"), 0.10)
    assert slow.status == "fail"
    assert [(m.name, m.status) for m in slow.metrics] == [("cpu.sha256", "fail"),
                                                          ("disk.read", "pass")]
    assert slow.changed == {"kernel": ("6.8.0", "6.8.1")}
    assert "matrix entry 'r580-k8s134'" in slow.rollback[0]
    assert any("boot the previous kernel" in s for s in slow.rollback)
    missing = compare(base, _b({"cpu.sha256": 1000}), 0.10)
    assert [m.status for m in missing.metrics] == ["pass", "missing"]


def test_noisy_baselines_widen_the_threshold_up_to_a_cap() -> None:
    noisy = _b({"cpu.sha256": 1000}, mad=0.05)  # robust spread 7.4%: 3x = 22%
    r = compare(noisy, _b({"cpu.sha256": 800}), 0.10)
    assert r.status == "pass" and r.metrics[0].threshold == pytest.approx(0.2224, abs=1e-3)
    very = _b({"cpu.sha256": 1000}, mad=0.3)
    r = compare(very, _b({"cpu.sha256": 400}), 0.10)
    assert r.status == "fail" and r.metrics[0].noisy and r.metrics[0].threshold == 0.5


def test_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--runs"):
        record(runs=0)
    with pytest.raises(InputError, match="unknown metric"):
        record(only=["cpu.magic"])
    (tmp_path / "b.json").write_text('{"schema_version": "other"}')
    with pytest.raises(InputError, match="not an aiplat baseline"):
        load_baseline(tmp_path / "b.json")
    with pytest.raises(InputError, match="cannot read"):
        load_baseline(tmp_path / "none.json")


def test_record_measures_every_host_probe(tmp_path: Path) -> None:
    b = record(runs=2, scale=0.1, directory=tmp_path)
    assert set(b.metrics) == {"cpu.sha256", "cpu.matmul", "memory.copy", "disk.write",
                              "disk.read", "network.loopback"}
    assert all(m.median > 0 and len(m.samples) == 2 for m in b.metrics.values())
    assert set(b.skipped) == {"gpu.h2d", "gpu.bf16_matmul"}  # no torch/GPU here: said so
    assert b.fingerprint["cpusAvailable"] == len(os.sched_getaffinity(0))
    assert list(tmp_path.iterdir()) == []  # the disk probe cleans up


# As root the probes run at nice -20 so that other work on a shared CI machine barely moves
# them; the competitors get the same priority, so they really take 7/8 of the CPU.
NICE = ["nice", "-n", "-20"] if os.geteuid() == 0 else []


@contextmanager
def _competitors(cpu: int, n: int) -> Iterator[None]:
    code = f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"
    procs = [subprocess.Popen([*NICE, sys.executable, "-c", code]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _cli(args: list[str], cpu: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*NICE, "taskset", "-c", str(cpu), *NODE_CLI, *args],
                          capture_output=True,
                          text=True, timeout=300, check=False)


def test_record_then_compare_passes_and_a_cpu_starved_run_is_flagged(tmp_path: Path) -> None:
    cpu = min(os.sched_getaffinity(0))
    out = tmp_path / "baseline.json"
    metric_args = [a for m in CPU_METRICS for a in ("--metric", m)]
    rec = _cli(["baseline", "record", "--runs", "5", "--scale", "1", *metric_args,
                "-w", str(out)], cpu)
    assert rec.returncode == 0, rec.stderr
    assert json.loads(out.read_text())["schemaVersion"] == "aiplat.io/node-baseline/v1"
    # The unchanged node must pass. This VM shares its cores with other tenants (steal time
    # we cannot control), so a burst may spoil one attempt; three failing in a row is a bug.
    for _attempt in range(3):
        same = _cli(["baseline", "compare", str(out), "--runs", "5", "--tolerance", "0.4",
                     "-o", "json"], cpu)
        if same.returncode == 0:
            break
    assert same.returncode == 0, same.stdout + same.stderr
    with _competitors(cpu, 7):  # our probes now get about an eighth of that CPU
        slow = _cli(["baseline", "compare", str(out), "--runs", "5", "--tolerance", "0.4",
                     "-o", "json"], cpu)
    assert slow.returncode == 1, slow.stdout + slow.stderr
    result = json.loads(slow.stdout)
    assert result["status"] == "fail"
    assert {m["name"] for m in result["metrics"] if m["status"] == "fail"} == set(CPU_METRICS)
    assert result["rollback"][0].startswith("last good state:")


OLD = Path(__file__).parents[1] / "fixtures" / "snake_case_files" / "baseline.json"


def test_a_baseline_written_before_camel_case_is_read_as_a_new_one(tmp_path: Path) -> None:
    """Baselines on users' disks from before issue #45 spell fields in snake_case
    (``recorded_at``, ``cpu_model``; fixture written by that version of `node baseline
    record`); they are read, compared and rewritten in camelCase, one spelling in memory."""
    assert '"cpus_available"' in OLD.read_text()  # the fixture is the old spelling
    old = load_baseline(OLD)
    assert old.recorded_at == json.loads(OLD.read_text())["recorded_at"]
    assert old.fingerprint["cpusAvailable"] == 2 and "cpus_available" not in old.fingerprint
    assert set(old.metrics) == {"cpu.sha256", "cpu.matmul"}  # data keys kept
    new = tmp_path / "new.json"
    new.write_text(old.dump_json())
    data = json.loads(new.read_text())
    assert {"schemaVersion", "recordedAt", "matrixEntry"} <= set(data)
    assert "cpuModel" in data["fingerprint"] and "cpu.sha256" in data["metrics"]
    assert "_" not in "".join([*data, *data["fingerprint"]])
    assert load_baseline(new) == old
    # An old baseline against a node measured now: only what changed, not every renamed key.
    now = _b({"cpu.sha256": 1.0}, hostname="vm", cpuModel=str(old.fingerprint["cpuModel"]))
    changed = compare(old, now, 0.1).changed
    assert "cpuModel" not in changed and "cpu_model" not in changed
