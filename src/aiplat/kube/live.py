"""Reading a live cluster: the kubeconfig as kubectl finds it (bounded, checked, every
mistake an ``InputError``) and ``read_cluster``, the one reader of a cluster's objects for
every live command (read-only lists through ``kube.apply.Api``).

Kept apart, with ``kube.apply``, so the pure modules never import a client (an
import-linter contract says so).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx2
from lightkube import KubeConfig
from lightkube.config.kubeconfig import SingleConfig
from lightkube.core.exceptions import ConfigError

from aiplat import inputs
from aiplat.errors import InputError
from aiplat.kube.snapshot import KUEUE_CONFIGMAP, LISTS, RESOURCES, Obj

if TYPE_CHECKING:
    from aiplat.kube.apply import Api


KUBECONFIG_FIX = ("give a kubeconfig as `kubectl config view --raw` prints it: clusters, "
                  "contexts and users lists and a current-context")


def kubectl_kubeconfig(given: str | None = None, *, missing: str | None = None) -> str:
    """The kubeconfig kubectl would read: ``given`` (--kubeconfig), else the first file of
    $KUBECONFIG, else ~/.kube/config. With ``missing`` (a message with ``{path}``), a
    default that does not exist is that ``InputError`` rather than the client's."""
    path = given or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or \
        os.path.expanduser("~/.kube/config")
    if missing is not None and not given and not os.path.exists(path):
        raise InputError(missing.format(path=path))
    return path


def load_kubeconfig(path: str, context: str | None = None) -> SingleConfig:
    """The context ``context`` (default: the current one) of the kubeconfig ``path``.

    Read bounded (size, nesting, aliases: :mod:`aiplat.inputs`) before lightkube sees it, its
    shape and the server's URL checked: every way a kubeconfig can be wrong is an
    ``InputError`` naming the file and the fix, never a traceback from the client."""
    what = "a kubeconfig"
    data = inputs.mapping(inputs.load_yaml(path, what), path, what, KUBECONFIG_FIX)
    for key in ("clusters", "contexts"):
        inputs.sequence(data.get(key), f"{path}: {key}", key, KUBECONFIG_FIX)
    try:
        single = KubeConfig.from_dict(data, fname=path).get(context_name=context)
    except ConfigError as e:
        raise InputError(f"{path}: {e} (fix: pass --context NAME, or set current-context)") \
            from None
    except KeyError as e:
        raise InputError(f"{path}: {e} is missing: an entry without a name, or a context "
                         f"naming a cluster or user the file does not define (fix: "
                         f"{KUBECONFIG_FIX})") from None
    except (ValueError, TypeError, AttributeError) as e:  # msgspec's ValidationError too
        raise InputError(f"{path}: not a kubeconfig ({e}) (fix: {KUBECONFIG_FIX})") from None
    assert single is not None  # get() without a default raises instead
    if single.user is None:  # kubectl would go anonymous; lightkube's client refuses it
        raise InputError(f"{path}: context {single.context_name!r} names no user (fix: add "
                         "user: NAME to it and that user under users:, e.g. with a token)")
    server = single.cluster.server
    try:
        url = httpx2.URL(server) if server else None
    except httpx2.InvalidURL as e:
        url, problem = None, str(e)
    else:
        problem = "" if url is None or (url.scheme in ("http", "https") and url.host) \
            else "not an http(s) URL with a host"
    if problem:
        raise InputError(f"{path}: cluster {single.context.cluster!r} server {server!r}: "
                         f"{problem} (fix: e.g. server: https://HOST:6443)")
    return single


CLIENT_ERRORS = (ConfigError, OSError, ValueError, KeyError, TypeError, AssertionError,
                 AttributeError)
"""What lightkube raises making a client from a context whose certificates or keys do not
load (a client certificate without its key: TypeError; bad PEM: ssl.SSLError)."""


def client_error(path: str, e: Exception) -> InputError:
    return InputError(f"kubeconfig {path}: its certificates or keys do not load "
                      f"({type(e).__name__}: {e}) (fix: give certificate-authority-data, and "
                      "client-certificate-data with client-key-data, as base64 PEM; or "
                      "--context NAME)")


@dataclass(frozen=True)
class ClusterRead:
    """What ``read_cluster`` listed: every resource of ``LISTS`` (objects with their
    apiVersion and kind), and those the server serves in none of their versions."""

    lists: dict[str, list[Obj]]
    not_served: tuple[str, ...]


def read_cluster(api: Api, resources: Iterable[str] = RESOURCES) -> ClusterRead:
    """The one live cluster reader: read-only lists of ``resources`` (kube.snapshot.LISTS,
    in their first served API version) across namespaces, and Kueue's manager ConfigMap.
    Why-pending and ``sim replay`` both read a cluster through it."""
    from aiplat.kube.apply import ApiError, UnreachableError

    lists: dict[str, list[Obj]] = {}
    missing: list[str] = []
    for resource in resources:
        kind, versions = LISTS[resource]
        served = next((v for v in versions if api.serves(v, kind)), None)
        if served is None:
            lists[resource], missing = [], [*missing, resource]
            continue
        namespace, key = KUEUE_CONFIGMAP if resource == "configmaps" else (None, "")
        try:
            objs = api.objects(served, kind, namespace)
        except UnreachableError:
            raise
        except ApiError as e:  # kueue-system absent: no Configuration, Kueue's defaults
            if resource == "configmaps":
                objs = []
            else:
                raise InputError(f"listing {resource}: {e}") from None
        lists[resource] = [{"apiVersion": served, "kind": kind, **o} for o in objs
                           if not key or key in (o.get("data") or {})]
    return ClusterRead(lists, tuple(missing))
