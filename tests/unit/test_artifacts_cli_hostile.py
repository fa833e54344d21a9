"""``aiplat model`` against bad references and hostile registries: one line and an exit
code, never a traceback (issue #38).

Each test failed before its fix: ``model ls :::`` (and other registry spellings httpx
cannot make a URL of) ended in an ``httpx.InvalidURL`` or ``IDNAError`` traceback, or got as
far as a connection to port 99999; credentials from an auth file every user can read came
without a warning; ``model sign TAG`` did not say which digest it signed; ``model inspect``
of a model whose config blob is not JSON ended in a traceback, and it printed a manifest's
escape sequences to the terminal as they came.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from artifacts_fakes import FakeRegistry

from aiplat.artifacts import client as client_module
from aiplat.artifacts.modelpack import ModelInfo
from aiplat.artifacts.package import package_dir
from aiplat.artifacts.push import push_package
from aiplat.artifacts.reference import parse_reference, sha256_digest
from aiplat.cli import model as model_cli
from aiplat.cli.main import main

HOST = "reg.test:5000"


@pytest.mark.parametrize("args", [
    ["ls", ":::"], ["ls", "reg:99999"], ["ls", "reg:0"], ["ls", "[:::]:5000"],
    ["ls", "localhost:5000/models"], ["ls", "a_b.example"], ["ls", "ｆｕｌｌ.example"],
    ["ls", "reg..example"], ["tags", "xn--zz.example/m"], ["tags", "[::1::]:5000/m"],
    ["pull", "reg.example:65536/m:v1"], ["inspect", "١٢٣.example/m:v1"],
    ["sign", "reg:99999/m:v1", "--key", "k.pem"],
])
def test_a_registry_no_url_can_be_made_of_is_an_input_error(
        args: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.pem").write_text("not a key")
    extra = ["--cache", str(tmp_path / "c")] if args[0] == "pull" else []
    code = main(["model", *args, *extra])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("error: ")
    assert "HOST[:PORT]" in err


def test_an_invalid_registry_is_refused_by_the_client_itself() -> None:
    for bad in (":::", "a:b:c", "reg:99999", "xn--zz.example"):
        with pytest.raises(Exception) as info:
            client_module.RegistryClient(bad)
        assert info.value.__class__.__name__ == "ArtifactInputError", bad


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeRegistry:
    """The CLI's clients talk to an in-memory registry; the auth files are tmp_path's."""
    fake = FakeRegistry()
    real = client_module.open_client

    def fake_client(registry: str, **kw: Any) -> client_module.RegistryClient:
        return real(registry, transport=fake.transport, **kw)

    monkeypatch.setattr(model_cli, "open_client", fake_client)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("REGISTRY_AUTH_FILE", raising=False)
    monkeypatch.delenv("DOCKER_CONFIG", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    return fake


def _push(fake: FakeRegistry, tmp_path: Path) -> str:
    src = tmp_path / "src"
    src.mkdir()
    (src / "w.safetensors").write_bytes(os.urandom(1024))
    c = client_module.RegistryClient(HOST, transport=fake.transport)
    return push_package(c, parse_reference(f"{HOST}/m:v1"),
                        package_dir(src, ModelInfo(name="m"))).digest


def test_credentials_from_a_world_readable_auth_file_are_warned_about(
        registry: FakeRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _push(registry, tmp_path)
    auth = tmp_path / "home/.docker/config.json"
    auth.parent.mkdir(parents=True)
    auth.write_text(json.dumps({"auths": {HOST: {
        "auth": base64.b64encode(b"alice:s3cret").decode()}}}))
    auth.chmod(0o644)
    assert main(["model", "tags", f"{HOST}/m"]) == 0
    out, err = capsys.readouterr()
    assert out == "v1\n"
    assert f"warning: {auth} holds registry credentials and is readable by every user" in err
    assert f"(fix: chmod 600 {auth})" in err and "s3cret" not in err
    auth.chmod(0o600)
    assert main(["model", "tags", f"{HOST}/m"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_sign_prints_the_digest_it_hashed_and_signed(
        registry: FakeRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    digest = _push(registry, tmp_path)
    decoy = sha256_digest(b"decoy")
    registry.manifests["m"][decoy] = registry.manifests["m"]["v1"].replace(b"{", b"{ ", 1)
    registry.head_digest["v1"] = decoy  # the HEAD names other bytes
    key = tmp_path / "k.pem"
    assert main(["model", "sign", "--generate-key", str(key)]) == 0
    capsys.readouterr()
    assert main(["model", "sign", f"{HOST}/m:v1", "--key", str(key)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"signed {HOST}/m@{digest} ({HOST}/m:v1) with ecdsa-p256:"), out
    assert decoy not in out


def test_inspect_of_a_config_that_is_not_json_says_so(
        registry: FakeRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _push(registry, tmp_path)
    body = json.loads(registry.manifests["m"]["v1"])
    junk = b"\xff not json"
    registry.blobs[sha256_digest(junk)] = junk
    body["config"].update(digest=sha256_digest(junk), size=len(junk))
    data = json.dumps(body).encode()
    registry.manifests["m"].update({"v2": data, sha256_digest(data): data})
    assert main(["model", "inspect", f"{HOST}/m:v2", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "not JSON" in doc["config"]["unreadable"]


def test_inspect_escapes_a_manifests_control_characters_in_the_table(
        registry: FakeRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _push(registry, tmp_path)
    body = json.loads(registry.manifests["m"]["v1"])
    body["artifactType"] = "x\x1b]0;owned\x07"
    body["layers"][0]["annotations"]["org.cncf.model.filepath"] = "w\x1b[2J.safetensors"
    data = json.dumps(body).encode()
    registry.manifests["m"].update({"v3": data, sha256_digest(data): data})
    assert main(["model", "inspect", f"{HOST}/m:v3"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b]0;owned\\x07" in out and "\\x1b[2J" in out


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_inspect_of_a_config_nested_deep_says_so(
        registry: FakeRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        output: str) -> None:
    """900 levels parse in Python but their JSON or YAML output did not: a traceback."""
    _push(registry, tmp_path)
    body = json.loads(registry.manifests["m"]["v1"])
    deep = b"[" * 900 + b"]" * 900
    registry.blobs[sha256_digest(deep)] = deep
    body["config"].update(digest=sha256_digest(deep), size=len(deep))
    data = json.dumps(body).encode()
    registry.manifests["m"].update({"v4": data, sha256_digest(data): data})
    assert main(["model", "inspect", f"{HOST}/m:v4", "-o", output]) == 0
    out = capsys.readouterr().out
    assert "nested more than 64 levels deep" in out and "[[[" not in out


def test_tags_nested_deep_are_one_line_not_a_traceback(
        registry: FakeRegistry, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    deep = b'{"tags": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    monkeypatch.setattr(registry, "handle", lambda request: httpx.Response(200, content=deep))
    assert main(["model", "tags", f"{HOST}/m"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("error: ") and err.count("\n") == 1
    assert "nested more than 64 levels deep" in err


@pytest.mark.parametrize(("args", "fix"), [
    (["pull", "127.1:5055/prod/m:1"], "write 127.0.0.1:5055"),
    (["inspect", "[::ffff:127.0.0.1]:5055/prod/m:1", "--plain-http"], "write 127.0.0.1:5055"),
    (["tags", "127.0.0.1:05055/prod/m"], "write 127.0.0.1:5055"),
    (["ls", "0x7f.0.0.1:5055"], "write 127.0.0.1:5055"),
    (["pull", "reg.example:0443/prod/m:1"], "write reg.example:443"),
    (["pull", "127.0.0.1:\u0665\u0660\u0665\u0665/prod/m:1"], "not a registry host"),
])
def test_another_spelling_of_an_address_is_one_input_error(
        args: list[str], fix: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    extra = ["--cache", str(tmp_path / "c")] if args[0] == "pull" else []
    assert main(["model", *args, *extra]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1 and fix in err, err


def test_a_host_wildcard_rule_pulls_nothing_unsigned_from_a_signed_registry(
        registry: FakeRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The red team's polw.yaml: ``*.corp.example/*`` needs no signature, reg.test:5000 one;
    an unsigned model in reg.test:5000's repository x.corp.example/y was pulled."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "w.safetensors").write_bytes(os.urandom(1024))
    c = client_module.RegistryClient(HOST, transport=registry.transport)
    push_package(c, parse_reference(f"{HOST}/x.corp.example/y:v1"),
                 package_dir(src, ModelInfo(name="y")))
    assert main(["model", "sign", "--generate-key", str(tmp_path / "k.pem")]) == 0
    pem = (tmp_path / "k.pem.pub").read_text().replace("\n", "\\n")
    policy = tmp_path / "polw.yaml"
    policy.write_text("apiVersion: aiplat/v1alpha1\nkind: TrustPolicy\n"
                      f'keys:\n  rel: {{publicKey: "{pem}"}}\nrules:\n'
                      "  - {repositories: ['*.corp.example/*'], require: none}\n"
                      f"  - {{repositories: ['{HOST}/*'], require: signed, keys: [rel]}}\n")
    capsys.readouterr()
    code = main(["model", "pull", f"{HOST}/x.corp.example/y:v1", "--policy", str(policy),
                 "--cache", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code == 1 and "is not signed" in err and "rules[1]" in err, err


def test_a_policy_pattern_without_a_repository_is_one_input_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model", "sign", "--generate-key", str(tmp_path / "k.pem")]) == 0
    capsys.readouterr()
    code = main(["model", "policy", "--key", f"rel={tmp_path / 'k.pem.pub'}",
                 "--signed", "reg.example:5000"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "'reg.example:5000/*'" in err, err


def test_inspect_of_a_model_with_megabytes_of_signature_manifests_is_one_error(
        registry: FakeRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The red team's refs_big: 100 referrers of 4 MiB each, all read and kept (1.2 GB)."""
    from aiplat.artifacts import cosign
    from aiplat.artifacts.modelpack import OCI_MANIFEST, Descriptor, Manifest

    digest = _push(registry, tmp_path)
    refs = []
    for i in range(20):
        pad = tuple(Descriptor("x/y", f"sha256:{k:064x}", 1) for k in range(9000))
        body = Manifest(Descriptor(cosign.REFERRER_TYPE, f"sha256:{i:064x}", 2), pad,
                        artifact_type=cosign.REFERRER_TYPE).to_bytes()
        registry.manifests["m"][sha256_digest(body)] = body
        refs.append({"mediaType": OCI_MANIFEST, "digest": sha256_digest(body),
                     "size": len(body), "artifactType": cosign.REFERRER_TYPE})
    registry.referrers = {digest: refs}
    assert main(["model", "inspect", f"{HOST}/m:v1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert "more than 4 MiB (MAX_SIGNATURES_BYTES" in err and "(fix: " in err, err


def _with_layer_path(fake: FakeRegistry, tag: str, path: str) -> None:
    body = json.loads(fake.manifests["m"]["v1"])
    body["layers"][0]["annotations"]["org.cncf.model.filepath"] = path
    data = json.dumps(body).encode()  # ensure_ascii: a lone surrogate travels as \ud800
    fake.manifests["m"].update({tag: data, sha256_digest(data): data})


@pytest.mark.parametrize("path", ["\ud800.safetensors", "a\x9b2J\u202e.safetensors"])
def test_pull_of_a_model_path_with_a_surrogate_or_c1_controls_is_one_line(
        registry: FakeRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        path: str) -> None:
    """The red team's fp_surrogate (a UnicodeEncodeError traceback) and fp_c1 (pulled: a
    file named with CSI and a right-to-left override)."""
    _push(registry, tmp_path)
    _with_layer_path(registry, "v5", path)
    code = main(["model", "pull", f"{HOST}/m:v5", "--cache", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("error: ") and err.count("\n") == 1, err
    assert err.isprintable() or err[:-1].isprintable()
    assert "layers[0]: file path" in err and repr(path) in err and "not printable" in err


def test_inspect_of_a_config_with_surrogates_and_escapes_prints_them_escaped(
        registry: FakeRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The red team's cfg_surrogate: lone surrogates and escape sequences in the config."""
    _push(registry, tmp_path)
    body = json.loads(registry.manifests["m"]["v1"])
    cfg = b'{"descriptor": {"name": "\\ud800\\u001b[2J\\u009b31m"}, "x\\udfff": "\\ud83d"}'
    registry.blobs[sha256_digest(cfg)] = cfg
    body["config"].update(digest=sha256_digest(cfg), size=len(cfg))
    data = json.dumps(body).encode()
    registry.manifests["m"].update({"v6": data, sha256_digest(data): data})
    for output in ("table", "json", "yaml"):
        assert main(["model", "inspect", f"{HOST}/m:v6", "-o", output]) == 0
        out = capsys.readouterr().out
        out.encode()  # no lone surrogate reaches the terminal
        assert "\x1b" not in out and "\x9b" not in out


@pytest.mark.parametrize("name", [b"c\x1b[2J.json", b"\xff.json", b"w\xe2\x80\xae.safetensors"])
def test_push_of_a_file_whose_name_pull_would_refuse_is_an_input_error(
        registry: FakeRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        name: bytes) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "w.safetensors").write_bytes(os.urandom(1024))
    with open(os.path.join(os.fsencode(src), name), "wb") as f:
        f.write(b"{}")
    code = main(["model", "push", str(src), f"{HOST}/m:v1"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert "not printable" in err and "rename it" in err and "\x1b" not in err
    assert "m" not in registry.manifests
