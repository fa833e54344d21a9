"""References, digests, sizes and ModelPack manifests (pure)."""

from __future__ import annotations

import json

import pytest

from aiplat.artifacts.errors import ArtifactError, ArtifactInputError
from aiplat.artifacts.modelpack import (
    ARTIFACT_TYPE,
    CONFIG_TYPE,
    FILEPATH,
    WEIGHT_RAW,
    Descriptor,
    Manifest,
    ModelInfo,
    model_config,
    model_manifest,
    safe_relpath,
)
from aiplat.artifacts.reference import (
    canonical_host,
    check_digest,
    parse_reference,
    sha256_digest,
    signature_tag,
)
from aiplat.artifacts.units import human_bytes, parse_size

D = "sha256:" + "ab" * 32


@pytest.mark.parametrize(("text", "expected"), [
    ("127.0.0.1:5000/models/llama:v1", ("127.0.0.1:5000", "models/llama", "v1", None)),
    ("localhost/m", ("localhost", "m", "latest", None)),
    ("reg.example.com/a/b/c", ("reg.example.com", "a/b/c", "latest", None)),
    (f"reg.example.com:443/a@{D}", ("reg.example.com:443", "a", None, D)),
    (f"[::1]:5000/a:t@{D}", ("[::1]:5000", "a", "t", D)),
])
def test_parse_reference(text: str, expected: tuple[str, str, str | None, str | None]) -> None:
    r = parse_reference(text)
    assert (r.registry, r.repository, r.tag, r.digest) == expected
    assert parse_reference(str(r)) == r


@pytest.mark.parametrize(("text", "fragment"), [
    ("llama:v1", "no registry host"),
    ("models/llama:v1", "not a registry host"),
    ("127.0.0.1:5000/Models/llama", "repository"),
    ("127.0.0.1:5000/m:-bad", "tag"),
    ("127.0.0.1:5000/m@sha256:zz", "not a digest"),
])
def test_bad_reference_says_how_to_fix(text: str, fragment: str) -> None:
    with pytest.raises(ArtifactInputError, match=fragment) as e:
        parse_reference(text)
    assert e.value.exit_code == 2
    assert "HOST" in str(e.value) or "digest" in str(e.value)


def test_identifier_prefers_digest_and_signature_tag() -> None:
    r = parse_reference(f"h:1/m:v1@{D}")
    assert r.identifier == D
    assert signature_tag(D) == "sha256-" + "ab" * 32 + ".sig"
    with pytest.raises(ArtifactInputError):
        signature_tag("md5:abc")


def test_sizes() -> None:
    assert parse_size("200G") == 200 * 10**9
    assert parse_size("64MiB") == 64 * 2**20
    assert parse_size("1024") == 1024
    assert human_bytes(3 * 2**30) == "3.00 GiB"
    with pytest.raises(ArtifactInputError, match="500M"):
        parse_size("lots")


def test_manifest_round_trip_and_modelpack_fields() -> None:
    layer = Descriptor(WEIGHT_RAW, D, 10, {FILEPATH: "model.safetensors"})
    config = model_config(ModelInfo(name="tiny", version="v1"), [D])
    m = model_manifest(sha256_digest(config), len(config), [layer])
    doc = json.loads(m.to_bytes())
    assert doc["artifactType"] == ARTIFACT_TYPE
    assert doc["config"]["mediaType"] == CONFIG_TYPE
    assert doc["layers"][0]["annotations"][FILEPATH] == "model.safetensors"
    assert json.loads(config)["modelfs"] == {"type": "layers", "diffIds": [D]}
    back = Manifest.from_bytes(m.to_bytes())
    assert back == m and back.is_model and back.total_size == 10 + len(config)
    assert back.to_bytes() == m.to_bytes()  # stable bytes, stable digest


@pytest.mark.parametrize("body", [
    b"not json", b'{"schemaVersion": 1}', b'{"schemaVersion": 2, "manifests": []}',
    b'{"schemaVersion": 2, "config": {"mediaType": "x", "digest": "sha256:1", "size": 1}}',
])
def test_bad_manifests_are_refused(body: bytes) -> None:
    with pytest.raises((ArtifactError, ArtifactInputError)):
        Manifest.from_bytes(body)


@pytest.mark.parametrize("path", ["/etc/passwd", "../x", "a/../../x", "", "a\\b", "."])
def test_unsafe_paths_from_manifests_are_refused(path: str) -> None:
    with pytest.raises(ArtifactError, match="unsafe"):
        safe_relpath(path, "test")


def test_safe_paths_are_normalised() -> None:
    assert safe_relpath("a/./b.safetensors", "t") == "a/b.safetensors"


@pytest.mark.parametrize(("host", "canonical"), [
    ("LOCALHOST:5000", "localhost:5000"), ("reg.example:443", "reg.example"),
    ("reg.example:0443", "reg.example"), ("reg.example.:80", "reg.example"),
    ("127.1:5055", "127.0.0.1:5055"), ("2130706433", "127.0.0.1"),
    ("0x7f.0.0.1:05055", "127.0.0.1:5055"), ("0177.1", "127.0.0.1"),
    ("[::ffff:127.0.0.1]:5055", "127.0.0.1:5055"), ("[0::1]:5000", "[::1]:5000"),
    ("[::1]", "[::1]"), ("127.0.0.*:5000", "127.0.0.*:5000"), ("*", "*"),
    ("1.2.3.4.5", "1.2.3.4.5"), ("reg.example:5000", "reg.example:5000"),
])
def test_canonical_host(host: str, canonical: str) -> None:
    assert canonical_host(host) == canonical
    assert canonical_host(canonical) == canonical


def test_sizes_are_ascii_digits() -> None:
    for text in ("\u0665\u0660G", "\uff15\uff10G", "5\u0660M"):  # Arabic-Indic, full-width
        with pytest.raises(ArtifactInputError):
            parse_size(text)


H = "a" * 64


@pytest.mark.parametrize("text", [
    "127.0.0.1:5000/m\n:1", f"127.0.0.1:5000/m:1\n@sha256:{H}", "127.0.0.1:5000\n/m:1",
])
def test_a_trailing_newline_is_not_part_of_a_name(text: str) -> None:
    # re.match with "$" matches before a final newline; every check is a full match (the
    # text's own ends are stripped, as a shell's newline).
    with pytest.raises(ArtifactInputError):
        parse_reference(text)


def test_a_digest_with_a_trailing_newline_is_refused() -> None:
    with pytest.raises(ArtifactInputError):
        check_digest(f"sha256:{H}\n")
    body = json.dumps({"schemaVersion": 2,
                       "mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                  "digest": f"sha256:{H}", "size": 2},
                       "layers": [{"mediaType": "application/octet-stream",
                                   "digest": f"sha256:{H}\n", "size": 2}]}).encode()
    with pytest.raises(ArtifactError):
        Manifest.from_bytes(body)


def test_a_size_with_a_trailing_newline_reads_as_before() -> None:
    assert parse_size("2G\n") == parse_size("2G")
