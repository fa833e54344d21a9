"""Field names as the spec spells them: camelCase (``gpuHoursPerMonth``), once.

The spec's pydantic models carry camelCase aliases; the rest of aiplat keeps its Python
names (``gpu_hours_per_month``) in memory. What a user reads is spelled the spec's way: the
CLI's ``-o json|yaml`` (``cli/_output.print_data``) and the JSON documents commands write
(``plan.json``, ``simulation.json``, ``kube-check.json``, ``acceptance.json``, node
baselines). This module is the one rule both use, below every layer so the writers in
``ops``, ``kube`` and ``node`` reach it.

A key is renamed only when it is a Python field name (lower-case words joined by ``_``,
each word starting with a letter), so data that happens to be a key stays as it is: names
in the spec are DNS labels (no ``_``), device names such as ``mlx5_0`` have a word starting
with a digit, environment variables are upper-case, Kubernetes objects (a mapping with
``apiVersion`` and ``kind``) keep the API's spelling, and a caller names the fields whose
mappings are keyed by data (measurement names, label keys) with ``data_maps`` and those that
hold an outside document (a registry's config blob) with ``verbatim``.

``camel`` is idempotent, so a reader that gets a file written before these names were
camelCase passes the old file through it and reads one spelling (``ops.acceptance.Record``,
``node.baseline.Baseline``).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

_FIELD = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z][a-z0-9]*)+$")


def camel_key(key: str) -> str:
    """``gpu_hours_per_month`` -> ``gpuHoursPerMonth``; anything that is not a Python field
    name (``mlx5_0``, ``NCCL_IB_HCA``, ``example.com/pool``) as it is."""
    if not _FIELD.match(key):
        return key
    first, *rest = key.split("_")
    return first + "".join(w[:1].upper() + w[1:] for w in rest)


def camel(data: Any, data_maps: Collection[str] = (), verbatim: Collection[str] = ()) -> Any:
    """``data`` with its field names in camelCase, for JSON and YAML. Kubernetes objects and
    the value of a field named in ``verbatim`` go through untouched; the mapping under a
    field named in ``data_maps`` keeps its keys, which are data, and has its values
    converted. Both name fields by their camelCase name."""
    if isinstance(data, dict):
        if "apiVersion" in data and "kind" in data:
            return data
        out: dict[Any, Any] = {}
        for k, v in data.items():
            name = camel_key(k) if isinstance(k, str) else k
            if name in verbatim:
                out[name] = v
            elif name in data_maps and isinstance(v, dict):
                out[name] = {dk: camel(dv, data_maps, verbatim) for dk, dv in v.items()}
            else:
                out[name] = camel(v, data_maps, verbatim)
        return out
    if isinstance(data, list | tuple):
        return [camel(v, data_maps, verbatim) for v in data]
    return data
