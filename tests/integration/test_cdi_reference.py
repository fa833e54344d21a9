"""`aiplat cdi validate` against the CDI reference loader itself, verdict for verdict.

The oracle is ``cdi-oracle`` (``aiplat.devices.oracles``): cdi.ReadSpec of the pinned
``tags.cncf.io/container-device-interface``, built from Go modules. On each file aiplat's
verdict (any ``spec``-class error) must equal the loader's (rejects or not); findings of the
``host-check`` class are aiplat's deliberate strictness and never count. Sources:

- the specs in the CDI module's own Go tests (pkg/cdi/*_test.go) and nvidia-ctk's golden
  specs (cmd/nvidia-ctk/cdi/generate, pkg/nvcdi, the installer), read from the Go module cache;
- aiplat's own example files (tests/data/cdi) and every spec ``aiplat cdi generate`` writes
  for a fake driver root (GPUs, MIG devices, generic devices);
- 5,000 hypothesis-mutated specs (fixed seed), all checked by one oracle process.

Locally the tests skip when Go or the oracle is missing; in CI (CI=true) they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml
from cdi_specs import mutated_specs, nvidia_root, upstream_specs
from conftest import need
from hypothesis import HealthCheck, given, seed, settings

from aiplat.devices import cdi, host, oracles
from aiplat.errors import InputError

pytestmark = pytest.mark.integration
DATA = Path(__file__).parents[1] / "data" / "cdi"
CTK_TESTS = ["cmd/nvidia-ctk/cdi/generate/generate_test.go", "pkg/nvcdi/spec/spec_test.go",
             "pkg/nvcdi/lib-imex_test.go", "cmd/nvidia-ctk-installer/toolkit/toolkit_test.go"]




@pytest.fixture(scope="module")
def oracle() -> Path:
    try:
        return oracles.locate()
    except InputError as e:
        need(str(e))
        raise


def _aiplat_rejects(file: str) -> list[str]:
    _doc, found = host.check_spec_file(file, None)
    return [str(f) for f in cdi.spec_errors(found)]


def _disagreements(oracle: Path, files: Iterable[Path]) -> list[str]:
    files = [str(f) for f in files]
    ref = oracles.reference_verdicts(files, oracle)
    out = []
    for f in files:
        ours = _aiplat_rejects(f)
        if bool(ours) == ref[f].ok:
            text = Path(f).read_text()[:600]
            out.append(f"{f}: reference {'accepts' if ref[f].ok else 'rejects: ' + ref[f].error}"
                       f"; aiplat {'rejects: ' + '; '.join(ours) if ours else 'accepts'}\n"
                       f"{text}")
    return out


def _write(dir_: Path, specs: dict[str, str], suffix: str = ".yaml") -> list[Path]:
    out = []
    for i, text in enumerate(specs.values()):
        p = dir_ / f"{i:05d}{suffix}"
        p.write_text(text)
        out.append(p)
    return out


def test_reference_fixtures_and_nvidia_golden_specs(oracle: Path, tmp_path: Path) -> None:
    try:
        cdi_dir = oracles.module_source(oracles.MODULE, oracles.pinned())
        ctk_dir = oracles.module_source(*oracles.NVIDIA_CTK)
    except InputError as e:
        need(str(e))
    ours = upstream_specs(cdi_dir, sorted(str(p.relative_to(cdi_dir))
                                          for p in (cdi_dir / "pkg").rglob("*_test.go")))
    ctk = upstream_specs(ctk_dir, CTK_TESTS)
    assert len(ours) >= 20 and len(ctk) >= 8  # the fixtures are there, not silently gone
    files = _write(tmp_path, {**ours, **ctk})
    assert _disagreements(oracle, files) == []


CASES: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parents[1] / "fixtures" / "cdi_cases.yaml").read_text())


def test_issue_cases_have_the_stated_reference_verdict(oracle: Path, tmp_path: Path) -> None:
    files = {}
    for c in CASES:
        p = tmp_path / (c["name"] + c.get("suffix", ".yaml"))
        p.write_text(c["text"])
        files[str(p)] = c
    ref = oracles.reference_verdicts(list(files), oracle)
    wrong = [f"{c['name']}: stated {c['reference']}, loader says "
             f"{'accept' if ref[f].ok else 'reject: ' + ref[f].error}"
             for f, c in files.items() if ref[f].ok != (c["reference"] == "accept")]
    assert wrong == []
    assert _disagreements(oracle, [Path(f) for f in files]) == []


def test_aiplat_examples_agree(oracle: Path) -> None:
    files = [p for p in sorted(DATA.rglob("*")) if p.suffix in (".json", ".yaml")]
    assert len(files) >= 30
    assert _disagreements(oracle, files) == []


def test_every_generated_spec_loads(oracle: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        need("mknod of the fake driver root needs root")
    root, gpus = nvidia_root(tmp_path / "root")
    (root / "dev/acc0").write_text("")
    os.unlink(root / "dev/acc0")
    os.mknod(root / "dev/acc0", 0o020666, os.makedev(240, 0))
    for rel, major, minor in (("dev/kfd", 241, 0), ("dev/dri/renderD128", 226, 128),
                              ("dev/infiniband/uverbs0", 231, 192),
                              ("dev/infiniband/rdma_cm", 10, 58)):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mknod(root / rel, 0o020666, os.makedev(major, minor))
    inv = host.gpus_from_inventory({"gpus": [*gpus, {"index": 0, "uuid": "", "minor": 0,
                                                     "vendor": "amd"}]})
    specs = host.generate(str(root), gpus=inv, chars=[
        host.parse_char_option("example.com/acc=0:/dev/acc0")], env=["A=1"], ldcache={})
    assert {d["kind"] for d in specs.values()} == {"nvidia.com/gpu", "example.com/acc",
                                                   "amd.com/gpu", "rdma.aiplat.io/hca"}
    out = tmp_path / "specs"
    out.mkdir()
    files = []
    for name, doc in specs.items():
        for fmt in ("json", "yaml"):
            p = out / (name.removesuffix(".json") + "." + fmt)
            p.write_text(cdi.dumps(doc, fmt))
            files.append(p)
            assert not _aiplat_rejects(str(p))
    assert _disagreements(oracle, files) == []


MUTATED = 5000


def test_mutated_specs_agree(oracle: Path, tmp_path: Path) -> None:
    """5,000 mutated specs from a fixed seed; one oracle process checks them all."""
    made: list[tuple[str, str]] = []

    @seed(20)
    @settings(max_examples=MUTATED, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(mutated_specs())
    def collect(spec: tuple[str, str]) -> None:
        made.append(spec)

    collect()
    files = []
    for i, (suffix, text) in enumerate(made):
        p = tmp_path / f"{i:05d}{suffix}"
        p.write_text(text)
        files.append(p)
    assert len(files) >= MUTATED
    rejected = sum(not v.ok for v in oracles.reference_verdicts([str(f) for f in files],
                                                                 oracle).values())
    assert 0.2 * len(files) < rejected < 0.95 * len(files)  # both verdicts well exercised
    bad = _disagreements(oracle, files)
    assert bad == [], f"{len(bad)} disagreements, first:\n" + "\n".join(bad[:5])


def _ctk_default_golden(ctk_dir: Path, driver_root: str) -> dict[str, Any]:
    """nvidia-ctk's expected spec of its 'default' generate case (mock NVML, one GPU,
    driver 999.88.77 under testdata/lookup/rootfs-1), with the driver root filled in."""
    text = next(t for t in upstream_specs(ctk_dir, [CTK_TESTS[0]]).values())
    doc: dict[str, Any] = yaml.safe_load(text.replace("/fake/driverRoot", driver_root))
    return doc


def test_generated_gpu_spec_matches_nvidia_ctk_for_the_same_fake_root(
        oracle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same driver files as nvidia-ctk's rootfs-1 fixture (and toolkit 1.20.2
    installed); aiplat's spec has the env, the library mounts at their versioned files and
    the hooks of nvidia-ctk's golden spec."""
    if os.geteuid() != 0:
        need("mknod of the fake driver root needs root")
    try:
        ctk_dir = oracles.module_source(*oracles.NVIDIA_CTK)
    except InputError as e:
        need(str(e))
    root = tmp_path / "rootfs-1"
    lib = root / "lib/x86_64-linux-gnu"
    (lib / "vdpau").mkdir(parents=True)
    (lib / "libcuda.so.999.88.77").write_text("")
    (lib / "libcuda.so.1").symlink_to("libcuda.so.999.88.77")
    (lib / "vdpau/libvdpau_nvidia.so.999.88.77").write_text("")
    (root / "dev").mkdir()
    os.mknod(root / "dev/nvidia0", 0o020666, os.makedev(195, 0))
    os.mknod(root / "dev/nvidiactl", 0o020666, os.makedev(195, 255))
    hook = root / "usr/bin/nvidia-cdi-hook"
    hook.parent.mkdir(parents=True)
    hook.write_text("#!/bin/sh\n")
    hook.chmod(0o755)
    _dpkg_toolkit(root, "1.20.2")
    monkeypatch.chdir(tmp_path)  # a relative root: the spec's host paths still absolute
    gpu = host.GpuIdentity(index=0, uuid="", minor=0)
    doc = host.generate("rootfs-1", gpus=[gpu], ldcache={
        "libcuda.so.1": "/lib/x86_64-linux-gnu/libcuda.so.1"})["aiplat-nvidia.com-gpu.json"]
    want = _ctk_default_golden(ctk_dir, str(root))
    ours, theirs = doc["containerEdits"], want["containerEdits"]
    assert ours["env"] == theirs["env"]
    lib_mounts = [m for m in theirs["mounts"] if ".so." in m["containerPath"]]
    assert [(m["hostPath"], m["containerPath"]) for m in ours["mounts"]] == [
        (m["hostPath"], m["containerPath"]) for m in lib_mounts]
    # the same hooks; rootfs-1's linker cache has no soname entries, ours does, so aiplat
    # adds libcuda.so.999.88.77::libcuda.so.1 (the live nvidia-ctk run below adds it too)
    assert [h["args"][1] for h in ours["hooks"]] == [h["args"][1] for h in theirs["hooks"]]
    assert [h["args"] for h in ours["hooks"][1:]] == [h["args"] for h in theirs["hooks"][1:]]
    assert set(theirs["hooks"][0]["args"]) <= set(ours["hooks"][0]["args"])
    assert all(m["hostPath"].startswith("/") for m in ours["mounts"])
    assert [n["hostPath"] for n in doc["devices"][0]["containerEdits"]["deviceNodes"]] == [
        str(root / "dev/nvidia0")]
    spec = tmp_path / "gpu.yaml"
    spec.write_text(cdi.dumps(doc, "yaml"))
    assert _disagreements(oracle, [spec]) == []


def test_dri_nodes_and_registered_majors(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        need("mknod of the fake driver root needs root")
    root, gpus = nvidia_root(tmp_path / "root")
    dri = root / "dev/dri"
    (dri / "by-path").mkdir(parents=True)
    os.mknod(dri / "card1", 0o020660, os.makedev(226, 1))
    os.mknod(dri / "renderD129", 0o020666, os.makedev(226, 129))
    (dri / "by-path/pci-0000:17:00.0-card").symlink_to("../card1")
    (dri / "by-path/pci-0000:17:00.0-render").symlink_to("../renderD129")
    # the driver now has nvidia-uvm at 511: the stale node's 509 must not reach the spec
    (root / "proc/devices").write_text("Character devices:\n195 nvidia-frontend\n"
                                       "511 nvidia-uvm\n510 nvidia-caps\n")
    gpus[0]["pci"] = "00000000:17:00.0"
    inv = host.gpus_from_inventory({"gpus": gpus})
    doc = host.generate(str(root), gpus=inv, ldcache={})["aiplat-nvidia.com-gpu.json"]
    dev0 = next(d for d in doc["devices"] if d["name"] == "0")["containerEdits"]
    assert [n["path"] for n in dev0["deviceNodes"]] == ["/dev/nvidia0", "/dev/dri/card1",
                                                        "/dev/dri/renderD129"]
    mig = next(d for d in doc["devices"] if d["name"] == "0:0")["containerEdits"]
    assert mig["deviceNodes"][0]["path"] == "/dev/nvidia0"
    assert all("/dev/dri" not in n["path"] for n in mig["deviceNodes"])
    uvm = [n for n in doc["containerEdits"]["deviceNodes"] if "uvm" in n["path"]]
    assert {n["major"] for n in uvm} == {511}
    assert {n["major"] for n in mig["deviceNodes"][1:]} == {510}


def _dpkg_toolkit(root: Path, version: str) -> None:
    status = root / "var/lib/dpkg/status"
    status.parent.mkdir(parents=True, exist_ok=True)
    status.write_text(f"Package: nvidia-container-toolkit-base\nStatus: install ok installed\n"
                      f"Version: {version}-1\n\n")


def _elf_driver_root(root: Path, version: str) -> None:
    """A driver root with real ELF libraries (gcc, each with its soname), a linker cache
    made by ``ldconfig -r`` and real character nodes: what nvidia-ctk's locators read."""
    lib = root / "usr/lib/x86_64-linux-gnu"
    (lib / "vdpau").mkdir(parents=True)
    src = root / "x.c"
    src.write_text("int x;\n")
    for name in ("libcuda", "libnvidia-ml", "libnvidia-encode", "libnvcuvid", "libEGL_nvidia",
                 "vdpau/libvdpau_nvidia"):
        subprocess.run(["gcc", "-shared", "-o", f"{lib}/{name}.so.{version}",
                        f"-Wl,-soname,{Path(name).name}.so.1", str(src)], check=True)
    (root / "etc").mkdir()
    (root / "etc/ld.so.conf").write_text("/usr/lib/x86_64-linux-gnu\n")
    subprocess.run(["ldconfig", "-r", str(root)], check=True)
    dev = root / "dev"
    dev.mkdir()
    for name, major, minor in (("nvidia0", 195, 0), ("nvidia1", 195, 1),
                               ("nvidiactl", 195, 255), ("nvidia-uvm", 509, 0),
                               ("nvidia-uvm-tools", 509, 1)):
        os.mknod(dev / name, 0o020666, os.makedev(major, minor))
        os.chmod(dev / name, 0o666)
    proc = root / "proc/driver/nvidia"
    proc.mkdir(parents=True)
    (proc / "version").write_text(f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {version}"
                                  "  Thu Feb 22 01:44:30 UTC 2024\n")
    hook = root / "usr/bin/nvidia-cdi-hook"
    hook.parent.mkdir(parents=True)
    hook.write_text("#!/bin/sh\n")
    hook.chmod(0o755)
    _dpkg_toolkit(root, "1.20.2")


def test_generated_gpu_spec_matches_nvidia_ctk_run_on_the_same_fake_root(
        oracle: Path, tmp_path: Path) -> None:
    """nvidia-ctk's own generator (pkg/nvcdi, DGX A100 NVML mock for two GPUs) and aiplat
    on one fake driver root: the same devices, nodes, env, library mounts and hooks, except
    for the differences listed."""
    if os.geteuid() != 0 or shutil.which("gcc") is None or shutil.which("ldconfig") is None:
        need("the ELF driver root needs root (mknod), gcc and ldconfig")
    try:
        ctk = oracles.build_ctk()
    except InputError as e:
        need(str(e))
    root = tmp_path / "root"
    _elf_driver_root(root, "550.54.15")
    inventory = tmp_path / "inventory.json"
    cp = subprocess.run([str(ctk), "-root", str(root), "-gpus", "2", "-inventory",
                         str(inventory)], capture_output=True, text=True, check=True)
    theirs: dict[str, Any] = yaml.safe_load(cp.stdout)
    gpus = host.gpus_from_inventory(host.read_json(str(inventory)))
    ours = host.generate(str(root), gpus=gpus)["aiplat-nvidia.com-gpu.json"]

    def devices(doc: dict[str, Any]) -> dict[str, list[str]]:
        return {d["name"]: [n["path"] for n in d["containerEdits"].get("deviceNodes", [])]
                for d in doc["devices"]}

    assert ours["cdiVersion"] == theirs["cdiVersion"] == "0.5.0"
    mine = devices(ours)
    assert {n: mine[n] for n in devices(theirs)} == devices(theirs)
    assert set(mine) - set(devices(theirs)) == {g.uuid for g in gpus}  # aiplat's UUID aliases
    o, t = ours["containerEdits"], theirs["containerEdits"]
    assert o["env"] == t["env"]
    assert sorted(n["path"] for n in o["deviceNodes"]) == sorted(
        n["path"] for n in t["deviceNodes"])
    void = "/var/run/nvidia-container-devices/void"  # nvidia-ctk's legacy-hook marker
    assert [m["containerPath"] for m in o["mounts"]] == [
        m["containerPath"] for m in t["mounts"] if m["containerPath"] != void]
    assert [h["args"] for h in o["hooks"]] == [h["args"] for h in t["hooks"]]
    # nvidia-ctk 1.20 adds apply-cuda-memory-limits per device; aiplat leaves it out
    assert {h["args"][1] for d in theirs["devices"]
            for h in d["containerEdits"].get("hooks", [])} == {"apply-cuda-memory-limits"}
    both = tmp_path / "specs"
    both.mkdir()
    (both / "ours.yaml").write_text(cdi.dumps(ours, "yaml"))
    (both / "theirs.yaml").write_text(cp.stdout)
    assert _disagreements(oracle, sorted(both.iterdir())) == []


def test_imex_channels_match_nvidia_ctk(oracle: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        need("mknod of the fake driver root needs root")
    try:
        ctk_dir = oracles.module_source(*oracles.NVIDIA_CTK)
    except InputError as e:
        need(str(e))
    root = tmp_path / "root"
    chan = root / "dev/nvidia-caps-imex-channels"
    chan.mkdir(parents=True)
    for i in (0, 1, 2047):
        os.mknod(chan / f"channel{i}", 0o020666, os.makedev(234, i))
    doc = host.generate(str(root))["aiplat-nvidia.com-imex-channel.json"]
    text = next(iter(upstream_specs(ctk_dir, ["pkg/nvcdi/lib-imex_test.go"]).values()))
    want = yaml.safe_load(text.replace("/fake/hostRoot", str(root)))
    assert [(d["name"], [(n["path"], n["hostPath"]) for n in d["containerEdits"]["deviceNodes"]])
            for d in doc["devices"]] == [
        (d["name"], [(n["path"], n["hostPath"]) for n in d["containerEdits"]["deviceNodes"]])
        for d in want["devices"]]
    assert doc["containerEdits"]["env"] == want["containerEdits"]["env"]
    assert (doc["kind"], doc["cdiVersion"]) == (want["kind"], want["cdiVersion"])
    spec = tmp_path / "imex.json"
    spec.write_text(cdi.dumps(doc))
    assert _disagreements(oracle, [spec]) == []
