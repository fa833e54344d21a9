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


# Issue #38, second round: `cdi generate --root` wrote what the tree's links and nodes said.
# Every host path it emits now stays inside the tree (no '..', no link out), and the spec
# passes the escape checks (node drivers from the tree's /proc/devices) before it is written.
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="mknod of device nodes needs root")
INVENTORY = {"gpus": [{"index": 0, "uuid": "GPU-a", "minor": 0}]}


def gpu_tree(root: Path) -> dict[str, str]:
    """A driver root with its nodes and the toolkit's hook; the linker cache it names."""
    cache = driver_root(root)
    (root / "dev").mkdir()
    for name, major, minor in (("nvidia0", 195, 0), ("nvidiactl", 195, 255),
                               ("nvidia-uvm", 508, 0)):
        os.mknod(root / "dev" / name, 0o020666, os.makedev(major, minor))
    hook = root / "usr/bin/nvidia-cdi-hook"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text("#!/bin/sh\n")
    hook.chmod(0o755)
    return cache


def _link(root: Path, rel: str, target: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.is_dir() and not p.is_symlink():
        p.rmdir()
    else:
        p.unlink(missing_ok=True)
    p.symlink_to(target)


V = "550.54.15"
LINKED_OUT = {  # a file the GPU spec binds, as a link to what no container may get
    "persistenced-socket": ("run/nvidia-persistenced/socket", "/run/containerd/containerd.sock"),
    "mps-pipes": ("tmp/nvidia-mps", "/"),
    "vulkan-icd": ("etc/vulkan/icd.d/nvidia_icd.json", "/etc/shadow"),
    "nvidia-smi": ("usr/bin/nvidia-smi", "/etc/shadow"),
    "firmware": (f"lib/firmware/nvidia/{V}/gsp_ga10x.bin", "/etc/shadow"),
    "hook": ("usr/bin/nvidia-cdi-hook", "/bin/sh"),
    "relative-out": ("usr/share/nvidia/nvoptix.bin", "../../../../../../../../../etc/shadow"),
}


@ROOT_ONLY
@pytest.mark.parametrize("name", sorted(LINKED_OUT))
def test_a_link_out_of_the_tree_is_never_a_bind(tmp_path: Path, name: str) -> None:
    root = tmp_path / "root"
    cache = gpu_tree(root)
    rel, target = LINKED_OUT[name]
    _link(root, rel, target)
    with pytest.raises(InputError, match="link out of the tree") as e:
        host.generate(str(root), gpus=[host.GpuIdentity(0, "GPU-a", 0)], mig_minors={},
                      ldcache=cache)
    assert str(root / rel) in str(e.value) and "fix:" in str(e.value)
    assert "aiplat-nvidia.com-gpu.json" in str(e.value)  # the spec and its entry are named


@ROOT_ONLY
def test_a_crafted_linker_cache_entry_is_not_a_path_out(tmp_path: Path) -> None:
    """ldconfig prints what the cache holds: `libcuda.so.1 => /../../../etc/shadow` became
    the bind <root>/../../../etc/shadow (no driver version to match files against)."""
    root = tmp_path / "root"
    gpu_tree(root)
    (root / "proc/driver/nvidia/version").unlink()
    cache = {"libcuda.so.1": "/../../../../../../../../../../etc/shadow"}
    with pytest.raises(InputError, match=r"'\.\.'") as e:
        host.generate(str(root), gpus=[host.GpuIdentity(0, "GPU-a", 0)], mig_minors={},
                      ldcache=cache)
    assert "etc/shadow" in str(e.value) and "mounts[" in str(e.value)


NODES = {  # the tree's node, its numbers, a line for its /proc/devices, what is said
    "gpu-is-mem": ("nvidia0", (1, 1), "", "/dev/mem"),
    "gpu-is-snapshot": ("nvidia0", (10, 231), "", "a misc device"),
    "uvm-of-no-driver": ("nvidia-uvm", (242, 0), "242 nvme", "no nvidia-uvm in the root's"),
    "char-is-a-disk-controller": ("acc0", (241, 0), "241 bsg", "bsg's node"),
}


@ROOT_ONLY
@pytest.mark.parametrize("case", sorted(NODES))
def test_a_node_no_accelerator_driver_holds_is_refused(tmp_path: Path, case: str) -> None:
    name, numbers, line, words = NODES[case]
    root = tmp_path / "root"
    cache = gpu_tree(root)
    devices = root / "proc/devices"
    text = devices.read_text()
    if name == "nvidia-uvm":  # the driver's line gone, another's at the node's major
        text = text.replace("508 nvidia-uvm\n", "")
    devices.write_text(text.replace("\nBlock devices:", f"{line}\n\nBlock devices:"))
    (root / "dev" / name).unlink(missing_ok=True)
    os.mknod(root / "dev" / name, 0o020666, os.makedev(*numbers))
    chars = [host.parse_char_option("example.com/acc=0:/dev/acc0")] if name == "acc0" else []
    with pytest.raises(InputError) as e:
        host.generate(str(root), gpus=[host.GpuIdentity(0, "GPU-a", 0)], mig_minors={},
                      ldcache=cache, chars=chars)
    assert words in str(e.value) and f"/dev/{name}" in str(e.value), str(e.value)
    assert "fix:" in str(e.value)


@ROOT_ONLY
def test_cli_generate_writes_nothing_from_a_hostile_tree(tmp_path: Path) -> None:
    root = tmp_path / "root"
    gpu_tree(root)
    _link(root, "run/nvidia-persistenced/socket", "/run/containerd/containerd.sock")
    inventory = tmp_path / "inv.json"
    inventory.write_text(json.dumps(INVENTORY))
    out = tmp_path / "cdi"
    code = "import sys; from aiplat.cli.main import main; sys.exit(main(sys.argv[1:]))"
    r = subprocess.run([sys.executable, "-c", code, "cdi", "generate", "--root", str(root),
                        "--inventory", str(inventory), "-d", str(out)], capture_output=True,
                       text=True, timeout=120, check=False)
    assert r.returncode == 2, r.stderr
    assert "link out of the tree" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists() or not list(out.iterdir())


@ROOT_ONLY
def test_the_generated_gpu_spec_of_an_honest_tree_is_still_written(tmp_path: Path) -> None:
    root = tmp_path / "root"
    cache = gpu_tree(root)
    specs = host.generate(str(root), gpus=[host.GpuIdentity(0, "GPU-a", 0)], mig_minors={},
                          ldcache=cache)
    doc = specs["aiplat-nvidia.com-gpu.json"]
    assert doc["containerEdits"]["hooks"] and doc["containerEdits"]["mounts"]
