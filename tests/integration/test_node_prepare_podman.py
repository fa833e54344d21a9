"""``node prepare``'s rendered script run for real, as root, in a Podman container made from a
Debian root file system (the node-agent image's cached debootstrap base), twice (issue #42
item 3).

What cannot run in a container, needs the network or the hardware (mokutil, modprobe, dkms,
modinfo, apt-get, apt-mark, curl, openssl, update-grub, systemctl, udevadm, sysctl, swapoff,
nvidia-ctk, uname, aiplat) is a stub on PATH that appends its argv to a log and keeps just
enough state to answer as the real command would (the key queued for enrolment, a module
signed after ``dkms install``). Everything else is the distribution's own: bash, coreutils'
install/mktemp, cmp, sed, grep, dpkg --compare-versions, getent, /etc/os-release.

Asserted: the recorded order (the key before the driver package before the nvidia modules,
the repositories and keys before any ``apt-get install``, br_netfilter before the sysctls);
a second run writes nothing (no ``wrote`` line, every file under /etc and /var/lib/aiplat
unchanged, mtime included) and calls nothing that changes state; after a simulated reboot
that completed the enrolment the modules load and the CDI specs are written, once.

Locally the test skips without root, debootstrap, Podman or runc; in CI (CI=true) it fails.
The base root file system is built once (minutes) and cached with the agent image's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import need

from aiplat.cluster import agent_image as ai
from aiplat.devices.verify import PodmanOptions
from aiplat.node.prepare import plan_steps, render_script
from aiplat.spec import load_platform

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TAG = f"localhost/aiplat-prepare-test:{os.getpid()}"
OPTS = PodmanOptions()
STUBS = ("mokutil modprobe dkms modinfo apt-get apt-mark curl openssl update-grub systemctl "
         "udevadm sysctl swapoff nvidia-ctk uname aiplat")

# One stub for every command: it logs "name args..." and answers from a little state in
# /var/lib/stub (outside what the snapshots compare).
STUB = r"""#!/bin/bash
name=${0##*/}
echo "$name $*" >> /var/log/aiplat-stubs.log
state=/var/lib/stub
mkdir -p "$state"
case "$name $1" in
  "uname -r") echo 6.8.0-49-generic ;;
  "uname -m") echo x86_64 ;;
  "openssl req")
    while [ $# -gt 0 ]; do
      case "$1" in -keyout|-out) echo "stub $1" > "$2"; shift ;; esac; shift
    done ;;
  "openssl rand") echo 0123456789abcdef ;;
  "mokutil --generate-hash") cat >/dev/null; echo '$6$stubsalt$stubhash' ;;
  "mokutil --test-key")
    if [ -e "$state/enrolled" ]; then echo "$2 is already enrolled"
    elif [ -e "$state/queued" ]; then echo "$2 is already in the enrollment request"
    else echo "$2 is not enrolled"; exit 1; fi ;;
  "mokutil --import") touch "$state/queued" ;;
  "modinfo "*) [ ! -e "$state/signed" ] || echo "aiplat module signing" ;;
  "dkms install") touch "$state/signed" ;;
  "curl "*) echo "-----BEGIN PGP PUBLIC KEY BLOCK----- stub for ${*: -1}" ;;
  "nvidia-ctk runtime")
    mkdir -p /etc/containerd
    echo '[plugins.cri.containerd.runtimes.nvidia] # nvidia-container-runtime' \
      > /etc/containerd/config.toml ;;
  "nvidia-ctk cdi") echo "cdiVersion: 0.5.0" ;;
esac
exit 0
"""

SETUP = """set -e
for c in {stubs}; do ln -sf /t/stub /t/bin/$c; done
printf 'UUID=1 / ext4 defaults 0 1\\n/swap.img none swap sw 0 0\\n' > /etc/fstab
printf 'GRUB_DEFAULT=0\\nGRUB_CMDLINE_LINUX=""\\n' > /etc/default/grub
snap() {{ find /etc /var/lib/aiplat -type f -printf '%p %s %m %T@\\n' 2>/dev/null | sort; }}
export PATH=/t/bin:$PATH
echo "=== run 1" >> /var/log/aiplat-stubs.log
bash /t/prepare.sh 2> /t/run1.err
snap > /t/snap1
echo "=== run 2" >> /var/log/aiplat-stubs.log
bash /t/prepare.sh 2> /t/run2.err
snap > /t/snap2
touch /var/lib/stub/enrolled  # the reboot: MokManager enrolled the key
echo "=== run 3" >> /var/log/aiplat-stubs.log
bash /t/prepare.sh 2> /t/run3.err
snap > /t/snap3
cp /var/log/aiplat-stubs.log /t/calls.log
cp /etc/fstab /t/fstab
"""



@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    reason = ai.missing() or (None if shutil.which("runc") else "runc is not installed "
                              "(fix: apt-get install runc)")
    need(reason)
    base = ai.base_rootfs(ai.Recipe(), ai.cache_root(),
                          lambda m: print(m, file=sys.stderr))
    with tarfile.open(base) as tar:  # the cached base is a plain root file system
        assert "etc/debian_version" in tar.getnames() or "./etc/debian_version" in \
            tar.getnames()
    subprocess.run(["podman", "import", "-q", str(base), TAG], check=True,
                   capture_output=True, timeout=300)
    try:
        yield TAG
    finally:
        subprocess.run(["podman", "rmi", "--force", TAG], capture_output=True, timeout=120,
                       check=False)


@pytest.fixture(scope="module")
def runs(image: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    t = tmp_path_factory.mktemp("prepare")
    platform = load_platform(FIXTURES / "platform-nodes.yaml")
    (t / "prepare.sh").write_text(render_script(plan_steps(platform, "h100"), platform,
                                                "h100", None))
    (t / "stub").write_text(STUB)
    (t / "stub").chmod(0o755)
    (t / "bin").mkdir()
    r = subprocess.run([*OPTS.run_args(), "-v", f"{t}:/t", image, "bash", "-c",
                        SETUP.format(stubs=STUBS)],
                       capture_output=True, text=True, timeout=120, check=False)
    errs = "\n".join(f"{n}: {(t / n).read_text()[-3000:]}" for n in
                     ("run1.err", "run2.err", "run3.err") if (t / n).exists())
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}\n{errs}"
    return t


def _calls(t: Path, run: int) -> list[str]:
    text = (t / "calls.log").read_text()
    return text.split(f"=== run {run}\n", 1)[1].split("=== run", 1)[0].splitlines()


def _at(calls: list[str], prefix: str) -> int:
    return next(i for i, c in enumerate(calls) if c.startswith(prefix))


def test_first_run_order(runs: Path) -> None:
    calls = _calls(runs, 1)
    key = _at(calls, "openssl req")
    assert key < _at(calls, "mokutil --import /var/lib/aiplat/mok/MOK.der --hash-file")
    curls = [i for i, c in enumerate(calls) if c.startswith("curl ")]
    assert len(curls) == 4  # CUDA, container toolkit, Docker (containerd.io), pkgs.k8s.io
    update = _at(calls, "apt-get update")
    installs = [i for i, c in enumerate(calls) if c.startswith("apt-get install")]
    assert max(curls) < update < min(installs)
    assert _at(calls, "mokutil --import") < _at(calls, "apt-get install -y -q nvidia-driver")
    assert _at(calls, "modprobe br_netfilter") < _at(calls, "sysctl --system") < min(installs)
    assert _at(calls, "swapoff -a") < min(installs)
    # the key is only queued: the nvidia modules wait for the reboot, the others load
    assert not any(c.startswith("modprobe nvidia") for c in calls)
    assert "modprobe mlx5_ib" in calls
    err = (runs / "run1.err").read_text()
    assert "wrote /etc/apt/keyrings/cuda-archive-keyring.gpg" in err
    assert "the machine owner key is queued" in err
    fstab = (runs / "fstab").read_text()
    assert "# aiplat: swap off for the kubelet: /swap.img none swap sw 0 0" in fstab
    assert "UUID=1 / ext4 defaults 0 1" in fstab


def test_second_run_changes_nothing(runs: Path) -> None:
    assert "wrote " not in (runs / "run2.err").read_text()
    assert (runs / "snap1").read_text() == (runs / "snap2").read_text()
    calls = _calls(runs, 2)
    changing = ("mokutil --import", "dkms", "update-grub", "udevadm", "nvidia-ctk runtime",
                "systemctl restart", "openssl")
    assert not [c for c in calls if c.startswith(changing)], calls


def test_after_the_enrolment_the_modules_load_then_nothing_more(runs: Path) -> None:
    first, third = _calls(runs, 1), _calls(runs, 3)
    assert _at(first, "apt-get install -y -q nvidia-driver") < len(first)  # before the reboot
    assert _at(third, "modprobe nvidia") < _at(third, "nvidia-ctk cdi generate")
    err = (runs / "run3.err").read_text()
    assert [line for line in err.splitlines() if line.startswith("wrote ")] == [
        "wrote /etc/cdi/nvidia.yaml"]
    assert not [c for c in third if c.startswith(("mokutil --import", "dkms"))]
