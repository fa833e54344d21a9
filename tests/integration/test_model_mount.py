"""The serving pod's init container, run as the tree renders it, against a real registry.

``aiplat kube render`` gives each serving pod an init container (``aiplat model pull REF
--cache /models/cache --link /models/NAME --quiet --policy /etc/aiplat/trust/policy.yaml``)
and a ConfigMap with the TrustPolicy built from the spec's ``signingKeys``; vLLM's first
argument is ``/models/NAME``. Here that command runs with the pod's volumes at temporary
paths (what a container runtime would bind), against the Debian docker-registry on
127.0.0.1: a model signed with the spec's key lands at the path vLLM serves; an unsigned one
pushed over the same tag is refused and the served path still holds the signed model.

What this cannot show: the kubelet mounting the volumes, fsGroup applied by a CSI driver.
The objects themselves are applied to the live API server in test_cluster_live.py.
Push/pull progress on a terminal is checked here too, through a pseudo-terminal.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from registry import Registry, model_cli
from test_artifacts_registry import make_model

from aiplat.catalog import load_catalog
from aiplat.kube.render import render
from aiplat.spec.load import example_text, parse_platform

pytestmark = pytest.mark.integration
Obj = dict[str, Any]


def _tree(registry: Registry, pub: str) -> tuple[Obj, str]:
    data = yaml.safe_load(example_text())
    data["storage"]["modelStore"] = {"registry": f"{registry.host}/models",
                                     "signingKeys": {"release": pub}}
    p = parse_platform(yaml.safe_dump(data, sort_keys=False), "spec.yaml", load_catalog())
    r = render(p, load_catalog())
    dep = next(o for o in r.manifests["workloads/examples.yaml"]
               if o["metadata"]["name"] == "assistant")
    policy = r.manifests["tenants/serving/model-trust.yaml"][0]["data"]["policy.yaml"]
    return dep["spec"]["template"]["spec"], policy


def _as_in_pod(args: list[str], root: Path) -> list[str]:
    """The pod's paths under ``root`` (the runtime would bind the volumes there)."""
    def bind(a: str) -> str:
        for inside, outside in (("/models", root / "models"), ("/etc/aiplat/trust",
                                                               root / "trust")):
            if a == inside or a.startswith(inside + "/"):
                return str(outside) + a.removeprefix(inside)
        return a
    return [bind(a) for a in args]


def test_the_init_container_pulls_the_signed_model_where_vllm_serves_it(
        registry: Registry, tmp_path: Path) -> None:
    key = tmp_path / "release.key"
    assert model_cli("sign", "--generate-key", str(key))[0] == 0
    spec, policy = _tree(registry, Path(f"{key}.pub").read_text())
    (tmp_path / "trust").mkdir()
    (tmp_path / "trust" / "policy.yaml").write_text(policy)
    (tmp_path / "models").mkdir()
    init = spec["initContainers"][0]["command"]
    ref = init[3]
    assert ref == f"{registry.host}/models/llama-3-70b:latest"
    src = make_model(tmp_path / "src", shards=2, mib=2, seed=1)
    code, _, err = model_cli("push", str(src), ref, "--sign-key", str(key), "--quiet")
    assert code == 0, err
    assert err == ""  # --quiet: nothing on stderr

    assert init[:3] == ["aiplat", "model", "pull"]
    code, _, err = model_cli("pull", *_as_in_pod(init[3:], tmp_path))
    assert code == 0, err
    assert err == ""
    served = Path(_as_in_pod([spec["containers"][0]["args"][0]], tmp_path)[0])
    assert served.is_symlink() and not os.path.isabs(os.readlink(served))  # mount-relative
    assert sorted(p.name for p in served.iterdir()) == sorted(p.name for p in src.iterdir())
    assert (served / "config.json").read_bytes() == (src / "config.json").read_bytes()
    signed_target = os.readlink(served)

    # An unsigned model pushed over the tag: refused, and vLLM's path still holds the signed one.
    other = make_model(tmp_path / "other", shards=1, mib=1, seed=2)
    assert model_cli("push", str(other), ref, "--quiet")[0] == 0
    code, _, err = model_cli("pull", *_as_in_pod(init[3:], tmp_path))
    assert code == 1 and "is not signed" in err, err
    assert os.readlink(served) == signed_target


def test_link_refuses_to_replace_a_real_directory(registry: Registry, tmp_path: Path) -> None:
    src = make_model(tmp_path / "src", shards=1, mib=1)
    ref = f"{registry.host}/mount/linked:v1"
    assert model_cli("push", str(src), ref, "--quiet")[0] == 0
    (tmp_path / "taken").mkdir()
    code, _, err = model_cli("pull", ref, "--cache", str(tmp_path / "c"), "--link",
                             str(tmp_path / "taken"))
    assert code != 0 and "taken" in err and "Traceback" not in err, err
    assert (tmp_path / "taken").is_dir() and not (tmp_path / "taken").is_symlink()


def _on_a_terminal(args: list[str]) -> tuple[int, str]:
    """Run ``aiplat model ARGS`` with stderr on a pseudo-terminal; its output as seen there."""
    leader, follower = pty.openpty()
    code = [sys.executable, "-c", "from aiplat.cli.main import main; main()", "model", *args]
    env = {**os.environ, "COLUMNS": "120", "TERM": "xterm"}
    proc = subprocess.Popen(code, stdout=subprocess.DEVNULL, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc.wait(timeout=60), b"".join(chunks).decode(errors="replace")


def test_push_and_pull_show_bytes_and_rate_on_a_terminal_only(
        registry: Registry, tmp_path: Path) -> None:
    src = make_model(tmp_path / "src", shards=2, mib=8, seed=3)
    ref = f"{registry.host}/progress/m:v1"
    code, seen = _on_a_terminal(["push", str(src), ref, "--chunk-size", "1MiB"])
    assert code == 0, seen
    assert "push" in seen and "MB" in seen and "/s" in seen, seen  # bytes and rate
    code, seen = _on_a_terminal(["pull", ref, "--cache", str(tmp_path / "c")])
    assert code == 0, seen
    assert "pull" in seen and "MB" in seen and "/s" in seen, seen
    code, seen = _on_a_terminal(["pull", ref, "--cache", str(tmp_path / "c2"), "--quiet"])
    assert code == 0 and seen.strip() == "", seen
    # Not a terminal: the summary line only, no bar.
    cp = subprocess.run([sys.executable, "-c", "from aiplat.cli.main import main; main()",
                         "model", "pull", ref, "--cache", str(tmp_path / "c3")],
                        capture_output=True, text=True, timeout=60, check=False)
    assert cp.returncode == 0, cp.stderr
    assert cp.stderr.startswith("cold pull of") and "\r" not in cp.stderr, cp.stderr
