"""Building a kustomization with the real kustomize: the I/O edge that runs
``kubectl kustomize DIR`` (or ``kustomize build DIR``).

``kube/tree.py`` reads a kustomization of plain ``resources`` itself (it keeps each object's
file); one that needs more (patches, components, generators, prefixes, replacements, a
resource outside the folder given, ...) is built here, by the program an admin would run, so
what aiplat judges or applies is what ``kubectl apply -k`` would apply. The program is the
first of: the kubectl the lab builds (``aiplat lab cluster build``; the CLI passes its path,
since ``kube`` does not import ``cluster``), ``kubectl`` on PATH, ``kustomize`` on PATH.
kustomize runs with its defaults: files outside the kustomization's root refused
(``LoadRestrictionsRootOnly``), no exec plugins, no Helm. It fetches nothing: ``kube/tree.py``
refuses a remote entry in any kustomization kustomize would read before it runs, and here it
runs with every HTTP(S) proxy set to a closed loopback port and git allowed the ``file``
protocol only, so a URL that slipped past is a build error, not a download. Its output is
bounded (``inputs.MAX_BYTES``) and so is its time (``TIMEOUT_S``); a failure is an
``InputError`` with kustomize's own words.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aiplat import inputs
from aiplat.errors import InputError

TIMEOUT_S = 120
_CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens, a connection is refused
OFFLINE = {"HTTP_PROXY": _CLOSED, "HTTPS_PROXY": _CLOSED, "http_proxy": _CLOSED,
           "https_proxy": _CLOSED, "ALL_PROXY": _CLOSED, "NO_PROXY": "", "no_proxy": "",
           "GIT_ALLOW_PROTOCOL": "file", "GIT_TERMINAL_PROMPT": "0"}
"""kustomize's environment on top of the caller's: no download reaches the network."""


@dataclass(frozen=True)
class Kustomize:
    """A kustomize program: ``argv`` + the directory builds it."""

    argv: tuple[str, ...]

    def command(self, directory: Path | str) -> str:
        return " ".join([*self.argv, str(directory)])

    def __call__(self, directory: Path) -> str:
        """The multi-document YAML kustomize builds from ``directory``."""
        with tempfile.TemporaryFile() as err, subprocess.Popen(
                [*self.argv, str(directory)], stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=err, env={**os.environ, **OFFLINE}) as proc:
            assert proc.stdout is not None
            try:
                data = _read(proc, TIMEOUT_S)
            finally:
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
            err.seek(0)
            said = err.read(64 * 1024).decode("utf-8", "replace").strip()
        if data is None:
            raise InputError(f"{directory}: `{self.command(directory)}` gave more than "
                             f"{inputs.MAX_BYTES} bytes or ran past {TIMEOUT_S} s (fix: build "
                             "it yourself and give the output: `kubectl kustomize DIR > "
                             "all.yaml`)")
        if proc.returncode != 0:
            last = " ".join(said.splitlines()[-3:]) or f"exit status {proc.returncode}"
            raise InputError(f"{directory}: kustomize could not build it: {last} (fix: correct "
                             f"the kustomization; `{self.command(directory)}` shows the same)")
        return inputs.decode(data, f"kustomize build of {directory}", "Kubernetes manifests")


def _read(proc: subprocess.Popen[bytes], timeout: float) -> bytes | None:
    """stdout up to ``inputs.MAX_BYTES`` within ``timeout``; None past either."""
    import selectors
    import time

    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    fd = proc.stdout.fileno()
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > inputs.MAX_BYTES:
                return None
            chunks.append(chunk)
    try:
        proc.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return None
    return b"".join(chunks)


def find(candidates: Sequence[Path] = ()) -> Kustomize | None:
    """The first kustomize program: a kubectl among ``candidates`` (executable files), then
    ``kubectl`` on PATH, then ``kustomize`` on PATH; None without one."""
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return Kustomize((str(c), "kustomize"))
    if kubectl := shutil.which("kubectl"):
        return Kustomize((kubectl, "kustomize"))
    if kustomize := shutil.which("kustomize"):
        return Kustomize((kustomize, "build"))
    return None
