"""Runtime config merges: goldens on realistic files, idempotence, kept comments, refusals."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

import pytest

from aiplat.devices import runtime
from aiplat.devices.runtime import RuntimeConfigError

GOLDEN = Path(__file__).parents[1] / "golden" / "runtime"
CASES = [("containerd-1.7", "containerd", "1.7.12"),
         ("containerd-1.7-minimal", "containerd", "1.7.12"),
         ("containerd-2.0", "containerd", "2.0.2"),
         ("crio-1.28", "crio", "1.28.1"),
         ("podman-4.9", "podman", "4.9.3")]


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict):
            out.update(_flatten(v, key))
        else:
            out[key] = v
    return out


@pytest.mark.parametrize(("name", "rt", "version"), CASES, ids=[c[0] for c in CASES])
def test_merge_matches_golden_and_is_idempotent(name: str, rt: str, version: str) -> None:
    before = (GOLDEN / f"{name}.input.toml").read_text()
    m = runtime.merge(rt, before, version, nri=rt != "podman")
    assert m.after == (GOLDEN / f"{name}.expected.toml").read_text()
    again = runtime.merge(rt, m.after, version, nri=rt != "podman")
    assert again.after == m.after and again.changes == []
    # every other key keeps its value, every comment its line
    old, new = _flatten(tomllib.loads(before)), _flatten(tomllib.loads(m.after))
    changed = {c.key for c in m.changes}
    assert {k: v for k, v in old.items() if k not in changed} == {
        k: v for k, v in new.items() if k in old and k not in changed}
    comments = [ln.strip() for ln in before.splitlines() if ln.strip().startswith("#")]
    assert all(c in m.after for c in comments)


def test_containerd_17_turns_cdi_and_nri_on() -> None:
    m = runtime.merge("containerd", (GOLDEN / "containerd-1.7.input.toml").read_text(), "1.7.12")
    cfg = tomllib.loads(m.after)
    assert cfg["plugins"]["io.containerd.grpc.v1.cri"]["enable_cdi"] is True
    assert cfg["plugins"]["io.containerd.nri.v1.nri"]["disable"] is False
    assert "-    enable_cdi = false\n+    enable_cdi = true" in m.diff()


def test_containerd_2_uses_version_3_sections_and_defaults() -> None:
    m = runtime.merge("containerd", "", "2.1.0")
    assert tomllib.loads(m.after) == {"version": 3}
    assert any("on by default" in n for n in m.notes)
    m = runtime.merge("containerd", "", "2.1.0", spec_dirs=("/etc/cdi", "/opt/cdi"))
    assert tomllib.loads(m.after)["plugins"]["io.containerd.cri.v1.runtime"][
        "cdi_spec_dirs"] == ["/etc/cdi", "/opt/cdi"]


def test_crio_cdi_from_1_24() -> None:
    with pytest.raises(RuntimeConfigError, match=r"CRI-O 1\.23\.9 has no CDI"):
        runtime.merge("crio", "", "1.23.9", nri=False)
    assert runtime.merge("crio", "", "1.24.0", nri=False).changes == []


def test_crio_nri_is_added_before_1_30_and_only_corrected_from_1_30() -> None:
    m = runtime.merge("crio", "", "1.29.4")
    assert tomllib.loads(m.after) == {"crio": {"nri": {"enable_nri": True}}}
    m = runtime.merge("crio", "", "1.30.0")
    assert m.changes == [] and any("NRI is on by default" in n for n in m.notes)
    m = runtime.merge("crio", "[crio.nri]\nenable_nri = false\n", "1.31.2")
    assert tomllib.loads(m.after) == {"crio": {"nri": {"enable_nri": True}}}


CUSTOM = {"containerd": "version = 2\n[plugins.'io.containerd.grpc.v1.cri']\n"
                        "enable_cdi = true\ncdi_spec_dirs = ['/opt/cdi']\n",
          "crio": "[crio.runtime]\ncdi_spec_dirs = ['/opt/cdi']\n",
          "podman": "[engine]\ncdi_spec_dirs = ['/opt/cdi']\n"}


@pytest.mark.parametrize(("rt", "version"), [("containerd", "1.7.12"), ("crio", "1.28.1"),
                                             ("podman", "5.5.0")])
def test_a_custom_spec_dir_list_is_kept(rt: str, version: str) -> None:
    m = runtime.merge(rt, CUSTOM[rt], version, nri=False)
    assert m.changes == [] and m.after == CUSTOM[rt]
    m = runtime.merge(rt, CUSTOM[rt], version, nri=False, spec_dirs=("/etc/cdi", "/srv/cdi"))
    assert [(c.key.rsplit(".", 1)[-1], c.new) for c in m.changes] == [
        ("cdi_spec_dirs", ["/etc/cdi", "/srv/cdi"])]


def test_containerd_enable_cdi_is_removed_from_2_3() -> None:
    text = ("version = 3\n[plugins.'io.containerd.cri.v1.runtime']\nenable_cdi = false\n"
            "cdi_spec_dirs = ['/etc/cdi']\n")
    # 2.2.x still reads the key: a false is corrected
    m = runtime.merge("containerd", text, "2.2.9", nri=False)
    assert tomllib.loads(m.after)["plugins"]["io.containerd.cri.v1.runtime"][
        "enable_cdi"] is True
    for v in ("2.3.0", "2.4.2"):  # deprecated in 2.3, ignored from 2.4: removed, not set
        m = runtime.merge("containerd", text, v, nri=False)
        assert tomllib.loads(m.after)["plugins"]["io.containerd.cri.v1.runtime"] == {
            "cdi_spec_dirs": ["/etc/cdi"]}
        assert [(c.key, c.old, c.new) for c in m.changes] == [
            ("plugins.io.containerd.cri.v1.runtime.enable_cdi", False, None)]
        assert runtime.merge("containerd", m.after, v, nri=False).changes == []
    with pytest.raises(RuntimeConfigError, match="always has CDI on"):
        runtime.merge("containerd", text, "2.4.0", cdi=False, nri=False)


@pytest.mark.parametrize(("rt", "version", "newest"), [
    ("podman", "4.1.0", "0.4.0"), ("podman", "4.2.2", "0.4.0"), ("podman", "4.3.0", "0.5.0"),
    ("podman", "5.0.1", "0.6.0"), ("podman", "5.4.0", "0.8.0"), ("podman", "5.5.0", None),
    ("crio", "1.24.3", "0.3.0"), ("crio", "1.25.0", "0.5.0"), ("crio", "1.30.0", "0.7.0"),
    ("containerd", "1.7.12", "0.5.0"), ("podman", "4.0.0", None)])
def test_newest_cdi_version_each_release_loads(rt: str, version: str,
                                               newest: str | None) -> None:
    assert runtime.max_cdi_version(rt, version) == newest


@pytest.mark.parametrize(("rt", "text", "version", "fragment"), [
    ("containerd", "", "1.6.20", "upgrade to containerd >= 1.7"),
    ("containerd", "version = 3\n", "1.7.12", "config version 3 needs containerd 2.x"),
    ("containerd", "root = '/x'\n", "1.7.12", "containerd config migrate"),
    ("containerd", "version = 2\n[plugins\n", "1.7.12", "not valid TOML"),
    ("crio", "", "1.23.0", "CRI-O >= 1.24"),
    ("crio", "", "1.24.0", "--no-nri"),
    ("podman", "", "4.0.2", "Podman >= 4.1"),
    ("docker", "", "1.0.0", "unknown runtime"),
])
def test_unsupported_combinations_are_refused(rt: str, text: str, version: str,
                                              fragment: str) -> None:
    with pytest.raises(RuntimeConfigError, match=fragment):
        runtime.merge(rt, text, version)


def test_podman_custom_dirs_need_podman_5_5() -> None:
    # Podman 5.4.0 never passes Engine.CdiSpecDirs to the CDI cache; 5.5.0 does
    for old in ("4.9.3", "5.4.2"):
        with pytest.raises(RuntimeConfigError, match=r"Podman >= 5\.5"):
            runtime.merge("podman", "", old, spec_dirs=("/opt/cdi",))
    m = runtime.merge("podman", "", "5.5.0", spec_dirs=("/opt/cdi",))
    assert tomllib.loads(m.after) == {"engine": {"cdi_spec_dirs": ["/opt/cdi"]}}


def test_write_goes_through_a_symlinked_config_to_the_real_file(tmp_path: Path) -> None:
    """`--write` on a symlink (config managed elsewhere, e.g. /etc/containerd/config.toml ->
    /opt/site/containerd.toml) updates the real file and keeps the link, instead of
    replacing the link with a plain file that the real config never sees."""
    from click.testing import CliRunner

    from aiplat.cli.devices import runtime_group

    site = tmp_path / "site"
    site.mkdir()
    real = site / "containerd.toml"
    real.write_text((GOLDEN / "containerd-1.7.input.toml").read_text())
    real.chmod(0o640)
    etc = tmp_path / "etc/containerd"
    etc.mkdir(parents=True)
    hop = etc / "hop.toml"
    hop.symlink_to("../../site/containerd.toml")  # relative, and two links deep
    link = etc / "config.toml"
    link.symlink_to("hop.toml")
    r = CliRunner().invoke(runtime_group, ["config", "containerd", "--current", str(link),
                                           "--version", "1.7.12", "--write"])
    assert r.exit_code == 0, r.output
    assert link.is_symlink() and os.readlink(link) == "hop.toml"
    assert real.read_text() == (GOLDEN / "containerd-1.7.expected.toml").read_text()
    assert real.stat().st_mode & 0o777 == 0o640  # the real file's mode is kept
    assert f"wrote {real} (the target of the symlink {link})" in r.stderr
    assert sorted(p.name for p in site.iterdir()) == ["containerd.toml"]  # no temp file left
    assert sorted(p.name for p in etc.iterdir()) == ["config.toml", "hop.toml"]
