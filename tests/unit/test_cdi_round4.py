"""Issue #38, the red team's fourth round on CDI specs (/tmp/redteam4, G7, its #40): a
read-only bind of a host library folder (/usr/lib/x86_64-linux-gnu at /usr/lib/nv) and a
createContainer chmod of /usr/lib/nv/libblas.so.3, where on the host libblas.so.3 ->
/etc/shadow (the shape /etc/alternatives gives Debian's libblas).

nvidia-cdi-hook chmod does os.Stat and os.Chmod of filepath.Join(root, path) in the
container's mount namespace before pivot_root: /usr/lib/nv in the root is the bind of the
host folder, and a link in it with an absolute target resolves from the host's root, so the
host's /etc/shadow becomes 0666 ("ro" does not help: the file lies outside the mount). With a
host view the chmod path is walked through the host tree from the mount's host path; without
one, a chmod under a bind of a host folder is a warning (not checked)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from aiplat.cli.main import main
from aiplat.devices import cdi
from aiplat.devices.host import RealHost

HK = "/usr/bin/nvidia-cdi-hook"
LIB = "/usr/lib/x86_64-linux-gnu"


def _chmod(path: str, mode: str = "666") -> dict[str, Any]:
    return {"hookName": "createContainer", "path": HK,
            "args": ["nvidia-cdi-hook", "chmod", "--mode", mode, "--path", path]}


def _spec(hooks: list[dict[str, Any]], mounts: list[dict[str, Any]],
          top_mounts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"cdiVersion": "0.7.0", "kind": "example.com/acc", "devices": [
        {"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}],
                                         "hooks": hooks, "mounts": mounts}}]}
    if top_mounts:
        d["containerEdits"] = {"mounts": top_mounts}
    return d


def _bind(hp: str, cp: str) -> dict[str, Any]:
    return {"hostPath": hp, "containerPath": cp, "options": ["ro", "nosuid", "nodev", "bind"]}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A host tree: libblas.so.3 -> /etc/shadow, libx.so -> ../../../etc/passwd (climbs out
    of the folder), libok.so -> libok.so.1 (stays), sub -> /etc (a folder link)."""
    lib = tmp_path / LIB.lstrip("/")
    lib.mkdir(parents=True)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/shadow").write_text("")
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/nvidia0").write_text("")
    (lib / "libok.so.1").write_text("")
    os.symlink("/etc/shadow", lib / "libblas.so.3")
    os.symlink("../../../etc/passwd", lib / "libx.so")
    os.symlink("libok.so.1", lib / "libok.so")
    os.symlink("/etc", lib / "sub")
    (tmp_path / "usr/bin").mkdir()
    (tmp_path / "usr/bin/nvidia-cdi-hook").write_text("")
    (tmp_path / "usr/bin/nvidia-cdi-hook").chmod(0o755)
    return tmp_path


def _escapes(doc: dict[str, Any], host: cdi.Host | None) -> list[cdi.Finding]:
    return [f for f in cdi.validate_spec(doc, "s.json", host) if f.escape]


@pytest.mark.parametrize(("path", "reached"), [
    ("/usr/lib/nv/libblas.so.3", "/etc/shadow"),
    ("/usr/lib/nv/sub/shadow", "/etc"),
    ("/usr/lib/nv//./libblas.so.3", "/etc/shadow"),
])
def test_chmod_through_a_host_link_under_a_bind_is_an_escape(root: Path, path: str,
                                                             reached: str) -> None:
    found = _escapes(_spec([_chmod(path)], [_bind(LIB, "/usr/lib/nv")]), RealHost(str(root)))
    assert [f.severity for f in found] == ["error"], found
    f = found[0]
    assert f.field == "devices[0].containerEdits.hooks[0].args[5]"
    assert LIB in f.message and reached in f.message  # the link and the host file


def test_a_link_climbing_out_of_the_mount_is_an_escape(root: Path) -> None:
    found = _escapes(_spec([_chmod("/usr/lib/nv/libx.so")], [_bind(LIB, "/usr/lib/nv")]),
                     RealHost(str(root)))
    assert [f.severity for f in found] == ["error"], found
    assert "libx.so" in found[0].message and "out of the mount" in found[0].message


def test_the_mount_may_come_from_the_spec_level_edits(root: Path) -> None:
    found = _escapes(_spec([_chmod("/usr/lib/nv/libblas.so.3")], [],
                           top_mounts=[_bind(LIB, "/usr/lib/nv")]), RealHost(str(root)))
    assert [f.severity for f in found] == ["error"]


@pytest.mark.parametrize("path", ["/usr/lib/nv/libok.so", "/usr/lib/nv/libok.so.1",
                                  "/usr/lib/nv/missing", "/usr/lib/nvx/libblas.so.3",
                                  "/usr/lib/nv"])
def test_links_that_stay_in_the_mount_are_clean(root: Path, path: str) -> None:
    assert _escapes(_spec([_chmod(path)], [_bind(LIB, "/usr/lib/nv")]),
                    RealHost(str(root))) == []


def test_without_a_host_view_it_is_a_warning() -> None:
    found = _escapes(_spec([_chmod("/usr/lib/nv/libblas.so.3")], [_bind(LIB, "/usr/lib/nv")]),
                     None)
    assert [f.severity for f in found] == ["warning"], found
    assert "not checked without a host view" in found[0].message


def test_under_dev_it_is_not_asked() -> None:
    doc = _spec([_chmod("/dev/dri")], [_bind("/dev/dri", "/dev/dri")])
    assert _escapes(doc, None) == []


def test_the_red_teams_spec_fails(capsys: pytest.CaptureFixture[str]) -> None:
    spec = Path("/tmp/redteam4/cdi/c_mount_dir_chmod")
    if not spec.exists():
        pytest.skip("red team material not here")
    with pytest.raises(SystemExit) as e:
        main(["cdi", "validate", "--root", "/tmp/redteam4/host/r", str(spec)])
    out = capsys.readouterr().out
    assert e.value.code == 1, out
    assert "/etc/shadow" in out


def test_an_absolute_link_back_into_the_same_folder_is_clean(root: Path) -> None:
    lib = root / LIB.lstrip("/")
    os.symlink(f"{LIB}/libok.so.1", lib / "libabs.so")
    assert _escapes(_spec([_chmod("/usr/lib/nv/libabs.so")], [_bind(LIB, "/usr/lib/nv")]),
                    RealHost(str(root))) == []


def test_a_loop_of_links_ends_the_walk(root: Path) -> None:
    lib = root / LIB.lstrip("/")
    os.symlink("loop_b", lib / "loop_a")
    os.symlink("loop_a", lib / "loop_b")
    assert _escapes(_spec([_chmod("/usr/lib/nv/loop_a")], [_bind(LIB, "/usr/lib/nv")]),
                    RealHost(str(root))) == []  # ELOOP: chmod fails, nothing changes


def test_the_deepest_bind_is_the_one_walked(root: Path) -> None:
    (root / "opt/nv").mkdir(parents=True)
    doc = _spec([_chmod("/usr/lib/nv/libblas.so.3")],
                [_bind("/opt", "/usr"), _bind(LIB, "/usr/lib/nv")])
    found = [f for f in _escapes(doc, RealHost(str(root))) if "hooks" in f.field]
    assert len(found) == 1 and "mounts[1]" in found[0].message


@pytest.mark.parametrize("order", ["safe first", "safe last"])
@pytest.mark.parametrize("point", ["/usr/lib/nv", "/usr/lib/nv/"])
def test_two_binds_at_one_point_are_both_walked(root: Path, order: str, point: str) -> None:
    """The red team's sixth round (F2): a harmless folder and the library folder bound at the
    same container path; the last applied wins (ContainerEdits.Apply removes a mount at that
    path, then adds its own) and which is last depends on the order devices are asked for,
    so a chmod under either order, and either spelling of the point, is an escape."""
    (root / "usr/share/safe").mkdir(parents=True)
    binds = [_bind("/usr/share/safe", "/usr/lib/nv"), _bind(LIB, point)]
    if order == "safe last":
        binds.reverse()
    found = _escapes(_spec([_chmod("/usr/lib/nv/libblas.so.3")], binds), RealHost(str(root)))
    assert [f.severity for f in found] == ["error"], found
    assert "/etc/shadow" in found[0].message


def test_a_bind_in_another_spec_file_is_walked_too(root: Path) -> None:
    """The red team's seventh round: a.json binds a harmless folder at /usr/lib/nv and chmods
    /usr/lib/nv/libblas.so.3, b.json binds the host library folder at the same point; a
    container asking for both devices gets b's bind when b's edits are applied last."""
    (root / "usr/share/safe").mkdir(parents=True)
    a = _spec([_chmod("/usr/lib/nv/libblas.so.3")], [_bind("/usr/share/safe", "/usr/lib/nv")])
    b = _spec([], [_bind(LIB, "/usr/lib/nv")])
    b["kind"] = "example.com/other"
    host = RealHost(str(root))
    assert not [f for f in cdi.validate_spec(a, "a.json", host) if f.escape]  # alone: clean
    found = [f for f in cdi.validate_set([("a.json", a), ("b.json", b)], host) if f.escape]
    assert [(f.file, f.severity) for f in found] == [("a.json", "error")], found
    assert "/etc/shadow" in found[0].message and "b.json" in found[0].message
    assert not [f for f in cdi.validate_set([("a.json", a), ("b.json", b)]) if f.escape]
