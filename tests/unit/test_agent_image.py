"""The node-agent image's decisions, without building it
(tests/integration/test_agent_image_podman.py builds and runs it): the cache key, the
requirements it installs, the configuration Podman imports, the manifest readers, the
pruning, and the CLI's refusal when it cannot build.

The strongest check here is the import closure: the agent is run for real (dry-run on a fake
host, then its cluster client constructed) in a fresh interpreter, and every distribution it
loaded must be in the image, i.e. in the requirement closure of ``AGENT_DISTRIBUTIONS``.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from aiplat.cli.main import cli, main
from aiplat.cluster import agent_image as ai
from aiplat.errors import InputError

REPO = Path(__file__).resolve().parents[2]


def _wheel(path: Path, files: dict[str, str], date: tuple[int, ...] = (2020, 1, 1, 0, 0, 0)
           ) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(zipfile.ZipInfo(name, date_time=date), text)  # type: ignore[arg-type]
    return path


META = ("Metadata-Version: 2.1\nName: aiplat\nVersion: 0.1.0\n"
        "Requires-Dist: pydantic<3,>=2.7\nRequires-Dist: click<9,>=8.1\n"
        "Requires-Dist: PyYAML>=6.0\nRequires-Dist: numpy>=1.26\nRequires-Dist: rich>=13\n"
        "Requires-Dist: lightkube>=1.0.1\nRequires-Dist: jinja2>=3.1\n"
        "Requires-Dist: pytest>=8; extra == \"dev\"\n\n")


def _files(body: str = "x = 1\n") -> dict[str, str]:
    return {"aiplat/__init__.py": body, "aiplat-0.1.0.dist-info/METADATA": META}


def test_the_key_follows_the_wheel_content_not_its_zip_dates(tmp_path: Path) -> None:
    r = ai.Recipe(arch="amd64")
    a = ai.wheel_key(_wheel(tmp_path / "a.whl", _files()), r)
    b = ai.wheel_key(_wheel(tmp_path / "b.whl", _files(), date=(2024, 5, 6, 7, 8, 10)), r)
    c = ai.wheel_key(_wheel(tmp_path / "c.whl", _files("x = 2\n")), r)
    d = ai.wheel_key(tmp_path / "a.whl", ai.Recipe(arch="amd64", suite="trixie"))
    assert a == b
    assert len({a, c, d}) == 3


def test_the_agent_requirements_come_from_the_wheel_with_their_specifiers(tmp_path: Path
                                                                         ) -> None:
    w = _wheel(tmp_path / "a.whl", _files())
    reqs = ai.agent_requirements(w)
    assert reqs == ["pydantic<3,>=2.7", "click<9,>=8.1", "PyYAML>=6.0", "rich>=13",
                    "lightkube>=1.0.1"]
    assert "pytest" not in ai.wheel_requirements(w)  # an extra's requirement


def test_a_wheel_without_an_agent_requirement_is_refused(tmp_path: Path) -> None:
    w = _wheel(tmp_path / "a.whl", {"aiplat-0.1.0.dist-info/METADATA":
                                    META.replace("Requires-Dist: rich>=13\n", "")})
    with pytest.raises(InputError, match=r"needs rich .*AGENT_DISTRIBUTIONS"):
        ai.agent_requirements(w)
    with pytest.raises(InputError, match="not a wheel"):
        ai.agent_requirements(_wheel(tmp_path / "b.whl", {"x.py": ""}))


def test_every_agent_distribution_is_a_project_dependency() -> None:
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {ai.normalise(re.split(r"[\s<>=!~\[]", d, maxsplit=1)[0]) for d in deps}
    assert {ai.normalise(d) for d in ai.AGENT_DISTRIBUTIONS} <= names


def _closure(names: list[str]) -> set[str]:
    """The installed distributions ``names`` need (unconditional requirements), recursively."""
    seen: set[str] = set()
    todo = [ai.normalise(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for req in md.requires(name) or []:
            if ";" not in req:
                todo.append(ai.normalise(re.split(r"[\s<>=!~\[(]", req, maxsplit=1)[0]))
    return seen


PROBE = """
import sys, json, importlib.metadata as md
before = set(sys.modules)
from aiplat.cli.main import main
try:
    main(["node", "agent", "--root", sys.argv[1], "--once", "--dry-run"])
except SystemExit:
    pass
from aiplat.node.agent import LightkubeNodeClient
try:
    LightkubeNodeClient()
except Exception as e:
    print("client:", type(e).__name__, file=sys.stderr)
dists = md.packages_distributions()
tops = {m.split(".")[0] for m in set(sys.modules) - before}
print(json.dumps(sorted({d for t in tops for d in dists.get(t, [])})))
"""


def test_the_image_holds_every_distribution_the_agent_loads(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "tests"))
    from fixtures.nodes import hgx_h100

    root = hgx_h100(tmp_path / "host", degraded=True)
    done = subprocess.run([sys.executable, "-c", PROBE, str(root)], capture_output=True,
                          text=True, timeout=120, check=True,
                          env={"PATH": "/usr/bin:/bin", "KUBECONFIG": str(tmp_path / "none")})
    loaded = {ai.normalise(d) for d in json.loads(done.stdout.splitlines()[-1])}
    assert "client: ConfigError" in done.stderr  # the client's imports ran
    assert {"aiplat", "lightkube", "pydantic"} <= loaded
    image = _closure(list(ai.AGENT_DISTRIBUTIONS)) | {"aiplat"}
    assert loaded - image == set(), "the agent imports distributions the image lacks"


def test_left_out_distributions_are_not_in_the_image_closure() -> None:
    image = _closure(list(ai.AGENT_DISTRIBUTIONS))
    for big in ("kubernetes-validate", "cryptography", "cel-python", "jsonschema"):
        assert big not in image


def test_the_import_configuration(tmp_path: Path) -> None:
    changes = ai.import_changes("localhost/x:1", "abc")
    assert changes[0] == 'ENTRYPOINT ["/usr/local/bin/aiplat", "node", "agent"]'
    assert "USER 65534:65534" in changes
    assert "ENV PYTHONDONTWRITEBYTECODE=1" in changes  # the root file system is read-only
    assert f"LABEL {ai.KEY_LABEL}=abc" in changes
    script = tmp_path / "aiplat"
    script.write_text(ai.launcher())
    compile(script.read_text(), str(script), "exec")
    assert script.read_text().startswith("#!/usr/bin/python3 -s\n")


def test_dpkg_status_and_dist_info_readers(tmp_path: Path) -> None:
    status = ("Package: python3\nStatus: install ok installed\nVersion: 3.11.2-1+b1\n\n"
              "Package: gone\nStatus: deinstall ok config-files\nVersion: 1\n\n"
              "Package: bash\nStatus: install ok installed\nPriority: required\n"
              "Version: 5.2.15-2+b7\n")
    assert ai.dpkg_packages(status) == {"bash": "5.2.15-2+b7", "python3": "3.11.2-1+b1"}
    d = tmp_path / "click-8.1.7.dist-info"
    d.mkdir()
    (d / "METADATA").write_text("Metadata-Version: 2.1\nName: click\nVersion: 8.1.7\n\nbody\n")
    assert ai.python_distributions(tmp_path) == {"click": "8.1.7"}


def test_prune_keeps_copyright_files_and_drops_the_rest(tmp_path: Path) -> None:
    for rel in ("usr/share/doc/bash/copyright", "usr/share/doc/bash/README.gz",
                "usr/share/man/man1/ls.1.gz", "var/lib/apt/lists/x_Packages",
                "var/cache/debconf/config.dat", "var/cache/debconf/config.dat-old",
                "usr/lib/python3.11/os.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    ai.prune(tmp_path)
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == ["usr/lib/python3.11/os.py", "usr/share/doc/bash/copyright",
                    "var/cache/debconf/config.dat"]


def test_pip_platform_and_arch() -> None:
    tags = ai.pip_platforms("amd64")
    assert tags[0] == "manylinux_2_36_x86_64" and "manylinux_2_17_x86_64" in tags
    assert tags[-1] == "manylinux1_x86_64"
    assert ai.debian_arch("aarch64") == "arm64"
    with pytest.raises(InputError, match="no Debian architecture"):
        ai.debian_arch("sparc64")


def test_the_cli_refuses_clearly_when_it_cannot_build(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(ai, "missing", lambda: "debootstrap is not installed "
                        "(fix: apt-get install debootstrap)")
    assert main(["lab", "cluster", "image"]) == 2
    err = capsys.readouterr().err
    assert "error: cannot build the node-agent image: debootstrap is not installed" in err


def test_the_image_command_lists_its_example() -> None:
    r = CliRunner().invoke(cli, ["lab", "cluster", "image", "--help"])
    assert r.exit_code == 0 and "aiplat lab cluster image --out node-agent.tar" in r.output


def test_the_cache_keeps_the_newest_root_file_systems_and_the_bases(tmp_path: Path) -> None:
    import os

    names = [f"{i:016x}" for i in range(5)]
    for i, name in enumerate(names):
        (tmp_path / name).mkdir()
        os.utime(tmp_path / name, (1000 + i, 1000 + i))
    (tmp_path / "base-0123456789abcdef.tar").write_text("")
    gone = ai.prune_cache(tmp_path, keep=tmp_path / names[0], entries=3)
    assert sorted(p.name for p in gone) == names[1:3]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        *names[:1], *names[3:], "base-0123456789abcdef.tar"]
