"""A real Debian ``docker-registry`` (distribution v2.8) on 127.0.0.1, for tests, bench and lab.

:class:`Registry` writes a minimal config (filesystem storage under a directory the caller
owns, delete enabled, a free loopback port), starts the binary, waits for ``GET /v2/`` and
stops it on exit. The registry's log goes to ``log_path`` so tests can count the requests it
served (e.g. that eight concurrent pulls fetched each blob once) and ``blob_path`` points at
a blob's file in the storage so tests can tamper with it.

:func:`missing` says why the registry cannot run here (or ``None``); fixtures skip locally
and fail in CI on that reason, like the browser fixture.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

BINARY = "docker-registry"

_CONFIG = """\
version: 0.1
log:
  level: info
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: {root}
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:{port}
"""


def missing() -> str | None:
    if shutil.which(BINARY) is None:
        return f"{BINARY} is not installed (apt-get install docker-registry)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_serving(reg: Any, name: str, timeout: float = 15.0) -> None:
    """Until ``reg`` (a started registry: url, _proc, stop, log_text) answers /v2/ with 200;
    stops it and raises with its log's tail when the process exits or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{reg.url}/v2/", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if reg._proc.poll() is not None or time.monotonic() > deadline:
            reg.stop()
            raise RuntimeError(f"{name} did not start; log:\n{reg.log_text()[-2000:]}")
        time.sleep(0.05)


class Registry:
    """One registry process; use as a context manager."""

    def __init__(self, workdir: str | Path) -> None:
        self.workdir = Path(workdir)
        self.root = self.workdir / "storage"
        self.log_path = self.workdir / "registry.log"
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def start(self) -> Registry:
        self.root.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "config.yml"
        config.write_text(_CONFIG.format(root=self.root, port=self.port))
        log = self.log_path.open("ab")
        env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
        self._proc = subprocess.Popen(
            [BINARY, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT, env=env
        )
        log.close()
        wait_serving(self, BINARY)
        return self

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def __enter__(self) -> Registry:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def blob_path(self, digest: str) -> Path:
        algo, hexd = digest.split(":", 1)
        return self.root / "docker/registry/v2/blobs" / algo / hexd[:2] / hexd / "data"

    def blob_gets(self, digest: str, repo: str | None = None) -> int:
        """How many ``GET /v2/<repo>/blobs/<digest>`` requests the access log recorded."""
        where = re.escape(repo) if repo else "[^ ]*"
        pattern = re.compile(rf'"GET /v2/{where}/blobs/' + re.escape(digest) + r' HTTP')
        return len(pattern.findall(self.log_text()))


class FaultProxy:
    """A TCP proxy on 127.0.0.1 in front of the registry that injects real network faults.

    For the next blob GETs it either answers ``status`` itself (``fail_blob_gets``) or
    forwards the registry's answer and cuts the connection after ``drop_after`` bytes
    (``drop_blob_gets``). Everything else passes through untouched. Requests are recognised
    per client→server read, which holds for HTTP/1.1 GETs without bodies; uploads are
    passed through as opaque bytes.
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.fail_blob_gets: list[int] = []
        self.drop_blob_gets: list[int] = []
        self.blob_requests: list[str] = []
        self._lock = threading.Lock()
        self._server = socket.socket()
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(64)
        self.port = int(self._server.getsockname()[1])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._server.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        budget: list[int | None] = [None]  # bytes left before the cut, for this response

        def down() -> None:
            try:
                while data := upstream.recv(65536):
                    left = budget[0]
                    if left is not None:
                        if len(data) >= left:
                            client.sendall(data[:left])
                            client.shutdown(socket.SHUT_RDWR)
                            return
                        budget[0] = left - len(data)
                    client.sendall(data)
            except OSError:
                pass
            finally:
                client.close()
                upstream.close()

        threading.Thread(target=down, daemon=True).start()
        try:
            while data := client.recv(65536):
                first = data.split(b"\r\n", 1)[0].decode("latin-1", "replace")
                if first.startswith("GET /v2/") and "/blobs/sha256:" in first:
                    m = re.search(rb"(?im)^range: *(bytes=[0-9-]+)", data)
                    with self._lock:
                        rng = f" [{m.group(1).decode()}]" if m else ""
                        self.blob_requests.append(first + rng)
                        fail = self.fail_blob_gets.pop(0) if self.fail_blob_gets else None
                        drop = self.drop_blob_gets.pop(0) if self.drop_blob_gets else None
                    if fail is not None:
                        client.sendall(f"HTTP/1.1 {fail} Injected\r\nContent-Length: 0\r\n\r\n"
                                       .encode())
                        continue
                    budget[0] = drop
                upstream.sendall(data)
        except OSError:
            pass
        finally:
            upstream.close()


def model_cli(*args: str) -> tuple[int, str, str]:
    """``aiplat model`` in-process with main()'s error handling (exit code, stdout, stderr);
    any other exception, a traceback to a user, fails the test."""
    from click.testing import CliRunner

    from aiplat.cli.model import model
    from aiplat.errors import AiplatError

    r = CliRunner().invoke(model, list(args))
    if isinstance(r.exception, AiplatError):
        return r.exception.exit_code, r.stdout, r.stderr + str(r.exception)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr
