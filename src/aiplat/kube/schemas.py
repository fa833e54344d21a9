"""Where a Kubernetes object's schema comes from: the official OpenAPI schemas that
``kubernetes-validate`` ships for built-in kinds (one strict JSON schema per kind and API
version, ``$ref``-ing one ``_definitions.json``), for the Kubernetes version asked for.

The package re-reads its 1 MB definitions file on every call; the validators here are built
once per (version, kind) from the same files and cached, which is what makes validating a
50-tenant tree fast. Custom resources' schemas are ``crds.CrdIndex``'s.

Every validator is ``Validator``: JSON Schema 2020-12 with ``pattern`` and
``patternProperties`` read by RE2 (google-re2), the engine of Go's ``regexp`` that the API
server matches them with: CRDs carry Go patterns such as Kueue's ``^(?i)[a-z]...``, which
Python's ``re`` refuses ("global flags not at the start").
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Any

import jsonschema
import re2  # type: ignore[import-untyped]
from kubernetes_validate import utils as kv_utils  # type: ignore[import-untyped]
from referencing import Registry, Resource

SUPPORTED_VERSIONS = ("1.34", "1.35", "1.36", "1.37")
# What may name a schema file: a kind or API version from a manifest reaches a package path.
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")
_API_VERSION = re.compile(r"(?:[a-z0-9][a-z0-9.-]{0,252}/)?v[0-9][a-z0-9]{0,20}")
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a bad pattern is raised, not also printed by the library


@functools.lru_cache(maxsize=4096)
def go_regexp(pattern: str) -> Any:
    """``pattern`` compiled as Go's ``regexp`` compiles it (RE2 syntax); ``re2.error`` when
    Go would refuse it."""
    return re2.compile(pattern, _RE2_OPTIONS)


def pattern_error(pattern: Any) -> str | None:
    """Why Go's ``regexp`` refuses ``pattern`` (None when it compiles)."""
    if not isinstance(pattern, str):
        return f"{pattern!r} is not a string"
    try:
        go_regexp(pattern)
    except re2.error as e:
        why = e.args[0] if e.args else e
        return why.decode(errors="replace") if isinstance(why, bytes) else str(why)
    return None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    if validator.is_type(instance, "string") and not go_regexp(pattern).search(instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any,
                        schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for k, v in instance.items():
            if go_regexp(pattern).search(k):
                yield from validator.descend(v, subschema, path=k, schema_path=pattern)


def _int_or_string(validator: Any, on: Any, instance: Any, schema: Any) -> Any:
    """``x-kubernetes-int-or-string``: an integer or a string, as the API server checks it
    ("must be of type integer,string"), a null too unless the field is nullable."""
    if on is not True or isinstance(instance, str) or (
            isinstance(instance, int) and not isinstance(instance, bool)):
        return
    if instance is None and schema.get("nullable") is True:
        return
    yield jsonschema.ValidationError(f"{instance!r} is not of type 'integer', 'string'")


Validator = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.validators.Draft202012Validator,
    {"pattern": _pattern, "patternProperties": _pattern_properties,
     "x-kubernetes-int-or-string": _int_or_string})
"""Draft 2020-12 with Go's (RE2) patterns and the int-or-string of CRD schemas: what every
schema here is checked with."""


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
    group, _, ver = api_version.rpartition("/")
    label = schema_label(group)
    if label is None:  # a custom group, even one beginning like Kubernetes' (batch.volcano.sh)
        return None
    sv = schema_version(version)
    api = f"{label}-{ver}" if label else ver
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
    return Validator(schema, registry=registry(version, schema))


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


@functools.cache
def definition_validator(version: str, name: str) -> Any:
    """A cached validator for one type of Kubernetes ``version``'s definitions (strict),
    e.g. ``io.k8s.api.core.v1.PodSpec``."""
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
              "$ref": f"https://kubernetes.io/api/_definitions.json#/$defs/{name}"}
    reg: Registry[Any] = definitions(schema_version(version)) @ Registry()
    return Validator(schema, registry=reg)


_LEGACY_GROUPS = {"", "apps", "batch", "autoscaling", "policy", "extensions"}
# The groups the schema files do not name as LABEL.k8s.io (their label is the first one).
_FULL_GROUPS = {"rbac": "rbac.authorization.k8s.io",
                "flowcontrol": "flowcontrol.apiserver.k8s.io",
                "apiserverinternal": "internal.apiserver.k8s.io"}


def full_group(label: str) -> str:
    """Kubernetes' API group that the schema files name ``label`` (``batch``, ``rbac``)."""
    return label if label in _LEGACY_GROUPS else _FULL_GROUPS.get(label, f"{label}.k8s.io")


def schema_label(group: str) -> str | None:
    """The label the schema files name Kubernetes' API group ``group`` by, or None when
    ``group`` is not one of Kubernetes' own: a custom group that only begins like one
    (Volcano's ``batch.volcano.sh``, kube-batch's ``scheduling.incubator.k8s.io``) has its
    own kinds, whatever their names (Volcano's Job is not batch/v1's)."""
    label = next((k for k, v in _FULL_GROUPS.items() if v == group),
                 group.split(".", maxsplit=1)[0])
    return label if full_group(label) == group else None


def builtin_served(version: str, group: str, kind: str) -> list[str] | None:
    """The versions of ``group`` at which Kubernetes ``version`` serves ``kind`` (GA
    first; empty when the group is Kubernetes' own but has no such kind any more), or None
    when ``group`` is not one of Kubernetes' own API groups."""
    short = schema_label(group)
    if short is None:
        return None
    every = builtin_api_versions(version)
    if short not in {a.rpartition("/")[0] for vs in every.values() for a in vs}:
        return None
    return [a.rpartition("/")[2] for a in every.get(kind.lower(), ())
            if a.rpartition("/")[0] == short]


def off_by_default(api_version: str) -> bool:
    """Whether a default API server leaves ``api_version`` of a built-in group unserved:
    every alpha version, and every beta one, since Kubernetes 1.24 enables no new beta API
    by default (KEP-3136) and the older betas are all removed in the releases supported
    here (1.25 on); a cluster turns one on with ``--runtime-config=GROUP/VERSION=true``
    (e.g. DRA's v1beta1 and v1beta2 "needed explicit opt in", the Kubernetes v1.34 DRA
    release blog says)."""
    return bool(re.fullmatch(r"v\d+(alpha|beta)\d+", api_version.rpartition("/")[2]))


def preferred(versions: list[str]) -> str:
    """The version Kubernetes prefers among ``versions`` (GA over beta over alpha, then the
    higher number: ``version.CompareKubeAwareVersionStrings``)."""
    def rank(v: str) -> tuple[int, int, int]:
        m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", v)
        if m is None:
            return (-1, 0, 0)
        stage = {"alpha": 0, "beta": 1, None: 2}[m.group(2)]
        return (stage, int(m.group(1)), int(m.group(3) or 0))
    return max(versions, key=rank)


def field_path(parts: Any) -> str:
    """A jsonschema error's path as kubectl writes it: ``spec.podSets[0].count``."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out.lstrip(".")
