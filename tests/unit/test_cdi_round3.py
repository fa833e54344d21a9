"""Issue #38, the red team's third round on CDI specs (material: /tmp/redteam3/cdi, R4):
a link that one create-symlinks hook makes to an absolute target, then a chmod hook of the
link (or of a path under it), changes a host file.

nvidia-cdi-hook create-symlinks writes the target as given (unix.Symlinkat), placing the link
inside the container's root; chmod does os.Stat and os.Chmod of filepath.Join(root, path),
which follows every link on the way on the host, as root, before pivot_root: /etc/shadow
becomes 0666. The hooks may sit in one device's edits, in the spec-level and a device's
edits, or in two vendors' specs a container asks devices of: each is an escape error, at
the hook that writes through the link. NVIDIA's own specs (links under /dev/dri/by-path,
libcuda.so -> libcuda.so.1, chmod of /dev/dri) stay clean."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aiplat.cli.main import main
from aiplat.devices import cdi

HK = "/usr/bin/nvidia-cdi-hook"
LIB = "/usr/lib/x86_64-linux-gnu"


def _hook(*args: str, name: str = "createContainer", path: str = HK) -> dict[str, Any]:
    return {"hookName": name, "path": path, "args": [path.rsplit("/", 1)[-1], *args]}


def _spec(dev_hooks: list[dict[str, Any]], top: list[dict[str, Any]] | None = None,
          kind: str = "example.com/acc") -> dict[str, Any]:
    d: dict[str, Any] = {"cdiVersion": "0.7.0", "kind": kind, "devices": [
        {"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}],
                                         "hooks": dev_hooks}}]}
    if top:
        d["containerEdits"] = {"hooks": top}
    return d


def _link(spec: str) -> dict[str, Any]:
    return _hook("create-symlinks", "--link", spec)


def _chmod(path: str, mode: str = "666") -> dict[str, Any]:
    return _hook("chmod", "--mode", mode, "--path", path)


# /tmp/redteam3/cdi/gen3.py's four
RED: dict[str, tuple[dict[str, Any], str]] = {
    "h_link_abs_then_chmod": (_spec([_link(f"/etc/shadow::{LIB}/libevil.so"),
                                     _chmod(f"{LIB}/libevil.so")]), "/etc/shadow"),
    "h_dirlink_abs_then_chmod": (_spec([_link("/etc::/usr/share/nv"),
                                        _chmod("/usr/share/nv/sudoers", "777")]),
                                 "/etc/sudoers"),
    "h_link_chmod_split": (_spec([_chmod("/usr/lib/libevil.so")],
                                 top=[_link("/etc/shadow::/usr/lib/libevil.so")]),
                           "/etc/shadow"),
}
TWO_SPECS = {"a.json": _spec([_link("/etc/shadow::/usr/lib/libevil.so")], kind="example.com/a"),
             "b.json": _spec([_chmod("/usr/lib/libevil.so")], kind="example.com/b")}


def _escapes(found: list[cdi.Finding]) -> list[cdi.Finding]:
    return [f for f in found if f.escape and f.severity == "error"]


def run(args: list[str]) -> int:
    try:
        return int(main(args))
    except SystemExit as e:
        return int(e.code or 0)


@pytest.mark.parametrize("name", sorted(RED), ids=str)
def test_chmod_through_a_link_to_the_host_is_an_escape(name: str) -> None:
    doc, changed = RED[name]
    errors = _escapes(cdi.validate_text(json.dumps(doc), "spec.json"))
    assert len(errors) == 1, [str(f) for f in errors]
    f = errors[0]
    assert f.check == "host-check" and f.fix
    assert f.field.endswith("hooks[1].args[5]") or f.field.endswith("hooks[0].args[5]")
    assert "create-symlinks" in f.message and f"host's {changed}" in f.message, f.message


@pytest.mark.parametrize("name", sorted(RED), ids=str)
def test_validate_exits_1_on_them(name: str, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "spec.json").write_text(json.dumps(RED[name][0]))
    assert run(["cdi", "validate", "--no-host", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "host-check" in out and "fix:" in out


def test_a_link_in_one_spec_and_chmod_in_another(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A container may ask for devices of both vendors: the set is judged, each file alone
    is clean, and the finding is the chmod's, naming the other file's link."""
    for name, doc in TWO_SPECS.items():
        assert _escapes(cdi.validate_text(json.dumps(doc), name)) == []
    found = _escapes(cdi.validate_set(list(TWO_SPECS.items())))
    assert [(f.file, f.device, f.field) for f in found] == [
        ("b.json", "0", "devices[0].containerEdits.hooks[0].args[5]")]
    assert "a.json" in found[0].message and "host's /etc/shadow" in found[0].message
    for name, doc in TWO_SPECS.items():
        (tmp_path / name).write_text(json.dumps(doc))
    assert run(["cdi", "validate", "--no-host", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert out.count("create-symlinks") == 1 and "b.json" in out


def test_the_set_does_not_repeat_what_each_file_shows() -> None:
    """a.json's link and chmod are its own finding (validate_spec); b.json's chmod is of
    another path: the set adds nothing."""
    doc = RED["h_link_abs_then_chmod"][0]
    assert _escapes(cdi.validate_set([("a.json", doc), ("b.json", TWO_SPECS["b.json"])])) \
        == []


@pytest.mark.parametrize("hooks", [
    # chmod first: the order across specs is the request's, and a restarted container
    # (docker restart) runs its createContainer hooks again over the link the first run made
    [_chmod(f"{LIB}/libevil.so"), _link(f"/etc/shadow::{LIB}/libevil.so")],
    # a relative link to a directory that is an absolute link
    [_link("nv::/usr/share/nvx"), _link("/etc::/usr/share/nv"),
     _chmod("/usr/share/nvx/shadow")],
    # a link placed through a directory link (create-symlinks resolves its directory in the
    # root: /a/b/x is made at /a/sub/x), chmodded by its real place
    [_link("sub::/a/b"), _link("/etc/shadow::/a/b/x"), _chmod("/a/sub/x")],
    # a relative link whose target passes through an absolute one
    [_link("/etc::/usr/share/nv"), _link("nv/shadow::/usr/share/y"), _chmod("/usr/share/y")],
    # a link in a comma list, '=' forms, single dashes, nvidia-ctk's form
    [_hook("create-symlinks", "--link=libcuda.so.1::/usr/lib64/libcuda.so,/etc::/opt/x"),
     _hook("chmod", "-mode", "644", "-path=/opt/x/passwd")],
    [_hook("hook", "create-symlinks", "--link", "/root::/opt/r", path="/usr/bin/nvidia-ctk"),
     _hook("hook", "chmod", "--mode", "755", "--path", "/opt/r/.ssh",
           path="/usr/bin/nvidia-ctk")],
    # the link made by a hook that runs in the container (startContainer): it stays in the
    # container's root, which a restarted container's chmod follows on the host
    [_link("/etc/shadow::/usr/lib/x.so") | {"hookName": "startContainer"},
     _chmod("/usr/lib/x.so")],
], ids=["chmod-first", "through-a-dir-link", "placed-through-a-dir-link",
        "relative-through-absolute",
        "comma-list-and-eq", "nvidia-ctk-form", "start-container-link"])
def test_other_shapes_of_the_same(hooks: list[dict[str, Any]]) -> None:
    errors = _escapes(cdi.validate_text(json.dumps(_spec(hooks)), "spec.json"))
    assert len(errors) == 1 and "create-symlinks" in errors[0].message, \
        [str(f) for f in errors]


def test_old_update_ldcache_writes_through_a_link_at_ld_so_conf_d() -> None:
    """nvidia-cdi-hook before 1.17.5: os.MkdirAll and os.CreateTemp of
    filepath.Join(root, "/etc/ld.so.conf.d"); later ones resolve it inside the root."""
    doc = _spec([_link("/etc/cron.d::/etc/ld.so.conf.d"),
                 _hook("update-ldcache", "--folder", "/usr/lib64")])
    errors = _escapes(cdi.validate_text(json.dumps(doc), "spec.json"))
    assert len(errors) == 1 and "1.17.5" in errors[0].message
    assert "host's /etc/cron.d" in errors[0].message


@pytest.mark.parametrize("hooks", [
    # nvidia-ctk: DRM by-path links (relative, under the chmod's directory), chmod /dev/dri
    [_link("../card1::/dev/dri/by-path/pci-0000:17:00.0-card"),
     _link("../renderD128::/dev/dri/by-path/pci-0000:17:00.0-render"),
     _chmod("/dev/dri", "755"), _chmod("/dev/nvidia-caps", "755")],
    # relative library links, even chmodded: followed inside the root
    [_link(f"libcuda.so.1::{LIB}/libcuda.so"), _chmod(f"{LIB}/libcuda.so", "755")],
    # the CSV mode's absolute targets, never chmodded; update-ldcache of their folder
    [_link("/usr/lib/aarch64-linux-gnu/tegra/libcuda.so::/usr/lib/aarch64-linux-gnu/"
           "libcuda.so"), _hook("update-ldcache", "--folder", "/usr/lib/aarch64-linux-gnu")],
    # an absolute link beside (not above) a chmodded path
    [_link("/etc::/opt/a"), _chmod("/opt/ab"), _chmod("/opt")],
    # chmod in the container (startContainer hooks run there): not the host's business
    [_link("/etc/shadow::/usr/lib/x.so"), _chmod("/usr/lib/x.so") | {
        "hookName": "startContainer"}],
    # a loop: the kernel refuses it (ELOOP)
    [_link("b::/opt/a"), _link("a::/opt/b"), _chmod("/opt/a")],
    # update-ldcache without a folder writes no file
    [_link("/etc/cron.d::/etc/ld.so.conf.d"), _hook("update-ldcache")],
], ids=["drm", "relative-lib", "csv-absolute", "beside", "start-container", "loop",
        "ldcache-without-folder"])
def test_what_nvidia_ctk_writes_stays_clean(hooks: list[dict[str, Any]]) -> None:
    found = cdi.validate_text(json.dumps(_spec(hooks)), "spec.json")
    assert _escapes(found) == [], [str(f) for f in found]


@pytest.mark.parametrize("name", ["poststart", "poststop"])
def test_chmod_after_the_container_started_is_an_escape(name: str) -> None:
    """By then the container's own processes (root in it) may have swapped /dev/dri for a
    link to the host's /etc: the hook follows it on the host. nvidia-ctk runs chmod as a
    createContainer hook."""
    doc = _spec([_chmod("/dev/dri", "755") | {"hookName": name}])
    errors = _escapes(cdi.validate_text(json.dumps(doc), "spec.json"))
    assert [f.field for f in errors] == ["devices[0].containerEdits.hooks[0].args[5]"]
    assert "after the container's process started" in errors[0].message
    assert "createContainer" in errors[0].fix


def test_links_too_many_to_follow_are_refused_not_followed_for_minutes() -> None:
    """Each link placed through a chain of 39 links with 4,000-character targets: followed
    in full that is minutes; past escape.MAX_LINK_STEPS it is an error saying it is not
    known, at once."""
    import time

    long = "/".join(["a", ".."] * 1000)
    hooks = [_link(f"{long}/l{i + 1}::/l{i}") for i in range(39)]
    hooks += [_link(f"x::/l0/p{i}") for i in range(3000)] + [_chmod("/l0")]
    started = time.monotonic()
    errors = _escapes(cdi.validate_text(json.dumps(_spec(hooks)), "spec.json"))
    assert time.monotonic() - started < 20
    assert [f.field for f in errors] == ["devices[0].containerEdits.hooks[3039].args"]
    assert "not known" in errors[0].message


@pytest.mark.parametrize(("chain", "found"), [(39, 1), (40, 0)])
def test_the_kernels_forty_links_bound_the_walk(chain: int, found: int) -> None:
    """A path through more than 40 links fails with ELOOP: chmod changes nothing."""
    hooks = [_link(f"l{i + 1}::/l{i}") for i in range(chain)]
    hooks += [_link(f"/etc::/l{chain}"), _chmod("/l0/shadow")]
    assert len(_escapes(cdi.validate_text(json.dumps(_spec(hooks)), "spec.json"))) == found
