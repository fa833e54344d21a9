"""The interop matrix against the real tools: aiplat <-> cosign, oras, modctl; referrers vs tags.

The tools are built from their Go modules (``python -m aiplat.artifacts.oracles``, pinned in
``src/aiplat/artifacts/tools/go.mod``). Three real registries on 127.0.0.1:
go-containerregistry's registry with the OCI 1.1 referrers API on (``referrers-registry``),
distribution v3.1 and Debian's docker-registry (distribution 2.8); neither distribution
serves ``/v2/<name>/referrers/<digest>``, so there signatures go under the
``sha256-<hex>.sig`` tag.
cosign runs fully offline: key pairs, no transparency log (``--tlog-upload=false``,
``--insecure-ignore-tlog``), plain HTTP on loopback (``--allow-http-registry``).
When the tools or the registry are missing the tests skip locally and fail in CI.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import need
from registry import Registry, missing, wait_serving
from registry import model_cli as run
from safetensors.numpy import load_file, save_file

from aiplat.artifacts import oracles
from aiplat.artifacts.cosign import REFERRER_TYPE
from aiplat.errors import InputError

pytestmark = pytest.mark.integration

PASSWORD = "aiplat-interop"



@pytest.fixture(scope="module")
def bins() -> dict[str, Path]:
    try:
        return oracles.locate()
    except InputError as e:
        need(str(e))
        raise


class V3Registry(Registry):
    """distribution v3's ``registry serve`` with the same config as Debian's 2.8."""

    def __init__(self, workdir: Path, binary: Path) -> None:
        super().__init__(workdir)
        self.binary = binary

    def command(self, config: Path) -> list[str]:
        return [str(self.binary), "serve", str(config)]

    def start(self) -> V3Registry:

        from registry import _CONFIG

        self.root.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "config.yml"
        config.write_text(_CONFIG.format(root=self.root, port=self.port))
        env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(self.command(config), stdout=log,
                                          stderr=subprocess.STDOUT, env=env)
        wait_serving(self, self.binary.name)
        return self


class ReferrersRegistry(V3Registry):
    """go-containerregistry's registry with the referrers API (blobs on disk)."""

    def command(self, config: Path) -> list[str]:
        return [str(self.binary), "-address", self.host, "-blobs", str(self.root)]


@pytest.fixture(scope="module")
def oci11(bins: dict[str, Path],
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    with ReferrersRegistry(tmp_path_factory.mktemp("registry-oci11"),
                           bins["referrers-registry"]) as reg:
        yield reg


@pytest.fixture(scope="module")
def v3(bins: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    with V3Registry(tmp_path_factory.mktemp("registry-v3"), bins["registry"]) as reg:
        yield reg


@pytest.fixture(scope="module")
def v2(bins: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    reason = missing()
    if reason is not None:
        need(reason)
    with Registry(tmp_path_factory.mktemp("registry-v2")) as reg:
        yield reg


@pytest.fixture(params=["referrers", "distribution-v3-tags", "distribution-2.8-tags"])
def reg(request: pytest.FixtureRequest) -> Registry:
    name = {"referrers": "oci11", "distribution-v3-tags": "v3"}.get(request.param, "v2")
    return request.getfixturevalue(name)


@pytest.fixture(scope="module")
def tool_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home")
    return {**os.environ, "HOME": str(home), "TUF_ROOT": str(home / "tuf"),
            "XDG_CONFIG_HOME": str(home / "config"), "COSIGN_PASSWORD": PASSWORD,
            "DOCKER_CONFIG": str(home / "docker")}


def tool(env: dict[str, str], *args: str | Path, cwd: Path | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([str(a) for a in args], env=env, cwd=cwd, capture_output=True,
                              text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{args[:2]} still running after {timeout} s: {e.stderr!r}"
                             ) from None


def make_model(root: Path, seed: int) -> Path:
    root.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    save_file({"w": rng.standard_normal(4096, dtype=np.float32)},
              str(root / "model.safetensors"))
    (root / "config.json").write_text(json.dumps({"model_type": "llama", "seed": seed}))
    return root


def push(reg: Registry, src: Path, repo: str, *extra: str) -> str:
    code, out, err = run("push", str(src), f"{reg.host}/{repo}:v1", "-o", "json", *extra)
    assert code == 0, err
    return str(json.loads(out)["digest"])


def policy(path: Path, reg: Registry, pub: Path) -> Path:
    pem = pub.read_text().replace("\n", "\\n")
    path.write_text(
        "apiVersion: aiplat/v1alpha1\nkind: TrustPolicy\n"
        f'keys:\n  signer: {{publicKey: "{pem}"}}\n'
        f'rules:\n  - {{repositories: ["{reg.host}/*"], require: signed, keys: [signer]}}\n')
    return path


def referrers(reg: Registry, repo: str, digest: str) -> list[dict[str, object]] | None:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{reg.url}/v2/{repo}/referrers/{digest}") as r:
            return list(json.loads(r.read())["manifests"])
    except urllib.error.HTTPError as e:
        assert e.code == 404
        return None


def tags(reg: Registry, repo: str) -> list[str]:
    import urllib.request

    with urllib.request.urlopen(f"{reg.url}/v2/{repo}/tags/list") as r:
        return list(json.loads(r.read())["tags"])


COSIGN_VERIFY = ("verify", "--insecure-ignore-tlog=true", "--allow-http-registry=true",
                 "--experimental-oci11=true")
COSIGN_SIGN = ("sign", "--tlog-upload=false", "--use-signing-config=false",
               "--new-bundle-format=false", "--allow-http-registry=true", "--yes")


def test_a_model_aiplat_signed_verifies_with_cosign(
        reg: Registry, bins: dict[str, Path], tool_env: dict[str, str], tmp_path: Path) -> None:
    key = tmp_path / "aiplat.key"
    assert run("sign", "--generate-key", str(key))[0] == 0
    digest = push(reg, make_model(tmp_path / "m", 1), "signed/m", "--sign-key", str(key))
    ref = f"{reg.host}/signed/m@{digest}"
    cp = tool(tool_env, bins["cosign"], *COSIGN_VERIFY, "--key", f"{key}.pub", ref)
    assert cp.returncode == 0, cp.stderr
    assert json.loads(cp.stdout)[0]["critical"]["image"]["docker-manifest-digest"] == digest
    # Referrers where the registry serves them, the tag otherwise.
    found = referrers(reg, "signed/m", digest)
    sig_tag = f"sha256-{digest.removeprefix('sha256:')}.sig"
    if isinstance(reg, ReferrersRegistry):
        assert found and [m["artifactType"] for m in found] == [REFERRER_TYPE]
        assert sig_tag not in tags(reg, "signed/m")
    else:
        assert found is None and sig_tag in tags(reg, "signed/m")
    # Another key does not verify it.
    other = tmp_path / "other.key"
    assert run("sign", "--generate-key", str(other))[0] == 0
    cp = tool(tool_env, bins["cosign"], *COSIGN_VERIFY, "--key", f"{other}.pub", ref)
    assert cp.returncode != 0 and ("no matching signatures" in cp.stderr
                                   or "no signatures found" in cp.stderr), cp.stderr


def test_a_model_cosign_signed_verifies_with_aiplat_pull_policy(
        reg: Registry, bins: dict[str, Path], tool_env: dict[str, str], tmp_path: Path) -> None:
    cp = tool(tool_env, bins["cosign"], "generate-key-pair", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    pol = policy(tmp_path / "policy.yaml", reg, tmp_path / "cosign.pub")
    digest = push(reg, make_model(tmp_path / "m", 2), "cosigned/m")
    unsigned = push(reg, make_model(tmp_path / "u", 3), "cosigned/u")
    cache = str(tmp_path / "cache")
    cp = tool(tool_env, bins["cosign"], *COSIGN_SIGN, "--key", tmp_path / "cosign.key",
              f"{reg.host}/cosigned/m@{digest}")
    assert cp.returncode == 0, cp.stderr
    code, out, err = run("pull", f"{reg.host}/cosigned/m:v1", "--cache", cache, "--policy",
                         str(pol), "-o", "json")
    assert code == 0, err
    assert json.loads(out)["trust"].startswith("signed by ecdsa-p256:")
    assert json.loads(out)["digest"] == digest
    code, _, err = run("pull", f"{reg.host}/cosigned/u:v1", "--cache", cache, "--policy",
                       str(pol))
    assert code == 1 and "is not signed" in err, err
    # cosign's signature of m, copied onto u's signature tag: it signs another digest.
    sig_of_m = tool(tool_env, bins["oras"], "manifest", "fetch", "--plain-http",
                    f"{reg.host}/cosigned/m:sha256-{digest.removeprefix('sha256:')}.sig")
    assert sig_of_m.returncode == 0, sig_of_m.stderr
    (tmp_path / "sig.json").write_text(sig_of_m.stdout)
    cp = tool(tool_env, bins["oras"], "cp", "--from-plain-http", "--to-plain-http",
              f"{reg.host}/cosigned/m:sha256-{digest.removeprefix('sha256:')}.sig",
              f"{reg.host}/cosigned/u:sha256-{unsigned.removeprefix('sha256:')}.sig")
    assert cp.returncode == 0, cp.stderr
    code, _, err = run("pull", f"{reg.host}/cosigned/u:v1", "--cache", cache, "--policy",
                       str(pol))
    assert code == 1 and "another manifest" in err, err
    # And aiplat signs with cosign's own encrypted key (COSIGN_PASSWORD).
    os.environ["COSIGN_PASSWORD"] = PASSWORD
    try:
        code, _, err = run("sign", f"{reg.host}/cosigned/u:v1", "--key",
                           str(tmp_path / "cosign.key"))
    finally:
        del os.environ["COSIGN_PASSWORD"]
    assert code == 0, err
    code, _, err = run("pull", f"{reg.host}/cosigned/u:v1", "--cache", cache, "--policy",
                       str(pol))
    assert code == 0, err


def test_cosign_referrers_mode_signature_verifies_with_aiplat(
        oci11: Registry, bins: dict[str, Path], tool_env: dict[str, str], tmp_path: Path) -> None:
    cp = tool(tool_env, bins["cosign"], "generate-key-pair", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    digest = push(oci11, make_model(tmp_path / "m", 4), "cosigned-oci11/m")
    cp = tool({**tool_env, "COSIGN_EXPERIMENTAL": "1"}, bins["cosign"], *COSIGN_SIGN,
              "--registry-referrers-mode=oci-1-1", "--key", tmp_path / "cosign.key",
              f"{oci11.host}/cosigned-oci11/m@{digest}")
    assert cp.returncode == 0, cp.stderr
    found = referrers(oci11, "cosigned-oci11/m", digest)
    assert found and found[0]["artifactType"] == REFERRER_TYPE
    pol = policy(tmp_path / "policy.yaml", oci11, tmp_path / "cosign.pub")
    code, _, err = run("pull", f"{oci11.host}/cosigned-oci11/m:v1", "--cache",
                       str(tmp_path / "cache"), "--policy", str(pol))
    assert code == 0, err


def test_oras_sees_the_layers_aiplat_pushed(
        reg: Registry, bins: dict[str, Path], tool_env: dict[str, str], tmp_path: Path) -> None:
    src = make_model(tmp_path / "m", 5)
    digest = push(reg, src, "oras/m")
    cp = tool(tool_env, bins["oras"], "manifest", "fetch", "--plain-http",
              f"{reg.host}/oras/m:v1")
    assert cp.returncode == 0, cp.stderr
    manifest = json.loads(cp.stdout)
    assert manifest["artifactType"] == "application/vnd.cncf.model.manifest.v1+json"
    titles = sorted(x["annotations"]["org.opencontainers.image.title"]
                    for x in manifest["layers"])
    assert "model.safetensors" in titles
    out = tmp_path / "pulled"
    cp = tool(tool_env, bins["oras"], "pull", "--plain-http", "-o", out,
              f"{reg.host}/oras/m@{digest}")
    assert cp.returncode == 0, cp.stderr
    assert (out / "model.safetensors").read_bytes() == (src / "model.safetensors").read_bytes()


def test_modctl_and_aiplat_exchange_models(
        reg: Registry, bins: dict[str, Path], tool_env: dict[str, str], tmp_path: Path) -> None:
    modctl = bins.get("modctl")
    if modctl is None:
        pytest.skip("modctl is not built")
    storage = tmp_path / "modctl-storage"
    src = make_model(tmp_path / "m", 6)
    common = ("--storage-dir", storage, "--log-dir", tmp_path / "modctl-logs", "--no-progress")
    ref = f"{reg.host}/modctl/m:v1"
    (src / "Modelfile").write_text("NAME m\nARCH llama\nFAMILY llama\nFORMAT safetensors\n"
                                   "CONFIG config.json\nMODEL model.safetensors\n")
    cp = tool(tool_env, modctl, "build", *common, "-f", src / "Modelfile", "-t", ref,
              src, cwd=src)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    cp = tool(tool_env, modctl, "push", *common, "--plain-http", ref)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    code, out, err = run("pull", ref, "--cache", str(tmp_path / "cache"), "-o", "json")
    assert code == 0, err
    path = Path(json.loads(out)["path"])
    want = load_file(str(src / "model.safetensors"))["w"]
    assert np.array_equal(load_file(str(path / "model.safetensors"))["w"], want)
    assert json.loads((path / "config.json").read_text())["seed"] == 6


def test_modctl_pulls_a_model_aiplat_pushed(
        v2: Registry, bins: dict[str, Path], tool_env: dict[str, str], tmp_path: Path) -> None:
    modctl = bins["modctl"]
    common = ("--storage-dir", tmp_path / "modctl-storage", "--log-dir", tmp_path / "logs",
              "--no-progress")
    mine = make_model(tmp_path / "mine", 7)
    push(v2, mine, "modctl/aiplat")
    cp = tool(tool_env, modctl, "pull", *common, "--plain-http", f"{v2.host}/modctl/aiplat:v1",
              "--extract-dir", tmp_path / "extracted", "--extract-from-remote", timeout=20)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    got = load_file(str(tmp_path / "extracted" / "model.safetensors"))["w"]
    assert np.array_equal(got, load_file(str(mine / "model.safetensors"))["w"])
