"""Issue #38, red team round 2: numbers and names a recorded tree gives are parsed as what
the kernel writes (ASCII digits, hex with ``0x``, PCI addresses), and an entry that is not one
is skipped with a warning naming its path, never a traceback and never a wrong number.

``int()`` and ``str.isdigit()`` go by Unicode: ``'²'.isdigit()`` is True yet ``int('²')``
fails; ``int('٣')`` is 3. No kernel writes either.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiplat import inputs
from aiplat.cli.main import main
from aiplat.devices import nvidia_files as nvf
from aiplat.node.collect import collect_inventory
from fixtures.nodes import hgx_h100

GPU = "0000:19:00.0"  # the first GPU of hgx_h100
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a device node needs root")


def run(args: list[str]) -> int:
    try:
        return int(main(args))
    except SystemExit as e:
        return int(e.code or 0)


def _gpu(root: Path) -> Path:
    return (root / "sys/bus/pci/devices" / GPU).resolve()


def _junk_entry(root: Path) -> str:
    os.symlink(os.readlink(root / "sys/bus/pci/devices" / GPU), root / "sys/bus/pci/devices/junk")
    return "sys/bus/pci/devices/junk"


def _class(value: str, attr: str = "class") -> Callable[[Path], str]:
    def edit(root: Path) -> str:
        (_gpu(root) / attr).write_text(value + "\n")
        return str((_gpu(root) / attr).relative_to(root))
    return edit


def _numa_name(name: str) -> Callable[[Path], str]:
    def edit(root: Path) -> str:
        nodes = root / "sys/devices/system/node"
        os.rename(nodes / "node1", nodes / name)
        return f"sys/devices/system/node/{name}"
    return edit


def _group(name: str) -> Callable[[Path], str]:
    def edit(root: Path) -> str:
        link = _gpu(root) / "iommu_group"
        target = os.readlink(link)
        os.unlink(link)
        os.symlink(os.path.join(os.path.dirname(target), name), link)
        return str(link.relative_to(root))
    return edit


def _ib_port(root: Path) -> str:
    ports = root / "sys/class/infiniband/mlx5_0/ports"
    ports = ports if ports.exists() else (root / "sys/class/infiniband/mlx5_0").resolve() / "ports"
    os.rename(ports / "1", ports / "1²")
    return "ports/1²"


def _passwd(root: Path) -> str:
    with open(root / "etc/passwd", "a") as f:
        f.write("evil:x:1²:0::/:/bin/sh\nother:x:٣:0::/:/bin/sh\n")
    return "etc/passwd"


TREES: dict[str, tuple[Callable[[Path], str], bool]] = {
    # name: (how the tree is spoiled, whether a warning must name the path)
    "pci-entry-junk": (_junk_entry, True),
    "pci-class-0x": (_class("0x"), True),
    "pci-vendor-zz": (_class("zz", "vendor"), True),
    "pci-class-arabic-digits": (_class("0x٠٣٠٢٠٠"), True),
    "numa-node-superscript": (_numa_name("node1²"), True),
    "numa-node-arabic-digit": (_numa_name("node٣"), True),
    "iommu-group-superscript": (_group("5²"), True),
    "iommu-group-arabic-digit": (_group("٣"), True),
    "ib-port-superscript": (_ib_port, True),
    "passwd-uid-superscript": (_passwd, False),  # /etc/passwd is only a name lookup
}


@pytest.mark.parametrize("case", sorted(TREES), ids=str)
def test_an_entry_no_kernel_writes_is_a_warning_not_a_traceback(
        case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = hgx_h100(tmp_path / "root")
    spoil, warned = TREES[case]
    rel = spoil(root)
    assert run(["node", "inventory", "--root", str(root), "-o", "json"]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    inv = json.loads(out.out)
    assert any(g["address"] == GPU or g["kind"] == "gpu" for g in inv["pci"])
    if warned:
        assert any(rel in w for w in inv["warnings"]), inv["warnings"]
    assert run(["node", "check", "--root", str(root), "-o", "json"]) in (0, 1)
    assert "Traceback" not in capsys.readouterr().err


def test_a_number_in_other_scripts_digits_is_unknown_not_a_number(tmp_path: Path) -> None:
    root = hgx_h100(tmp_path / "root")
    _numa_name("node٣")(root)
    _group("٣")(root)
    inv = collect_inventory(root)
    assert [n.id for n in inv.host.numa] == [0]  # not node 3
    gpu = next(d for d in inv.pci if d.address == GPU)
    assert gpu.iommu_group is None


@pytest.mark.parametrize(("text", "base", "want"), [
    ("42", 10, 42), ("-1", 10, -1), ("007", 10, 7), ("²", 10, None), ("1²", 10, None),
    ("٣", 10, None), ("", 10, None), ("1_000", 10, None), (" 1", 10, None),
    ("9" * 21, 10, None), ("0x10de", 16, 0x10DE), ("10de", 16, 0x10DE), ("0x", 16, None),
    ("zz", 16, None), ("0x٠٣", 16, None), ("-0x1", 16, None),
])
def test_ascii_numbers(text: str, base: int, want: int | None) -> None:
    assert inputs.ascii_int(text, base) == want


def test_proc_devices_lines_no_kernel_writes_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/devices").write_text(
        "Character devices:\n  1 mem\n1² foo\n٣ bar\n195 nvidia\n\nBlock devices:\n8 sd\n")
    (tmp_path / "proc/misc").write_text(" 58 rdma_cm\n1² kvm\n٣ x\n")
    root = str(tmp_path)
    assert nvf.char_drivers(root) == {1: "mem", 195: "nvidia"}
    assert nvf.proc_devices(root) == {"mem": 1, "nvidia": 195}
    assert nvf.misc_devices(root) == {58: "rdma_cm"}


@ROOT_ONLY
def test_cdi_validate_on_a_tree_with_such_proc_devices(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/devices").write_text("Character devices:\n1² foo\n195 nvidia\n")
    (tmp_path / "proc/misc").write_text("1² kvm\n")
    (tmp_path / "dev").mkdir()
    os.mknod(tmp_path / "dev/nvidia0", 0o020666, os.makedev(195, 0))
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"cdiVersion": "0.5.0", "kind": "example.com/acc", "devices": [
        {"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}}]}))
    assert run(["cdi", "validate", "--root", str(tmp_path), str(spec)]) in (0, 1)
    assert "Traceback" not in capsys.readouterr().err


@ROOT_ONLY
def test_cdi_generate_skips_nodes_the_driver_does_not_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """/dev/infiniband/uverbs1² and /dev/nvidia-caps-imex-channels/channel1² (red team's
    g_sup tree) are no node a driver makes: not granted, and no traceback."""
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/devices").write_text("Character devices:\n231 infiniband_verbs\n"
                                           "195 nvidia\n510 nvidia-caps-imex-channels\n")
    for rel, major, minor in (("infiniband/uverbs0", 231, 192),
                              ("infiniband/uverbs1²", 231, 193),
                              ("nvidia-caps-imex-channels/channel0", 510, 0),
                              ("nvidia-caps-imex-channels/channel1²", 510, 1)):
        (tmp_path / "dev" / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mknod(tmp_path / "dev" / rel, 0o020666, os.makedev(major, minor))
    assert run(["cdi", "generate", "--root", str(tmp_path), "--kind", "rdma.aiplat.io/hca"]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "uverbs0" in out.out and "²" not in out.out
    assert run(["cdi", "generate", "--root", str(tmp_path), "--kind",
                "nvidia.com/imex-channel"]) == 0
    out = capsys.readouterr()
    assert "channel0" in out.out and "²" not in out.out


@pytest.mark.parametrize("fmt", ["table", "json", "yaml"])
def test_a_warning_quotes_the_trees_name_terminal_safe(
        fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An entry named with an escape sequence and a bidi override: the warning that names it
    shows them escaped in every format (YAML wrote U+202E as it is)."""
    root = hgx_h100(tmp_path / "root")
    devices = root / "sys/bus/pci/devices"
    os.symlink(os.readlink(devices / GPU), devices / "junk\x1b]0;PWN\x07\u202e")
    assert run(["node", "inventory", "--root", str(root), "-o", fmt]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\x07\u202e")
    text = "\n".join(json.loads(out)["warnings"]) if fmt == "json" else out
    assert "junk\\x1b]0;PWN\\x07\\u202e" in text


@pytest.mark.parametrize(("kind", "text", "words"), [
    ("smi-xml", '<nvidia_smi_log><gpu id="junk"><uuid>GPU-1</uuid></gpu></nvidia_smi_log>',
     "gpu[0] id 'junk' is not a PCI address"),
    ("smi-xml", '<nvidia_smi_log><gpu><pci><pci_bus_id>0000:1²:00.0</pci_bus_id></pci>'
     '</gpu></nvidia_smi_log>', "is not a PCI address"),
    ("lstopo", '<topology><object type="PCIDev" pci_busid="junk" pci_type="0302 [10de:2330]"/>'
     '</topology>', "pci_busid 'junk' is not a PCI address"),
    ("lstopo", '<topology><object type="PCIDev" pci_busid="0000:19:00.0" '
     'pci_type="zz [10de:2330]"/></topology>', "pci_type 'zz [10de:2330]'"),
])
def test_a_recorded_output_with_such_an_address_is_an_input_error(
        kind: str, text: str, words: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """nvidia-smi -q -x and lstopo recordings given with --from: a bus id or class that is not
    one is exit 2 naming the file and the element (was a ValueError traceback)."""
    root = hgx_h100(tmp_path / "root")
    f = tmp_path / "rec.xml"
    f.write_text(text)
    assert run(["node", "inventory", "--root", str(root), "--from", f"{kind}={f}"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and str(f) in err and words in err, err
