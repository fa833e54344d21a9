"""Registry credentials from the usual docker/podman auth files, and the HTTP auth flow.

Lookup order follows podman (containers-auth.json(5)), then Docker:
``$REGISTRY_AUTH_FILE``, ``$XDG_RUNTIME_DIR/containers/auth.json``,
``~/.config/containers/auth.json``, ``$DOCKER_CONFIG/config.json`` (default
``~/.docker/config.json``). An entry gives ``auth`` (base64 ``user:password``) or
``username``/``password``; Docker's ``credHelpers``/``credsStore`` run
``docker-credential-<name> get``. The first file with an entry for the host wins.

:class:`RegistryAuth` is an ``httpx.Auth``: it answers a 401 with Basic credentials or with the
bearer-token dance (``WWW-Authenticate: Bearer realm=…,service=…,scope=…``), caching one token
per scope. Secrets live only in headers: ``Credentials.__repr__`` masks them and the client
never puts them in URLs or messages.

Credentials go only to the registry's own host (any port), and only over TLS unless the
registry is loopback. The realm of a ``Bearer`` challenge is chosen by whoever answers the
401, so a token service elsewhere (another host, or plain HTTP) gets an anonymous token
request; a Basic challenge over plain HTTP to a remote registry is refused with the fix.
Registries whose token service lives on another host (Docker Hub's auth.docker.io) therefore
get anonymous tokens: pull public models there, or use a mirror on one host.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import threading
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from aiplat import inputs
from aiplat.artifacts.errors import ArtifactInputError, RegistryError
from aiplat.errors import InputError


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)
    source: str = ""

    def __repr__(self) -> str:
        return f"Credentials(username={self.username!r}, password='***', source={self.source!r})"

    def basic_header(self) -> str:
        raw = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(raw).decode()


def auth_files(env: Mapping[str, str] | None = None, home: Path | None = None) -> list[Path]:
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    files: list[Path] = []
    if env.get("REGISTRY_AUTH_FILE"):
        files.append(Path(env["REGISTRY_AUTH_FILE"]))
    if env.get("XDG_RUNTIME_DIR"):
        files.append(Path(env["XDG_RUNTIME_DIR"]) / "containers/auth.json")
    files.append(home / ".config/containers/auth.json")
    files.append(Path(env.get("DOCKER_CONFIG") or home / ".docker") / "config.json")
    return files


def _host_of(key: str) -> str:
    # Keys may be "host", "host/path" or "https://host/v1/" (old Docker logins).
    key = re.sub(r"^[a-z]+://", "", key)
    return key.split("/", 1)[0]


def _from_entry(entry: object, where: str) -> Credentials | None:
    if not isinstance(entry, dict):
        return None
    if entry.get("auth"):
        try:
            user, _, password = base64.b64decode(entry["auth"]).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            raise ArtifactInputError(
                f"{where}: the 'auth' value is not base64 of user:password; log in again "
                "(podman login / docker login)"
            ) from None
        return Credentials(user, password, where)
    if entry.get("username") and entry.get("password"):
        return Credentials(str(entry["username"]), str(entry["password"]), where)
    return None


def _helper(name: str, host: str, where: str) -> Credentials | None:
    try:
        out = subprocess.run([f"docker-credential-{name}", "get"], input=host.encode(),
                             capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ArtifactInputError(
            f"{where}: credential helper docker-credential-{name} failed ({e.__class__.__name__});"
            " install it or remove it from the file"
        ) from None
    if out.returncode != 0:
        return None  # the helper has no entry for this host
    try:
        data = json.loads(out.stdout)
        return Credentials(str(data["Username"]), str(data["Secret"]), f"{where} ({name})")
    except (ValueError, KeyError, TypeError):
        raise ArtifactInputError(
            f"{where}: docker-credential-{name} printed no credentials"
        ) from None


def load_credentials(registry: str, env: Mapping[str, str] | None = None,
                     home: Path | None = None) -> Credentials | None:
    """The credentials the auth files hold for ``registry`` (host[:port]), or ``None``."""
    for path in auth_files(env, home):
        if not path.exists():
            continue
        try:  # bounded: a FIFO, /dev/zero or a deep document is an error, not a hang
            doc = inputs.load_json(path, "a registry auth file (JSON)")
        except InputError as e:
            raise ArtifactInputError(f"{e}; or remove the file") from None
        if not isinstance(doc, dict):
            continue
        auths = doc.get("auths") or {}
        for key, entry in auths.items():
            if _host_of(key) == registry:
                creds = _from_entry(entry, str(path))
                if creds is not None:
                    return creds
        helpers = doc.get("credHelpers") or {}
        helper = helpers.get(registry) or doc.get("credsStore")
        if helper:
            creds = _helper(str(helper), registry, str(path))
            if creds is not None:
                return creds
    return None


def bare_host(registry: str) -> str:
    """``host[:port]`` or ``[v6][:port]`` -> the bare host, lower-case (as httpx's URL.host)."""
    if registry.startswith("["):
        return registry[1:registry.find("]")].lower() if "]" in registry else registry.lower()
    return registry.rsplit(":", 1)[0].lower() if registry.count(":") == 1 else registry.lower()


_CHALLENGE_RE = re.compile(r'(\w+)="([^"]*)"')


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """``Bearer realm="x",service="y"`` -> ``("bearer", {"realm": "x", "service": "y"})``."""
    scheme, _, rest = header.strip().partition(" ")
    return scheme.lower(), dict(_CHALLENGE_RE.findall(rest))


class RegistryAuth(httpx.Auth):
    """Basic or bearer-token auth for one registry; thread-safe token cache."""

    # Not ``requires_response_body``: that would read every streamed blob into memory. The
    # token answer is read explicitly below (this flow is used by the sync client only).

    def __init__(self, credentials: Credentials | None, registry: str = "",
                 loopback: bool = False) -> None:
        self.credentials = credentials
        self.registry = registry
        self.host = bare_host(registry)
        self.loopback = loopback
        self._tokens: dict[str, str] = {}
        self._basic = False
        self._lock = threading.Lock()

    @staticmethod
    def _scope_key(request: httpx.Request) -> str:
        parts = request.url.path.split("/")
        # /v2/<name...>/(manifests|blobs|tags)/...: the repository is what a token covers.
        for marker in ("manifests", "blobs", "tags"):
            if marker in parts:
                return "/".join(parts[2:parts.index(marker)])
        return ""

    def withheld(self, url: httpx.URL) -> str:
        """Why the credentials may not go to ``url`` ('' when they may)."""
        if url.host.lower() != self.host:
            return f"{url.host} is not on the registry's host {self.host or '?'}"
        if url.scheme != "https" and not self.loopback:
            return f"{url} is plain HTTP to a registry that is not loopback"
        return ""

    def _apply(self, request: httpx.Request) -> None:
        with self._lock:
            token = self._tokens.get(self._scope_key(request))
            basic = self._basic
        if token:
            request.headers["Authorization"] = f"Bearer {token}"
        elif basic and self.credentials and not self.withheld(request.url):
            request.headers["Authorization"] = self.credentials.basic_header()

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        self._apply(request)
        response = yield request
        if response.status_code != 401:
            return
        scheme, params = parse_challenge(response.headers.get("www-authenticate", ""))
        if scheme == "basic":
            if self.credentials is None:
                return
            why = self.withheld(request.url)
            if why:
                raise RegistryError(
                    f"{self.registry} asks for your password, but {why}; aiplat sends"
                    " credentials only over TLS (or to a loopback registry). To fix: use"
                    " HTTPS (drop --plain-http)", 401)
            with self._lock:
                self._basic = True
            request.headers["Authorization"] = self.credentials.basic_header()
            yield request
            return
        if scheme != "bearer" or "realm" not in params:
            return
        query = {k: v for k, v in params.items() if k in ("service", "scope")}
        try:
            token_request = httpx.Request("GET", params["realm"], params=query)
        except (httpx.InvalidURL, ValueError, TypeError):
            raise RegistryError(f"{self.registry} named a token service that is not a URL"
                                f" ({params['realm'][:100]!r}); check the registry's auth"
                                " configuration", 401) from None
        why = ""
        if self.credentials is not None:
            why = self.withheld(token_request.url)
            if not why:
                token_request.headers["Authorization"] = self.credentials.basic_header()
        token_response = yield token_request
        token_response.read()
        if token_response.status_code != 200:
            hint = (f"aiplat did not send your credentials there ({why}): they go only to the"
                    " registry's own host, over TLS unless it is loopback. To fix: use a"
                    " registry whose token service is on its own host, or pull anonymously"
                    if why else "check the credentials in your auth file (podman login /"
                    " docker login)")
            raise RegistryError(
                f"the token service {token_request.url.copy_with(query=None)} answered"
                f" {token_response.status_code}; {hint}", token_response.status_code)
        try:
            body = token_response.json()
            token = str(body.get("token") or body["access_token"])
        except (ValueError, KeyError):
            raise RegistryError(f"the token service {params['realm']} sent no token") from None
        with self._lock:
            self._tokens[self._scope_key(request)] = token
        request.headers["Authorization"] = f"Bearer {token}"
        yield request
