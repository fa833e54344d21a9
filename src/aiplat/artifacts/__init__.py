"""Model artifacts: package, sign, push, pull, cache, verify and benchmark (OCI).

Pure core (no I/O; checked by import-linter):
    reference   ``HOST/REPO:TAG@sha256:…`` references and digests
    modelpack   CNCF ModelPack manifests and configs as dataclasses <-> canonical bytes
    cosign      cosign's signature formats: simple-signing payload, keys, encrypted key files
    signing     signatures over manifest digests (cosign's format); the TrustPolicy and its rules
    units       sizes and rates as admins write them
    guidance    store/cache tiers and cache size per node from the platform spec

Edges (files, HTTP):
    client      OCI distribution client over httpx; retries; injectable transport
    auth        docker/podman auth files, Basic and bearer-token auth
    package     model directory -> layers (hashing, reproducible tar)
    push        skip existing, cross-repository mount, chunked upload
    signatures  signature manifests in the registry (OCI 1.1 referrers, else the ``.sig`` tag)
    cache       content-addressed blobs, hard-link snapshots, locks, LRU, verify, gc
    pull        resolve, enforce policy, parallel verified resumable download, snapshot
    bench       cold/warm pull and load against same-run ceilings
    oracles     cosign, oras, modctl and an OCI 1.1 registry built from Go modules (interop tests)

Errors are :mod:`aiplat.artifacts.errors` (input errors exit 2, failures exit 1).
"""
