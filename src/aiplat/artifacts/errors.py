"""Errors of the artifacts layer, each ending in what to do next.

    AiplatError (aiplat.errors)
    ├── InputError                    exit 2
    │   └── ArtifactInputError              a reference, digest, policy or key that cannot be used
    └── ArtifactError                 exit 1: the operation ran and failed
        ├── RegistryError             HTTP status or transport failure after retries
        ├── DigestMismatchError       bytes whose sha256 is not the digest they claim
        ├── SignatureError            unsigned / badly signed / untrusted under the policy
        ├── ManifestError             a manifest or layer that cannot be laid out safely
        │                             (clashing or unsafe paths, links or devices in a tar)
        └── StorageError              the cache or an output file cannot be written or is
                                      not what aiplat made (disk full, a planted symlink)

Transport exceptions (``httpx.HTTPError``) never leave :mod:`aiplat.artifacts.client`: they
are retried there and finally wrapped in :class:`RegistryError`, so callers handle one tree.
Messages never contain credentials (the client never puts them in URLs). Operating-system
errors (``OSError``) of the cache and the files aiplat writes are wrapped in
:class:`StorageError` with the path and the fix, so a full disk is one line, not a traceback.
"""

from __future__ import annotations

import errno

from aiplat.errors import AiplatError, InputError


class ArtifactInputError(InputError):
    """A reference, digest, policy or key that cannot be used as given."""


class ArtifactError(AiplatError):
    exit_code = 1


class RegistryError(ArtifactError):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class DigestMismatchError(ArtifactError):
    pass


class SignatureError(ArtifactError):
    pass


class ManifestError(ArtifactError):
    """A manifest (or one of its tar layers) that aiplat refuses to lay out as a model
    directory: it is untrusted input from a registry, not a user's typo (exit 1)."""


class StorageError(ArtifactError):
    """A file system failure in the cache or an output file (ENOSPC, EACCES, a symlink
    where aiplat expects its own file)."""


def storage_error(e: OSError, what: str, path: object = None, fix: str = "") -> StorageError:
    """``what path: reason (fix: …)`` for an ``OSError`` of the cache or an output file.

    ``fix`` overrides the advice; by default a full disk points at ``aiplat model gc`` (the
    cache is what fills a node's disk) and a permission error at the user or ``--cache``.
    """
    where = path if path is not None else e.filename
    reason = e.strerror or str(e) or e.__class__.__name__
    if not fix:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            fix = ("free space on that file system (`aiplat model gc --max-size SIZE` evicts"
                   " least recently used models and removes partial downloads), or point"
                   " --cache at a larger one")
        elif e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            fix = "run as a user who may write there, or point --cache at a writable directory"
        else:
            fix = "check the file system (dmesg, df -h) and run the command again"
    return StorageError(f"{what} {where}: {reason} (fix: {fix})" if where is not None
                        else f"{what}: {reason} (fix: {fix})")
