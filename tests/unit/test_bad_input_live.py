"""Bad input to the commands that reach a cluster or a registry (issue 22): a kubeconfig of
any shape, a server that does not answer or whose certificate data is wrong, a tree with a
bad object, a TrustPolicy file that is no policy — each one clear error (file, what, fix),
exit 2, never a traceback or a hang. Nothing here needs a network: the servers are closed
ports on 127.0.0.1 and an in-process mock transport."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import socket
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from aiplat.cli.main import main
from aiplat.errors import InputError
from aiplat.kube.apply import Api, apply_tree


def run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code: int | str | None = main(argv)
        except SystemExit as e:
            code = e.code
    text = err.getvalue() + out.getvalue()
    assert "Traceback" not in text, text
    return int(code or 0), text


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def kubeconfig(cluster: dict[str, Any], user: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Config", "current-context": "x",
            "clusters": [{"name": "c", "cluster": cluster}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            "users": [{"name": "u", "user": user or {}}]}


UNREACHABLE = f"https://127.0.0.1:{closed_port()}"
NOT_PEM = base64.b64encode(b"not a certificate").decode()

KUBECONFIGS: dict[str, tuple[Any, str]] = {
    # name: (content, what the error says)
    "empty-map": ({}, "clusters: is empty, but clusters is a list"),
    "list": ([1, 2], "is a list, but a kubeconfig is a mapping"),
    "text": ("hello", "is text, but a kubeconfig is a mapping"),
    "clusters-number": ({"clusters": 5, "contexts": []}, "clusters: is a number"),
    "nameless": ({"clusters": [{"cluster": {}}], "contexts": [{}]}, "'name' is missing"),
    "null-entries": ({"clusters": [{"name": "c", "cluster": None}],
                      "contexts": [{"name": "x", "context": None}], "users": [None],
                      "current-context": "x"}, "not a kubeconfig"),
    "server-number": (kubeconfig({"server": 5}), "not a kubeconfig"),
    "server-junk": (kubeconfig({"server": "::::"}), "server '::::'"),
    "server-ftp": (kubeconfig({"server": "ftp://h"}), "not an http(s) URL"),
    "no-context": ({**kubeconfig({"server": UNREACHABLE}), "current-context": "nope"},
                   "Context 'nope' not found"),
    "missing-cluster": ({**kubeconfig({"server": UNREACHABLE}),
                         "clusters": [{"name": "other", "cluster": {}}]}, "'c' is missing"),
    "bad-ca-data": (kubeconfig({"server": UNREACHABLE,
                                "certificate-authority-data": NOT_PEM}), "certificate"),
    "bad-client-cert": (kubeconfig({"server": UNREACHABLE},
                                   {"client-certificate-data": NOT_PEM,
                                    "client-key-data": NOT_PEM}), "certificate"),
    "ca-file-missing": (kubeconfig({"server": UNREACHABLE,
                                    "certificate-authority": "/nonexistent/ca.crt"}),
                        "No such file"),
    "unreachable": (kubeconfig({"server": UNREACHABLE}), "Connection refused"),
    # Found by the property suite: lightkube asserts "Missing user" (a traceback).
    "no-user": ({**kubeconfig({"server": UNREACHABLE}),
                 "contexts": [{"name": "x", "context": {"cluster": "c"}}]}, "names no user"),
    # ... and a TypeError for a client certificate without its key.
    "cert-without-key": (kubeconfig({"server": UNREACHABLE}, {"client-certificate-data": "eA=="}),
                         "certificates or keys do not load"),
}
RAW: dict[str, bytes] = {"deep": b"[" * 3000 + b"]" * 3000, "bomb": b"a: &a [*a]\n",
                         "binary": b"\xff\xfe\x00"}


def _files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, (content, _) in KUBECONFIGS.items():
        out[name] = tmp_path / f"{name}.yaml"
        out[name].write_text(yaml.safe_dump(content))
    for name, raw in RAW.items():
        out[name] = tmp_path / f"{name}.yaml"
        out[name].write_bytes(raw)
    out["fifo"] = tmp_path / "fifo.yaml"
    os.mkfifo(out["fifo"])
    return out


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("tree")
    code, text = run(["kube", "render", "-d", str(d)])
    assert code == 0, text
    return d


@pytest.mark.parametrize("name", [*KUBECONFIGS, *RAW, "fifo", "dev-zero"])
def test_kube_apply_and_why_pending_refuse_a_bad_kubeconfig_clearly(
        name: str, tree: Path, tmp_path: Path) -> None:
    """Issue 22: a kubeconfig nested deep, of the wrong shape or with a junk server URL
    gave tracebacks (RecursionError, KeyError, AttributeError, InvalidURL)."""
    path = "/dev/zero" if name == "dev-zero" else str(_files(tmp_path)[name])
    expect = KUBECONFIGS[name][1] if name in KUBECONFIGS else ""
    for argv in (["kube", "apply", str(tree), "--kubeconfig", path],
                 ["kube", "why-pending", "x", "--kubeconfig", path]):
        code, text = run(argv)
        assert code == 2, f"{argv}: exit {code}: {text}"
        assert text.startswith("error: ") and expect in text, f"{argv}: {text}"
        assert ": refused" not in text, text  # one error, not one per object


def test_an_unreachable_server_is_one_error_before_any_object(tree: Path,
                                                              tmp_path: Path) -> None:
    path = _files(tmp_path)["unreachable"]
    code, text = run(["kube", "apply", str(tree), "--kubeconfig", str(path)])
    assert code == 2 and text.count("\n") == 1, text
    assert UNREACHABLE in text and "GET /apis" in text


def _mock_api() -> Api:
    """An API server that serves v1 Namespaces and refuses nothing."""
    def handle(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/apis":
            return httpx2.Response(200, json={"groups": []})
        if request.url.path == "/api/v1":
            return httpx2.Response(200, json={"resources": [
                {"name": "namespaces", "kind": "Namespace", "namespaced": False}]})
        return httpx2.Response(200, json=json.loads(request.content or b"{}"))

    return Api(httpx2.Client(transport=httpx2.MockTransport(handle), base_url="https://k"))


@pytest.mark.parametrize(("obj", "message"), [
    ({"apiVersion": 5, "kind": "Namespace", "metadata": {"name": "a"}}, "apiVersion must be"),
    ({"apiVersion": "v1", "kind": ["Namespace"], "metadata": {"name": "a"}}, "kind must be"),
    ({"apiVersion": "v1", "kind": "Namespace", "metadata": "a"}, "Namespace: metadata must"),
    ({"apiVersion": "v1", "kind": "Namespace"}, "Namespace: metadata must"),
    ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "namespace": 3}},
     "metadata.namespace must be text"),
])
def test_a_tree_with_a_bad_object_is_refused_before_any_request(obj: dict[str, Any],
                                                                 message: str) -> None:
    good = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ok"}}
    with pytest.raises(InputError, match=rf"^bad\.yaml: .*{message}"):
        apply_tree(_mock_api(), [("good.yaml", good), ("bad.yaml", obj)])
    done = apply_tree(_mock_api(), [("good.yaml", good)], probe_pods=False)
    assert [(o.object, o.action) for o in done] == [("Namespace ok", "configured")]


# ---------------------------------------------------------------------------- model pull


POLICIES: dict[str, tuple[str | bytes, str]] = {
    "binary": (b"\x00\xff\xfe" * 30, "not UTF-8 text"),
    "latin1": ("kind: Trust\xe9\n".encode("latin-1"), "not UTF-8 text"),
    "deep": ("[" * 3000 + "]" * 3000, "nested more than 64 levels"),
    "deep-map": ("".join("  " * i + "a:\n" for i in range(200)) + "  " * 200 + "b: 1\n",
                 "nested more than 64 levels"),
    "bomb": ("a: &a [*a]\n", "an alias refers to a value that contains it"),
    "list": ("[1, 2]\n", "is a list, but a TrustPolicy is a mapping"),
    "empty": ("", "is empty, but a TrustPolicy is a mapping"),
    "rules-number": ("apiVersion: aiplat/v1alpha1\nkind: TrustPolicy\nrules: 5\n",
                     "rules: Input should be a valid list"),
    "rule-shape": ("apiVersion: aiplat/v1alpha1\nkind: TrustPolicy\nrules: [{require: 1}]\n",
                   "rules.0.repositories: Field required"),
    "keys-list": ("apiVersion: aiplat/v1alpha1\nkind: TrustPolicy\nkeys: [1]\n"
                  "rules: [{repositories: ['*'], require: none}]\n", "keys: Input should be"),
    "bad-key": ("apiVersion: aiplat/v1alpha1\nkind: TrustPolicy\nkeys: {k: {publicKey: x}}\n"
                "rules: [{repositories: ['*'], require: signed, keys: [k]}]\n",
                "not a PEM public key"),
    "duplicate": ("apiVersion: aiplat/v1alpha1\nkind: TrustPolicy\nrules: []\nrules: []\n",
                  "key 'rules' appears twice (line 4)"),
}


@pytest.mark.parametrize("name", [*POLICIES, "missing", "directory", "fifo", "dev-zero"])
def test_model_pull_refuses_a_bad_policy_file_clearly(name: str, tmp_path: Path) -> None:
    """Issue 22: a binary or non-UTF-8 policy gave a UnicodeDecodeError traceback, /dev/zero
    a MemoryError, a FIFO hung; deep nesting a RecursionError. The policy is read before
    the registry is contacted, so the (closed) registry port is never reached."""
    if name in POLICIES:
        path = tmp_path / "policy.yaml"
        data, expect = POLICIES[name]
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    elif name == "fifo":
        path, expect = tmp_path / "policy.yaml", "a FIFO (named pipe), not a regular file"
        os.mkfifo(path)
    else:
        path, expect = {"missing": (tmp_path / "nope.yaml", "does not exist"),
                        "directory": (tmp_path, "is a directory"),
                        "dev-zero": (Path("/dev/zero"), "a character device")}[name]
    code, text = run(["model", "pull", f"127.0.0.1:{closed_port()}/m/x:1", "--policy",
                      str(path), "--cache", str(tmp_path / "cache"), "-q"])
    assert code == 2, text
    assert expect in text and str(path) in text, text
    assert "Connection refused" not in text


def test_model_pull_from_an_unreachable_registry_is_a_clear_error(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("apiVersion: aiplat/v1alpha1\nkind: TrustPolicy\n"
                      "rules: [{repositories: ['*'], require: none}]\n")
    port = closed_port()
    code, text = run(["model", "pull", f"127.0.0.1:{port}/m/x:1", "--policy", str(policy),
                      "--cache", str(tmp_path / "cache"), "-q"])
    assert code != 0 and f"127.0.0.1:{port}" in text and "Connection refused" in text, text


@pytest.mark.parametrize(("content", "expect"), [
    (b'["x"', "not valid YAML"),
    (b"\xff\xfe", "not UTF-8 text"),
    (b'{"kind": "List", "items": 5}', "a List's items must be a list of objects"),
    (b"[1, 2]", "a manifest must be a mapping"),
    (b"a: &a [*a]\n", "an alias refers to a value that contains it"),
    (b"[" * 3000 + b"]" * 3000, "nested more than 64 levels"),
    (b'{"apiVersion": 5, "kind": "Job", "metadata": {"name": "j"}}', "apiVersion must be"),
])
def test_kube_apply_of_a_tree_with_a_bad_file_names_it(content: bytes, expect: str,
                                                      tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "ns.yaml").write_text("apiVersion: v1\nkind: Namespace\n"
                                               "metadata: {name: a}\n")
    (tmp_path / "tree" / "x.yaml").write_bytes(content)
    kc = _files(tmp_path)["unreachable"]
    code, text = run(["kube", "apply", str(tmp_path / "tree"), "--kubeconfig", str(kc)])
    assert code == 2 and "x.yaml" in text and expect in text, text


# ---------------------------------------------------------------------------- model cache


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A cache holding one model, pulled through the fake registry of the artifacts tests."""
    from artifacts_fakes import FakeRegistry

    from aiplat.artifacts.cache import Cache
    from aiplat.artifacts.client import RegistryClient, RetryPolicy
    from aiplat.artifacts.modelpack import ModelInfo
    from aiplat.artifacts.package import package_dir
    from aiplat.artifacts.pull import pull
    from aiplat.artifacts.push import push_package
    from aiplat.artifacts.reference import parse_reference

    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "w.safetensors").write_bytes(os.urandom(4096))
    client = RegistryClient("reg.test:5000", transport=FakeRegistry().transport,
                            retry=RetryPolicy(backoff=0))
    ref = parse_reference("reg.test:5000/m/a:v1")
    push_package(client, ref, package_dir(tmp_path / "model", ModelInfo(name="a")))
    pull(client, Cache(tmp_path / "cache"), ref)
    return tmp_path / "cache"


def _plant(target: Path, how: str) -> None:
    target.chmod(0o644)
    target.unlink()
    if how == "fifo":
        os.mkfifo(target)
    elif how == "dev-zero":
        target.symlink_to("/dev/zero")
    elif how == "directory":
        target.mkdir()
    else:
        target.write_bytes(b"\xff\xfe" * 100)


@pytest.mark.parametrize("where", ["manifests/sha256", "blobs/sha256", "refs"])
@pytest.mark.parametrize("how", ["fifo", "dev-zero", "directory", "binary"])
def test_model_cache_commands_survive_a_damaged_cache(cache: Path, where: str,
                                                     how: str) -> None:
    """Found by the property suite: a FIFO where a manifest was hung `model ls` (and a link
    to /dev/zero in a blob's place would hash forever in `verify`), a binary tag file gave a
    UnicodeDecodeError. Damage is reported or repaired; nothing blocks or crashes."""
    victim = next(p for p in sorted((cache / where).rglob("*")) if p.is_file())
    _plant(victim, how)
    for argv in (["model", "ls", "--cache", str(cache)],
                 ["model", "verify", "--cache", str(cache), "--no-quarantine"],
                 ["model", "verify", "--cache", str(cache)],
                 ["model", "gc", "--cache", str(cache)]):
        code, text = run(argv)
        assert code in (0, 1), f"{argv}: exit {code}: {text}"
    if where == "blobs/sha256":  # verify moved the planted thing to quarantine/
        assert not victim.exists() and not victim.is_symlink()


def _cluster_with(namespaces: dict[str, dict[str, str]]) -> Api:
    """An API server holding ``namespaces`` (name -> labels) that applies anything else."""
    def handle(request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if path == "/apis":
            return httpx2.Response(200, json={"groups": [{"versions": [
                {"groupVersion": "rbac.authorization.k8s.io/v1"}]}]})
        if path == "/api/v1":
            return httpx2.Response(200, json={"resources": [
                {"name": "namespaces", "kind": "Namespace", "namespaced": False}]})
        if path == "/apis/rbac.authorization.k8s.io/v1":
            return httpx2.Response(200, json={"resources": [
                {"name": "roles", "kind": "Role", "namespaced": True}]})
        name = path.rsplit("/", 1)[-1]
        if request.method == "GET" and path.startswith("/api/v1/namespaces/"):
            if name not in namespaces:
                return httpx2.Response(404, json={"message": "not found"})
            return httpx2.Response(200, json={"metadata": {"name": name,
                                                           "labels": namespaces[name]}})
        return httpx2.Response(200, json=json.loads(request.content or b"{}"))

    return Api(httpx2.Client(transport=httpx2.MockTransport(handle), base_url="https://k"))


def _tenant_tree(name: str) -> list[tuple[str, dict[str, Any]]]:
    ns = {"apiVersion": "v1", "kind": "Namespace",
          "metadata": {"name": name, "labels": {"aiplat.io/tenant": name}}}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "aiplat-user", "namespace": name},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}]}
    return [(f"tenants/{name}/namespace.yaml", ns), (f"tenants/{name}/rbac.yaml", role)]


def test_kube_apply_refuses_to_take_over_a_namespace_that_is_not_the_tenants() -> None:
    """A tenant named after an add-on's namespace the reserved list misses (the red team's
    eighth round: kserve, whose controller holds cluster-wide rights): the Namespace exists
    without the tenant's label, so neither it nor anything in it is applied; a namespace
    that is the tenant's, or none yet, is applied as before. (A stand-in API server: what it
    cannot show is a real server's admission; the rule is the labels it returns.)"""
    items = _tenant_tree("kserve") + _tenant_tree("research")
    api = _cluster_with({"kserve": {"app.kubernetes.io/name": "kserve"},
                         "research": {"aiplat.io/tenant": "research"}})
    done = {(o.object, o.action) for o in apply_tree(api, items, probe_pods=False)}
    assert ("Namespace kserve", "refused") in done and ("Role kserve/aiplat-user",
                                                        "refused") in done
    assert ("Namespace research", "configured") in done
    assert ("Role research/aiplat-user", "configured") in done
    refused = [o for o in apply_tree(api, items, probe_pods=False) if o.action == "refused"]
    assert all("is not tenant kserve's" in o.message and "rename the tenant" in o.message
               for o in refused)
    forced = apply_tree(api, items, probe_pods=False, force=True)
    assert not [o for o in forced if o.action == "refused"]
    fresh = apply_tree(_cluster_with({}), items, probe_pods=False)
    assert not [o for o in fresh if o.action == "refused"]
