"""Where a Kubernetes object's schema comes from: the official OpenAPI schemas that
``kubernetes-validate`` ships for built-in kinds (one strict JSON schema per kind and API
version, ``$ref``-ing one ``_definitions.json``), for the Kubernetes version asked for.

The package re-reads its 1 MB definitions file on every call; the validators here are built
once per (version, kind) from the same files and cached, which is what makes validating a
50-tenant tree fast. Custom resources' schemas are ``crds.CrdIndex``'s.
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Any

import jsonschema
from kubernetes_validate import utils as kv_utils  # type: ignore[import-untyped]
from referencing import Registry, Resource

SUPPORTED_VERSIONS = ("1.34", "1.35", "1.36", "1.37")
# What may name a schema file: a kind or API version from a manifest reaches a package path.
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")
_API_VERSION = re.compile(r"(?:[a-z0-9][a-z0-9.-]{0,252}/)?v[0-9][a-z0-9]{0,20}")
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


@functools.cache
def schema_version(version: str) -> str:
    """The newest schema release of ``kubernetes-validate`` at or below ``version``; a
    ``ValueError`` above its newest."""
    versions = [v for v in kv_utils.all_versions()
                if kv_utils.major_minor(v) <= kv_utils.major_minor(version)]
    if not versions or kv_utils.major_minor(version) > kv_utils.latest_version():
        raise ValueError(f"Kubernetes {version} is not supported by kubernetes-validate "
                         f"{kv_utils.latest_version()}")
    return str(versions[-1])


@functools.cache
def definitions(version: str) -> Resource[Any]:
    """The shared ``_definitions.json`` of a schema release (``schema_version``'s)."""
    return Resource.from_contents(kv_utils.schema_contents(
        f"kubernetes-json-schema/v{version}-local-strict/_definitions.json", version))


def registry(version: str, schema: Any) -> Registry[Any]:
    """A registry resolving ``schema``'s references into the release's definitions."""
    reg: Registry[Any] = Resource.from_contents(schema) @ Registry()
    return definitions(schema_version(version)) @ reg


@functools.cache
def builtin_schema(version: str, api_version: str, kind: str) -> Any:
    """The strict schema of a built-in kind, or None when Kubernetes ``version`` has no such
    kind at that API version (or the names could not name one)."""
    if not (_KIND.fullmatch(kind) and _API_VERSION.fullmatch(api_version)):
        return None
    sv = schema_version(version)
    api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        return kv_utils.schema_contents(
            f"kubernetes-json-schema/v{sv}-local-strict/{kind.lower()}-{api}.json", version)
    except FileNotFoundError:
        return None


@functools.cache
def builtin_validator(version: str, api_version: str, kind: str) -> Any:
    """A cached Draft 2020-12 validator for a built-in kind, or None if not built in."""
    schema = builtin_schema(version, api_version, kind)
    if schema is None:
        return None
    return jsonschema.validators.Draft202012Validator(schema,
                                                      registry=registry(version, schema))


@functools.cache
def builtin_api_versions(version: str) -> dict[str, tuple[str, ...]]:
    """Kind (lowercase) -> the API versions Kubernetes ``version`` serves it at, GA first:
    the file names of the schema release (``job-batch-v1.json``), read once."""
    root = resources.files("kubernetes_validate").joinpath(
        f"kubernetes-json-schema/v{schema_version(version)}-local-strict")
    found: dict[str, list[str]] = {}
    for entry in root.iterdir():
        parts = entry.name.removesuffix(".json").split("-")
        if len(parts) in (2, 3) and parts[-1].startswith("v"):
            found.setdefault(parts[0], []).append("/".join(parts[1:]))
    return {k: tuple(sorted(v, key=lambda a: ("alpha" in a or "beta" in a, a)))
            for k, v in found.items()}


def field_path(parts: Any) -> str:
    """A jsonschema error's path as kubectl writes it: ``spec.podSets[0].count``."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out.lstrip(".")
