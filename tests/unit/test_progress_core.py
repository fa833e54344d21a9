"""The library side of progress: the plain callbacks each long function calls (no rich), in
order, with counts that end at their total. The bars drawn from them: test_progress_cli."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from aiplat.errors import InputError

Event = tuple[float, float | None, str]


def _recorder() -> tuple[list[Event], object]:
    events: list[Event] = []
    return events, lambda done, total, running: events.append((done, total, running))


def _assert_counts_up(events: list[Event]) -> None:
    """Before each step its done count (0, 1, ...), then ``(total, total, "")``."""
    total = events[-1][1]
    assert events[-1] == (total, total, "")
    assert [e[0] for e in events[:-1]] == list(range(len(events) - 1)) == list(range(total))
    assert all(e[1] == total and e[2] for e in events[:-1])


def test_fgd_table_names_each_experiment_before_it_runs() -> None:
    from aiplat.sched.cluster import Node, Request
    from aiplat.sched.fgd import fgd_table

    nodes = [Node(name=f"n{i}", cpu_milli=32000, memory_mib=65536, gpus=2, model="T4")
             for i in range(2)]
    reqs = [Request(cpu_milli=1000, memory_mib=1024, num_gpu=1, gpu_milli=500)]
    events, cb = _recorder()
    table = fgd_table(nodes, {"default": reqs}, ["bestfit", "fgd"], [42, 43], progress=cb)
    _assert_counts_up(events)
    assert [e[2] for e in events[:-1]] == ["default bestfit seed 42", "default bestfit seed 43",
                                           "default fgd seed 42", "default fgd seed 43"]
    assert set(table["mean"]["default"]) == {"bestfit", "fgd"}


def test_baseline_record_counts_probe_runs() -> None:
    from aiplat.node.baseline import record

    events, cb = _recorder()
    b = record(runs=2, scale=0.02, only=["cpu.sha256", "memory.copy"], progress=cb)
    _assert_counts_up(events)
    assert [e[2] for e in events[:-1]] == ["run 1/2 cpu.sha256", "run 1/2 memory.copy",
                                           "run 2/2 cpu.sha256", "run 2/2 memory.copy"]
    assert set(b.metrics) == {"cpu.sha256", "memory.copy"}


def test_baseline_record_counts_the_disk_probe_once_per_run(tmp_path: Path) -> None:
    from aiplat.node.baseline import record

    events, cb = _recorder()
    record(runs=1, scale=0.01, directory=tmp_path, only=["disk.write", "disk.read"],
           progress=cb)
    assert events == [(0, 1, "run 1/1 disk"), (1, 1, "")]


# ----------------------------------------------------------------------------- go build -v

FAKE_GO = """\
#!/bin/sh
# go env GOVERSION, and go build -v ... -o DIR/ PKG...: what the real one prints on stderr
if [ "$1" = env ]; then echo go1.26.0; exit 0; fi
out=""
while [ $# -gt 0 ]; do
  case "$1" in -o) out="$2"; shift 2; continue;; esac
  last="$1"; shift
done
echo "go: downloading example.com/dep v1.2.3" >&2
echo "example.com/dep/util" >&2
if [ -n "$FAIL" ]; then
  echo "# example.com/tool" >&2
  echo "./main.go:3:1: syntax error: non-declaration statement outside function body" >&2
  exit 1
fi
echo "example.com/tool" >&2
touch "$out/tool"
"""


@pytest.fixture
def fake_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "gobin"
    bindir.mkdir()
    go = bindir / "go"
    go.write_text(FAKE_GO)
    go.chmod(go.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


def test_go_build_reports_each_compiled_package(fake_go: Path) -> None:
    from aiplat.gobuild import Component, go_build

    seen: list[str] = []
    built = go_build(fake_go, [Component("tool", "example.com/tool", "example.com/tool")],
                     fake_go / "cache", "-s -w", packages=seen.append)
    assert built == ["tool"] and (fake_go / "cache" / "bin" / "tool").is_file()
    assert seen == ["example.com/dep/util", "example.com/tool"]  # not the download line


def test_go_build_error_keeps_the_compiler_message_not_the_package_list(
        fake_go: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aiplat.gobuild import Component, go_build

    monkeypatch.setenv("FAIL", "1")
    seen: list[str] = []
    with pytest.raises(InputError) as e:
        go_build(fake_go, [Component("tool", "example.com/tool", "example.com/tool")],
                 fake_go / "cache", "-s -w", packages=seen.append)
    assert "syntax error" in str(e.value) and "# example.com/tool" in str(e.value)
    assert "example.com/dep/util" not in str(e.value) and seen == ["example.com/dep/util"]


def test_go_build_without_a_callback_runs_as_before(fake_go: Path) -> None:
    from aiplat.gobuild import Component, go_build

    assert go_build(fake_go, [Component("tool", "example.com/tool", "example.com/tool")],
                    fake_go / "cache", "-s -w") == ["tool"]


# ----------------------------------------------------------------------------- lab up


@pytest.fixture
def fake_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """lab up with every host action replaced: what ran, in order."""
    from aiplat.netdiag import lab as labio
    from aiplat.netdiag.state import Proc

    monkeypatch.setenv("AIPLAT_LAB_DIR", str(tmp_path / "labs"))
    ran: list[str] = []
    monkeypatch.setattr(labio, "preflight", lambda plan: None)
    monkeypatch.setattr(labio, "without_unsupported", lambda plan: (plan, ["a note"]))
    monkeypatch.setattr(labio, "br_netfilter_on", lambda: False)
    monkeypatch.setattr(labio.sh, "run", lambda argv, **kw: ran.append(" ".join(argv)))
    monkeypatch.setattr(labio.sh, "spawn", lambda name, argv, log, ns=None: (
        ran.append(f"spawn {name}"), Proc(name=name, pid=1, start=0, argv=argv))[1])
    monkeypatch.setattr(labio, "_wait_ready", lambda plan, d: ran.append("ready"))
    monkeypatch.setattr(labio, "seed_blob", lambda plan: (ran.append("seed"), ("d", 1))[1])
    monkeypatch.setattr(labio, "wait_scraped", lambda plan: ran.append("scraped"))
    monkeypatch.setattr(labio, "pull", lambda plan, node, digest: (
        ran.append(f"pull {node.name}"), SimpleNamespace(mbit=100.0))[1])
    monkeypatch.setattr(labio, "down", lambda prefix: ran.append("down"))
    return ran


def test_lab_up_reports_every_step_before_it_runs(fake_host: list[str]) -> None:
    from aiplat.netdiag import lab as labio
    from aiplat.netdiag.model import plan_lab

    events: list[Event] = []
    lines: list[str] = []

    def steps(done: float, total: float | None, running: str) -> None:
        events.append((done, total, running))
        lines.append(f"{len(fake_host)} {running}")

    plan = plan_lab(nodes=2, prefix="pgx")
    labio.up(plan, progress=lines.append, steps=steps)
    _assert_counts_up(events)
    assert events[-1][1] == len(fake_host)  # one step per host action
    # each step is announced just before its action: the actions so far = its done count
    assert all(line.split(" ", 1)[0] == str(e[0]) for line, e in
               zip([x for x in lines if x[0].isdigit()], events, strict=True))
    names = [e[2] for e in events]
    assert "start prometheus" in names and names[-3:] == [
        "baseline pull to node-1", "baseline pull to node-2", ""]
    assert lines[0] == "a note" and "network: bridges, namespaces, veths, tbf" in lines


def test_lab_up_failure_is_told_and_cleaned(fake_host: list[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from aiplat.netdiag import lab as labio
    from aiplat.netdiag.model import plan_lab

    def broken(plan: object) -> tuple[str, int]:
        raise OSError("store down")

    monkeypatch.setattr(labio, "seed_blob", broken)
    lines: list[str] = []
    with pytest.raises(OSError):
        labio.up(plan_lab(nodes=1, prefix="pgx"), progress=lines.append,
                 steps=lambda *_: None)
    assert lines[-1] == "lab up failed (store down); removing what it created"
    assert fake_host[-1] == "down"


def test_lab_plan_is_the_cli_s_former_build_plan(tmp_path: Path) -> None:
    """Moved out of the CLI: the same plan for no spec, and for the example spec."""
    from aiplat.netdiag.lab_plan import lab_plan
    from aiplat.netdiag.model import plan_lab
    from aiplat.spec import example_text

    assert lab_plan(None, None, "alab", None, ()) == plan_lab(nodes=3, prefix="alab")
    spec = tmp_path / "p.yaml"
    spec.write_text(example_text())
    assert [s.name for s in lab_plan(str(spec), 1, "xlab", None, ("hpc",)).segments] == [
        "mgmt", "hpc"]
    doc = yaml.safe_load(example_text())
    doc["network"]["segments"] = []
    spec.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match=r"network\.segments is empty"):
        lab_plan(str(spec), None, "xlab", None, ())
