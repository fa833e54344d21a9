"""`aiplat version`: the pinned upstream versions as Go reads them, the commit, the formats."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import pytest
import yaml

from aiplat import __version__
from aiplat.cli import _build as build
from aiplat.cli import version as v
from aiplat.cli.main import main

GO_MODS = sorted({t.go_mod for t in v.TARGETS})
GO = shutil.which("go") or next((p for p in ["/usr/local/go/bin/go"] if Path(p).exists()), None)


def _go_view(go_mod: Path) -> dict[str, str]:
    """The oracle: `go mod edit -json`, requirements with replacements applied."""
    if GO is None:
        if os.environ.get("CI", "").lower() in {"true", "1", "yes"}:
            pytest.fail("go is not installed (CI=true: this oracle must run)")
        pytest.skip("go is not installed")
    done = subprocess.run([GO, "mod", "edit", "-json", str(go_mod)], capture_output=True,
                          text=True, check=True, timeout=60)
    mod = json.loads(done.stdout)
    required = {r["Path"]: r["Version"] for r in mod.get("Require") or []}
    for r in mod.get("Replace") or []:
        if r["New"].get("Version") and r["Old"]["Path"] in required:
            required[r["Old"]["Path"]] = r["New"]["Version"]
    return required


@pytest.mark.parametrize("go_mod", GO_MODS)
def test_go_mod_versions_match_go_itself(go_mod: str) -> None:
    path = Path(str(resources.files("aiplat") / go_mod))
    assert v.go_mod_versions(path.read_text()) == _go_view(path)


def test_replace_by_another_module_wins_and_a_local_path_keeps_the_requirement() -> None:
    text = """module x
require (
\ta.io/a v1.0.0 // indirect
\tb.io/b v2.0.0
)
require c.io/c v3.0.0
replace a.io/a => fork.io/a v1.0.1
replace (
\tb.io/b => ../b
\tz.io/unrequired => z.io/z v9.9.9
)
"""
    assert v.go_mod_versions(text) == {"a.io/a": "v1.0.1", "b.io/b": "v2.0.0",
                                       "c.io/c": "v3.0.0"}


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["version", *args]) == 0
    return capsys.readouterr().out


def test_json_names_every_target_at_its_pinned_version(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    info = json.loads(_run(capsys, "-o", "json"))
    assert info["aiplat"] == __version__
    assert info["python"] == platform.python_version()
    got = {t["name"]: t["version"] for t in info["targets"]}
    assert set(got) >= {"kubernetes", "kueue", "jobset", "kwok", "etcd", "cosign", "oras",
                        "modctl", "container-device-interface", "nvidia-container-toolkit"}
    for t in info["targets"]:
        path = Path(str(resources.files("aiplat") / t["pinnedIn"].removeprefix("aiplat/")))
        assert t["version"] == _go_view(path)[t["module"]], t
    # modctl is pinned through a replace directive (the module proxy serves its old path)
    assert got["modctl"] == "v0.2.2"


def test_commit_of_a_source_checkout_is_its_git_head(capsys: pytest.CaptureFixture[str]
                                                    ) -> None:
    info = json.loads(_run(capsys, "-o", "json"))
    root = Path(build.__file__).resolve().parents[3]
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=False)
    if head.returncode != 0:
        assert info["commit"] == "unknown"
    else:
        assert info["commit"] == head.stdout.strip()


def test_yaml_is_the_json_and_the_table_lists_every_target(
        capsys: pytest.CaptureFixture[str]) -> None:
    as_json = json.loads(_run(capsys, "-o", "json"))
    assert yaml.safe_load(_run(capsys, "-o", "yaml")) == as_json
    table = _run(capsys).splitlines()
    assert table[0].split() == ["COMPONENT", "VERSION", "SOURCE"]
    assert [line.split()[0] for line in table[1:]] == (
        ["aiplat", "python"] + [t["name"] for t in as_json["targets"]])


def test_bad_format_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version", "-o", "xml"]) == 2
    assert "'xml' is not one of" in capsys.readouterr().err


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True, env=env).stdout.strip()


def test_head_read_from_git_files_is_what_git_says(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "f").write_text("1")
    _git(repo, "add", "f")
    _git(repo, "commit", "-q", "-m", "one")
    assert build._read_head(repo / ".git") == _git(repo, "rev-parse", "HEAD")  # loose ref
    _git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert build._read_head(repo / ".git") == _git(repo, "rev-parse", "HEAD")  # packed
    (repo / "f").write_text("2")
    _git(repo, "commit", "-q", "-am", "two")
    _git(repo, "checkout", "-q", "--detach", "HEAD~1")
    assert build._read_head(repo / ".git") == _git(repo, "rev-parse", "HEAD")  # detached
    _git(repo, "checkout", "-q", "main")
    _git(repo, "worktree", "add", "-q", str(tmp_path / "wt"), "HEAD~1")
    assert build._read_head(tmp_path / "wt" / ".git") is None  # a file: git answers instead
    assert build._git_head(tmp_path / "wt") == _git(tmp_path / "wt", "rev-parse", "HEAD")


def test_dash_dash_version_names_version_commit_and_python(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    out = capsys.readouterr().out.strip()
    head = build.commit()
    assert out == (f"aiplat {__version__} (commit {head[:12]}, Python "
                   f"{platform.python_version()})")


def test_every_packaged_crd_bundle_and_lab_component_is_a_target() -> None:
    from aiplat.cluster.assets import COMPONENTS
    from aiplat.kube.crds import bundles

    modules = {t.module for t in v.TARGETS}
    assert {b["module"] for b in bundles() if "module" in b} <= modules
    assert {c.module for c in COMPONENTS} <= modules
