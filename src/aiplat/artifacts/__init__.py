"""Model artifacts: package, sign, push, pull, cache, verify and benchmark (OCI).

Pure core (no I/O; checked by import-linter):
    reference   ``HOST/REPO:TAG@sha256:…`` references and digests
    modelpack   CNCF ModelPack manifests and configs as dataclasses <-> canonical bytes
    signing     Ed25519 signatures over manifest digests; the TrustPolicy and its rules
    units       sizes and rates as admins write them
    guidance    store/cache tiers and cache size per node from the platform spec

Edges (files, HTTP):
    client      OCI distribution client over httpx; retries; injectable transport
    auth        docker/podman auth files, Basic and bearer-token auth
    package     model directory -> layers (hashing, reproducible tar)
    push        skip existing, cross-repository mount, chunked upload
    signatures  signature artifacts in the registry (tag ``sha256-<hex>.sig``, referrers)
    cache       content-addressed blobs, hard-link snapshots, locks, LRU, verify, gc
    pull        resolve, enforce policy, parallel verified resumable download, snapshot
    bench       cold/warm pull and load against same-run ceilings

Errors are :mod:`aiplat.artifacts.errors` (input errors exit 2, failures exit 1).
"""
