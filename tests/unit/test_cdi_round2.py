"""Issue #38, the red team's second round on CDI specs (material: /tmp/redteam2/cdi, cdi5):

- a path a known hook takes (chmod --path, create-symlinks --link, update-ldcache --folder,
  enable-cuda-compat --cuda-compat-container-root) is joined to the container's root on the
  host: '..' leaves it, /proc/1/root is the host's root while the hook runs;
- a writable bind of a host system directory (/var/log, /var/cache, /srv...) lets the
  container change what the host's root processes write and read;

both are host-check errors, `cdi validate` exits 1 on them, and NVIDIA's own specs stay clean
(test_cdi_escape.py's goldens)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from aiplat.cli.main import main
from aiplat.devices import cdi

UP = "../" * 12


def _spec(edits: dict[str, Any]) -> dict[str, Any]:
    return {"cdiVersion": "0.7.0", "kind": "example.com/acc",
            "devices": [{"name": "0", "containerEdits": {"deviceNodes": [
                {"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 0}]}}],
            "containerEdits": edits}


def _hook(*args: str, path: str = "/usr/bin/nvidia-cdi-hook") -> dict[str, Any]:
    return _spec({"hooks": [{"hookName": "createContainer", "path": path,
                             "args": list(args)}]})


def _bind(hp: str, *opts: str) -> dict[str, Any]:
    return _spec({"mounts": [{"hostPath": hp, "containerPath": "/x", "options": list(opts)}]})


def run(args: list[str]) -> int:
    try:
        return int(main(args))
    except SystemExit as e:
        return int(e.code or 0)


CDI = "nvidia-cdi-hook"
CTK = ("nvidia-ctk", "hook")
HOOK_PATHS: dict[str, tuple[dict[str, Any], str]] = {
    # the red team's
    "chmod-dotdot": (_hook(CDI, "chmod", "--mode", "777", "--path", UP + "etc"), "'..'"),
    "chmod-dotdot-eq": (_hook(CDI, "chmod", "--mode=666", "--path=" + UP + "etc/shadow"),
                        "'..'"),
    "chmod-proc-root": (_hook(CDI, "chmod", "--mode", "777", "--path", "/proc/1/root/etc"),
                        "/proc"),
    "ctk-chmod-dotdot": (_hook(*CTK, "chmod", "--mode", "777", "--path", UP + "etc",
                               path="/usr/bin/nvidia-ctk"), "'..'"),
    "symlink-link-dotdot": (_hook(CDI, "create-symlinks", "--link",
                                  "/tmp/x.so::" + UP + "etc/ld.so.preload"), "'..'"),
    "ldcache-folder-dotdot": (_hook(CDI, "update-ldcache", "--folder", UP + "etc"), "'..'"),
    # and the same otherwise spelled
    "chmod-relative": (_hook(CDI, "chmod", "--mode", "755", "--path", "etc"),
                       "not an absolute path"),
    "chmod-dotdot-inside": (_hook(CDI, "chmod", "--mode", "755", "--path",
                                  "/dev/dri/../../etc"), "'..'"),
    "chmod-single-dash": (_hook(CDI, "chmod", "-mode", "755", "-path", UP + "etc"), "'..'"),
    "chmod-comma-list": (_hook(CDI, "chmod", "--mode", "755", "--path", "/dev/dri," + UP),
                         "'..'"),
    "chmod-sys": (_hook(CDI, "chmod", "--mode", "777", "--path", "/sys/kernel"), "/sys"),
    "symlink-link-relative": (_hook(CDI, "create-symlinks", "--link",
                                    "libcuda.so.1::usr/lib/libcuda.so"),
                              "not an absolute path"),
    "symlink-link-proc": (_hook(CDI, "create-symlinks", "--link",
                                "/x::/proc/1/root/etc/ld.so.preload"), "/proc"),
    "symlink-target-climbs-out": (_hook(CDI, "create-symlinks", "--link",
                                        UP + "etc/shadow::/usr/lib/x.so"), "above the root"),
    "symlink-target-dotdot-abs": (_hook(CDI, "create-symlinks", "--link",
                                        "/usr/../etc/shadow::/usr/lib/x.so"), "'..'"),
    "ldcache-folder-relative": (_hook(CDI, "update-ldcache", "--folder", "lib64"),
                                "not an absolute path"),
    "ldcache-folder-eq-dotdot": (_hook(CDI, "update-ldcache", "--folder=/lib/../../x"),
                                 "'..'"),
    "cuda-compat-root-dotdot": (_hook(CDI, "enable-cuda-compat",
                                      "--cuda-compat-container-root=" + UP + "etc"), "'..'"),
}


@pytest.mark.parametrize("name", sorted(HOOK_PATHS), ids=str)
def test_a_hook_path_that_leaves_the_container_is_an_error(name: str) -> None:
    doc, words = HOOK_PATHS[name]
    errors = [f for f in cdi.validate_text(json.dumps(doc), "h.json") if f.severity == "error"]
    assert any(words in f.message for f in errors), [str(f) for f in errors] or name
    assert all(f.check == "host-check" and f.escape and f.fix for f in errors)
    assert all(".args[" in f.field for f in errors)


@pytest.mark.parametrize("name", ["chmod-dotdot", "symlink-link-dotdot",
                                  "ldcache-folder-dotdot", "ctk-chmod-dotdot"])
def test_validate_exits_1_on_the_red_teams_hooks(name: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "spec.json"
    f.write_text(json.dumps(HOOK_PATHS[name][0]))
    assert run(["cdi", "validate", "--no-host", str(f)]) == 1
    out = capsys.readouterr().out
    assert "host-check" in out and "'..'" in out and "fix:" in out


def test_nvidias_hook_paths_stay_clean() -> None:
    """What nvidia-ctk writes (internal/discover/hooks.go transformArgs, graphics.go's
    relative DRM links, the CSV mode's absolute targets, lib-csv_test.go's compat root)."""
    for doc in (
            _hook(CDI, "chmod", "--mode", "755", "--path", "/dev/dri", "--path", "/dev/dri/x"),
            _hook(CDI, "create-symlinks", "--link", "libcuda.so.1::/usr/lib64/libcuda.so",
                  "--link", "../card1::/dev/dri/by-path/pci-0000:17:00.0-card",
                  "--link", "../libnvidia-allocator.so.1::/usr/lib/x86_64-linux-gnu/gbm/"
                  "nvidia-drm_gbm.so",
                  "--link", "/usr/lib/aarch64-linux-gnu/tegra/libcuda.so::"
                  "/usr/lib/aarch64-linux-gnu/libcuda.so"),
            _hook(*CTK, "create-symlinks", "--link", "libcuda.so.1::/usr/lib64/libcuda.so",
                  path="/usr/bin/nvidia-ctk"),
            _hook(CDI, "update-ldcache", "--ldconfig-path", "@/sbin/ldconfig.real", "--folder",
                  "/usr/lib/x86_64-linux-gnu", "--folder", "/usr/lib/x86_64-linux-gnu/vdpau"),
            _hook(CDI, "enable-cuda-compat", "--host-driver-version=550.54.15",
                  "--cuda-compat-container-root=/usr/local/cuda/compat_orin")):
        found = cdi.validate_text(json.dumps(doc), "ok.json")
        assert found == [], [str(f) for f in found]


# Writable binds of the host's system directories: the container rewrites what root's
# daemons write there (logs that logrotate and rsyslog open by name, apt's package cache,
# apport's crash reports) or what they serve.
RW_SYSTEM = ("/var/log", "/var/log/nvidia", "/var/cache", "/var/cache/apt/archives",
             "/var/crash", "/var/backups", "/var/mail", "/var/www", "/var/opt", "/var/local",
             "/srv", "/root/.cache", "/home/u", "/var/lib/nvidia", "/etc/nvidia", "/boot/efi")


@pytest.mark.parametrize("hp", RW_SYSTEM, ids=str)
def test_a_writable_bind_of_a_system_directory_is_an_error(hp: str) -> None:
    for opts in (("rw", "bind"), ("bind",), ("ro", "rw", "rbind")):
        errors = [f for f in cdi.validate_text(json.dumps(_bind(hp, *opts)), "m.json")
                  if f.severity == "error"]
        assert errors and all(f.escape and f.check == "host-check" for f in errors), hp
    ro = cdi.validate_text(json.dumps(_bind(hp, "ro", "nosuid", "nodev", "bind")), "m.json")
    if not hp.startswith(("/root", "/home", "/boot")):  # those are never bound, even ro
        assert ro == [], [str(f) for f in ro]


def test_validate_exits_1_on_a_writable_var_log(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "spec.json"
    f.write_text(json.dumps(_bind("/var/log", "rw", "bind")))
    assert run(["cdi", "validate", "--no-host", str(f)]) == 1
    out = capsys.readouterr().out
    assert "error" in out and "/var/log" in out and "add 'ro'" in out


def test_writable_scratch_is_still_only_a_warning() -> None:
    """A device's own scratch (under /tmp, /var/tmp, /mnt, /data) is not the host's
    system: still a warning (aiplat cannot know it is the device's)."""
    for hp in ("/tmp/nvidia-mps", "/var/tmp/acc", "/mnt/scratch", "/data/x"):
        found = cdi.validate_text(json.dumps(_bind(hp, "rw", "bind")), "m.json")
        assert [f.severity for f in found] == ["warning"], (hp, [str(f) for f in found])


# NUL characters and lone surrogates (the red team's cdi5/): `cdi validate` and `cdi verify`
# ended in a traceback (os.path.realpath: embedded null byte; the table: surrogates not
# allowed). The reference loader refuses a surrogate escape (yaml.v3: "found invalid Unicode
# character escape code"), so that is a `spec` error; it takes a NUL, which no path, name or
# argument can hold (a C runtime such as crun ends the string there: /bin/sh\0/nvidia-cdi-hook
# runs /bin/sh), so that is a host-check error that hands the host over.
_NODE = {"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 0}
UNUSABLE: dict[str, tuple[str, str]] = {
    # name: (the spec as JSON text, the field the error must name)
    "hook-path-nul": (json.dumps(_hook(CDI, "update-ldcache",
                                       path="/bin/sh\u0000/nvidia-cdi-hook")),
                      "containerEdits.hooks[0].path"),
    "hook-path-surrogate": (json.dumps(_hook(CDI, path="/usr/bin/\ud800")),
                            "containerEdits.hooks[0].path"),
    "kind-surrogate": (json.dumps({**_spec({}), "kind": "example.com/ac\ud800"}), "kind"),
    "node-path-nul": (json.dumps(_spec({"deviceNodes": [{**_NODE, "path": "/dev/nvidia\u0000"}]})),
                      "containerEdits.deviceNodes[0].path"),
    "node-host-path-surrogate": (json.dumps(_spec({"deviceNodes": [
        {**_NODE, "hostPath": "/dev/\udfff"}]})), "containerEdits.deviceNodes[0].hostPath"),
    "mount-nul": (json.dumps(_bind("/usr/lib/x\u0000", "ro", "bind")),
                  "containerEdits.mounts[0].hostPath"),
    "mount-surrogate": (json.dumps(_bind("/usr/lib/\ud800", "ro", "bind")),
                        "containerEdits.mounts[0].hostPath"),
    "env-nul": (json.dumps(_spec({"env": ["A=\u0000"]})), "containerEdits.env[0]"),
    "annotation-key-surrogate": (json.dumps({**_spec({}), "annotations": {"\ud800": "x"}}),
                                 "annotations"),
    "yaml-nul-escape": ('cdiVersion: "0.7.0"\nkind: example.com/acc\ndevices:\n- name: "0"\n'
                        '  containerEdits:\n    deviceNodes:\n    - path: "/dev/nvidia\\0"\n',
                        "devices[0].containerEdits.deviceNodes[0].path"),
}


@pytest.mark.parametrize("no_host", [True, False], ids=["no-host", "host"])
@pytest.mark.parametrize("name", sorted(UNUSABLE), ids=str)
def test_nul_and_surrogates_are_errors_naming_the_field(
        name: str, no_host: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, fld = UNUSABLE[name]
    f = tmp_path / "spec.json"
    f.write_text(text)
    for fmt in ("table", "json"):
        code = run(["cdi", "validate", *(["--no-host"] if no_host else []), "-o", fmt, str(f)])
        out = capsys.readouterr()
        assert code == 1, out.err
        assert "Traceback" not in out.err
        shown = out.out if fmt == "table" else json.dumps(json.loads(out.out))
        assert str(f) in shown and fld in shown, shown
        assert "NUL" in shown or "surrogate" in shown
        if fmt == "table":
            assert "\x00" not in out.out
            assert "\\x00" in out.out or "\\ud" in out.out


def test_the_surrogate_is_the_loaders_verdict_and_the_nul_an_escape() -> None:
    sur = cdi.validate_text(UNUSABLE["kind-surrogate"][0], "s.json")
    assert any(f.check == "spec" and f.field == "kind" and "surrogate" in f.message
               for f in sur)
    nul = cdi.validate_text(UNUSABLE["hook-path-nul"][0], "n.json")
    assert any(f.escape and f.field == "containerEdits.hooks[0].path" and "NUL" in f.message
               for f in nul)


@pytest.mark.parametrize("name", ["hook-path-nul", "kind-surrogate", "mount-surrogate"])
def test_verify_refuses_them_with_exit_2(name: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "spec.json"
    f.write_text(UNUSABLE[name][0])
    assert run(["cdi", "verify", str(f)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and str(f) in err and UNUSABLE[name][1] in err


def test_a_surrogate_pair_escape_is_refused_as_the_loader_refuses_it() -> None:
    """yaml.v3 checks each \\u escape alone (scannerc.go): an emoji written as a JSON pair
    fails to load, written in UTF-8 it loads."""
    pair = '{"cdiVersion": "0.7.0", "kind": "example.com/acc", "annotations": {"a": "\\ud83d\\ude00"}, "devices": [{"name": "0", "containerEdits": {"env": ["A=1"]}}]}'  # noqa: E501
    assert [f.field for f in cdi.spec_errors(cdi.validate_text(pair, "p.json"))] == \
        ["annotations.a"]
    assert cdi.validate_text(pair.replace("\\ud83d\\ude00", "\U0001f600"), "u.json") == []


# Terminal escapes: a path or name from the command line, a tree or a spec is quoted in
# cdi generate's and verify's errors; an escape sequence (OSC retitles the terminal, CSI
# clears it), a C1 control or a bidi override reached the terminal as it was.
ESC = "\x1b]0;PWNED\x07\x9b2J\u202e"


def _raw(text: str) -> bool:
    return any(c in text for c in "\x1b\x07\x9b\u202e")


@pytest.mark.parametrize("args", [
    ["--char", f"example.com/acc=0:/dev/x{ESC}"],
    ["--char", f"example.com/acc=0:/dev/x{ESC}\nerror: forged"],
    ["--char", f"example.com/a{ESC}=0:/dev/null"],
    ["--char", f"example.com/acc={ESC}:/dev/null"],
    ["--char", f"example.com/acc{ESC}"],
    ["--char", "example.com/acc=0:/dev/null", "--mount", f"/x{ESC}:/y"],
    ["--char", "example.com/acc=0:/dev/null", "--mount", f"x{ESC}"],
], ids=["char-path", "char-path-newline", "char-kind", "char-name", "char-form", "mount",
        "mount-form"])
def test_generate_errors_show_escapes_not_send_them(
        args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["cdi", "generate", *args]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("error:")
    assert not _raw(err) and "\\x1b]0;PWNED\\x07\\x9b2J\\u202e" in err, err
    assert "\nerror: forged" not in err


def test_a_tree_driver_name_is_shown_escaped_when_generate_refuses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A hostile /proc/devices names the driver of a --char node's major: the refusal quotes
    it (the red team's escape sequence in a driver name)."""
    if os.geteuid() != 0:
        pytest.skip("mknod of a device node needs root")
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/devices").write_text(f"Character devices:\n240 evil{ESC}\n")
    (tmp_path / "dev").mkdir()
    os.mknod(tmp_path / "dev/acc0", 0o020666, os.makedev(240, 0))
    assert run(["cdi", "generate", "--root", str(tmp_path), "--char",
                "example.com/acc=0:/dev/acc0"]) == 2
    err = capsys.readouterr().err
    assert "refusing to write" in err and "evil\\x1b]0;PWNED" in err and not _raw(err)
