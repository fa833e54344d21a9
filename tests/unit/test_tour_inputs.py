"""What the README tour makes for itself instead of reading the source checkout: the sample
model, a spec describing this host, a trust policy from key files."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

from aiplat.artifacts.signing import parse_policy
from aiplat.samples import get
from aiplat.spec import load_platform


def _invoke(*args: str) -> tuple[int, str, str]:
    """The console script's way: exit codes as main() maps the errors."""
    r = subprocess.run([sys.executable, "-m", "aiplat.cli.main", *args], capture_output=True,
                       text=True, check=False, timeout=120)
    return r.returncode, r.stdout, r.stderr


def test_model_mini_is_the_same_safetensors_everywhere(tmp_path: Path) -> None:
    a, b = get("model-mini", tmp_path / "a"), get("model-mini", tmp_path / "b")
    names = sorted(p.name for p in a.iterdir())
    assert names == ["config.json", "model-00001-of-00002.safetensors",
                     "model-00002-of-00002.safetensors", "tokenizer.json"]
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes()
    data = (a / "model-00001-of-00002.safetensors").read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"]
    assert size % 8 == 0 and 8 + size + max(ends) == len(data) == 16 * 2**20 + 8 + size
    assert (a / "model-00001-of-00002.safetensors").read_bytes() != \
        (a / "model-00002-of-00002.safetensors").read_bytes()


def test_spec_example_this_host_describes_the_host(tmp_path: Path) -> None:
    code, out, _ = _invoke("spec", "example", "--this-host")
    assert code == 0
    (tmp_path / "lab.yaml").write_text(out)
    platform = load_platform(str(tmp_path / "lab.yaml"))
    assert [p.name for p in platform.pools] == ["lab"] and platform.pools[0].gpus == 0
    assert platform.pools[0].node.cpu_cores == os.cpu_count()


def test_model_policy_is_what_pull_accepts(tmp_path: Path) -> None:
    key = tmp_path / "release.key"
    assert _invoke("model", "sign", "--generate-key", str(key))[0] == 0
    code, out, _ = _invoke("model", "policy", "--key", f"release={key}.pub", "--signed",
                           "127.0.0.1:5000/models/*", "--unsigned", "127.0.0.1:5000/scratch/*")
    assert code == 0
    pol = parse_policy(out, "policy.yaml")
    assert pol.decide("127.0.0.1:5000/models/llama").require_signature
    assert not pol.decide("127.0.0.1:5000/scratch/x").require_signature
    code, _, err = _invoke("model", "policy", "--key", f"release={key}", "--signed", "x/*")
    assert code == 2 and "not a PEM public key" in err and str(key) in err
    code, _, err = _invoke("model", "policy", "--key", "release", "--signed", "x/*")
    assert code == 2 and "NAME=FILE.pub" in err


def test_acceptance_names_the_option_for_a_version_the_node_cannot_show() -> None:
    """`accept run` on a `spec example --this-host` spec outside a cluster: Kubernetes is not
    observable on the node, and the criterion says how to give it."""
    from aiplat.ops.acceptance_run import _matrix_difference

    text = _matrix_difference({"key": "kubernetes", "observed": None, "expected": "1.34"})
    assert "--observed kubernetes=VERSION" in text and "None" not in text
    assert _matrix_difference({"key": "driver", "observed": "575", "expected": ">=580"}) == \
        "driver 575 != >=580"
