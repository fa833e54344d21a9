"""What a user sees of the progress bars: the real ``aiplat`` console script with stderr on a
pseudo-terminal (a bar is drawn), on a pipe (no bar, no carriage return, no cursor code) and
with ``--quiet`` (nothing, even on a terminal); stdout byte for byte the same in all three."""

from __future__ import annotations

import fcntl
import json
import os
import struct
import subprocess
import sys
import termios
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

AIPLAT = str(Path(sys.executable).with_name("aiplat"))
CURSOR_HIDDEN = b"\x1b[?25l"  # rich's Live hides the cursor while it draws
BAR = "━".encode()  # rich's bar glyph


@dataclass
class Run:
    rc: int
    stdout: bytes
    stderr: bytes  # the terminal's bytes when on a pseudo-terminal


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in {"NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE",
                        "COLUMNS", "LINES"}}
    return env | {"TERM": "xterm-256color", "HOME": str(tmp), "AIPLAT_LAB_DIR": str(tmp)}


def run_piped(args: list[str], tmp: Path) -> Run:
    cp = subprocess.run([AIPLAT, *args], capture_output=True, env=_env(tmp), timeout=120,
                        stdin=subprocess.DEVNULL, check=False)
    return Run(cp.returncode, cp.stdout, cp.stderr)


def run_on_terminal(args: list[str], tmp: Path) -> Run:
    """``aiplat ARGS`` with stderr on a 120x40 pseudo-terminal, stdout on a pipe."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        proc = subprocess.Popen([AIPLAT, *args], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=slave, env=_env(tmp))
        os.close(slave)
        out, _ = proc.communicate(timeout=120)
        reader.join(timeout=10)
    finally:
        os.close(master)
    return Run(proc.returncode, out, b"".join(chunks))


def assert_bar(r: Run, label: str) -> None:
    assert label.encode() in r.stderr, r.stderr[-2000:]
    assert CURSOR_HIDDEN in r.stderr and BAR in r.stderr, r.stderr[-2000:]


def assert_plain(stderr: bytes) -> None:
    assert b"\r" not in stderr and b"\x1b" not in stderr, stderr[-2000:]


def check_three_ways(args: list[str], label: str, tmp: Path, rc: int = 0) -> Run:
    """On a terminal a bar labelled ``label``; piped none; --quiet nothing on the terminal
    but errors; stdout identical in all three. Returns the piped run."""
    term = run_on_terminal(args, tmp)
    assert term.rc == rc, term.stderr[-2000:]
    assert_bar(term, label)
    piped = run_piped(args, tmp)
    assert piped.rc == rc, piped.stderr[-2000:]
    assert_plain(piped.stderr)
    quiet = run_on_terminal([*args, "--quiet"], tmp)
    assert quiet.rc == rc, quiet.stderr[-2000:]
    assert quiet.stderr == b"", quiet.stderr[-2000:]
    assert term.stdout == piped.stdout == quiet.stdout
    return piped


def test_sim_run_draws_a_bar_only_on_a_terminal(tmp_path: Path) -> None:
    piped = check_three_ways(["sim", "run", "-o", "json"], "simulating", tmp_path)
    assert json.loads(piped.stdout)["tenants"]
    assert piped.stderr.decode().endswith(" s\n") and " events in " in piped.stderr.decode()


def test_sim_compare_names_the_configuration_it_runs(tmp_path: Path) -> None:
    args = ["sim", "compare", "--strategy", "fixed", "--strategy", "warm", "-o", "json"]
    term = run_on_terminal(args, tmp_path)
    assert term.rc == 0, term.stderr[-2000:]
    assert_bar(term, "comparing")
    assert b"bestfit, fixed, fair" in term.stderr or b"bestfit, warm, fair" in term.stderr
    piped = run_piped(args, tmp_path)
    assert piped.stderr == b"" and piped.stdout == term.stdout


def _tiny_trace(folder: Path) -> Path:
    (folder / "openb_node_list_all_node.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\nn1,32000,65536,4,V100\n")
    (folder / "openb_pod_list_default.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
        "p0,1000,1024,1,500,\np1,2000,1024,1,1000,V100\np2,1000,1024,2,1000,\n")
    return folder


def test_sim_fgd_counts_experiments(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    data = _tiny_trace(tmp_path / "data")
    args = ["sim", "fgd", "--data", str(data), "--seeds", "2", "--policy", "fgd",
            "--policy", "bestfit", "-o", "json"]
    piped = check_three_ways(args, "fgd", tmp_path)
    assert set(json.loads(piped.stdout)["mean"]["default"]) == {"fgd", "bestfit"}
    assert piped.stderr.startswith(b"4 experiments in ")
    term = run_on_terminal(args, tmp_path)
    assert b"/4" in term.stderr  # the count of experiments, M/N


def test_node_burnin_counts_seconds(tmp_path: Path) -> None:
    term = run_on_terminal(["node", "burnin", "--duration", "2s", "--workers", "1",
                            "-o", "json", "--temp-limit", "150"], tmp_path)
    assert_bar(term, "burn-in")
    assert b"/2 s" in term.stderr
    quiet = run_on_terminal(["node", "burnin", "--duration", "1s", "--workers", "1", "-q"],
                            tmp_path)
    assert quiet.stderr == b"" and b"overall:" in quiet.stdout
    piped = run_piped(["node", "burnin", "--duration", "1s", "--workers", "1"], tmp_path)
    assert piped.stderr == b"" and b"overall:" in piped.stdout


def test_node_baseline_record_names_each_probe(tmp_path: Path) -> None:
    out = tmp_path / "b.json"
    args = ["node", "baseline", "record", "--runs", "2", "--scale", "0.02", "--metric",
            "cpu.sha256", "--metric", "memory.copy", "-w", str(out)]
    term = run_on_terminal(args, tmp_path)
    assert term.rc == 0, term.stderr[-2000:]
    assert_bar(term, "baseline")
    assert b"run 2/2 memory.copy" in term.stderr and b"/4" in term.stderr
    assert term.stderr.rstrip().endswith(f"wrote {out}".encode())
    piped = run_piped(args, tmp_path)
    assert piped.stderr == f"wrote {out}\n".encode()
    assert piped.stdout.count(b"\n") == 2  # one line per metric, values differ per run
    quiet = run_on_terminal([*args, "-q"], tmp_path)
    assert quiet.rc == 0 and quiet.stderr == b""
    assert set(json.loads(out.read_text())["metrics"]) == {"cpu.sha256", "memory.copy"}


def test_node_baseline_compare_measures_with_a_bar(tmp_path: Path) -> None:
    base = tmp_path / "b.json"
    args = ["--runs", "1", "--scale", "0.02", "--metric", "cpu.sha256"]
    assert run_piped(["node", "baseline", "record", *args, "-w", str(base), "-q"],
                     tmp_path).rc == 0
    term = run_on_terminal(["node", "baseline", "compare", str(base), *args,
                            "--tolerance", "0.99"], tmp_path)
    assert_bar(term, "baseline")
    piped = run_piped(["node", "baseline", "compare", str(base), *args, "--tolerance", "0.99"],
                      tmp_path)
    assert piped.stderr == b"" and b"overall:" in piped.stdout


def _built_cache(cache: Path) -> None:
    """A cache ``aiplat lab cluster build`` finds complete: binaries, manifests, recipe."""
    from aiplat.cluster import assets

    (cache / "bin").mkdir(parents=True)
    for c in assets.COMPONENTS:
        (cache / "bin" / c.name).write_text("")
    for _module, _src, dst in assets.MANIFESTS:
        (cache / "manifests" / dst).mkdir(parents=True, exist_ok=True)
    pinned = assets.versions()
    (cache / "build.json").write_text(json.dumps(
        {"versions": pinned, "ldflags": assets.ldflags(pinned)}))


def test_cluster_build_that_builds_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _built_cache(cache)
    args = ["lab", "cluster", "build", "--cache", str(cache)]
    piped = check_three_ways(args, "go build", tmp_path)
    assert piped.stderr == b""
    assert piped.stdout.decode().splitlines()[-1].startswith("built: nothing (all present)")


@pytest.mark.parametrize("args", [["sim", "run"], ["sim", "compare"], ["sim", "fgd"],
                                  ["node", "burnin"], ["node", "baseline", "record"],
                                  ["node", "baseline", "compare"], ["lab", "up"],
                                  ["lab", "cluster", "build"], ["model", "push"],
                                  ["model", "pull"]])
def test_every_long_command_takes_quiet(args: list[str]) -> None:
    from click.testing import CliRunner

    from aiplat.cli.main import cli

    r = CliRunner().invoke(cli, [*args, "--help"])
    assert r.exit_code == 0, r.output
    assert "-q, --quiet" in r.output
