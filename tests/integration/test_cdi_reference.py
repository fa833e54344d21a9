"""`aiplat cdi validate` against the CDI reference loader itself, verdict for verdict.

The oracle is ``cdi-oracle`` (``aiplat.devices.oracles``): cdi.ReadSpec of the pinned
``tags.cncf.io/container-device-interface``, built from Go modules. On each file aiplat's
verdict (any ``spec``-class error) must equal the loader's (rejects or not); findings of the
``host-check`` class are aiplat's deliberate strictness and never count. Sources:

- the specs in the CDI module's own Go tests (pkg/cdi/*_test.go) and nvidia-ctk's golden
  specs (cmd/nvidia-ctk/cdi/generate, pkg/nvcdi, the installer), read from the Go module cache;
- aiplat's own example files (tests/data/cdi) and every spec ``aiplat cdi generate`` writes
  for a fake driver root (GPUs, MIG devices, generic devices);
- 5,000 hypothesis-mutated specs (fixed seed), all checked by one oracle process.

Locally the tests skip when Go or the oracle is missing; in CI (CI=true) they fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml
from cdi_specs import mutated_specs, nvidia_root, upstream_specs
from hypothesis import HealthCheck, given, seed, settings

from aiplat.devices import cdi, host, oracles
from aiplat.errors import InputError

pytestmark = pytest.mark.integration
DATA = Path(__file__).parents[1] / "data" / "cdi"
CTK_TESTS = ["cmd/nvidia-ctk/cdi/generate/generate_test.go", "pkg/nvcdi/spec/spec_test.go",
             "pkg/nvcdi/lib-imex_test.go", "cmd/nvidia-ctk-installer/toolkit/toolkit_test.go"]


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def _need(what: str) -> None:
    if _in_ci():
        pytest.fail(f"{what} (CI=true: integration tests must run, not skip)", pytrace=False)
    pytest.skip(what)


@pytest.fixture(scope="module")
def oracle() -> Path:
    try:
        return oracles.locate()
    except InputError as e:
        _need(str(e))
        raise


def _aiplat_rejects(file: str) -> list[str]:
    _doc, found = host.check_spec_file(file, None)
    return [str(f) for f in cdi.spec_errors(found)]


def _disagreements(oracle: Path, files: Iterable[Path]) -> list[str]:
    files = [str(f) for f in files]
    ref = oracles.reference_verdicts(files, oracle)
    out = []
    for f in files:
        ours = _aiplat_rejects(f)
        if bool(ours) == ref[f].ok:
            text = Path(f).read_text()[:600]
            out.append(f"{f}: reference {'accepts' if ref[f].ok else 'rejects: ' + ref[f].error}"
                       f"; aiplat {'rejects: ' + '; '.join(ours) if ours else 'accepts'}\n"
                       f"{text}")
    return out


def _write(dir_: Path, specs: dict[str, str], suffix: str = ".yaml") -> list[Path]:
    out = []
    for i, text in enumerate(specs.values()):
        p = dir_ / f"{i:05d}{suffix}"
        p.write_text(text)
        out.append(p)
    return out


def test_reference_fixtures_and_nvidia_golden_specs(oracle: Path, tmp_path: Path) -> None:
    try:
        cdi_dir = oracles.module_source(oracles.MODULE, oracles.pinned())
        ctk_dir = oracles.module_source(*oracles.NVIDIA_CTK)
    except InputError as e:
        _need(str(e))
    ours = upstream_specs(cdi_dir, sorted(str(p.relative_to(cdi_dir))
                                          for p in (cdi_dir / "pkg").rglob("*_test.go")))
    ctk = upstream_specs(ctk_dir, CTK_TESTS)
    assert len(ours) >= 20 and len(ctk) >= 8  # the fixtures are there, not silently gone
    files = _write(tmp_path, {**ours, **ctk})
    assert _disagreements(oracle, files) == []


CASES: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parents[1] / "fixtures" / "cdi_cases.yaml").read_text())


def test_issue_cases_have_the_stated_reference_verdict(oracle: Path, tmp_path: Path) -> None:
    files = {}
    for c in CASES:
        p = tmp_path / (c["name"] + c.get("suffix", ".yaml"))
        p.write_text(c["text"])
        files[str(p)] = c
    ref = oracles.reference_verdicts(list(files), oracle)
    wrong = [f"{c['name']}: stated {c['reference']}, loader says "
             f"{'accept' if ref[f].ok else 'reject: ' + ref[f].error}"
             for f, c in files.items() if ref[f].ok != (c["reference"] == "accept")]
    assert wrong == []
    assert _disagreements(oracle, [Path(f) for f in files]) == []


def test_aiplat_examples_agree(oracle: Path) -> None:
    files = [p for p in sorted(DATA.rglob("*")) if p.suffix in (".json", ".yaml")]
    assert len(files) >= 30
    assert _disagreements(oracle, files) == []


def test_every_generated_spec_loads(oracle: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        _need("mknod of the fake driver root needs root")
    root, gpus = nvidia_root(tmp_path / "root")
    (root / "dev/acc0").write_text("")
    os.unlink(root / "dev/acc0")
    os.mknod(root / "dev/acc0", 0o020666, os.makedev(240, 0))
    inv = host.gpus_from_inventory({"gpus": gpus})
    specs = host.generate(str(root), gpus=inv, chars=[
        host.parse_char_option("example.com/acc=0:/dev/acc0")], env=["A=1"], ldcache={})
    assert {d["kind"] for d in specs.values()} == {"nvidia.com/gpu", "example.com/acc"}
    out = tmp_path / "specs"
    out.mkdir()
    files = []
    for name, doc in specs.items():
        for fmt in ("json", "yaml"):
            p = out / (name.removesuffix(".json") + "." + fmt)
            p.write_text(cdi.dumps(doc, fmt))
            files.append(p)
            assert not _aiplat_rejects(str(p))
    assert _disagreements(oracle, files) == []


MUTATED = 5000


def test_mutated_specs_agree(oracle: Path, tmp_path: Path) -> None:
    """5,000 mutated specs from a fixed seed; one oracle process checks them all."""
    made: list[tuple[str, str]] = []

    @seed(20)
    @settings(max_examples=MUTATED, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(mutated_specs())
    def collect(spec: tuple[str, str]) -> None:
        made.append(spec)

    collect()
    files = []
    for i, (suffix, text) in enumerate(made):
        p = tmp_path / f"{i:05d}{suffix}"
        p.write_text(text)
        files.append(p)
    assert len(files) >= MUTATED
    rejected = sum(not v.ok for v in oracles.reference_verdicts([str(f) for f in files],
                                                                 oracle).values())
    assert 0.2 * len(files) < rejected < 0.95 * len(files)  # both verdicts well exercised
    bad = _disagreements(oracle, files)
    assert bad == [], f"{len(bad)} disagreements, first:\n" + "\n".join(bad[:5])
