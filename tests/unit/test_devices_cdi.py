"""CDI rules: good files pass, every broken file is caught with file, device and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import jsonschema
import pytest
import yaml

from aiplat.devices import cdi, host
from aiplat.devices import host as host_mod
from aiplat.devices.cdi import DeviceEntry, Edits, Mount, NodeFact
from aiplat.devices.host import read_spec, spec_files

DATA = Path(__file__).parents[1] / "data" / "cdi"
SCHEMA_DIR = Path(__file__).parents[3] / "shared" / "schemas" / "cdi-v1.1.0"


class FakeHost:
    """The host the host-dependent bad files are written against."""

    nodes: ClassVar[dict[str, NodeFact]] = {
        "/dev/nvidia0": NodeFact("/dev/nvidia0", "/dev/nvidia0", "c", 195, 0, 0o666, 0, 0),
        "/dev/nvidia1": NodeFact("/dev/nvidia1", "/dev/nvidia1", "c", 195, 1, 0o666, 0, 0),
        "/dev/nvidiactl": NodeFact("/dev/nvidiactl", "/dev/nvidiactl", "c", 195, 255, 0o666,
                                   0, 0),
        "/dev/nvidia-caps/nvidia-cap21": NodeFact("/dev/nvidia-caps/nvidia-cap21",
                                                  "/dev/nvidia-caps/nvidia-cap21", "c", 508, 21,
                                                  0o444, 0, 0),
        "/dev/nvidia-caps/nvidia-cap22": NodeFact("/dev/nvidia-caps/nvidia-cap22",
                                                  "/dev/nvidia-caps/nvidia-cap22", "c", 508, 22,
                                                  0o444, 0, 0),
    }
    files: ClassVar[set[str]] = {"/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
                                 "/usr/bin/nvidia-cdi-hook", "/usr/bin/nvidia-ctk"}
    executables: ClassVar[set[str]] = {"/usr/bin/nvidia-cdi-hook"}
    links: ClassVar[dict[str, str]] = {}

    def real(self, path: str) -> str:
        return self.links.get(path, path)

    def replaceable(self, path: str) -> str | None:
        return None

    def node(self, path: str) -> NodeFact | None:
        return self.nodes.get(path)

    def exists(self, path: str) -> bool:
        return path in self.nodes or path in self.files

    def executable(self, path: str) -> bool:
        return path in self.executables


def _findings(name: str, host: FakeHost | None = None) -> list[cdi.Finding]:
    f = str(DATA / "bad" / name)
    return host_mod.check_spec_file(f, host)[1]


@pytest.mark.parametrize("path", sorted((DATA / "good").iterdir()), ids=lambda p: p.name)
def test_good_files_pass_rules_and_schema(path: Path) -> None:
    doc = read_spec(str(path))
    host = FakeHost() if path.name == "nvidia-gpu.json" else None
    assert cdi.validate_spec(doc, str(path), host) == []
    schema = json.loads((SCHEMA_DIR / "schema.json").read_text())
    defs = json.loads((SCHEMA_DIR / "defs.json").read_text())
    registry_schema = {**schema, "definitions": defs["definitions"]}
    text = json.dumps(registry_schema).replace("defs.json#/definitions/", "#/definitions/")
    jsonschema.validate(doc, json.loads(text))


BAD = {
    # file: (severity, field fragment, message fragment)
    "unknown-field.json": ("error", "(decode)", "did you mean 'hostPath'"),
    "unknown-top-field.json": ("error", "(decode)", "field version not found"),
    "kind-without-class.json": ("error", "kind", "not 'vendor/class'"),
    "vendor-bad-start.json": ("error", "kind", "vendor '-nvidia.com' must start with a letter"),
    "device-name-bad.json": ("error", "devices[0].name", "not a valid device name"),
    "version-hostpath.json": ("error", "cdiVersion", "hostPath needs 0.5.0"),
    "version-digit-name.json": ("error", "cdiVersion", "starting with a digit needs 0.5.0"),
    "version-annotations.json": ("error", "cdiVersion", "annotations needs 0.6.0"),
    "version-netdevices.json": ("error", "cdiVersion", "netDevices needs 1.1.0"),
    "version-unknown.json": ("error", "cdiVersion", "not a released CDI version"),
    "additional-gids.json": ("error", "cdiVersion", "additionalGids needs 0.7.0"),
    "duplicate-device.json": ("error", "devices[5].name", "duplicate device name"),
    "permissions.json": ("error", "permissions", "letters of 'rwm'"),
    "node-type.json": ("error", ".type", "not a device type"),
    "relative-path.json": ("error", "deviceNodes[0].path", "not an absolute container path"),
    "hook-relative.json": ("error", "hooks[0].path", "is not absolute"),  # host-check
    "hook-name.json": ("error", "hooks[0].hookName", "'preStart' is not a hook name"),
    "env-format.json": ("error", "env[0]", "is not NAME=value"),
    "leak.json": ("error", "deviceNodes", "belongs to device '1'"),
    "no-devices.json": ("error", "devices", "at least one device"),
    "empty-edits.json": ("error", "devices[0].containerEdits", "non-empty containerEdits"),
    # a writable driver library: the container changes what root processes on the host load
    "mount-writable.json": ("error", "mounts[0].options", "writable: the container can change "
                                                          "/usr"),
    "negative-minor.json": ("error", ".minor", "not a non-negative integer"),
    "not-a-mapping.yaml": ("error", "(decode)", "cannot unmarshal !!seq into specs.Spec"),
}

# aiplat's deliberate strictness: the reference loader accepts these files
STRICT = {"relative-path.json", "hook-relative.json", "leak.json", "mount-writable.json"}

HOST_BAD = {
    "host-missing-node.json": ("error", "deviceNodes[0].path", "/dev/nvidia7 does not exist"),
    "host-wrong-minor.json": ("error", "major/minor", "spec says 195:3, host /dev/nvidia0 is "
                                                      "195:0"),
    "host-wrong-type.json": ("error", ".type", "spec says 'b'"),
    "host-missing-mount.json": ("error", "mounts[0].hostPath", "does not exist"),
    "host-hook-not-executable.json": ("error", "hooks[0].path", "not executable"),
    "host-filemode-wider.json": ("warning", "fileMode", "grants more than the host node's 666"),
}


@pytest.mark.parametrize("name", sorted(BAD), ids=str)
def test_bad_file_is_rejected_with_location(name: str) -> None:
    severity, fld, msg = BAD[name]
    found = _findings(name)
    match = [f for f in found if fld in f.field and msg in f.message + f.fix]
    assert match, f"expected {fld!r} / {msg!r} in {[str(f) for f in found]}"
    assert match[0].severity == severity
    assert match[0].check == ("host-check" if name in STRICT else "spec")
    assert match[0].file.endswith(name)
    assert name in str(match[0]) and match[0].field in str(match[0])


@pytest.mark.parametrize("name", sorted(HOST_BAD), ids=str)
def test_host_rules_catch_mismatches(name: str) -> None:
    severity, fld, msg = HOST_BAD[name]
    found = _findings(name, FakeHost())
    match = [f for f in found if fld in f.field and msg in f.message]
    assert match, f"expected {fld!r} / {msg!r} in {[str(f) for f in found]}"
    assert match[0].severity == severity and match[0].check == "host-check"
    # without host facts the same file is clean: the finding comes from the host rule
    assert not [f for f in _findings(name) if fld in f.field and msg in f.message]


def test_every_bad_file_is_covered() -> None:
    files = {p.name for p in (DATA / "bad").iterdir() if p.is_file()}
    assert files == set(BAD) | set(HOST_BAD)


def test_duplicates_later_directory_wins_same_directory_conflicts() -> None:
    files = spec_files([str(DATA / "bad" / "dup-dirs" / "etc"),
                        str(DATA / "bad" / "dup-dirs" / "run")])
    found = cdi.validate_set([(f, read_spec(f)) for f in files])
    assert found and all(f.severity == "warning" for f in found)
    assert "nvidia-new.json" in found[0].file and "wins" in found[0].message
    files = spec_files([str(DATA / "bad" / "dup-same")])
    found = cdi.validate_set([(f, read_spec(f)) for f in files])
    assert found and all(f.severity == "error" for f in found)
    assert "cannot resolve" in found[0].message and found[0].device == "0"


def test_leak_rule_allows_aliases_all_and_mig_parents() -> None:
    doc = read_spec(str(DATA / "good" / "nvidia-gpu.json"))
    assert cdi.foreign_nodes(doc, "0") == {"/dev/nvidia1": "1"}
    assert cdi.foreign_nodes(doc, "1:0") == {}
    assert cdi.foreign_nodes(doc, "all") == {}
    assert cdi.foreign_nodes(doc, "GPU-4b5a1c7e-0d1f-4a52-9a1e-6f0c1d2e3f40") == {
        "/dev/nvidia1": "1"}


def _node(path: str, minor: int, host: str | None = None) -> NodeFact:
    # major 261: the accel subsystem's (an accelerator's node, whatever its path)
    return NodeFact(path, host or path, "c", 261, minor, 0o660, 0, 44)


def test_build_uses_lowest_version_and_adds_all() -> None:
    doc = cdi.build_spec("example.com/acc", [DeviceEntry("acc0", Edits((_node("/dev/acc0", 0),))),
                                             DeviceEntry("acc1", Edits((_node("/dev/acc1", 1),)))],
                         Edits(env=("A=1",)))
    assert doc["cdiVersion"] == "0.3.0"
    assert [d["name"] for d in doc["devices"]] == ["acc0", "acc1", "all"]
    all_nodes = doc["devices"][2]["containerEdits"]["deviceNodes"]
    assert [n["path"] for n in all_nodes] == ["/dev/acc0", "/dev/acc1"]
    assert all_nodes[0]["fileMode"] == 0o660 and all_nodes[0]["gid"] == 44
    assert cdi.validate_spec(doc, "gen") == []
    doc = cdi.build_spec("example.com/acc", [DeviceEntry("0", Edits((
        _node("/dev/acc0", 0, "/tmp/x/acc0"),), mounts=(Mount("/opt/l", "/opt/l"),)))])
    assert doc["cdiVersion"] == "0.5.0"  # digit-led name and hostPath
    assert doc["devices"][0]["containerEdits"]["mounts"][0]["options"] == [
        "ro", "nosuid", "nodev", "bind"]
    assert [d["name"] for d in doc["devices"]] == ["0"]  # one device: no 'all'
    doc = cdi.build_spec("example.com/acc.v2", [DeviceEntry("a", Edits((_node("/dev/a", 0),)))])
    assert doc["cdiVersion"] == "0.6.0"  # '.' in the class


@pytest.mark.parametrize(("kind", "names"), [("nvidia/gpu/x", ["0"]), ("ex.com/acc", ["-a"]),
                                             ("ex.com/acc", ["a", "a"]), ("ex.com/acc", [])])
def test_build_refuses_invalid_names(kind: str, names: list[str]) -> None:
    with pytest.raises(ValueError, match=r"kind '.*'"):
        cdi.build_spec(kind, [DeviceEntry(n, Edits((_node("/dev/a", 0),))) for n in names])


def test_names_follow_the_grammar() -> None:
    assert cdi.kind_problems("nvidia.com/gpu") == []
    assert cdi.kind_problems("vendor_x.io/class-1") == []
    assert cdi.kind_problems("1vendor/gpu")
    assert cdi.kind_problems("vendor/gpu-")
    assert all(cdi.device_name_ok(n) for n in ("0", "0:1", "GPU-abc", "MIG-1-2", "a.b_c"))
    assert not any(cdi.device_name_ok(n) for n in ("", ":0", "a/b", "a=b", "a-", "a b"))


def test_yaml_round_trip_keeps_names_strings() -> None:
    doc = cdi.build_spec("example.com/acc", [DeviceEntry("0", Edits((_node("/dev/a", 0),)))])
    again = yaml.safe_load(cdi.dumps(doc, "yaml"))
    assert again == doc and again["devices"][0]["name"] == "0"


def test_without_a_hook_binary_the_spec_has_no_hooks(tmp_path: Path) -> None:
    mounts = [Mount("/r/usr/lib64/libcuda.so.550.54.15", "/usr/lib64/libcuda.so.550.54.15")]
    assert host.nvidia_hooks(str(tmp_path), mounts) == ()
    ctk = tmp_path / "usr" / "bin" / "nvidia-ctk"  # an older toolkit: `nvidia-ctk hook ...`
    ctk.parent.mkdir(parents=True)
    ctk.write_text("#!/bin/sh\n")
    ctk.chmod(0o755)
    hooks = host.nvidia_hooks(str(tmp_path), mounts)
    assert [h.args[:3] for h in hooks] == [("nvidia-ctk", "hook", "create-symlinks"),
                                           ("nvidia-ctk", "hook", "update-ldcache")]
    assert hooks[1].args[3:] == ("--folder", "/usr/lib64")


def test_decode_refuses_deep_nesting_and_control_characters_without_raising() -> None:
    """Found by the bad-input property suite: both raised out of decode_spec (a traceback
    from cdi validate) instead of becoming decode errors."""
    from aiplat.devices.cdiyaml import decode_spec

    deep = decode_spec("a: " + "[" * 5000 + "]" * 5000 + "\n")
    assert deep.doc is None and "nested too deeply" in deep.errors[0]
    ctrl = decode_spec("cdiVersion: 0.6.0\nkind: x.com/y\x01\n")
    assert ctrl.doc is None and "unacceptable character" in ctrl.errors[0]


@pytest.mark.parametrize("second", [
    "---\ncdiVersion: \"0.6.0\"\nkind: vendor.com/nic\ndevices:\n- name: b\n",
    "---\n: [unclosed\n",  # not YAML at all: the loader never parses it
])
def test_a_second_document_is_named_as_ignored_by_the_loader(second: str) -> None:
    first = ("cdiVersion: \"0.6.0\"\nkind: vendor.com/gpu\ndevices:\n- name: a\n"
             "  containerEdits:\n    deviceNodes:\n    - path: /dev/null\n")
    found = cdi.validate_text(first + second, "two.yaml")
    assert [(f.severity, f.field) for f in found] == [("warning", "(document 2, line 9)")]
    assert "reads only the first YAML document" in found[0].message
    assert found[0].fix == "put each spec in its own file"
    assert cdi.validate_text(first, "one.yaml") == []


@pytest.mark.parametrize("tail", ["---\n", "---\n# nothing\n---\n", "---\n...\n"])
def test_empty_documents_after_the_spec_hold_no_devices(tail: str) -> None:
    """helm and kustomize end their output with '---': nothing is ignored there."""
    spec = ("cdiVersion: \"0.6.0\"\nkind: vendor.com/gpu\ndevices:\n- name: a\n"
            "  containerEdits:\n    deviceNodes:\n    - path: /dev/null\n")
    assert cdi.validate_text(spec + tail, "one.yaml") == []
