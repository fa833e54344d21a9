"""Errors of the artifacts layer, each ending in what to do next.

    AiplatError (aiplat.errors)
    ├── InputError                    exit 2
    │   └── ArtifactInputError              a reference, digest, policy or key that cannot be used
    └── ArtifactError                 exit 1: the operation ran and failed
        ├── RegistryError             HTTP status or transport failure after retries
        ├── DigestMismatchError            bytes whose sha256 is not the digest they claim
        └── SignatureError            unsigned / badly signed / untrusted under the policy

Transport exceptions (``httpx.HTTPError``) never leave :mod:`aiplat.artifacts.client`: they
are retried there and finally wrapped in :class:`RegistryError`, so callers handle one tree.
Messages never contain credentials (the client never puts them in URLs).
"""

from __future__ import annotations

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
