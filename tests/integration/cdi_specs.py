"""CDI spec material for the differential tests against the reference loader.

- ``mutated_specs()``: a hypothesis strategy of spec *files* (name, text): a valid seed spec
  (every field of specs-go at 1.1.0, or a plain GPU-like spec) with one to four mutations -
  a value replaced by a tricky one (``none``, ``1FOO=``, ``v1.1.0``, ``-1``, ``2**32``, ``1.5``,
  ``a/b``, ``yes``, null, a wrong type ...), a key dropped, renamed to another case or to an
  unknown name, a list emptied or given a null entry, a key given twice - then written as
  JSON, YAML, or YAML in a ``.json`` file.
- ``upstream_specs(dir)``: the YAML/JSON specs held in Go raw strings of an upstream
  module's test files (the CDI repository's and nvidia-ctk's own fixtures and golden
  specs), Go template fields filled in.
- ``nvidia_root(dir)``: a fake driver root with real character nodes (mknod, root only):
  two GPUs, one with two MIG devices, the control/UVM/caps nodes, a linker cache entry.
"""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

RICH: dict[str, Any] = {
    "cdiVersion": "1.1.0",
    "kind": "vendor.example.com/acc.x",
    "annotations": {"a.example.com/k": "v"},
    "containerEdits": {
        "env": ["A=1"],
        "hooks": [{"hookName": "createContainer", "path": "/usr/bin/hook", "args": ["hook"],
                   "env": ["X=y"], "timeout": 5}],
        "mounts": [{"hostPath": "/lib/libx.so.1", "containerPath": "/lib/libx.so.1",
                    "options": ["ro", "bind"], "type": "bind"}],
        "intelRdt": {"closID": "clos1", "l3CacheSchema": "L3:0=f", "memBwSchema": "MB:0=50",
                     "schemata": ["L2:0=3"], "enableMonitoring": True},
        "additionalGids": [44],
    },
    "devices": [
        {"name": "0", "annotations": {"b": "c"}, "containerEdits": {
            "deviceNodes": [{"path": "/dev/acc0", "hostPath": "/dev/acc0", "type": "c",
                             "major": 240, "minor": 0, "fileMode": 438, "permissions": "rw",
                             "uid": 0, "gid": 44}],
            "netDevices": [{"hostInterfaceName": "eth1", "name": "net1"}]}},
        {"name": "acc-1", "containerEdits": {"env": ["B=2"], "deviceNodes": [
            {"path": "/dev/acc1"}]}},
    ],
}
PLAIN: dict[str, Any] = {
    "cdiVersion": "0.3.0",
    "kind": "nvidia.com/gpu",
    "devices": [{"name": "gpu0", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}}],
    "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=void"], "deviceNodes": [
        {"path": "/dev/nvidiactl"}]},
}

TRICKY: list[object] = [
    None, "", " ", "none", "rw", "rwm", "rrw", "rwx", "r", "/", ".", "..", "a/b", "a\nb",
    "/dev/x", "dev/x", "rel", "1FOO=", "FOO.BAR=", "=x", "FOO", "A=", "v1.1.0", "v0.3.0",
    "0.1.0", "0.2.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "1.0.0", "1.1.0", "2.0.0", "1.0",
    "x.com/y", "x.com/y.z", "x/", "/y", "x.com/y/z", "-x.com/y", "x.com/-y", "0abc", "abc-",
    "a:b", "MIG-1", "c", "b", "u", "p", "x", "prestart", "createRuntime", "poststop",
    "preStart", "bind", "yes", "no", "on", "true", "0x10", "0666", "1_000",
    0, 1, -1, 7, 255, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 1.5, -0.5, 3.0, True, False,
    [], [None], ["A=1"], ["ro"], [5], ["x", "x"], {}, {"k": "v"}, {"k": 1},
]
RENAMES = ["cdiversion", "CdiVersion", "Kind", "Devices", "containeredits", "env ", "Env",
           "hostpath", "deviceNode", "version", "x-extra", "HookName", "options_"]


class Pairs(list[tuple[str, Any]]):
    """A mapping that may hold a key twice (the JSON/YAML writers keep both)."""


def _paths(obj: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*at, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*at, i))
    return out


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        obj = obj[p]
    return obj


@st.composite
def mutated_doc(draw: st.DrawFn) -> Any:
    doc: Any = copy.deepcopy(draw(st.sampled_from([RICH, PLAIN])))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, key = _get(doc, path[:-1]), path[-1]
        if isinstance(parent, Pairs):
            break
        op = draw(st.sampled_from(["set", "set", "set", "drop", "rename", "dup", "nullitem",
                                   "text"]))
        if op == "set":
            parent[key] = copy.deepcopy(draw(st.sampled_from(TRICKY)))
        elif op == "text":
            parent[key] = draw(st.text("aAzZ09_.:-=/ ", max_size=6))
        elif op == "drop":
            del parent[key]
        elif op == "nullitem" and isinstance(parent, list):
            parent.append(None)
        elif isinstance(parent, dict) and op in ("rename", "dup"):
            value = parent.pop(key)
            if op == "rename":
                parent[draw(st.sampled_from(RENAMES))] = value
            else:  # the same key twice: only a Pairs mapping can say it
                pairs = Pairs([*parent.items(), (str(key), value), (str(key), value)])
                grand = _get(doc, path[:-2]) if len(path) > 1 else None
                if grand is None:
                    doc = pairs
                else:
                    grand[path[-2]] = pairs
                break
    return doc


def to_json(obj: Any) -> str:
    if isinstance(obj, Pairs):
        return "{" + ", ".join(f"{json.dumps(k)}: {to_json(v)}" for k, v in obj) + "}"
    if isinstance(obj, dict):
        return to_json(Pairs(obj.items()))
    if isinstance(obj, list):
        return "[" + ", ".join(to_json(v) for v in obj) + "]"
    return json.dumps(obj)


def to_yaml(obj: Any) -> str:
    if isinstance(obj, Pairs) or _has_pairs(obj):
        return to_json(obj) + "\n"  # flow style: JSON is YAML
    return yaml.safe_dump(obj, sort_keys=False)


def _has_pairs(obj: Any) -> bool:
    if isinstance(obj, Pairs):
        return True
    if isinstance(obj, dict):
        return any(_has_pairs(v) for v in obj.values())
    if isinstance(obj, list):
        return any(_has_pairs(v) for v in obj)
    return False


@st.composite
def mutated_specs(draw: st.DrawFn) -> tuple[str, str]:
    """(file suffix, text) of one mutated spec."""
    doc = draw(mutated_doc())
    form = draw(st.sampled_from(["json", "yaml", "yaml-in-json"]))
    if form == "json":
        return ".json", to_json(doc)
    return (".yaml" if form == "yaml" else ".json"), to_yaml(doc)


# ---------------------------------------------------------------------------- upstream

_RAW = re.compile(r"`([^`]*)`", re.S)
_TEMPLATE = re.compile(r"\{\{\s*\.(\w+)\s*\}\}")


def upstream_specs(module_dir: Path, files: list[str]) -> dict[str, str]:
    """``{label: text}`` of every Go raw string holding ``cdiVersion`` in ``files``."""
    out = {}
    for rel in files:
        src = (module_dir / rel).read_text()
        for i, m in enumerate(_RAW.finditer(src)):
            text = m.group(1)
            if "cdiVersion" not in text or "kind" not in text:
                continue
            text = _TEMPLATE.sub(lambda t: "0" if t.group(1).lower().endswith("id")
                                 else f"/fake/{t.group(1)}", text)
            out[f"{rel}#{i}"] = text
    return out


# ---------------------------------------------------------------------------- fake root


def nvidia_root(root: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A driver root with character nodes (needs root for mknod) and the inventory's
    ``gpus`` list for it."""
    def node(rel: str, major: int, minor: int, mode: int = 0o666) -> None:
        p = root / rel.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        os.mknod(p, 0o020000 | mode, os.makedev(major, minor))
        os.chmod(p, mode)

    for i in range(2):
        node(f"/dev/nvidia{i}", 195, i)
    node("/dev/nvidiactl", 195, 255)
    node("/dev/nvidia-uvm", 509, 0)
    node("/dev/nvidia-uvm-tools", 509, 1)
    for m in (12, 13, 21, 22):
        node(f"/dev/nvidia-caps/nvidia-cap{m}", 510, m, 0o444)
    caps = root / "proc/driver/nvidia-caps"
    caps.mkdir(parents=True)
    (caps / "mig-minors").write_text("gpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n"
                                     "gpu0/gi2/access 21\ngpu0/gi2/ci0/access 22\n")
    gpus = [{"index": 0, "uuid": "GPU-aaaaaaaa-0000-0000-0000-000000000000", "minor": 0,
             "mig": [{"index": 0, "gi": 1, "ci": 0, "uuid": "MIG-bbbb-0000"},
                     {"index": 1, "gi": 2, "ci": 0, "uuid": "MIG-cccc-0000"}]},
            {"index": 1, "uuid": "GPU-dddddddd-0000-0000-0000-000000000000", "minor": 1}]
    return root, gpus
