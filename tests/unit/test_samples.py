"""aiplat samples: every shipped sample is written from the package alone and is read by the
command the tour runs on it; nothing existing is overwritten."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from aiplat.cli.main import main
from aiplat.cli.samples import samples
from aiplat.errors import InputError
from aiplat.samples import catalogue, get
from aiplat.samples.snapshots import scenarios


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]
         ) -> tuple[int | str | None, str]:
    try:
        code: int | str | None = main(argv)
    except SystemExit as e:  # commands that exit 1 themselves
        code = e.code
    out = capsys.readouterr()
    return code, out.out + out.err


def test_listed_in_every_format() -> None:
    r = CliRunner().invoke(samples, ["list", "-o", "json"])
    assert r.exit_code == 0, r.output
    names = {s["name"] for s in json.loads(r.output)}
    assert {"node-hgx-h100-degraded", "containerd-1.7.toml", "platform.yaml",
            "snapshot-tas-rack-too-small", "fgd-trace"} <= names
    table = CliRunner().invoke(samples, [])
    assert table.exit_code == 0 and "node-hgx-h100-degraded" in table.output


@pytest.mark.parametrize("name", [s.name for s in catalogue()
                                  if s.name.startswith("node-")])
def test_node_trees_are_read_by_node_inventory(name: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    root = get(name, tmp_path / name)
    code, out = _run(["node", "inventory", "--root", str(root), "-o", "json"], capsys)
    assert code == 0, out
    inv = json.loads(out[out.index("{"):])
    gpus = [d for d in inv["pci"] if d["kind"] == "gpu"]
    assert len(gpus) == {"node-hgx-h100": 8, "node-hgx-h100-degraded": 8, "node-l40s-4": 4,
                         "node-mi300x-8": 8, "node-gpu-less-vm": 0}[name]


def test_degraded_node_fails_exactly_the_checks_the_tour_shows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = get("node-hgx-h100-degraded", tmp_path / "hgx")
    code, out = _run(["node", "check", "--root", str(root)], capsys)
    assert code == 1, out
    assert "x8" in out and "DOWN" in out


def test_containerd_config_is_merged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = get("containerd-1.7.toml", tmp_path / "c.toml")
    code, out = _run(["runtime", "config", "containerd", "--current", str(path), "--version",
                      "1.7.12"], capsys)
    assert code == 0, out
    assert "enable_cdi = true" in out


@pytest.mark.parametrize("scenario", sorted(scenarios()))
def test_snapshots_explain_as_expected(scenario: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    folder = get(f"snapshot-{scenario}", tmp_path / scenario)
    expected = json.loads((folder / "expected.json").read_text())
    code, out = _run(["kube", "why-pending", expected["name"], "-n", expected["namespace"],
                      "--snapshot", str(folder), "-o", "json"], capsys)
    assert code in (0, 1), out
    assert json.loads(out[out.index("{"):])["code"] == expected["code"]


def test_example_spec_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = get("platform.yaml", tmp_path / "platform.yaml")
    code, out = _run(["spec", "validate", str(path)], capsys)
    assert code == 0, out


def test_never_overwrites_and_names_what_exists(tmp_path: Path) -> None:
    (tmp_path / "platform.yaml").write_text("mine")
    with pytest.raises(InputError, match="never overwrite"):
        get("platform.yaml", tmp_path / "platform.yaml")
    assert (tmp_path / "platform.yaml").read_text() == "mine"
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "x").write_text("")
    with pytest.raises(InputError, match="not an empty directory"):
        get("node-l40s-4", tmp_path / "tree")


@pytest.mark.parametrize("name", ["node-hgx-h100", "platform.yaml", "snapshot-quota-exhausted"])
def test_get_twice_leaves_the_same_sample_as_it_is_and_any_change_is_refused(
        name: str, tmp_path: Path) -> None:
    dest = tmp_path / "s"
    first = CliRunner().invoke(samples, ["get", name, "-d", str(dest)])
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(samples, ["get", name, "-d", str(dest)])
    assert again.exit_code == 0 and "unchanged" in again.stderr, again.output
    assert again.stdout.strip() == str(dest)
    edited = next(p for p in sorted(dest.rglob("*")) if p.is_file() and not p.is_symlink()) \
        if dest.is_dir() else dest
    edited.write_bytes(edited.read_bytes() + b"#")
    with pytest.raises(InputError, match="does not hold sample"):
        get(name, dest)
    assert edited.read_bytes().endswith(b"#")  # left as the admin made it
    assert [p.name for p in tmp_path.iterdir()] == ["s"]  # no temporary folder left


def test_an_empty_directory_takes_the_sample(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert get("node-l40s-4", tmp_path / "empty") == tmp_path / "empty"
    assert (tmp_path / "empty" / "sys").is_dir()


def test_unknown_and_download_only_samples_say_what_to_do(tmp_path: Path) -> None:
    r = CliRunner().invoke(samples, ["get", "nope"])
    assert r.exit_code != 0
    with pytest.raises(InputError, match="node-hgx-h100"):
        get("nope", tmp_path / "x")
    with pytest.raises(InputError, match=r"github\.com/alibaba/clusterdata"):
        get("fgd-trace", tmp_path / "data")
