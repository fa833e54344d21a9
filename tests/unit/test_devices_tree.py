"""Issue #38: `cdi generate --root TREE` reads a driver root someone else may have made. Its
files go through aiplat.inputs.read_in_tree: a FIFO does not hang it, a link out of the root is
not followed, a huge file is not read; each is an input error naming the file (exit 2)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_devices_nvidia_files import driver_root

from aiplat.devices import host
from aiplat.devices import nvidia_files as nvf
from aiplat.errors import InputError

MARKER = "HOST-SECRET-51c0"


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    """A reader that blocks (a FIFO) or drains (/dev/zero) fails the test instead of the run."""
    def stop(signum: int, frame: object) -> None:
        raise TimeoutError("still reading after 30 s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(30)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _swap(root: Path, rel: str, how: str, target: Path) -> None:
    p = root / rel.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.unlink(missing_ok=True)
    if how == "fifo":
        os.mkfifo(p)
    elif how == "link-out":
        p.symlink_to(target)
    else:
        with open(p, "wb") as f:
            f.truncate(4 << 30)


READERS: dict[str, Callable[[str], object]] = {
    "/proc/devices": nvf.proc_devices,
    "/proc/driver/nvidia/version": lambda root: nvf.driver_version(root, {}),
    "/var/lib/dpkg/status": host.toolkit_version,
    "/etc/ld.so.cache": host.linker_cache,
    "/proc/driver/nvidia-caps/mig-minors": lambda root: host.generate(
        root, gpus=[host.GpuIdentity(0, "GPU-a", 0)], ldcache={}),
}


# ldconfig reads the linker cache itself (with its own bounds): only its type and place count
CASES = [(rel, how) for rel in sorted(READERS) for how in ("fifo", "link-out", "huge")
         if (rel, how) != ("/etc/ld.so.cache", "huge")]


@pytest.mark.parametrize(("rel", "how"), CASES)
def test_driver_root_files_are_refused_not_followed(tmp_path: Path, rel: str, how: str) -> None:
    root = tmp_path / "root"
    driver_root(root)
    secret = tmp_path / "secret"
    secret.write_text(f"{MARKER} Kernel Module  999.99.99\n")
    _swap(root, rel, how, secret)
    with pytest.raises(InputError) as e:
        READERS[rel](str(root))
    words = {"fifo": "FIFO", "link-out": "link out of the tree", "huge": "larger than"}[how]
    assert words in str(e.value) and str(root / rel.lstrip("/")) in str(e.value)
    assert MARKER not in str(e.value) and "fix:" in str(e.value)


def test_cdi_generate_on_a_fifo_exits_2_without_hanging(tmp_path: Path) -> None:
    root = tmp_path / "root"
    driver_root(root)
    _swap(root, "/proc/driver/nvidia-caps/mig-minors", "fifo", tmp_path)
    inventory = tmp_path / "gpus.json"
    inventory.write_text(json.dumps({"gpus": [{"index": 0, "uuid": "GPU-a", "minor": 0}]}))
    code = "import sys; from aiplat.cli.main import main; sys.exit(main(sys.argv[1:]))"
    try:
        r = subprocess.run([sys.executable, "-c", code, "cdi", "generate", "--root", str(root),
                            "--inventory", str(inventory)], capture_output=True, text=True,
                           timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("cdi generate hangs on a FIFO in the driver root")
    assert r.returncode == 2 and "FIFO" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of device nodes needs root")
@pytest.mark.parametrize("how", ["link-out", "block"])
def test_a_tree_cannot_point_a_gpu_node_at_the_hosts_devices(tmp_path: Path, how: str) -> None:
    """/dev/nvidia0 of the tree as a link to the host's /dev/null (or as a disk's block node)
    would become a grant of that device in the spec."""
    root = tmp_path / "root"
    driver_root(root)
    (root / "dev").mkdir()
    os.mknod(root / "dev/nvidiactl", 0o020666, os.makedev(195, 255))
    if how == "link-out":
        (root / "dev/nvidia0").symlink_to("/dev/null")
    else:
        os.mknod(root / "dev/nvidia0", 0o060660, os.makedev(8, 0))  # /dev/sda's numbers
    with pytest.raises(InputError, match="link out of the tree" if how == "link-out"
                       else "block device"):
        host.generate(str(root), gpus=[host.GpuIdentity(0, "GPU-a", 0)], mig_minors={},
                      ldcache={})
