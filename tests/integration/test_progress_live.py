"""Progress of the long commands that need the real thing: ``lab up`` (root, network
namespaces), ``model push|pull`` (a real docker-registry) and ``go build -v`` (a real Go).
Each runs the ``aiplat`` console script with stderr on a pseudo-terminal (a bar), on a pipe
(plain lines only) and with ``--quiet`` (nothing). Skips locally without them; fails in CI.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest
from conftest import need
from registry import Registry

from aiplat.netdiag import lab as labio
from aiplat.netdiag.testing import free_port, lab_unavailable

pytestmark = pytest.mark.integration
AIPLAT = str(Path(sys.executable).with_name("aiplat"))
PREFIX = "aipg"


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in {"NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS", "LINES"}}
    return env | {"TERM": "xterm-256color", "AIPLAT_MODEL_CACHE": str(tmp / "models")}


def on_terminal(args: list[str], tmp: Path) -> tuple[int, bytes, bytes]:
    """(exit status, stdout, the terminal's bytes) with stderr on a pseudo-terminal."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the command closed the terminal
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
        out, _ = proc.communicate(timeout=300)
        reader.join(timeout=10)
    finally:
        os.close(master)
    return proc.returncode, out, b"".join(chunks)


def piped(args: list[str], tmp: Path) -> tuple[int, bytes, bytes]:
    cp = subprocess.run([AIPLAT, *args], capture_output=True, env=_env(tmp), timeout=300,
                        stdin=subprocess.DEVNULL, check=False)
    return cp.returncode, cp.stdout, cp.stderr


def _bar(term: bytes, label: str) -> bool:
    return label.encode() in term and b"\x1b[?25l" in term and "━".encode() in term


def _plain(err: bytes) -> bool:
    return b"\r" not in err and b"\x1b" not in err



def test_lab_up_counts_its_steps_on_a_terminal(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    need(lab_unavailable())
    monkeypatch.setenv("AIPLAT_LAB_DIR", str(tmp_path / "labs"))
    args = ["lab", "up", "--nodes", "1", "--prefix", PREFIX, "-o", "json"]
    down = ["lab", "down", "--prefix", PREFIX]
    labio.down(PREFIX)  # a previous run that crashed
    try:
        rc, out, term = on_terminal([*args, "--prom-port", str(free_port())], tmp_path)
        assert rc == 0, term[-3000:]
        assert _bar(term, "lab up: baseline pull to node-1"), term[-3000:]
        assert re.search(rb"\d+/\d+", term)  # steps done of how many
        assert b"lab up: network: bridges, namespaces, veths, tbf" in term
        assert b'"phase": "up"' in out
        assert piped(down, tmp_path)[0] == 0
        rc, out, err = piped([*args, "--prom-port", str(free_port())], tmp_path)
        assert rc == 0 and _plain(err), err[-3000:]
        assert err.decode().splitlines() == [  # the phases, as lines a log keeps
            "lab up: network: bridges, namespaces, veths, tbf",
            "lab up: services: node-exporter, iperf3, docker-registry, prometheus",
            "lab up: model store: seeding a blob, measuring baseline pulls"]
        assert b'"phase": "up"' in out
        assert piped(down, tmp_path)[0] == 0
        rc, out, term = on_terminal([*args, "-q", "--prom-port", str(free_port())], tmp_path)
        assert rc == 0 and term == b"", term[-3000:]
        assert b'"phase": "up"' in out
    finally:
        labio.down(PREFIX)
        assert labio.leftovers(PREFIX) == []


def test_model_push_and_pull_draw_a_byte_bar(registry: Registry, tmp_path: Path) -> None:
    src = tmp_path / "model"
    src.mkdir()
    (src / "config.json").write_text('{"model_type": "llama"}\n')
    (src / "model.safetensors").write_bytes(os.urandom(8 << 20))
    ref = f"{registry.host}/progress/m:v1"
    rc, out, term = on_terminal(["model", "push", str(src), ref], tmp_path)
    assert rc == 0, term[-3000:]
    assert _bar(term, "push") and b"MB" in term, term[-3000:]
    assert out.startswith(f"pushed {ref}".encode())
    rc, out, term = on_terminal(["model", "pull", ref, "-o", "json"], tmp_path)
    assert rc == 0 and _bar(term, "pull"), term[-3000:]
    shutil.rmtree(tmp_path / "models")
    rc, out_piped, err = piped(["model", "pull", ref, "-o", "json"], tmp_path)
    assert rc == 0 and _plain(err) and err.startswith(b"cold pull of "), err[-3000:]
    shutil.rmtree(tmp_path / "models")
    rc, out_quiet, term = on_terminal(["model", "pull", ref, "-o", "json", "-q"], tmp_path)
    assert rc == 0 and term == b""
    assert b'"digest"' in out_piped and b'"digest"' in out_quiet


def test_go_build_names_the_packages_it_compiles(tmp_path: Path) -> None:
    """A real ``go build -v`` of a two-package module: both reach the callback, and the
    binary is built."""
    from aiplat.gobuild import Component, go_build

    need(None if shutil.which("go") else "go is not on PATH")
    mod = tmp_path / "mod"
    (mod / "greet").mkdir(parents=True)
    (mod / "go.mod").write_text("module example.com/hello\n\ngo 1.26\n")
    (mod / "greet" / "greet.go").write_text(
        'package greet\n\nfunc Hello() string { return "hello" }\n')
    (mod / "main.go").write_text('package main\n\nimport (\n\t"fmt"\n\n'
                                 '\t"example.com/hello/greet"\n)\n\n'
                                 "func main() { fmt.Println(greet.Hello()) }\n")
    seen: list[str] = []
    built = go_build(mod, [Component("hello", "example.com/hello", "example.com/hello")],
                     tmp_path / "cache", "-s -w", packages=seen.append)
    assert built == ["hello"]
    assert {"example.com/hello/greet", "example.com/hello"} <= set(seen)
    assert subprocess.run([tmp_path / "cache" / "bin" / "hello"], capture_output=True,
                          text=True, check=True).stdout == "hello\n"
