"""Reading a rendered (or hand-written) manifest tree from disk: the I/O edge of validate and
lint.

A directory with a kustomization (``kustomization.yaml``, ``kustomization.yml`` or
``Kustomization``, the names kustomize accepts; two of them are an error, as for kustomize)
is read as kustomize builds it, in one of two ways.

**Plain kustomizations are read here.** One whose kustomizations (it and those its
``resources`` name, recursively) hold only ``resources`` (and the older ``bases``),
``namespace``, ``commonLabels``/``labels`` that label metadata only, and fields that change no
object, is read in process: its ``resources`` in order, recursing into listed directories,
then its ``namespace`` applied as kustomize's namespace transformer applies it
(``api/filters/namespace``): set on every object that is not cluster-scoped (a Namespace is
renamed to it, as kustomize does), on the ``subjects`` of (Cluster)RoleBindings named
``default``, and on an APIService's and a CRD conversion webhook's service; an outer
kustomization's namespace overrides an inner one's. Cluster-scoped are Kubernetes' own such
kinds (``CLUSTER_SCOPED``) and the custom resources whose CRD (aiplat's packaged ones, or one
in the tree) says so. ``commonLabels`` and ``labels`` are applied to every object's
``metadata.labels``, as kustomize's label transformer does. Why not always run kustomize:
this is what ``aiplat kube render`` writes and what most trees are; read here, every object
keeps its file (kustomize's output has none), nothing outside Python runs, and a tree is read
on a machine without kubectl.

**Everything else is built by the real kustomize**, through the ``build`` the caller passes
(``kube/kustomize.py``: ``kubectl kustomize DIR``): patches of any kind, name prefixes and
suffixes, generators, components, replacements, Helm charts, labels on selectors and
templates, a ``resources`` folder outside the folder given (an overlay's ``../../base``).
What it builds is what is judged and applied; each object keeps the file that defines it
where the plain reading found one of the same kind and name, else it is shown at the
kustomization, and both say ``(kustomize build)``; ``read_tree`` adds an info finding naming
the kustomization and why it was built. Without a ``build`` (no kubectl or kustomize), such a
tree is an ``InputError`` (exit 2) with the fix, never read as its base. A remote resource (a
URL) is an ``InputError`` either way: aiplat fetches nothing (vendor it into the tree). A
file resource outside the tree (absolute, ``..`` past the root, a link out of it) is an
input error, as kustomize's root-only load restriction refuses it too.

A directory without one is read as every ``*.yaml``/``*.yml``/``*.json`` below it, as
``kubectl apply -R -f`` does (links out of the tree refused), a ``kustomization.yaml`` below
the root included; a Kustomization (or Component) document there is an input error, since
kubectl cannot apply it. In either mode a ``*List``'s items are unpacked at any depth, as
kustomize does. ``cluster/nodes/inventory.yaml`` (written by render) is returned separately,
never as a manifest; it must hold one document (kubectl would apply any others).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from aiplat import inputs
from aiplat.errors import InputError
from aiplat.findings import Finding
from aiplat.kube.inventory import Inventory
from aiplat.text import shown

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
INVENTORY = "cluster/nodes/inventory.yaml"
KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_KUSTOMIZE_API = "kustomize.config.k8s.io/"  # Kustomization's and Component's group
_log = logging.getLogger(__name__)
# What a kustomization holds that aiplat models, or that changes no object.
_MODELLED = {"apiVersion", "kind", "metadata", "resources", "bases", "namespace",
             "commonLabels", "labels", "generatorOptions", "sortOptions", "buildMetadata"}
BUILT = "kustomize"  # the source of the finding that says a tree was built by kustomize
# Builds a kustomization directory into multi-document YAML (kube/kustomize.py's Kustomize).
Build = Callable[[Path], str]
INSTALL = ("put kubectl (or kustomize) on PATH, or build the lab's kubectl with `aiplat lab "
           "cluster build`")
# Kinds whose selectors or pod templates kustomize's commonLabels also labels
# (api/konfig/builtinpluginconsts/commonlabels.go), and those whose templates `labels:` with
# includeTemplates labels (templatelabels.go): aiplat labels metadata only.
_SELECTED = frozenset({"Service", "ReplicationController", "Deployment", "ReplicaSet",
                       "DaemonSet", "StatefulSet", "Job", "CronJob", "PodDisruptionBudget",
                       "NetworkPolicy"})
_TEMPLATED = frozenset({"ReplicationController", "Deployment", "ReplicaSet", "DaemonSet",
                        "StatefulSet", "Job", "CronJob"})
_LABEL_KEYS = {"pairs", "includeSelectors", "includeTemplates", "fields"}
_REMOTE = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://|git@|(github\.com|gitlab\.com|"
                     r"bitbucket\.org)/)")


def _read_docs(path: Path) -> list[Any]:
    """The Kubernetes objects in one file (``_objects``)."""
    what = "Kubernetes manifests"
    docs = [inputs.load_json(path, what)] if path.suffix == ".json" \
        else inputs.load_yaml_all(path, what)
    return _objects(docs, str(path))


def _objects(docs: list[Any], name: str) -> list[Any]:
    """The Kubernetes objects of one file's documents: each a mapping; a ``List``'s items
    unpacked, at any depth, as kustomize does (``api/resource/factory.go``,
    inlineAnyEmbeddedLists): a List inside a List hid its objects when one level was unpacked.
    The depth is bounded by the readers' ``inputs.MAX_DEPTH`` (a deeper file is refused when
    read)."""
    out: list[Any] = []
    for i, doc in enumerate(docs):
        where = f"{name}" + (f" (document {i + 1})" if len(docs) > 1 else "")
        if not isinstance(doc, dict):
            raise InputError(f"{where}: a manifest must be a mapping (an object with "
                             f"apiVersion and kind), not {type(doc).__name__} (fix: remove or "
                             "correct it)")
        todo = [doc]  # depth first, so the objects keep the file's order
        while todo:
            o = todo.pop()
            if not (str(o.get("kind", "")).endswith("List") and "items" in o):
                out.append(o)
                continue
            items = o.get("items")
            if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
                raise InputError(f"{where}: a {o.get('kind')}'s items must be a list of "
                                 "objects (fix: correct 'items')")
            todo.extend(reversed(items))
    return out


def _applied(path: Path, objects: list[Any], where: str) -> list[Any]:
    """``objects`` of ``path`` as ``kubectl apply -f`` takes them: an ``InputError`` for a
    Kustomization (or Component) among them."""
    for d in objects:
        if str(d.get("apiVersion", "")).startswith(_KUSTOMIZE_API):
            raise InputError(
                f"{path}: a {d.get('kind')} {where}: `kubectl apply -f` cannot apply it (no "
                "such kind in a cluster), and what it builds is not what the files say (fix: "
                f"lint the folder that holds it, or {_fix_build(path.parent)})")
    return objects


def _fix_build(directory: Path) -> str:
    return (f"lint what kustomize builds: `kubectl kustomize {directory} > out/all.yaml`, "
            "then lint the folder out")


def kustomization_file(directory: Path) -> Path | None:
    """The kustomization of ``directory``, by any name kustomize accepts; None without one."""
    found = [directory / n for n in KUSTOMIZATIONS if (directory / n).is_file()]
    if len(found) > 1:
        names = ", ".join(f.name for f in found)
        raise InputError(f"{directory}: more than one kustomization ({names}); kustomize "
                         "refuses that too (fix: keep one)")
    return found[0] if found else None


# Kubernetes' cluster-scoped kinds, (group, kind): `kubectl api-resources --namespaced=false`,
# as lightkube's resource models list them (a test keeps the two equal; lightkube, a cluster
# client, is not imported here).
CLUSTER_SCOPED = frozenset({
    ("", "ComponentStatus"), ("", "Namespace"), ("", "Node"), ("", "PersistentVolume"),
    *(("admissionregistration.k8s.io", k) for k in (
        "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
        "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration")),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    ("authentication.k8s.io", "SelfSubjectReview"), ("authentication.k8s.io", "TokenReview"),
    *(("authorization.k8s.io", k) for k in (
        "SelfSubjectAccessReview", "SelfSubjectRulesReview", "SubjectAccessReview")),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("certificates.k8s.io", "ClusterTrustBundle"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("internal.apiserver.k8s.io", "StorageVersion"),
    *(("networking.k8s.io", k) for k in ("IPAddress", "IngressClass", "ServiceCIDR")),
    ("node.k8s.io", "RuntimeClass"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    *(("resource.k8s.io", k) for k in (
        "DeviceClass", "DeviceTaintRule", "ResourcePoolStatusRequest", "ResourceSlice")),
    ("scheduling.k8s.io", "PriorityClass"),
    *(("storage.k8s.io", k) for k in (
        "CSIDriver", "CSINode", "StorageClass", "VolumeAttachment", "VolumeAttributesClass")),
    ("storagemigration.k8s.io", "StorageVersionMigration"),
})


def _cluster_scoped(objects: list[Any]) -> set[tuple[str, str]]:
    """(group, kind) of cluster-scoped kinds: Kubernetes' own, aiplat's packaged CRDs' and
    those of CRDs among ``objects``."""
    from aiplat.kube.crds import bundles

    crds = [c for b in bundles() for c in b["crds"]]
    crds += [o for o in objects if o.get("kind") == "CustomResourceDefinition"]
    out = set(CLUSTER_SCOPED)
    for crd in crds:
        spec = crd.get("spec")
        spec = spec if isinstance(spec, dict) else {}
        names = spec.get("names")
        names = names if isinstance(names, dict) else {}
        if spec.get("scope") == "Cluster":
            out.add((str(spec.get("group", "")), str(names.get("kind", ""))))
    return out


def _set(node: Any, path: tuple[str, ...], value: str, create: bool) -> None:
    for key in path[:-1]:
        if not isinstance(node, dict) or not isinstance(node.get(key), dict):
            return
        node = node[key]
    if isinstance(node, dict) and (create or path[-1] in node):
        node[path[-1]] = value


def _apply_namespace(objects: list[Any], ns: str) -> None:
    """kustomize's namespace transformer (``api/filters/namespace``, default options) on
    ``objects``, in place."""
    scoped = _cluster_scoped(objects)
    for o in objects:
        api = str(o.get("apiVersion", ""))
        group, kind = api.rpartition("/")[0], str(o.get("kind", ""))
        if not isinstance(o.get("metadata"), dict):
            o["metadata"] = {}
        if (group, kind) not in scoped:
            o["metadata"]["namespace"] = ns
        if kind == "Namespace" and api == "v1":
            o["metadata"]["name"] = ns
        if kind in ("RoleBinding", "ClusterRoleBinding"):
            for s in o.get("subjects") or []:
                if isinstance(s, dict) and s.get("name") == "default":
                    s["namespace"] = ns
        if kind == "APIService" and group == "apiregistration.k8s.io":
            _set(o, ("spec", "service", "namespace"), ns, create=True)
        if kind == "CustomResourceDefinition" and group == "apiextensions.k8s.io":
            _set(o, ("spec", "conversion", "webhook", "clientConfig", "service", "namespace"),
                 ns, create=False)


def _not_modelled(k: Path, field: str, why: str) -> str:
    """Why kustomization ``k`` must be built by kustomize."""
    return f"{k}: {field!r} ({why})"


def _pairs(k: Path, field: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
            isinstance(a, str) and isinstance(b, str) for a, b in value.items()):
        raise InputError(f"{k}: {field} must map label keys to string values (kustomize "
                         "refuses others) (fix: quote the values, e.g. \"true\")")
    return value


def _labels(k: Path, spec: dict[str, Any]) -> tuple[dict[str, str], set[str], list[str]]:
    """The labels ``spec`` gives every object's metadata (commonLabels, then each ``labels``
    entry, as kustomize applies them: a later one wins), the kinds whose other fields they
    would also label (not modelled), and the findings for what is not modelled at all."""
    out = dict(_pairs(k, "'commonLabels'", spec.get("commonLabels") or {}))
    kinds: set[str] = set(_SELECTED) if out else set()
    notes: list[str] = []
    entries = spec.get("labels") or []
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise InputError(f"{k}: 'labels' must be a list of entries with 'pairs' (fix: "
                         "correct it)")
    for e in entries:
        if set(e) - _LABEL_KEYS:
            raise InputError(f"{k}: 'labels' entry with {sorted(set(e) - _LABEL_KEYS)}; "
                             f"kustomize knows {sorted(_LABEL_KEYS)} (fix: correct it)")
        out.update(_pairs(k, "a 'labels' entry's 'pairs'", e.get("pairs") or {}))
        if e.get("includeSelectors"):
            kinds |= _SELECTED
        elif e.get("includeTemplates"):
            kinds |= _TEMPLATED
        if e.get("fields"):
            notes.append(_not_modelled(k, "labels", "its 'fields' label fields other than "
                                       "metadata.labels, which aiplat does not"))
    return out, kinds, notes


def _apply_labels(k: Path, objects: list[Any], labels: dict[str, str],
                  kinds: set[str]) -> list[str]:
    """kustomize's label transformer on ``objects``' metadata, in place (created where
    missing); a finding naming the objects whose selectors or templates it also labels."""
    touched = []
    for o in objects:
        if not isinstance(o.get("metadata"), dict):
            o["metadata"] = {}
        meta = o["metadata"]
        if meta.get("labels") is None:
            meta["labels"] = {}
        if not isinstance(meta["labels"], dict):
            raise InputError(f"{k}: {o.get('kind')}/{meta.get('name')}: metadata.labels is "
                             "not a mapping (fix: correct it)")
        meta["labels"].update(labels)
        if o.get("kind") in kinds:
            touched.append(f"{o.get('kind')}/{meta.get('name')}")
    if not touched:
        return []
    return [_not_modelled(k, "commonLabels" if "NetworkPolicy" in kinds else "labels",
                          "it also labels the selectors or pod templates of "
                          f"{', '.join(touched[:5])}{' ...' if len(touched) > 5 else ''}, "
                          "which aiplat does not")]


def _refuse_remote(k: Path, field: str, entry: str) -> None:
    """A URL (not a local path that looks like one) in kustomization ``k``'s ``field``:
    kustomize would fetch it, aiplat fetches nothing."""
    if _REMOTE.match(entry) and not (k.parent / entry).exists():
        raise InputError(f"{k}: {field} entry {entry!r} is remote: kustomize would fetch it, "
                         "aiplat fetches nothing (fix: vendor it into the tree and name that "
                         "copy, or build it yourself and give the file: `kubectl kustomize "
                         f"{k.parent} > all.yaml`)")


def _resource(k: Path, entry: str, root: Path) -> Path | str:
    """The path ``entry`` of kustomization ``k`` names, inside the tree ``root`` (resolved),
    or why only kustomize can read it (a folder outside the tree, as an overlay's base)."""
    target = k.parent / entry
    where = f"{k}: resources entry {entry!r}"
    _refuse_remote(k, "resources", entry)
    real = target.resolve()
    if not real.is_relative_to(root) and real.is_dir():
        return _not_modelled(k, f"resources: {entry}", f"a folder outside {root}")
    if Path(entry).is_absolute():
        raise InputError(f"{where} is an absolute path; a tree's resources are inside it "
                         "(fix: copy it into the tree and give a path relative to the "
                         "kustomization)")
    if not real.is_relative_to(root):
        raise InputError(f"{where} is outside the tree {root} (resolves to {real}); "
                         "kustomize refuses a file outside its root too (fix: copy it into "
                         "the tree, or name the folder that holds it)")
    if not target.exists():
        raise InputError(f"{where} does not exist (fix: re-render, or remove it from "
                         "resources)")
    if not real.is_dir() and not real.is_file():
        raise InputError(f"{where} is not a file or directory (fix: give a manifest file)")
    return real


def _kustomized(directory: Path, root: Path, seen: tuple[Path, ...],
                notes: list[str]) -> list[tuple[str, Any]]:
    """The objects kustomization of ``directory`` builds as far as read here; why only
    kustomize can build it appended to ``notes`` (then the objects are not what it builds)."""
    k = kustomization_file(directory)
    if k is None:
        raise InputError(f"{directory}: a directory named in resources needs a kustomization "
                         f"({', '.join(KUSTOMIZATIONS)}) (fix: add one, or list its files)")
    docs = _read_docs(k)
    spec = docs[0] if docs else {}
    notes += [_not_modelled(k, str(field), "read by kustomize only")
              for field in sorted(set(spec) - _MODELLED, key=str)]
    labels, label_kinds, label_notes = _labels(k, spec)
    notes += label_notes
    resources: list[Any] = []
    for field in ("resources", "bases"):  # bases: kustomize's older name, still read
        entries = spec.get(field) or []
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            raise InputError(f"{k}: '{field}' must be a list of file or directory names (fix: "
                             "correct it, or re-render the tree)")
        resources += entries
    ns = spec.get("namespace")
    if ns is not None and not isinstance(ns, str):
        raise InputError(f"{k}: 'namespace' must be a string (fix: correct it)")
    out: list[tuple[str, Any]] = []
    for entry in resources:
        target = _resource(k, entry, root)
        if isinstance(target, str):
            notes.append(target)
            continue
        if target.is_dir():
            if target in seen:
                raise InputError(f"{k}: resources entry {entry!r} includes {target} again (a "
                                 "cycle) (fix: remove it)")
            out += _kustomized(target, root, (*seen, target), notes)
        else:
            out.extend((str(target.relative_to(root)), d) for d in _read_docs(target))
    if ns:
        _apply_namespace([o for _f, o in out], ns)
    if labels:
        notes += _apply_labels(k, [o for _f, o in out], labels, label_kinds)
    return out


def _key(o: Any) -> tuple[str, str, str]:
    meta = o.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return (str(o.get("apiVersion", "")).rpartition("/")[0], str(o.get("kind", "")),
            str(name))


def _built(root: Path, k: Path, reasons: list[str], read: list[tuple[str, Any]], *,
           build: Build | None, notes: list[Finding] | None) -> list[tuple[str, Any]]:
    """The objects kustomize builds from ``root`` (its kustomization ``k``), each at the file
    the plain reading ``read`` found an object of its kind and name in, else at ``k``."""
    said = [r.removeprefix(f"{k.resolve()}: ") for r in reasons]
    why = "; ".join(said[:3]) + (f"; and {len(said) - 3} more" if len(said) > 3 else "")
    if build is None:
        raise InputError(f"{k}: only kustomize builds this kustomization ({why}), and no "
                         f"kustomize program was found (fix: {INSTALL}; or build it yourself, "
                         f"`kubectl kustomize {root} > all.yaml`, and give all.yaml)")
    _nothing_remote(root.resolve(), set())
    name = f"kustomize build of {k}"
    objects = _objects(inputs.parse_yaml_all(build(root.resolve()), name, _WHAT), name)
    files: dict[tuple[str, str, str], str | None] = {}
    for f, o in read:
        files[_key(o)] = f if _key(o) not in files else None  # only where one defines it
    at = str(k.relative_to(root)) if k.is_relative_to(root) else str(k)
    out = [(f"{files.get(_key(o)) or at} (kustomize build)", o) for o in objects]
    if notes is not None:
        notes.append(Finding(
            severity="info", source=BUILT, subject=shown(str(k)),
            message=shown(f"built by kustomize, since {why}: {len(out)} objects judged as "
                          "kustomize builds them, each at the file that defines it, else at "
                          "the kustomization (kustomize's output has no file or line)")))
    _log.info("%s: built by kustomize (%s)", k, why)
    return out


# What names more kustomizations or files to load: kustomize fetches a URL in any of them.
_LOADED = ("resources", "bases", "components", "crds")


def _nothing_remote(directory: Path, seen: set[Path]) -> None:
    """Before kustomize runs: no kustomization it will read (this one, and every local folder
    its resources, bases and components name, outside the tree too, as an overlay's base)
    names a remote resource; kustomize would fetch and build it, aiplat fetches nothing."""
    if directory in seen or len(seen) > 1000:  # a cycle or a runaway: kustomize refuses both
        return
    seen.add(directory)
    k = kustomization_file(directory)
    if k is None:
        return
    docs = _read_docs(k)
    spec = docs[0] if docs and isinstance(docs[0], dict) else {}
    for field in _LOADED:
        entries = spec.get(field)
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, str):
                continue
            _refuse_remote(k, field, entry)
            target = (directory / entry).resolve()
            if target.is_dir():
                _nothing_remote(target, seen)


def read_tree(directory: str | Path, notes: list[Finding] | None = None, *,
              build: Build | None = None
              ) -> tuple[list[tuple[str, Any]], Inventory | None]:
    """The objects of the tree ``directory`` (each with its file) and its inventory. A
    kustomization that only kustomize builds is built with ``build`` (an ``InputError`` without
    one), and ``notes`` receives an info finding saying so."""
    root = Path(directory)
    if not root.is_dir():
        raise InputError(f"{root}: not a directory")
    real_root = root.resolve()
    items: list[tuple[str, Any]] = []  # (file relative to the root, object)
    if (k := kustomization_file(root)) is not None:
        reasons: list[str] = []
        items = _kustomized(real_root, real_root, (real_root,), reasons)
        if reasons:
            items = _built(root, k, reasons, items, build=build, notes=notes)
    else:
        # Every file `kubectl apply -R -f` reads, one named kustomization.yaml included: kubectl
        # applies what it holds (skipping it hid a ClusterRoleBinding there).
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml", ".json")):
            rel = str(path.relative_to(root))
            if rel == INVENTORY:
                continue
            if not path.resolve().is_relative_to(real_root):
                raise InputError(f"{path}: a link out of the tree (to {path.resolve()}) (fix: "
                                 "copy the file into the tree)")
            items += [(rel, d) for d in _applied(path, _read_docs(path), f"in {root}, a "
                                                 "tree with no kustomization at its root")]
    inv_path = root / INVENTORY
    inventory = None
    if inv_path.exists():
        # One document, as --inventory's: `kubectl apply -R -f` applies any after it, which
        # lint would not judge.
        inv = inputs.load_yaml(inv_path, "a node inventory (YAML)")
        inventory = Inventory.from_dict(inv, str(inv_path)) if inv is not None else None
    return items, inventory


STDIN = "-"
_WHAT = "Kubernetes manifests"
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def read_manifests(target: str, notes: list[Finding] | None = None, *,
                   namespace: str | None = None, only: bool = False,
                   stdin: BinaryIO | None = None, placed: list[Any] | None = None,
                   build: Build | None = None
                   ) -> tuple[list[tuple[str, Any]], Inventory | None]:
    """The objects of ``target`` as ``kubectl apply -f TARGET`` reads it: a directory
    (``read_tree``, with ``build`` and ``notes``), one manifest file, or ``-`` for ``stdin``
    (default: the process's); the inventory only from a directory. With ``namespace``, each
    namespaced object without one is placed in it, as kubectl places it (``--namespace``, else
    its context's, ``default``): the checks then see the namespace the object lands in. With
    ``only`` (an explicit ``--namespace``), an object naming another namespace is an
    ``InputError``, as kubectl refuses it ("the namespace from the provided object ... does
    not match"). ``placed`` receives the objects it put in ``namespace``: without an explicit
    ``--namespace`` that is only kubectl's likely context, and a check that must assume the
    worst can tell them."""
    if namespace is not None and not _DNS_LABEL.fullmatch(namespace):
        raise InputError(f"--namespace {namespace!r}: not a namespace name (a DNS-1123 label: "
                         "lowercase letters, digits, '-'; at most 63) (fix: correct it)")
    inventory = None
    if target == STDIN:
        data = inputs.read_stdin(_WHAT, stream=stdin)
        docs = inputs.parse_yaml_all(inputs.decode(data, "(stdin)", _WHAT), "(stdin)", _WHAT)
        items = [(STDIN, o) for o in _applied(Path(STDIN), _objects(docs, "(stdin)"),
                                               "on stdin")]
    elif Path(target).is_dir():
        items, inventory = read_tree(target, notes, build=build)
    elif Path(target).is_file():
        path = Path(target)
        items = [(target, o) for o in _applied(path, _read_docs(path), "in the file")]
    else:
        what = "does not exist" if not Path(target).exists() else "is not a file or directory"
        raise InputError(f"{target}: {what} (fix: give a manifest FILE, a DIR of manifests, "
                         "or - to read them from stdin)")
    if namespace is not None:
        moved = place_namespace([o for _f, o in items], namespace)
        if placed is not None:
            placed.extend(moved)
        if only:
            _same_namespace(items, namespace)
    return items, inventory


def _same_namespace(items: list[tuple[str, Any]], namespace: str) -> None:
    from aiplat.kube.objects import ref

    scoped = _cluster_scoped([o for _f, o in items])
    for file, o in items:
        meta = o.get("metadata")
        ns = meta.get("namespace") if isinstance(meta, dict) else None
        group = str(o.get("apiVersion", "")).rpartition("/")[0]
        if ns and ns != namespace and (group, str(o.get("kind", ""))) not in scoped:
            raise InputError(f"{file}: {shown(ref(o))} is in namespace "
                             f"{ns!r}, not {namespace!r}: kubectl refuses it with "
                             f"--namespace {namespace} (\"the namespace from the provided "
                             "object does not match\") (fix: drop --namespace, or give "
                             f"--namespace {ns})")


def place_namespace(objects: list[Any], namespace: str) -> list[Any]:
    """Set ``metadata.namespace`` to ``namespace`` on each object of a namespaced kind that has
    none, in place: where ``kubectl apply`` creates it; the objects it set. Kinds the reader
    cannot tell (a custom resource with no CRD at hand) count as namespaced, as most are."""
    scoped = _cluster_scoped(objects)
    moved = []
    for o in objects:
        meta = o.get("metadata")
        group = str(o.get("apiVersion", "")).rpartition("/")[0]
        if isinstance(meta, dict) and not meta.get("namespace") \
                and (group, str(o.get("kind", ""))) not in scoped:
            meta["namespace"] = namespace
            moved.append(o)
    return moved
