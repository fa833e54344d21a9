"""The NVIDIA driver files nvidia-ctk mounts, found under a fake driver root."""

from __future__ import annotations

from pathlib import Path

from aiplat.devices import host
from aiplat.devices import nvidia_files as nvf

V = "550.54.15"
LIB = "/usr/lib/x86_64-linux-gnu"


def driver_root(root: Path) -> dict[str, str]:
    """Files of driver 550.54.15 and the linker cache that names them (soname → path)."""
    def put(rel: str, text: str = "") -> Path:
        p = root / rel.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return p

    put("/proc/driver/nvidia/version", f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {V}  "
        "Thu Feb 22 01:44:30 UTC 2024\nGCC version:  gcc version 12.2.0\n")
    put("/proc/devices", "Character devices:\n  1 mem\n195 nvidia\n195 nvidiactl\n"
        "508 nvidia-uvm\n511 nvidia-caps\n\nBlock devices:\n  8 sd\n")
    cache = {}
    for lib in ("libcuda", "libnvidia-ml", "libnvidia-encode", "libnvcuvid", "libEGL_nvidia",
                "libGLX_nvidia", "libnvoptix", "libnvidia-rtcore", "libnvidia-ngx",
                "libnvidia-pkcs11", "libnvidia-opticalflow"):
        put(f"{LIB}/{lib}.so.{V}")
        (root / f"{LIB.lstrip('/')}/{lib}.so.1").symlink_to(f"{lib}.so.{V}")
        cache[f"{lib}.so.1"] = f"{LIB}/{lib}.so.1"
    put(f"{LIB}/vdpau/libvdpau_nvidia.so.{V}")
    put(f"{LIB}/libfoo.so.1.2.3")  # not the driver's: another version suffix
    cache["libfoo.so.1"] = f"{LIB}/libfoo.so.1.2.3"
    put(f"/lib/firmware/nvidia/{V}/gsp_ga10x.bin")
    put(f"/lib/firmware/nvidia/{V}/gsp_tu10x.bin")
    put("/etc/vulkan/icd.d/nvidia_icd.json", "{}")
    put("/usr/share/glvnd/egl_vendor.d/10_nvidia.json", "{}")
    put("/usr/share/nvidia/nvoptix.bin")
    put("/run/nvidia-persistenced/socket")
    (root / "tmp/nvidia-mps").mkdir(parents=True)
    return cache


def test_version_libraries_at_their_files_firmware_configs_and_sockets(tmp_path: Path) -> None:
    cache = driver_root(tmp_path)
    root = str(tmp_path)
    assert nvf.driver_version(root, cache) == V
    libs = nvf.driver_libraries(root, cache, V)
    assert f"{LIB}/libcuda.so.{V}" in libs and f"{LIB}/libcuda.so.1" not in libs
    assert f"{LIB}/vdpau/libvdpau_nvidia.so.{V}" in libs
    assert {p.rsplit("/", 1)[1].split(".so")[0] for p in libs} >= {
        "libnvidia-encode", "libnvcuvid", "libEGL_nvidia", "libGLX_nvidia", "libnvoptix",
        "libnvidia-rtcore", "libnvidia-ngx", "libnvidia-pkcs11", "libnvidia-opticalflow",
        "libvdpau_nvidia"}
    assert not [p for p in libs if "libfoo" in p]
    assert nvf.firmware(root, V) == [f"/lib/firmware/nvidia/{V}/gsp_ga10x.bin",
                                     f"/lib/firmware/nvidia/{V}/gsp_tu10x.bin"]
    assert nvf.existing(root, nvf.GRAPHICS + nvf.IPC) == [
        "/usr/share/glvnd/egl_vendor.d/10_nvidia.json", "/usr/share/nvidia/nvoptix.bin",
        "/etc/vulkan/icd.d/nvidia_icd.json", "/run/nvidia-persistenced/socket",
        "/tmp/nvidia-mps"]


def test_version_from_libcuda_without_the_proc_file(tmp_path: Path) -> None:
    cache = driver_root(tmp_path)
    (tmp_path / "proc/driver/nvidia/version").unlink()
    assert nvf.driver_version(str(tmp_path), cache) == V
    assert nvf.driver_version(str(tmp_path), {}) is None


def test_dynamic_majors_come_from_proc_devices(tmp_path: Path) -> None:
    driver_root(tmp_path)
    majors = nvf.proc_devices(str(tmp_path))
    assert majors["nvidia-uvm"] == 508 and majors["nvidia-caps"] == 511 and "sd" not in majors
    assert nvf.registered_major("/dev/nvidia-uvm-tools", majors) == 508
    assert nvf.registered_major("/dev/nvidia-caps/nvidia-cap21", majors) == 511
    assert nvf.registered_major("/dev/nvidiactl", majors) is None


def test_pci_bus_ids_are_normalised() -> None:
    assert host.pci_bus_id("00000000:17:00.0") == "0000:17:00.0"
    assert host.pci_bus_id("0000:AB:00.1") == "0000:ab:00.1"
    assert host.pci_bus_id("nope") == ""


def test_hooks_follow_what_the_installed_toolkit_knows(tmp_path: Path) -> None:
    hook = tmp_path / "usr/bin/nvidia-cdi-hook"
    hook.parent.mkdir(parents=True)
    hook.write_text("#!/bin/sh\n")
    hook.chmod(0o755)
    mounts = [host.Mount(f"{tmp_path}{LIB}/libcuda.so.{V}", f"{LIB}/libcuda.so.{V}")]

    def names(toolkit: tuple[int, int, int] | None) -> list[str]:
        return [h.args[1] for h in host.nvidia_hooks(str(tmp_path), mounts, V, {}, toolkit)]

    assert names(None) == ["create-symlinks", "update-ldcache"]  # unknown: 1.16's hooks
    assert names((1, 17, 8)) == ["create-symlinks", "update-ldcache"]
    assert names((1, 18, 0)) == ["create-symlinks", "enable-cuda-compat", "update-ldcache",
                                 "disable-device-node-modification"]
    assert names((1, 20, 2))[-1] == "update-application-profile"
    status = tmp_path / "var/lib/dpkg/status"
    status.parent.mkdir(parents=True)
    status.write_text("Package: nvidia-container-toolkit\nStatus: deinstall ok config-files\n"
                      "Version: 1.14.0-1\n\nPackage: nvidia-container-toolkit-base\n"
                      "Status: install ok installed\nVersion: 1.18.1-1\n")
    assert host.toolkit_version(str(tmp_path)) == (1, 18, 1)
