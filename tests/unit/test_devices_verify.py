"""The pure half of `cdi verify` (probe parsing and comparison) and the host parsers."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from aiplat.devices import host
from aiplat.devices.cdi import NodeFact
from aiplat.devices.host import DeviceError
from aiplat.devices.verify import (
    CGROUP_V1,
    OCI_RULES,
    Observed,
    PodmanOptions,
    check_baseline,
    check_device,
    oci_device_rules,
    parse_probe,
    rootfs_tar,
)

BASE = """@@dev
/dev/null|21b6|1|3|666|0|0
/dev/pts|41ed|0|0|755|0|0
/dev/pts/ptmx|2000|5|2|0|0|0
/dev/fd|a1ff|0|0|777|0|0
@@env
PATH=/bin
@@mounts
73 48 0:40 / / rw,relatime - overlay overlay rw
@@cgroup
c 1:3 rwm
c *:* m
@@mntdev
@@end
"""

WITH_ACC0 = BASE.replace("@@env", "/dev/acc0|21b0|3d|0|660|0|44\n@@env").replace(
    "PATH=/bin", "PATH=/bin\nACC=1").replace(
    "@@cgroup", "80 73 254:0 /tmp/lib /usr/lib/acc ro,nosuid,nodev - ext4 /dev/vda rw\n@@cgroup"
).replace("@@cgroup\n", "@@cgroup\nc 61:0 rw\n")

SPEC = {
    "cdiVersion": "0.5.0", "kind": "example.com/acc",
    "devices": [
        {"name": "0", "containerEdits": {"deviceNodes": [
            {"path": "/dev/acc0", "hostPath": "/h/acc0", "type": "c", "major": 61, "minor": 0,
             "fileMode": 0o660, "permissions": "rw", "gid": 44}]}},
        {"name": "1", "containerEdits": {"deviceNodes": [
            {"path": "/dev/acc1", "hostPath": "/h/acc1", "type": "c", "major": 61,
             "minor": 1}]}},
    ],
    "containerEdits": {"env": ["ACC=1"], "mounts": [
        {"hostPath": "/tmp/lib", "containerPath": "/usr/lib/acc",
         "options": ["ro", "nosuid", "nodev", "bind"]}]},
}
HOST = {"/h/acc0": NodeFact("/dev/acc0", "/h/acc0", "c", 61, 0, 0o660, 0, 44),
        "/h/acc1": NodeFact("/dev/acc1", "/h/acc1", "c", 61, 1, 0o640, 0, 0)}


def _failed(checks: list) -> dict[str, str]:  # type: ignore[type-arg]
    return {c.what: c.evidence for c in checks if not c.ok}


def test_probe_output_parses() -> None:
    obs = parse_probe(WITH_ACC0)
    acc = obs.entries["/dev/acc0"]
    assert (acc.type, acc.major, acc.minor, acc.mode, acc.gid) == ("c", 61, 0, 0o660, 44)
    assert obs.entries["/dev/pts"].type == "d" and obs.entries["/dev/fd"].type == "l"
    assert "ACC=1" in obs.env
    assert obs.mounts["/usr/lib/acc"] >= {"ro", "nosuid", "nodev"}
    assert obs.cgroup == ["c 61:0 rw", "c 1:3 rwm", "c *:* m"]


def test_matching_container_passes() -> None:
    checks = check_device(SPEC, "0", parse_probe(WITH_ACC0), parse_probe(BASE), HOST)
    assert _failed(checks) == {}
    assert {c.what for c in checks} == {"node /dev/acc0", "env ACC", "mount /usr/lib/acc",
                                        "other devices absent", CGROUP_V1,
                                        "no device node reachable outside /dev",
                                        "/dev holds only defaults and injected nodes"}


@pytest.mark.parametrize(("change", "what", "fragment"), [
    (lambda t: t.replace("/dev/acc0|21b0|3d|0|", "/dev/acc0|21b0|3d|1|"), "node /dev/acc0",
     "is c 61:1, host /h/acc0 is c 61:0"),
    (lambda t: t.replace("/dev/acc0|21b0|3d|0|660", "/dev/acc0|21b6|3d|0|666"),
     "node /dev/acc0", "mode 0666, spec fileMode 0660"),
    (lambda t: t.replace("/dev/acc0|21b0|3d|0|660|0|44\n", ""), "node /dev/acc0",
     "missing in the container"),
    (lambda t: t.replace("ACC=1\n", ""), "env ACC", "not in environment"),
    (lambda t: t.replace(" ro,nosuid", " rw,nosuid"), "mount /usr/lib/acc", "writable"),
    (lambda t: t.replace("80 73 254:0 /tmp/lib /usr/lib/acc", "80 73 254:0 /tmp/lib /elsewhere"),
     "mount /usr/lib/acc", "not mounted"),
    (lambda t: t.replace("c 61:0 rw", "c 61:0 r"), CGROUP_V1, "c 61:0 allows only 'mr'"),
    (lambda t: t.replace("c 61:0 rw", "c 61:0 rw\nc 61:1 rw"), CGROUP_V1,
     "'c 61:1 rw' is not granted by the spec"),
    (lambda t: t.replace("@@mntdev\n", "@@mntdev\n/opt/acc1|21a0|3d|1|640|0|0\n"),
     "no device node reachable outside /dev", "1 host device nodes visible through mounts: "
     "/opt/acc1 (c 61:1)"),
    (lambda t: t.replace("@@env", "/dev/acc1|21a0|3d|1|640|0|0\n@@env"), "other devices absent",
     "leaked: /dev/acc1 (61:1, device '1')"),
    (lambda t: t.replace("@@env", "/dev/sneaky|21a0|3d|9|640|0|0\n@@env"),
     "/dev holds only defaults and injected nodes", "unexpected: /dev/sneaky"),
])
def test_each_difference_fails_with_evidence(change, what: str, fragment: str) -> None:  # type: ignore[no-untyped-def]
    checks = check_device(SPEC, "0", parse_probe(change(WITH_ACC0)), parse_probe(BASE), HOST)
    failed = _failed(checks)
    assert what in failed, failed
    assert fragment in failed[what]


def test_node_more_permissive_than_host_fails_without_filemode() -> None:
    probe = BASE.replace("@@env", "/dev/acc1|21b6|3d|1|666|0|0\n@@env")
    spec = {**SPEC, "containerEdits": {}}
    failed = _failed(check_device(spec, "1", parse_probe(probe), parse_probe(BASE), HOST))
    assert "grants more than the host's 0640" in failed["node /dev/acc1"]


def test_baseline_must_show_no_accelerator() -> None:
    assert all(c.ok for c in check_baseline(SPEC, parse_probe(BASE), HOST))
    leaked = parse_probe(BASE.replace("@@env", "/dev/acc0|21b0|3d|0|660|0|44\n@@env"))
    assert "/dev/acc0 (61:0 = host /h/acc0)" in check_baseline(SPEC, leaked, HOST)[0].evidence
    nvidia = parse_probe(BASE.replace("@@env", "/dev/nvidia3|21b6|c3|3|666|0|0\n@@env"))
    assert not check_baseline(SPEC, nvidia, HOST)[0].ok


def test_podman_options_are_configurable() -> None:
    assert PodmanOptions().run_args()[-4:] == ["--ulimit", "nofile=1024:1024", "--ulimit",
                                               "nproc=1024:1024"]
    args = PodmanOptions(podman="/usr/bin/podman", runtime=None, ulimits=(),
                         extra=("--security-opt", "label=disable")).run_args()
    assert args[0] == "/usr/bin/podman" and "--runtime" not in args and "--ulimit" not in args
    assert args[-2:] == ["--security-opt", "label=disable"]


def test_rootfs_holds_busybox_and_applets(tmp_path: Path) -> None:
    bb = tmp_path / "busybox"
    bb.write_bytes(b"\x7fELF fake")
    with tarfile.open(fileobj=io.BytesIO(rootfs_tar(str(bb)))) as tar:
        names = tar.getnames()
        assert tar.getmember("bin/busybox").mode == 0o755
        assert tar.getmember("bin/sh").linkname == "busybox"
    assert {"bin/find", "bin/stat", "bin/cat", "dev", "proc"} <= set(names)


XML = """<?xml version="1.0" ?>
<nvidia_smi_log><driver_version>550.54.15</driver_version>
<gpu id="00000000:17:00.0"><product_name>NVIDIA H100 80GB HBM3</product_name>
<uuid>GPU-aaaa</uuid><minor_number>2</minor_number></gpu>
<gpu id="00000000:2A:00.0"><uuid>GPU-bbbb</uuid><minor_number>3</minor_number>
<mig_devices><mig_device><index>0</index><gpu_instance_id>1</gpu_instance_id>
<compute_instance_id>0</compute_instance_id></mig_device></mig_devices></gpu>
</nvidia_smi_log>"""


def test_nvidia_smi_xml_gives_indices_minors_and_mig() -> None:
    gpus = host.parse_nvidia_smi_xml(XML)
    assert [(g.index, g.uuid, g.minor) for g in gpus] == [(0, "GPU-aaaa", 2),
                                                          (1, "GPU-bbbb", 3)]
    assert gpus[1].mig[0].gi == 1 and gpus[1].mig[0].ci == 0
    with pytest.raises(DeviceError, match="does not parse"):
        host.parse_nvidia_smi_xml("<nvidia_smi_log>")


def test_inventory_shape_is_checked() -> None:
    gpus = host.gpus_from_inventory({"gpus": [{"index": 0, "uuid": "GPU-x", "minor": 4,
                                               "vendor": "NVIDIA"}]})
    assert gpus[0].minor == 4 and gpus[0].vendor == "nvidia"
    with pytest.raises(DeviceError, match="'gpus' list"):
        host.gpus_from_inventory({"devices": []}, "inv.json")
    with pytest.raises(DeviceError, match=r"inv.json: gpus\[0\]"):
        host.gpus_from_inventory({"gpus": [{"mig": [{"index": 0}]}]}, "inv.json")


def test_linker_cache_and_mig_minors_parse() -> None:
    text = ("3 libs found in cache `/etc/ld.so.cache'\n"
            "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
            "\tlibcuda.so.1 (libc6) => /usr/lib/i386-linux-gnu/libcuda.so.1\n"
            "\tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1\n")
    cache = host.parse_ldconfig(text)
    assert cache["libcuda.so.1"] == "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
    mounts = host.library_mounts(cache, host.NVIDIA_LIBS, "/run/nvidia/driver")
    assert [(m.host_path, m.container_path) for m in mounts] == [
        ("/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libcuda.so.1",
         "/usr/lib/x86_64-linux-gnu/libcuda.so.1")]
    minors = host.parse_mig_minors("config 1\nmonitor 2\ngpu0/gi1/access 12\n"
                                   "gpu0/gi1/ci0/access 13\n")
    assert minors == {(0, 1, None): 12, (0, 1, 0): 13}


def test_char_and_mount_options() -> None:
    c = host.parse_char_option("example.com/acc=0:/dev/acc0=/tmp/a0,/dev/acc0ctl")
    assert (c.kind, c.name, c.paths) == ("example.com/acc", "0", (
        ("/dev/acc0", "/tmp/a0"), ("/dev/acc0ctl", "/dev/acc0ctl")))
    for bad in ("example.com/acc", "example.com/acc=0", "=0:/dev/x", "ex.com/a=-0:/dev/x"):
        with pytest.raises(DeviceError):
            host.parse_char_option(bad)
    assert host.parse_mount_option("/opt/lib:/usr/lib/x").container_path == "/usr/lib/x"
    with pytest.raises(DeviceError):
        host.parse_mount_option("relative")


def test_generate_reports_missing_nodes(tmp_path: Path) -> None:
    with pytest.raises(DeviceError, match="does not exist"):
        host.generate(str(tmp_path), chars=[host.parse_char_option("ex.com/a=0:/dev/a0")])
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "a0").write_text("regular file")
    with pytest.raises(DeviceError, match="is not a device node"):
        host.generate(str(tmp_path), chars=[host.parse_char_option("ex.com/a=0:/dev/a0")])
    gpu = host.GpuIdentity(0, "GPU-x", 0)
    with pytest.raises(DeviceError, match="dev/nvidia0 does not exist"):
        host.generate(str(tmp_path), gpus=[gpu], ldcache={}, mig_minors={})
    assert host.generate(str(tmp_path)) == {}


def test_observed_defaults_are_empty() -> None:
    assert Observed().entries == {} and parse_probe("") == Observed()


def test_a_wider_spec_level_grant_is_caught_in_the_oci_rules() -> None:
    """Device '0' asks r; the spec-level edits grant rw on the same node: the runtime's
    rules (what cgroup v2 enforces) give rw, more than the device's own grant."""
    spec = {**SPEC, "containerEdits": {**SPEC["containerEdits"], "deviceNodes": [
        {"path": "/dev/acc0", "hostPath": "/h/acc0", "permissions": "rw"}]}}
    spec["devices"] = [{"name": "0", "containerEdits": {"deviceNodes": [
        {"path": "/dev/acc0", "hostPath": "/h/acc0", "permissions": "r"}]}}, SPEC["devices"][1]]
    obs = parse_probe(WITH_ACC0.replace("c 61:0 rw\n", ""))
    obs.oci_devices = oci_device_rules({"linux": {"resources": {"devices": [
        {"allow": False, "access": "rwm"}, {"allow": True, "type": "c", "major": 1,
                                            "minor": 3, "access": "rwm"},
        {"allow": True, "type": "c", "major": 61, "minor": 0, "access": "r"},
        {"allow": True, "type": "c", "major": 61, "minor": 0, "access": "rw"}]}}})
    assert obs.oci_devices[0] == "!a *:* rwm"
    base = parse_probe(BASE)
    base.oci_devices = ["!a *:* rwm", "c 1:3 rwm"]
    failed = _failed(check_device(spec, "0", obs, base, HOST))
    assert "c 61:0 allows 'rw', the spec grants this device 'r'" in failed[OCI_RULES]
