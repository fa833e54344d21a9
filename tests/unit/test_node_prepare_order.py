"""``node prepare`` in the order a real host needs (issue #42, item 3), and the owner switch
of ``kubernetes.components`` (issue #41): the rendered script's steps and commands, read as
text and by their position in it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from aiplat.node.prepare import plan_steps, render_script
from aiplat.spec import load_platform, parse_platform
from aiplat.spec.models import Platform

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES.parent))


def _platform(driver: str = "host", toolkit: str = "host", secure_boot: str = "required"
              ) -> Platform:
    doc = yaml.safe_load((FIXTURES / "platform-nodes.yaml").read_text())
    doc["kubernetes"]["components"] = {"driver": driver, "toolkit": toolkit}
    for pool in doc["pools"]:
        checks = pool["node"].setdefault("checks", {})
        if pool is doc["pools"][0] or checks.get("secureBoot") == "required":
            checks["secureBoot"] = secure_boot
    return parse_platform(yaml.safe_dump(doc), "platform-nodes.yaml")


def _script(platform: Platform, pool: str = "h100") -> str:
    return render_script(plan_steps(platform, pool), platform, pool, None)


def _at(script: str, needle: str) -> int:
    """Where ``needle`` first occurs as a command (comment lines skipped)."""
    offset = 0
    for line in script.splitlines(keepends=True):
        if not line.startswith("#") and needle in line:
            return offset + line.index(needle)
        offset += len(line)
    raise AssertionError(f"the script never runs {needle!r}")


def test_secure_boot_comes_before_any_driver_package_or_module() -> None:
    s = _script(_platform())
    key = _at(s, "openssl req -new -x509")
    signing = _at(s, "aiplat_write /etc/dkms/framework.conf.d/aiplat-signing.conf")
    enrol = _at(s, "mokutil --import")
    driver = _at(s, "apt-get install -y -q nvidia-driver-580-open")
    modprobe = _at(s, "modprobe nvidia;")
    assert key < signing < enrol < driver < modprobe


def test_mok_enrolment_is_non_interactive_with_a_password_hash_file() -> None:
    s = _script(_platform())
    imp = next(line for line in s.splitlines() if "mokutil --import" in line)
    assert "--hash-file /var/lib/aiplat/mok/enrol-password.hash" in imp
    # the hash is made from a password file fed on stdin, never a prompt or an argument
    assert ("cat /var/lib/aiplat/mok/enrol-password /var/lib/aiplat/mok/enrol-password | "
            "mokutil --generate-hash |") in s
    assert "--generate-hash=" not in s and "--root-pw" not in s
    # queued or enrolled: not imported again
    assert _at(s, "mokutil --test-key") < _at(s, "mokutil --import")


def test_nvidia_modules_wait_for_the_enrolment_instead_of_stopping_the_script() -> None:
    s = _script(_platform())
    gate = next(line for line in s.splitlines() if "modprobe nvidia;" in line)
    assert gate.startswith('if [ "${aiplat_mok_pending:-0}" = 1 ]; then')
    # a driver installed before the key is rebuilt, signed, once
    assert "|| dkms install --force nvidia/580.95.05" in s
    assert "-F signer nvidia" in s


def test_repositories_and_keys_come_before_the_packages() -> None:
    s = _script(_platform())
    for key in ("/etc/apt/keyrings/cuda-archive-keyring.gpg",
                "/etc/apt/keyrings/nvidia-container-toolkit.asc",
                "/etc/apt/keyrings/docker.asc",
                "/etc/apt/keyrings/kubernetes-apt-keyring.asc"):
        assert f"[signed-by={key}]" in s
        assert _at(s, f"aiplat_write {key} 0644") < _at(s, "apt-get update")
    assert "https://pkgs.k8s.io/core:/stable:/v1.34/deb/ /" in s
    assert "https://developer.download.nvidia.com/compute/cuda/repos/" in s
    assert "https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /" in s
    assert _at(s, "apt-get update") < _at(s, "apt-get install")
    assert "apt-key add" not in s and "trusted.gpg.d" not in s


def test_kernel_prerequisites_before_the_packages_and_persisted() -> None:
    s = _script(_platform())
    for cmd in ("swapoff -a", "aiplat_write /etc/fstab", "modprobe br_netfilter",
                "modprobe overlay", "aiplat_write /etc/modules-load.d/aiplat-kubernetes.conf",
                "aiplat_write /etc/sysctl.d/90-aiplat-kubernetes.conf", "sysctl --system"):
        assert _at(s, cmd) < _at(s, "apt-get install"), cmd
    assert "net.ipv4.ip_forward = 1" in s and "net.bridge.bridge-nf-call-iptables = 1" in s
    assert _at(s, "modprobe br_netfilter") < _at(s, "sysctl --system")


def test_step_order_host_owned() -> None:
    titles = [s.title for s in plan_steps(_platform(), "h100")]
    def index(prefix: str) -> int:
        return next(i for i, t in enumerate(titles) if t.startswith(prefix))
    order = ["check the operating system", "Secure Boot", "apt repositories",
             "kernel prerequisites", "NVIDIA driver 580", "NVIDIA Container Toolkit 1.18",
             "container runtime containerd", "Kubernetes node packages",
             "device node permissions", "kernel modules loaded", "persistence mode",
             "container runtime integration", "verify"]
    assert [index(t) for t in order] == sorted(index(t) for t in order), titles


def test_operator_owned_driver_installs_and_loads_nothing_of_it() -> None:
    # Secure Boot with the operator's driver is a spec error (issue #41): 'any' here.
    platform = _platform(driver="operator", secure_boot="any")
    steps = plan_steps(platform, "h100")
    s = render_script(steps, platform, "h100", None)
    assert "nvidia-driver-" not in s and "fabricmanager" not in s.replace(
        "fabric manager", "")
    assert "modprobe nvidia" not in s and "nvidia-persistenced" not in s
    assert "NVreg_" not in s and "cuda-archive-keyring" not in s and "dkms" not in s
    assert "\nnvidia\n" not in s  # not in modules-load.d either
    note = next(st for st in steps if st.title.startswith("NVIDIA driver: owned by the GPU"))
    assert note.commands == [] and "operator" in " ".join(note.notes)
    assert "# note: kubernetes.components.driver is operator" in s
    # the host still gets its toolkit, and the other modules
    assert "nvidia-container-toolkit" in s and "modprobe mlx5_ib" in s
    assert "--driver-root=/run/nvidia/driver" in s


def test_operator_owned_toolkit_configures_no_runtime() -> None:
    platform = _platform(toolkit="operator")
    steps = plan_steps(platform, "h100")
    s = render_script(steps, platform, "h100", None)
    assert "nvidia-ctk" not in s and "nvidia-container-toolkit" not in s
    assert "libnvidia-container" not in s
    assert any(st.title.startswith("NVIDIA Container Toolkit: owned by the GPU Operator")
               for st in steps)
    assert "nvidia-driver-580-open" in s  # the driver is still the host's


def test_both_operator_owned_and_the_l40s_pool_without_secure_boot() -> None:
    platform = _platform(driver="operator", toolkit="operator", secure_boot="any")
    s = _script(platform)
    assert "nvidia-ctk" not in s and "nvidia-driver" not in s and "mokutil" not in s
    assert "kubelet" in s and "containerd.io" in s and "swapoff -a" in s
    l40s = load_platform(FIXTURES / "platform-nodes.yaml")
    text = render_script(plan_steps(l40s, "l40s", "r570-l40s"), l40s, "l40s", "r570-l40s")
    assert "mokutil" not in text and "dkms install" not in text
    gate = next(line for line in text.splitlines() if "modprobe nvidia;" in line)
    assert "aiplat_mok_pending:-0" in gate  # no key: not pending, loaded at once


@pytest.mark.parametrize("pool", ["h100", "l40s"])
def test_every_variant_is_valid_bash(tmp_path: Path, pool: str) -> None:
    for driver in ("host", "operator"):
        for toolkit in ("host", "operator"):
            platform = _platform(driver, toolkit, "any")
            path = tmp_path / f"{pool}-{driver}-{toolkit}.sh"
            path.write_text(_script(platform, pool))
            assert subprocess.run(["bash", "-n", str(path)], check=False).returncode == 0
