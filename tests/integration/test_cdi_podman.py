"""`cdi generate` → `validate` → `verify` in real Podman containers, and broken specs caught.

Device nodes are made for the test with mknod in a temporary directory: character devices
with a major from the kernel's "local/experimental" ranges that no driver has registered
(checked against /proc/devices), so the nodes can be stat'ed and bound but never opened into
real hardware. Podman runs with runc and explicit rlimits (see PodmanOptions). Every staged
spec, container and the probe image are removed at the end.

Locally the tests skip without root/podman/runc/busybox-static; in CI (CI=true) they fail.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import need

from aiplat.devices import cdi, host
from aiplat.devices.verify import PodmanOptions, podman_missing, remove_image, verify_spec

pytestmark = pytest.mark.integration

OPTS = PodmanOptions(image=f"localhost/aiplat-cdi-probe-test:{os.getpid()}")
KIND = f"aiplat-test.example.com/acc{os.getpid()}"



def _free_major() -> int:
    used: set[int] = set()
    for line in Path("/proc/devices").read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            used.add(int(parts[0]))
    for major in [*range(60, 64), *range(120, 128), *range(240, 255)]:
        if major not in used:
            return major
    raise RuntimeError("no unregistered experimental major number")


@dataclass
class Lab:
    dir: Path
    major: int
    spec: dict[str, Any]
    spec_file: Path


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    reason = podman_missing(OPTS)
    need(reason)
    d = tmp_path_factory.mktemp("cdi")
    major = _free_major()
    for minor, mode in ((0, 0o660), (1, 0o640), (2, 0o666)):
        node = d / f"acc{minor}"
        os.mknod(node, 0o020000 | mode, os.makedev(major, minor))
        os.chmod(node, mode)  # umask-proof
    os.chown(d / "acc1", 0, 44)
    lib = d / "lib"
    lib.mkdir()
    (lib / "libacc.so.1").write_text("not a real library\n")
    chars = [host.parse_char_option(f"{KIND}={n}:/dev/acc{n}={d}/acc{n}") for n in (0, 1, 2)]
    specs = host.generate(chars=chars, env=["ACC_VISIBLE_DEVICES=all"],
                          mounts=[cdi.Mount(str(lib), "/usr/lib/acc")])
    spec = next(iter(specs.values()))
    spec_file = d / "acc.json"
    spec_file.write_text(cdi.dumps(spec))
    try:
        yield Lab(d, major, spec, spec_file)
    finally:
        remove_image(OPTS)
        leftovers = [p for p in Path(OPTS.stage_dir).glob(f"aiplat-verify-{os.getpid()}-*")]
        assert not leftovers, f"staged specs left behind: {leftovers}"


def _variant(lab: Lab, name: str, edit: Any) -> str:
    doc = copy.deepcopy(lab.spec)
    edit(doc)
    path = lab.dir / f"{name}.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _nodes(doc: dict[str, Any], device: str) -> list[dict[str, Any]]:
    d = next(x for x in doc["devices"] if x["name"] == device)
    nodes: list[dict[str, Any]] = d["containerEdits"]["deviceNodes"]
    return nodes


def test_generated_spec_validates_and_is_proven(lab: Lab) -> None:
    assert lab.spec["cdiVersion"] == "0.5.0"
    assert [d["name"] for d in lab.spec["devices"]] == ["0", "1", "2", "all"]
    node = _nodes(lab.spec, "1")[0]
    assert (node["major"], node["minor"], node["fileMode"], node["gid"]) == (
        lab.major, 1, 0o640, 44)
    assert cdi.validate_spec(lab.spec, str(lab.spec_file), host.RealHost()) == []

    v = verify_spec(str(lab.spec_file), OPTS)
    assert v.ok, "\n".join(f"{r.device}: {r.reason()}" for r in v.results)
    assert [r.device for r in v.results] == ["(no device)"] + [
        f"{KIND}={n}" for n in ("0", "1", "2", "all")]
    one = next(r for r in v.results if r.device.endswith("=1"))
    evidence = {c.what: c.evidence for c in one.checks}
    assert evidence["node /dev/acc1"].startswith(f"c {lab.major}:1 0640 0:44")
    assert evidence["env ACC_VISIBLE_DEVICES"] == "present"
    assert "ro" in evidence["mount /usr/lib/acc"].split(",")
    assert "none of 2 foreign nodes visible" in evidence["other devices absent"]
    every = next(r for r in v.results if r.device.endswith("=all"))
    assert {c.what for c in every.checks} >= {"node /dev/acc0", "node /dev/acc1",
                                              "node /dev/acc2"}


BROKEN: dict[str, tuple[Callable[[dict[str, Any]], Any], str, str]] = {
    # name: (edit, device that must fail, evidence fragment)
    "wrong-minor": (lambda d: _nodes(d, "0")[0].update(minor=2), "0",
                    "host {dir}/acc0 is c {major}:0"),
    # the runtime creates the node from the spec's numbers even without a host node
    "missing-node": (lambda d: _nodes(d, "2")[0].update(hostPath="{dir}/acc9"), "2",
                     "but host {dir}/acc9 is missing"),
    "leak": (lambda d: _nodes(d, "0").append(dict(_nodes(d, "1")[0])), "0",
             "leaked: /dev/acc1"),
    "writable-mount": (lambda d: d["containerEdits"]["mounts"][0].update(
        options=["nosuid", "nodev", "bind"]), "1", "writable"),
    "no-filemode": (lambda d: _nodes(d, "1")[0].pop("fileMode"), "1",
                    "grants more than the host's 0640"),
    # issue #20: leaks the /dev-only scan and a per-node cgroup check let through
    "host-dev-mounted": (lambda d: d["containerEdits"]["mounts"].append(
        {"hostPath": "/dev", "containerPath": "/hostdev", "options": ["ro", "bind"]}), "1",
        "host device nodes visible through mounts: /hostdev/"),
    "other-node-mounted": (lambda d: _edits(d, "0").setdefault("mounts", []).append(
        {"hostPath": "{dir}/acc1", "containerPath": "/opt/acc1", "options": ["ro", "bind"]}),
        "0", "/opt/acc1 (c {major}:1)"),
    "spec-level-wider-grant": (lambda d: (
        _nodes(d, "1")[0].update(permissions="r"),
        d["containerEdits"].setdefault("deviceNodes", []).append(
            {"path": "/dev/acc1", "hostPath": "{dir}/acc1", "permissions": "rw"})), "1",
        "c {major}:1 allows 'rw', the spec grants this device 'r'"),
}


def _edits(doc: dict[str, Any], device: str) -> dict[str, Any]:
    edits: dict[str, Any] = next(x for x in doc["devices"] if x["name"] == device)[
        "containerEdits"]
    return edits


@pytest.mark.parametrize("name", sorted(BROKEN), ids=str)
def test_broken_spec_is_caught_by_verify(lab: Lab, name: str) -> None:
    edit, device, fragment = BROKEN[name]

    def apply(doc: dict[str, Any]) -> None:
        edit(doc)
        text = json.dumps(doc).replace("{dir}", str(lab.dir))
        doc.clear()
        doc.update(json.loads(text))

    path = _variant(lab, name, apply)
    v = verify_spec(path, OPTS, devices=[device])
    assert not v.ok
    bad = next(r for r in v.results if r.device == f"{KIND}={device}")
    assert not bad.ok
    assert fragment.format(dir=lab.dir, major=lab.major) in bad.reason(), bad.reason()
    assert v.results[0].ok  # the no-device baseline is unaffected


def _run(args: list[str]) -> int:
    from aiplat.cli.main import main

    try:
        return int(main(args))
    except SystemExit as e:  # commands exit 1 on findings with sys.exit, as `plan` does
        return int(e.code or 0)


def test_cli_generate_write_validate_verify(lab: Lab, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from aiplat.cli.devices import cdi_group
    from aiplat.cli.main import cli

    added = "cdi" not in cli.commands
    cli.add_command(cdi_group)
    try:
        out_dir = tmp_path / "cdi"
        args = ["cdi", "generate", "--char", f"{KIND}=0:/dev/acc0={lab.dir}/acc0",
                "--char", f"{KIND}=1:/dev/acc1={lab.dir}/acc1", "--write", str(out_dir)]
        assert _run(args) == 0
        (written,) = out_dir.iterdir()
        assert written.stat().st_mode & 0o777 == 0o644
        assert _run([*args, "--dry-run"]) == 0
        assert "unchanged" in capsys.readouterr().out
        assert _run(["cdi", "validate", str(written)]) == 0
        assert "1 file(s) valid" in capsys.readouterr().out
        assert _run(["cdi", "verify", str(written), "--device", "1", "--image", OPTS.image,
                     "-o", "json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data[0]["ok"] and [r["ok"] for r in data[0]["results"]] == [True, True]
        # the qualified name podman --device takes names the same device
        assert _run(["cdi", "verify", str(written), "--device", f"{KIND}=1", "--image",
                     OPTS.image, "-o", "json"]) == 0
        again = json.loads(capsys.readouterr().out)
        assert [(r["device"], r["ok"]) for r in again[0]["results"]] == \
            [(r["device"], r["ok"]) for r in data[0]["results"]]
        assert _run(["cdi", "verify", str(written), "--device", f"{KIND}=7"]) == 2
        assert f"no device {KIND}=7" in capsys.readouterr().err
        broken = _variant(lab, "cli-wrong", lambda d: _nodes(d, "0")[0].update(minor=1))
        assert _run(["cdi", "verify", broken, "--device", "0", "--image", OPTS.image]) == 1
        assert "FAIL" in capsys.readouterr().out
        assert _run(["cdi", "validate", broken]) == 1
        assert _run(["cdi", "validate", str(lab.dir / "nope.json")]) == 2
    finally:
        if added:  # leave the registration alone once cli.main carries it
            cli.commands.pop("cdi", None)


def _nvidia_tree(root: Path, major: int) -> Path:
    """A driver root as the node inventory would describe it: two GPUs, GPU 1 in MIG mode
    with two 3g instances, control and UVM nodes, capability nodes and one library."""
    dev = root / "dev"
    (dev / "nvidia-caps").mkdir(parents=True)
    nodes = {"nvidia0": 0, "nvidia1": 1, "nvidiactl": 255, "nvidia-uvm": 254,
             "nvidia-caps/nvidia-cap21": 21, "nvidia-caps/nvidia-cap22": 22,
             "nvidia-caps/nvidia-cap30": 30, "nvidia-caps/nvidia-cap31": 31}
    for name, minor in nodes.items():
        mode = 0o444 if "caps" in name else 0o666
        os.mknod(dev / name, 0o020000 | mode, os.makedev(major, minor))
        os.chmod(dev / name, mode)
    caps = root / "proc" / "driver" / "nvidia-caps"
    caps.mkdir(parents=True)
    (caps / "mig-minors").write_text("gpu1/gi1/access 21\ngpu1/gi1/ci0/access 22\n"
                                     "gpu1/gi2/access 30\ngpu1/gi2/ci0/access 31\n")
    lib = root / "usr" / "lib" / "x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libcuda.so.550.54.15").write_text("stand-in\n")
    inventory = root / "inventory.json"
    inventory.write_text(json.dumps({"gpus": [
        {"index": 0, "uuid": "GPU-0a0a0a0a-1111-2222-3333-444444444444", "minor": 0},
        {"index": 1, "uuid": "GPU-1b1b1b1b-1111-2222-3333-444444444444", "minor": 1,
         "mig": [{"index": 0, "uuid": "MIG-2c2c2c2c-1111-2222-3333-444444444444", "gi": 1,
                  "ci": 0, "profile": "3g.40gb"},
                 {"index": 1, "gi": 2, "ci": 0, "profile": "3g.40gb"}]}]}))
    return inventory


def test_nvidia_tree_generates_a_spec_podman_proves(lab: Lab, tmp_path: Path) -> None:
    root = tmp_path / "driver-root"
    inventory = _nvidia_tree(root, lab.major)
    gpus = host.gpus_from_inventory(host.read_json(str(inventory)), str(inventory))
    specs = host.generate(str(root), gpus=gpus, ldcache={
        "libcuda.so.1": "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"})
    doc = specs["aiplat-nvidia.com-gpu.json"]
    names = [d["name"] for d in doc["devices"]]
    assert names == ["0", "GPU-0a0a0a0a-1111-2222-3333-444444444444", "1",
                     "GPU-1b1b1b1b-1111-2222-3333-444444444444", "1:0",
                     "MIG-2c2c2c2c-1111-2222-3333-444444444444", "1:1", "all"]
    mig0 = _nodes(doc, "1:0")
    assert [n["path"] for n in mig0] == ["/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap21",
                                         "/dev/nvidia-caps/nvidia-cap22"]
    assert mig0[0]["hostPath"] == f"{root}/dev/nvidia1"
    mount = doc["containerEdits"]["mounts"][0]
    assert mount["options"] == ["ro", "nosuid", "nodev", "bind"]
    assert mount["hostPath"].startswith(str(root))
    assert [n["path"] for n in doc["containerEdits"]["deviceNodes"]] == [
        "/dev/nvidiactl", "/dev/nvidia-uvm"]
    spec_file = tmp_path / "nvidia.json"
    spec_file.write_text(cdi.dumps(doc))
    assert cdi.validate_spec(doc, str(spec_file), host.RealHost()) == []
    v = verify_spec(str(spec_file), OPTS)
    assert v.ok, "\n".join(f"{r.device}: {r.reason()}" for r in v.results)
    gpu0 = next(r for r in v.results if r.device == "nvidia.com/gpu=0")
    assert "none of 1 foreign nodes visible" in {c.what: c.evidence
                                                 for c in gpu0.checks}["other devices absent"]


def test_nvidia_hooks_run_at_container_creation(lab: Lab, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """With the toolkit's hook binary under the root, the spec carries nvidia-ctk's
    createContainer hooks, and runc really runs them (a stand-in binary logs its arguments)."""
    root = tmp_path / "driver-root"
    inventory = _nvidia_tree(root, lab.major)
    log = tmp_path / "hook.log"
    hook = root / "usr" / "bin" / "nvidia-cdi-hook"
    hook.parent.mkdir(parents=True)
    hook.write_text(f'#!/bin/sh\ncat > /dev/null\necho "$*" >> {log}\n')
    hook.chmod(0o755)
    status = root / "var/lib/dpkg/status"  # toolkit 1.20: its hook binary knows every hook
    status.parent.mkdir(parents=True)
    status.write_text("Package: nvidia-container-toolkit-base\nStatus: install ok installed\n"
                      "Version: 1.20.2-1\n")
    gpus = host.gpus_from_inventory(host.read_json(str(inventory)), str(inventory))
    specs = host.generate(str(root), gpus=gpus, ldcache={
        "libcuda.so.1": "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"})
    doc = specs["aiplat-nvidia.com-gpu.json"]
    assert doc["containerEdits"]["hooks"] == [
        {"hookName": "createContainer", "path": str(hook),
         "args": ["nvidia-cdi-hook", "create-symlinks", "--link",
                  "libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so", "--link",
                  "libcuda.so.550.54.15::/usr/lib/x86_64-linux-gnu/libcuda.so.1"],
         "env": ["NVIDIA_CTK_DEBUG=false"]},
        {"hookName": "createContainer", "path": str(hook),
         "args": ["nvidia-cdi-hook", "enable-cuda-compat", "--host-driver-version=550.54.15"],
         "env": ["NVIDIA_CTK_DEBUG=false"]},
        {"hookName": "createContainer", "path": str(hook),
         "args": ["nvidia-cdi-hook", "update-ldcache", "--folder", "/usr/lib/x86_64-linux-gnu"],
         "env": ["NVIDIA_CTK_DEBUG=false"]},
        {"hookName": "createContainer", "path": str(hook),
         "args": ["nvidia-cdi-hook", "disable-device-node-modification"],
         "env": ["NVIDIA_CTK_DEBUG=false"]},
        {"hookName": "createContainer", "path": str(hook),
         "args": ["nvidia-cdi-hook", "update-application-profile"],
         "env": ["NVIDIA_CTK_DEBUG=false"]}]
    spec_file = tmp_path / "nvidia.json"
    spec_file.write_text(cdi.dumps(doc))
    assert cdi.validate_spec(doc, str(spec_file), host.RealHost()) == []
    v = verify_spec(str(spec_file), OPTS)
    assert v.ok, "\n".join(f"{r.device}: {r.reason()}" for r in v.results)
    calls = log.read_text().splitlines()
    # Each container started with a device ran both hooks, in the spec's order; the baseline
    # container without a device ran none.
    with_device = [r for r in v.results if r.device != "(no device)"]
    assert len(with_device) == 8 and len(calls) == 5 * len(with_device)
    assert calls[:5] == [
        "create-symlinks --link libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so --link "
        "libcuda.so.550.54.15::/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "enable-cuda-compat --host-driver-version=550.54.15",
        "update-ldcache --folder /usr/lib/x86_64-linux-gnu",
        "disable-device-node-modification", "update-application-profile"]
    args = ["cdi", "generate", "--root", str(root), "--inventory", str(inventory), "-o", "yaml"]
    assert _run(args) == 0
    assert "warning" not in capsys.readouterr().err
    status.unlink()  # no toolkit version: only the hooks every hook binary knows, and why
    assert _run(args) == 0
    assert "Toolkit's version is unknown" in capsys.readouterr().err
    hook.chmod(0o644)  # a hook that cannot run: validation says so before any container does
    found = cdi.validate_spec(doc, str(spec_file), host.RealHost())
    assert any("hooks[0].path" in f.field and "not executable" in f.message for f in found)
    assert _run(args) == 0  # and generate leaves the hooks out, saying why
    out = capsys.readouterr()
    assert "hookName" not in out.out and "warning: no nvidia-cdi-hook or nvidia-ctk" in out.err


def test_amd_and_rdma_tree_generates_specs_podman_proves(lab: Lab, tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "dev" / "dri").mkdir(parents=True)
    (root / "dev" / "infiniband").mkdir()
    for rel, minor in (("kfd", 100), ("dri/renderD128", 128), ("dri/renderD129", 129),
                       ("infiniband/uverbs0", 192), ("infiniband/uverbs1", 193),
                       ("infiniband/rdma_cm", 58)):
        os.mknod(root / "dev" / rel, 0o020000 | 0o660, os.makedev(lab.major, minor))
    gpus = [host.GpuIdentity(i, "", 0, vendor="amd", render_node=f"renderD{128 + i}")
            for i in (0, 1)]
    specs = host.generate(str(root), gpus=gpus)
    assert sorted(specs) == ["aiplat-amd.com-gpu.json", "aiplat-rdma.aiplat.io-hca.json"]
    amd, rdma = specs["aiplat-amd.com-gpu.json"], specs["aiplat-rdma.aiplat.io-hca.json"]
    assert [n["path"] for n in amd["containerEdits"]["deviceNodes"]] == ["/dev/kfd"]
    assert [d["name"] for d in rdma["devices"]] == ["uverbs0", "uverbs1", "all"]
    assert rdma["cdiVersion"] == "0.5.0"  # hostPath (the tree) needs 0.5.0
    for name, doc in specs.items():
        path = tmp_path / name
        path.write_text(cdi.dumps(doc))
        assert cdi.validate_spec(doc, str(path), host.RealHost()) == []
        v = verify_spec(str(path), OPTS)
        assert v.ok, "\n".join(f"{r.device}: {r.reason()}" for r in v.results)


def test_spec_char_devices_generate_and_verify(lab: Lab, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    from aiplat.cli.devices import cdi_group
    from aiplat.cli.main import cli
    from aiplat.spec import example_text

    doc = yaml.safe_load(example_text())
    doc["pools"][0]["node"]["charDevices"] = [
        {"kind": KIND, "name": "fpga0", "paths": ["/dev/fpga0"]},
        {"kind": KIND, "name": "fpga1", "paths": ["/dev/fpga1", "/dev/fpga-ctl"]}]
    spec = tmp_path / "platform.yaml"
    spec.write_text(yaml.safe_dump(doc))
    root = tmp_path / "root"
    (root / "dev").mkdir(parents=True)
    for name, minor in (("fpga0", 10), ("fpga1", 11), ("fpga-ctl", 12)):
        os.mknod(root / "dev" / name, 0o020000 | 0o600, os.makedev(lab.major, minor))
    added = "cdi" not in cli.commands
    cli.add_command(cdi_group)
    try:
        out = tmp_path / "cdi"
        assert _run(["cdi", "generate", "--root", str(root), "--spec", str(spec),
                     "--write", str(out)]) == 0
        (written,) = out.iterdir()
        made = json.loads(written.read_text())
        assert [d["name"] for d in made["devices"]] == ["fpga0", "fpga1", "all"]
        assert _run(["cdi", "verify", str(written), "--image", OPTS.image]) == 0
        assert capsys.readouterr().out.count(" pass ") == 4
        assert _run(["cdi", "generate", "--spec", str(spec), "--pool", "nope"]) == 2
    finally:
        if added:  # leave the registration alone once cli.main carries it
            cli.commands.pop("cdi", None)
