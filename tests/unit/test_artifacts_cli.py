"""``aiplat model`` input errors exit 2 with a fix; nothing is touched before they do."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from aiplat.cli.model import model
from aiplat.errors import AiplatError


def code_and_message(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(model, list(args))
    if isinstance(r.exception, AiplatError):
        return r.exception.exit_code, str(r.exception)
    return r.exit_code, r.stdout + r.stderr


@pytest.mark.parametrize(("args", "fragment"), [
    (["pull", "llama:v1"], "no registry host"),
    (["pull", "127.0.0.1:1/m:v1", "--max-rate", "fast"], "500M"),
    (["tags", "127.0.0.1:1/Bad"], "repository"),
    (["sign", "127.0.0.1:1/m:v1"], "--key"),
])
def test_bad_input_exits_2(args: list[str], fragment: str, tmp_path: Path) -> None:
    code, msg = code_and_message(*args, *(["--cache", str(tmp_path / "c")]
                                          if args[0] == "pull" else []))
    assert code == 2 and fragment in msg


def test_push_to_a_digest_and_bad_policy_exit_2(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "w.safetensors").write_bytes(b"x")
    code, msg = code_and_message("push", str(tmp_path / "m"), "127.0.0.1:1/m@sha256:" + "a" * 64)
    assert code == 2 and "tag" in msg
    policy = tmp_path / "p.yaml"
    policy.write_text("apiVersion: aiplat/v1alpha1\nkind: TrustPolicy\nrules: []\n")
    code, msg = code_and_message("pull", "127.0.0.1:1/m:v1", "--cache", str(tmp_path / "c"),
                                 "--policy", str(policy))
    assert code == 2 and "p.yaml: rules" in msg


def test_push_of_a_directory_without_weights_exits_2(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "README.md").write_text("hi")
    code, msg = code_and_message("push", str(tmp_path / "m"), "127.0.0.1:1/m:v1")
    assert code == 2 and "no weight files" in msg


def test_generate_key_refuses_to_overwrite(tmp_path: Path) -> None:
    key = tmp_path / "k"
    assert code_and_message("sign", "--generate-key", str(key))[0] == 0
    assert key.stat().st_mode & 0o777 == 0o600
    code, msg = code_and_message("sign", "--generate-key", str(key))
    assert code == 2 and "exists" in msg


def test_empty_cache_verify_and_gc(tmp_path: Path) -> None:
    code, out = code_and_message("verify", "--cache", str(tmp_path / "c"))
    assert code == 0 and "checked 0 blobs" in out
    code, out = code_and_message("gc", "--cache", str(tmp_path / "c"), "-o", "json")
    assert code == 0 and '"freedBytes": 0' in out
