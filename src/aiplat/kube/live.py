"""Reading a live cluster into a ``Snapshot`` with lightkube: the only module of
``aiplat.kube`` that talks to an API server, and only with read-only ``list`` calls.

Kept apart so the pure modules never import a client (an import-linter contract can say
so), and so the rest of the package works without lightkube installed.
"""

from __future__ import annotations

import os
from typing import Any

import httpx2
from lightkube import Client, KubeConfig
from lightkube.config.kubeconfig import SingleConfig
from lightkube.core.exceptions import ApiError, ConfigError
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Node, Pod

from aiplat import inputs
from aiplat.errors import InputError
from aiplat.kube.snapshot import Obj, Snapshot

GLOBAL = {"nodes", "clusterqueues", "resourceflavors", "cohorts", "topologies",
          "resourceslices", "deviceclasses"}


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


def read_live(kubeconfig: str, timeout: float = 10.0) -> Snapshot:
    """List the snapshot's resources from a live cluster (read-only) with lightkube."""
    single = load_kubeconfig(kubeconfig)
    try:
        client = Client(config=single, timeout=httpx2.Timeout(timeout))
    except CLIENT_ERRORS as e:
        raise client_error(kubeconfig, e) from e
    kinds: dict[str, Any] = {
        "nodes": Node, "pods": Pod, "jobs": Job,
        "workloads": create_namespaced_resource("kueue.x-k8s.io", "v1beta2", "Workload",
                                                "workloads"),
        "localqueues": create_namespaced_resource("kueue.x-k8s.io", "v1beta2", "LocalQueue",
                                                  "localqueues"),
        "clusterqueues": create_global_resource("kueue.x-k8s.io", "v1beta2", "ClusterQueue",
                                                "clusterqueues"),
        "resourceflavors": create_global_resource("kueue.x-k8s.io", "v1beta2",
                                                  "ResourceFlavor", "resourceflavors"),
        "cohorts": create_global_resource("kueue.x-k8s.io", "v1beta2", "Cohort", "cohorts"),
        "topologies": create_global_resource("kueue.x-k8s.io", "v1beta2", "Topology",
                                             "topologies"),
        "resourceslices": create_global_resource("resource.k8s.io", "v1", "ResourceSlice",
                                                 "resourceslices"),
        "deviceclasses": create_global_resource("resource.k8s.io", "v1", "DeviceClass",
                                                "deviceclasses"),
        "resourceclaims": create_namespaced_resource("resource.k8s.io", "v1", "ResourceClaim",
                                                     "resourceclaims"),
    }
    items: dict[str, list[Obj]] = {}
    for resource, kind in kinds.items():
        try:
            objs = client.list(kind) if resource in GLOBAL else client.list(kind, namespace="*")
            items[resource] = [o.to_dict() if hasattr(o, "to_dict") else dict(o) for o in objs]
        except ApiError as e:
            if e.status.code == 404:
                items[resource] = []  # the API (e.g. Kueue cohorts) is not installed
            else:
                raise InputError(f"listing {resource}: {e.status.message}") from e
        except Exception as e:  # transport errors: unreachable, TLS, timeouts
            raise InputError(f"cannot list {resource} with {kubeconfig}: {e} (fix: check the "
                             "server address and credentials, or use --snapshot)") from e
    return Snapshot(items)
