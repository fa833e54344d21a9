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

Credentials go only to the registry's own origin (its scheme, host and port: another port
of the same host is another server, whoever runs it), and only over TLS unless the registry
is a loopback address (an IP literal or ``localhost``: a name that resolved to loopback
once may not when httpx connects); one check (:meth:`RegistryAuth.withheld`) decides it for
Basic credentials and bearer tokens alike, on every request: a ``Link`` page, an upload
``Location`` or a redirect elsewhere gets neither (httpx also drops the header on a
cross-origin redirect), and a 401 from elsewhere is not answered. A token obtained with
credentials is a secret like them; an anonymous one still goes to the registry's origin
only. The realm of a ``Bearer`` challenge is chosen by whoever answers the 401, so a token
service elsewhere (another host or port, or plain HTTP) gets an anonymous token request,
and its answer is read within ``MAX_TOKEN_BYTES``; a Basic challenge over plain HTTP to a
remote registry is refused with the fix. Registries whose token service lives elsewhere
(Docker Hub's auth.docker.io, a token server on its own port) therefore get anonymous
tokens: pull public models there, or use a mirror that serves both on one origin.

An auth file that other users can read still works, with a warning naming it and the fix
(``chmod 600``): docker and podman write theirs 0600.
"""

from __future__ import annotations

import base64
import os
import re
import stat
import subprocess
import threading
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx

from aiplat import inputs
from aiplat.artifacts import limits
from aiplat.artifacts.errors import ArtifactInputError, RegistryError
from aiplat.artifacts.reference import canonical_name
from aiplat.errors import InputError


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)
    source: str = ""
    warning: str = ""  # e.g. the file holding them is readable by other users

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
    # Keys may be "host", "host/path" or "https://host/v1/" (old Docker logins); compared
    # as canonical hosts (case, default port), as a trust policy compares them.
    key = re.sub(r"^[a-z]+://", "", key)
    return canonical_name(key.split("/", 1)[0])


def exposed(path: Path) -> str:
    """A warning when the auth file ``path`` is readable by other users ('' when not)."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return ""
    if not mode & 0o044:
        return ""
    who = "every user" if mode & 0o004 else "its group"
    return (f"{path} holds registry credentials and is readable by {who} (mode"
            f" {mode:04o}) (fix: chmod 600 {path})")


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
        data = limits.peer_json(out.stdout)
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
        for key, entry in auths.items() if isinstance(auths, dict) else ():
            if _host_of(str(key)) == canonical_name(registry):
                creds = _from_entry(entry, str(path))
                if creds is not None:
                    return replace(creds, warning=exposed(path))
        helpers = doc.get("credHelpers") or {}
        helper = (helpers.get(registry) if isinstance(helpers, dict) else None) \
            or doc.get("credsStore")
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


Origin = tuple[str, str, int | None]


def _origin(url: httpx.URL) -> Origin:
    """(scheme, host, port) of ``url``, the port None when it is the scheme's default."""
    return url.scheme, url.host.lower(), url.port


def _shown_origin(origin: Origin) -> str:
    scheme, host, port = origin
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}" + (f":{port}" if port is not None else "")


_CHALLENGE_RE = re.compile(r'(\w+)="([^"]*)"', re.ASCII)


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """``Bearer realm="x",service="y"`` -> ``("bearer", {"realm": "x", "service": "y"})``."""
    scheme, _, rest = header.strip().partition(" ")
    return scheme.lower(), dict(_CHALLENGE_RE.findall(rest))


class RegistryAuth(httpx.Auth):
    """Basic or bearer-token auth for one registry; thread-safe token cache."""

    # Not ``requires_response_body``: that would read every streamed blob into memory. The
    # token answer is read explicitly below (this flow is used by the sync client only).

    def __init__(self, credentials: Credentials | None, registry: str = "",
                 loopback: bool = False, scheme: str = "https") -> None:
        self.credentials = credentials
        self.registry = registry
        self.origin = _origin(httpx.URL(f"{scheme}://{registry}")) if registry else ("", "", None)
        self.loopback = loopback
        # scope -> (token, whether credentials were sent to get it: then it is a secret)
        self._tokens: dict[str, tuple[str, bool]] = {}
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

    def withheld(self, url: httpx.URL, secret: bool = True) -> str:
        """Why credentials — or a token — may not go to ``url`` ('' when they may): the one
        check for Basic and bearer alike. Nothing goes off the registry's origin (scheme,
        host and port, as a ``Link`` is followed); a ``secret`` (credentials, or a token
        obtained with them) goes over TLS only, unless the registry is loopback."""
        if _origin(url) != self.origin:
            return (f"{_shown_origin(_origin(url))} is not the registry's origin"
                    f" {_shown_origin(self.origin)} (scheme, host and port)")
        if secret and url.scheme != "https" and not self.loopback:
            return (f"{url.copy_with(query=None)} is plain HTTP to a registry that is not a"
                    " loopback address")
        return ""

    def _apply(self, request: httpx.Request) -> None:
        with self._lock:
            token = self._tokens.get(self._scope_key(request))
            basic = self._basic
        if token and not self.withheld(request.url, secret=token[1]):
            request.headers["Authorization"] = f"Bearer {token[0]}"
        elif basic and self.credentials and not self.withheld(request.url):
            request.headers["Authorization"] = self.credentials.basic_header()

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        self._apply(request)
        response = yield request
        # A 401 from another host (a Link, a Location, a redirect) is not ours to answer:
        # its challenge would name a token service and scope of that host's choosing.
        if response.status_code != 401 or self.withheld(response.request.url, secret=False):
            return
        scheme, params = parse_challenge(response.headers.get("www-authenticate", ""))
        if scheme == "basic":
            if self.credentials is None:
                return
            why = self.withheld(request.url)
            if why:
                raise RegistryError(
                    f"{self.registry} asks for your password, but {why}; aiplat sends"
                    " credentials only over TLS (or to a loopback address: 127.0.0.1, ::1,"
                    " localhost) (fix: use HTTPS (drop --plain-http), or name a registry"
                    " on this machine by its address)", 401)
            with self._lock:
                self._basic = True
            request.headers["Authorization"] = self.credentials.basic_header()
            yield request
            return
        if scheme != "bearer" or "realm" not in params:
            return
        token, secret = yield from self._token(request, params)
        with self._lock:
            self._tokens[self._scope_key(request)] = (token, secret)
        if not self.withheld(request.url, secret=secret):
            request.headers["Authorization"] = f"Bearer {token}"
        yield request

    def _token(self, request: httpx.Request, params: dict[str, str],
               ) -> Generator[httpx.Request, httpx.Response, tuple[str, bool]]:
        """Ask the challenge's token service for a token: with the credentials when both it
        and the request they are for pass :meth:`withheld`, else anonymously. Returns the
        token and whether credentials were sent for it."""
        query = {k: v for k, v in params.items() if k in ("service", "scope")}
        try:
            token_request = httpx.Request("GET", params["realm"], params=query,
                                          extensions={limits.BOUND: limits.TOKEN})
            if token_request.url.scheme not in ("http", "https") or not token_request.url.host:
                raise ValueError(token_request.url)
        except (httpx.InvalidURL, ValueError, TypeError):
            raise RegistryError(f"{self.registry} named a token service that is not an HTTP(S)"
                                f" URL ({params['realm'][:100]!r}); check the registry's auth"
                                " configuration", 401) from None
        why = ""
        if self.credentials is not None:
            why = self.withheld(token_request.url) or self.withheld(request.url)
            if not why:
                token_request.headers["Authorization"] = self.credentials.basic_header()
        service = token_request.url.copy_with(query=None)
        token_response = yield token_request
        token_response.read()  # bounded (MAX_TOKEN_BYTES) by the client's answer hook
        if token_response.status_code != 200:
            hint = (f"aiplat did not send your credentials there ({why}): they go only to the"
                    " registry's own scheme, host and port, over TLS unless it is loopback"
                    " (fix: use a registry whose token service is on that origin, or pull"
                    " anonymously)"
                    if why else "check the credentials in your auth file (podman login /"
                    " docker login)")
            raise RegistryError(
                f"the token service {service} answered {token_response.status_code}; {hint}",
                token_response.status_code)
        return _token_of(token_response, str(service)), "Authorization" in token_request.headers


_TOKEN_RE = re.compile(r"[\x21-\x7e]{1,16384}")  # visible ASCII, fits an HTTP header


def _token_of(response: httpx.Response, service: str) -> str:
    """The token of a token service's answer, or a RegistryError naming the service."""
    try:
        body = limits.peer_json(response.content)
    except ValueError:
        body = None
    token = (body.get("token") or body.get("access_token")) if isinstance(body, dict) else None
    if not isinstance(token, str) or not _TOKEN_RE.fullmatch(token):
        raise RegistryError(f"the token service {service} sent no usable token (a JSON object"
                            " with a 'token' of visible ASCII characters, at most 16 KiB);"
                            " check the registry's auth configuration")
    return token
