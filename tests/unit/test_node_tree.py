"""Issue #38: `node inventory --root TREE` reads a tree someone else recorded. A FIFO must not
hang it, /dev/zero or a huge file must not exhaust memory, and a link out of the tree must
not bring a host file's content into the output: each is refused with a warning naming the
file, the rest of the node is still read, and the command exits 0 as documented (2 is for
inputs the user names, such as --from recordings).

The hostile trees run in a child process with a time limit and an address-space limit, so a
regression fails here instead of hanging or swapping the test run."""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from aiplat import inputs
from aiplat.errors import InputError
from aiplat.node.collect import collect_inventory
from aiplat.node.pciaddr import parse_cpulist
from aiplat.node.tree import Tree
from fixtures.nodes import gpu_less_vm, hgx_h100

MARKER = "HOST-SECRET-7f3a"
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a device node needs root")


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


def _limits() -> None:  # in the child: 1.5 GiB of address space, so draining /dev/zero fails
    resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))


def aiplat(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    code = "import sys; from aiplat.cli.main import main; sys.exit(main(sys.argv[1:]))"
    try:
        return subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                              text=True, timeout=timeout, preexec_fn=_limits, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"aiplat {' '.join(args)} still running after {timeout} s (a FIFO read?)")


def _replace(root: Path, rel: str) -> Path:
    p = root / rel
    p.unlink(missing_ok=True)
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


@pytest.fixture
def host_dir(tmp_path: Path) -> Path:
    """Files outside the tree that a hostile link points at."""
    d = tmp_path / "host"
    (d / "pci" / "0000:99:00.0").mkdir(parents=True)
    (d / "secret.txt").write_text(f"{MARKER}\n")
    for name, value in (("class", "0x030200"), ("vendor", "0x10de"), ("device", MARKER)):
        (d / "pci" / "0000:99:00.0" / name).write_text(f"{value}\n")
    (d / "net" / f"eth-{MARKER}").mkdir(parents=True)
    (d / "caps").mkdir()
    (d / "caps" / f"nvidia-cap-{MARKER}").write_text("")
    return d


def hostile_tree(tmp_path: Path, host_dir: Path) -> tuple[Path, list[str]]:
    """A VM tree with every kind of hostile entry; the paths that must be refused."""
    root = gpu_less_vm(tmp_path / "tree")
    os.mkfifo(_replace(root, "proc/sys/kernel/hostname"))
    os.symlink("/dev/zero", _replace(root, "proc/cpuinfo"))
    os.symlink(host_dir / "secret.txt", _replace(root, "proc/sys/kernel/osrelease"))
    os.symlink(os.path.relpath(host_dir / "secret.txt", root / "proc"),  # relative, yet out
               _replace(root, "proc/cmdline"))
    with open(_replace(root, "proc/meminfo"), "wb") as f:
        f.truncate(8 << 30)  # sparse: 8 GiB that cost no disk
    os.symlink(host_dir / "pci" / "0000:99:00.0", _replace(root, "sys/bus/pci/devices/"
                                                                 "0000:99:00.0"))
    net = root / "sys/class/net"
    os.rename(net, root / "net-recorded")  # the host's interfaces in its place
    os.symlink(host_dir / "net", net)
    os.symlink(host_dir / "caps", _replace(root, "dev/nvidia-caps"))
    os.symlink(host_dir / "secret.txt", _replace(root, "var/lib/dpkg/status"))
    return root, ["proc/sys/kernel/hostname", "proc/cpuinfo", "proc/sys/kernel/osrelease",
                  "proc/cmdline", "proc/meminfo", "sys/bus/pci/devices/0000:99:00.0",
                  "sys/class/net", "dev/nvidia-caps", "var/lib/dpkg/status"]


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_hostile_tree_is_read_safely(tmp_path: Path, host_dir: Path, fmt: str) -> None:
    root, refused = hostile_tree(tmp_path, host_dir)
    r = aiplat("node", "inventory", "--root", str(root), "-o", fmt)
    assert r.returncode == 0, r.stderr[-2000:]
    assert MARKER not in r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    for rel in refused:
        assert str(root / rel) in r.stdout, f"no warning names {rel}"
    if fmt == "json":
        inv = json.loads(r.stdout)
        assert inv["host"]["hostname"] is None and inv["host"]["cpu"] is None
        assert inv["pci"], "the tree's own PCI devices are still read"
        text = "\n".join(inv["warnings"])
        assert "FIFO" in text and "link out of the tree" in text and "larger than" in text
        assert len(inv["warnings"]) == len(set(inv["warnings"]))  # each refusal once


def test_node_check_and_the_kernel_log_are_safe_too(tmp_path: Path, host_dir: Path) -> None:
    root, _ = hostile_tree(tmp_path, host_dir)
    os.mkfifo(_replace(root, "var/log/kern.log"))
    _replace(root, "proc/uptime").write_text("not-a-number 1\n")
    r = aiplat("node", "check", "--root", str(root), "-o", "json")
    assert r.returncode in (0, 1), r.stderr[-2000:]  # checks may fail; never crash or hang
    assert MARKER not in r.stdout + r.stderr
    data = json.loads(r.stdout)
    assert any("kern.log" in w and "FIFO" in w for w in data["warnings"])
    table = aiplat("node", "check", "--root", str(root))
    assert f"warning: {root / 'var/log/kern.log'}" in table.stdout


@ROOT_ONLY
def test_a_device_node_in_the_tree_is_never_opened(tmp_path: Path) -> None:
    root = gpu_less_vm(tmp_path / "tree")
    zero = _replace(root, "proc/cpuinfo")
    os.mknod(zero, 0o020444, os.makedev(1, 5))  # /dev/zero's numbers, inside the tree
    r = aiplat("node", "inventory", "--root", str(root), "-o", "json")
    assert r.returncode == 0 and "a character device, not a regular file" in r.stdout


def test_relative_links_inside_the_tree_still_work(tmp_path: Path) -> None:
    """sysfs is links (bus -> devices, driver, iommu_group): a recorded tree keeps them."""
    inv = collect_inventory(hgx_h100(tmp_path / "hgx"))
    assert len(inv.gpus) == 8 and inv.gpus[0].driver == "nvidia"
    assert not [w for w in inv.warnings if "link out of the tree" in w]
    link = tmp_path / "hgx" / "sys/bus/pci/devices/0000:19:00.0"
    assert link.is_symlink() and not os.readlink(link).startswith("/")


def test_a_tree_given_through_a_link_is_its_own_root(tmp_path: Path) -> None:
    gpu_less_vm(tmp_path / "real")
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    inv = collect_inventory(tmp_path / "alias")
    assert inv.pci and not [w for w in inv.warnings if "link out of the tree" in w]


def test_read_in_tree_refuses_before_reading(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    (root / "ok").write_text("fine\n")
    (root / "in").symlink_to("ok")
    os.mkfifo(root / "fifo")
    (root / "out").symlink_to("/etc/hostname")
    (root / "up").symlink_to("../t/../outside")
    (tmp_path / "outside").write_text("x")
    (root / "big").write_bytes(b"a" * 100 + b"tail")
    assert inputs.read_in_tree(root, root / "in") == b"fine\n"
    for name, words in (("fifo", "FIFO"), ("out", "link out of the tree"),
                        ("up", "link out of the tree"), ("big", "larger than")):
        with pytest.raises(InputError, match=words):
            inputs.read_in_tree(root, root / name, max_bytes=64)
    assert inputs.read_in_tree(root, root / "big", max_bytes=4, tail=True) == b"tail"
    with pytest.raises(FileNotFoundError):  # missing is the system's answer, not a refusal
        inputs.read_in_tree(root, root / "nope")
    assert inputs.read_in_tree("/", "/proc/self/status", max_bytes=1 << 20)  # /proc: size 0


def test_refusals_are_warnings_with_a_cap(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    for i in range(80):
        os.mkfifo(root / f"f{i}")
    tree = Tree(root)
    assert all(tree.text(root / f"f{i}") is None for i in range(80))
    assert tree.refused == 80 and len(tree.warnings) == 51
    assert "more files refused" in tree.warnings[-1]


def test_a_cpulist_no_host_has_is_refused_not_expanded(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="below 65536"):
        parse_cpulist("0-4294967295")
    root = gpu_less_vm(tmp_path / "t")
    node = next((root / "sys/devices/system/node").glob("node0"))
    (node / "cpulist").write_text("0-4294967295\n")
    (node / "distance").write_text("10 " + "9" * 5000 + "\n")
    inv = collect_inventory(root)
    assert inv.host.numa[0].cpulist == "" and inv.host.numa[0].distances == [10]
    assert any("cpulist: ignored" in w for w in inv.warnings)


def test_names_from_the_tree_are_not_markup(tmp_path: Path) -> None:
    root = gpu_less_vm(tmp_path / "t")
    _replace(root, "proc/sys/kernel/hostname").write_text("[/x] [bold]evil\n")
    r = aiplat("node", "inventory", "--root", str(root))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "host [/x] [bold]evil" in r.stdout


def test_control_characters_from_the_tree_do_not_reach_the_terminal(tmp_path: Path) -> None:
    root = gpu_less_vm(tmp_path / "t")
    _replace(root, "proc/sys/kernel/hostname").write_text("evil\x1b]0;PWNED\x07\x1b[2J\n")
    r = aiplat("node", "inventory", "--root", str(root))
    assert r.returncode == 0 and "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert "host evil\\x1b]0;PWNED\\x07\\x1b[2J" in r.stdout
    data = json.loads(aiplat("node", "inventory", "--root", str(root), "-o", "json").stdout)
    assert data["host"]["hostname"] == "evil\x1b]0;PWNED\x07\x1b[2J"  # the data stays as read


def test_a_directory_of_more_entries_than_any_host_is_read_that_far(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aiplat.node import tree as tree_mod

    monkeypatch.setattr(tree_mod, "MAX_ENTRIES", 10)
    root = tmp_path / "t"
    (root / "d").mkdir(parents=True)
    for i in range(25):
        (root / "d" / f"e{i}").write_text("")
    t = Tree(root)
    assert len(t.entries(root / "d")) == 10 and len(t.glob(root / "d", "e*")) == 10
    assert "more than 10 entries" in t.warnings[0] and "more than 10 matches" in t.warnings[1]


# renameat2(RENAME_EXCHANGE) swaps a directory and a link in one step, as a hostile recorder
# racing the reader would (issue #38): glibc 2.28 and Linux 3.15 have it
_SWAPPER = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = (p.encode() for p in sys.argv[1:3])
print("swapping", flush=True)
while True:
    if libc.renameat2(-100, a, -100, b, 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
        sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))
"""
HAS_RENAMEAT2 = sys.platform == "linux" and hasattr(ctypes.CDLL(None), "renameat2")
TRIES = 4000


@pytest.fixture
def swapped_tree(tmp_path: Path) -> Iterator[Path]:
    """A tree whose proc/driver a child process keeps swapping with a link to a directory
    outside the tree that holds the same file names with the host's secret."""
    if not HAS_RENAMEAT2:
        pytest.skip("renameat2 is Linux's (glibc 2.28+)")
    root = tmp_path / "t"
    (root / "proc/driver/nvidia").mkdir(parents=True)
    (root / "proc/driver/nvidia/version").write_text("NVRM version: inside\n")
    outside = tmp_path / "outside"
    (outside / "nvidia").mkdir(parents=True)
    (outside / "nvidia/version").write_text(f"{MARKER}\n")
    (root / "proc/driver_alt").symlink_to(outside)
    swapper = subprocess.Popen([sys.executable, "-c", _SWAPPER, str(root / "proc/driver"),
                                str(root / "proc/driver_alt")], stdout=subprocess.PIPE,
                               text=True)
    try:
        assert swapper.stdout is not None and swapper.stdout.readline() == "swapping\n"
        yield root
        assert swapper.poll() is None, "the swapper stopped: the race was not run"
    finally:
        swapper.kill()
        swapper.wait()
        if swapper.stdout is not None:
            swapper.stdout.close()


def test_a_directory_swapped_for_a_link_mid_read_never_leaks(swapped_tree: Path) -> None:
    """inputs.read_in_tree checked the realpath, then opened the path: a swap in between read
    the outside file (1 `node inventory --root` in 60). Each read is now a walk of directory
    descriptors that never follows a link it has not checked: over thousands of tries every
    answer is the tree's file, a refusal or a miss, never the host's."""
    root = swapped_tree
    answers: set[str] = set()
    for _ in range(TRIES):
        try:
            data = inputs.read_in_tree(root, root / "proc/driver/nvidia/version")
        except InputError as e:
            assert MARKER not in str(e)
            answers.add("refused")
        except OSError:  # missing, or swapped mid-lookup once too often
            answers.add("missing")
        else:
            assert MARKER not in data.decode(), "read the file outside the tree"
            answers.add("read")
    assert "read" in answers


def test_tree_readers_never_list_or_read_through_a_swapped_link(swapped_tree: Path) -> None:
    root = swapped_tree
    for _ in range(TRIES // 4):
        tree = Tree(root)
        text = tree.text(tree.path("/proc/driver/nvidia/version"))
        names = [p.name for p in tree.entries(tree.path("/proc/driver"))]
        found = tree.glob(tree.path("/proc/driver"), "nvidia/*")
        assert text is None or MARKER not in text
        assert names in ([], ["nvidia"]) and all(p.name == "version" for p in found)
        assert all(MARKER not in w for w in tree.warnings)
