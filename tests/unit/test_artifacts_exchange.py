"""One request to a registry is bounded in time, whatever comes before its answer (issue #38).

The red team's third round (R5, R6): a registry that answers ``100 Continue`` (or ``103
Early Hints`` with 60 KB of headers) every 2 s and never a final answer held ``model tags``
for ever (each interim answer is complete, so neither httpcore's header cap nor the read
timeout fired, and the answer's own deadline starts with its body); a chain of redirects
whose bodies each trickled just inside the answer deadline held one GET about 20 minutes
(httpx follows 20). Each test here failed before the fix (the servers give up after a few
seconds, so the old code ended in another error, too late, instead of hanging the suite),
except those marked as guards: they hold what the bound must not take away (sending a
large body is not waiting; a blob's body streams as long as it takes).

The servers are raw sockets on 127.0.0.1 (:class:`artifacts_fakes.LoopbackServer`): the
interim answers never reach an ``httpx.MockTransport``.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx
import pytest
from artifacts_fakes import LoopbackServer, Respond, answer

from aiplat.artifacts import limits
from aiplat.artifacts.client import RegistryClient, RetryPolicy
from aiplat.artifacts.errors import RegistryError
from aiplat.artifacts.reference import sha256_digest
from aiplat.cli.main import main

JSON = {"Content-Type": "application/json"}
GIVE_UP = 8.0
"""How long a hostile server here keeps going: past it, the code before the fix got
another error (or an answer) instead of hanging the suite."""
ENDED_BY_THE_BUDGET = GIVE_UP
"""An exchange the 1 s budget ended ended before the server gave up: the bound says which
of the two ended it, with room for a busy host (4 s bounds failed at load 6)."""


@pytest.fixture(autouse=True)
def budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """One request may wait 1 s here, not MAX_EXCHANGE_SECONDS' 120 s."""
    monkeypatch.setattr(limits, "MAX_EXCHANGE_SECONDS", 1.0)


def loopback(srv: LoopbackServer, *, attempts: int = 1, **kw: object) -> RegistryClient:
    return RegistryClient(srv.host, retry=RetryPolicy(attempts=attempts, backoff=0),
                          **kw)  # type: ignore[arg-type]


def interim_flood(interim: bytes, every: float = 0.1) -> Respond:
    """A server that sends ``interim`` every ``every`` s and never a final answer."""
    def respond(_m: str, _p: str, _h: dict[str, str], conn: socket.socket) -> None:
        end = time.monotonic() + GIVE_UP
        while time.monotonic() < end:
            conn.sendall(interim)
            time.sleep(every)
    return respond


CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
EARLY_HINTS = (b"HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\nX-A: "
               + b"a" * 60000 + b"\r\n\r\n")


@pytest.mark.parametrize("interim", [CONTINUE, EARLY_HINTS], ids=["100", "103-60KB"])
def test_an_endless_run_of_interim_answers_is_given_up_on(interim: bytes) -> None:
    with LoopbackServer(interim_flood(interim)) as srv:
        t0 = time.monotonic()
        with pytest.raises(RegistryError) as info:
            loopback(srv).tags("m")
        took = time.monotonic() - t0
    msg = str(info.value)
    assert "MAX_EXCHANGE_SECONDS" in msg and "interim" in msg and "(fix: " in msg, msg
    assert took < ENDED_BY_THE_BUDGET, took


def test_a_blobs_answer_is_bounded_until_its_headers() -> None:
    with LoopbackServer(interim_flood(CONTINUE)) as srv:
        t0 = time.monotonic()
        with pytest.raises(RegistryError, match="MAX_EXCHANGE_SECONDS"), \
                loopback(srv).stream_blob("m", sha256_digest(b"x")):
            pass
        assert time.monotonic() - t0 < ENDED_BY_THE_BUDGET


def _trickling_redirects(hop_seconds: float) -> Respond:
    """Each hop a 307 to the next, its 100-byte body sent over ``hop_seconds``."""
    def respond(_m: str, path: str, _h: dict[str, str], conn: socket.socket) -> None:
        n = int(path.rsplit("/hop", 1)[1]) if "/hop" in path else 0
        conn.sendall(b"HTTP/1.1 307 Temporary Redirect\r\nConnection: close\r\n"
                     b"Location: /v2/m/tags/list/hop%d\r\nContent-Length: 100\r\n\r\n"
                     % (n + 1))
        for _ in range(100):
            time.sleep(hop_seconds / 100)
            conn.sendall(b" ")
    return respond


def test_a_redirect_chain_that_trickles_is_bounded_as_one_exchange() -> None:
    """R6: each hop's body arrives well inside the answer deadline; the chain does not."""
    with LoopbackServer(_trickling_redirects(0.4)) as srv:
        t0 = time.monotonic()
        with pytest.raises(RegistryError) as info:
            loopback(srv).tags("m")
        took = time.monotonic() - t0
        hops = len(srv.requests)
    assert "MAX_EXCHANGE_SECONDS" in str(info.value), info.value
    assert took < ENDED_BY_THE_BUDGET and hops <= 4, (took, hops)


def _redirects(n: int) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        hop = int(request.url.params.get("hop", "0"))
        if hop < n:
            return httpx.Response(307, headers={"Location": f"/v2/?hop={hop + 1}"})
        return httpx.Response(200, json={})
    return httpx.MockTransport(handler)


def test_a_blob_redirected_to_storage_a_few_times_is_followed() -> None:
    c = RegistryClient("reg.test:5000", transport=_redirects(limits.MAX_REDIRECTS),
                       retry=RetryPolicy(attempts=1, backoff=0))
    c.ping()


def test_more_redirects_than_max_redirects_are_refused() -> None:
    c = RegistryClient("reg.test:5000", transport=_redirects(limits.MAX_REDIRECTS + 1),
                       retry=RetryPolicy(attempts=1, backoff=0))
    with pytest.raises(RegistryError) as info:
        c.ping()
    msg = str(info.value)
    assert "TooManyRedirects" in msg and "MAX_REDIRECTS" in msg, msg
    assert limits.MAX_REDIRECTS == 5


def test_retries_share_one_exchange_budget() -> None:
    """Interim answers for 0.6 s and then a 503, four times: retried, but all four attempts
    together wait no more than the budget of one request."""
    def respond(_m: str, _p: str, _h: dict[str, str], conn: socket.socket) -> None:
        for _ in range(6):
            conn.sendall(CONTINUE)
            time.sleep(0.1)
        answer(conn, "503 Service Unavailable", JSON, b"{}")

    with LoopbackServer(respond) as srv:
        t0 = time.monotonic()
        with pytest.raises(RegistryError, match="MAX_EXCHANGE_SECONDS"):
            loopback(srv, attempts=4).ping()
        assert time.monotonic() - t0 < 2.0
        assert len(srv.requests) == 2


def test_a_listing_page_waits_no_longer_than_the_listing_has_left(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The listing's MAX_LISTING_SECONDS was checked between pages only: a page could take
    an exchange's whole budget past it."""
    def respond(_m: str, path: str, _h: dict[str, str], conn: socket.socket) -> None:
        if "last=" not in path:
            answer(conn, "200 OK", {**JSON, "Link": '</v2/m/tags/list?n=1&last=a>; rel="next"'},
                   b'{"tags": ["a"]}')
        else:
            interim_flood(CONTINUE)(_m, path, _h, conn)

    times = iter([0.0])  # the listing starts at 0; every later reading says 299.5 s passed

    with LoopbackServer(respond) as srv:
        monkeypatch.setattr(limits, "MAX_EXCHANGE_SECONDS", 60.0)
        c = loopback(srv, clock=lambda: next(times, 299.5))
        t0 = time.monotonic()
        with pytest.raises(RegistryError, match="MAX_LISTING_SECONDS"):
            c.tags("m")
        assert time.monotonic() - t0 < ENDED_BY_THE_BUDGET


def test_a_tls_handshake_that_stalls_uses_up_the_same_budget() -> None:
    """The server takes the connection and says nothing: the handshake had the connect
    timeout (10 s) of its own."""
    def respond(_m: str, _p: str, _h: dict[str, str], conn: socket.socket) -> None:
        pass  # never reached: the ClientHello is no HTTP request; the server waits on it

    with LoopbackServer(respond) as srv:
        t0 = time.monotonic()
        with pytest.raises(RegistryError, match="MAX_EXCHANGE_SECONDS"):
            loopback(srv, plain_http=False).ping()
        assert time.monotonic() - t0 < ENDED_BY_THE_BUDGET


def test_an_interim_flood_through_a_proxy_from_the_environment_is_bounded_too(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx makes its own transports for HTTP_PROXY; their connections are counted too."""
    with LoopbackServer(interim_flood(CONTINUE)) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://{proxy.host}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        c = RegistryClient("reg.test:5000", plain_http=True,
                           retry=RetryPolicy(attempts=1, backoff=0))
        t0 = time.monotonic()
        with pytest.raises(RegistryError, match="MAX_EXCHANGE_SECONDS"):
            c.ping()
        assert time.monotonic() - t0 < ENDED_BY_THE_BUDGET
        assert proxy.requests[0][1] == "http://reg.test:5000/v2/"  # it went by the proxy


# ---------------------------------------------------------------------------- guards


def test_sending_a_large_body_is_not_waiting_for_the_registry(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Guard: the registry reads a 32 MiB upload slowly (0.6 s) and then answers at once;
    the budget (0.3 s) counts waiting for its answer, not sending aiplat's own bytes."""
    monkeypatch.setattr(limits, "MAX_EXCHANGE_SECONDS", 0.3)

    def respond(_m: str, _p: str, _h: dict[str, str], conn: socket.socket) -> None:
        time.sleep(0.6)
        conn.settimeout(0.2)
        try:
            while conn.recv(1 << 20):
                pass
        except TimeoutError:
            pass
        answer(conn, "201 Created", {}, b"")

    body = b"x" * (32 * limits.MiB)
    with LoopbackServer(respond) as srv:
        r = loopback(srv).request("PUT", "/v2/m/blobs/uploads/x", ok=(201,), content=body)
        assert r.status_code == 201


def test_a_blobs_body_streams_as_long_as_it_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guard: the budget ends at a blob's headers; its body (bounded by its size, and each
    read by the timeout) may take longer."""
    monkeypatch.setattr(limits, "MAX_EXCHANGE_SECONDS", 0.3)
    blob = b"w" * 40

    def respond(_m: str, _p: str, _h: dict[str, str], conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n")
        for i in range(0, 40, 2):
            time.sleep(0.03)  # 0.6 s in all
            conn.sendall(blob[i:i + 2])

    with LoopbackServer(respond) as srv, \
            loopback(srv).stream_blob("m", sha256_digest(blob)) as r:
        assert b"".join(r.iter_raw()) == blob


# ---------------------------------------------------------------------------- the CLI


def test_model_tags_against_an_interim_flood_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The red team's command (with the budget made 1 s): one line, exit 1."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("REGISTRY_AUTH_FILE", "DOCKER_CONFIG", "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(var, raising=False)
    with LoopbackServer(interim_flood(EARLY_HINTS, every=0.2)) as srv:
        t0 = time.monotonic()
        code = main(["model", "tags", f"{srv.host}/m"])
        took = time.monotonic() - t0
    err = capsys.readouterr().err
    assert code == 1, err
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("error: "), err
    assert "MAX_EXCHANGE_SECONDS" in err and took < ENDED_BY_THE_BUDGET, (err, took)
