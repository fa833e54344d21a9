"""A small Prometheus HTTP API client (``/api/v1/query`` and ``/api/v1/query_range``).

Requests are built as plain URLs by pure functions; the one I/O call goes through an
injectable ``fetch`` (URL -> response bytes), so unit tests pass canned API answers instead
of patching. Transport failures and API errors (``status: error``) become
:class:`PromError` naming the URL and, where Prometheus said why, its ``errorType`` and
``error``.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from aiplat.netdiag.model import LabError

Fetch = Callable[[str], bytes]


class PromError(LabError):
    """Prometheus could not be reached or rejected a query."""


@dataclass(frozen=True)
class PromSeries:
    labels: dict[str, str]
    points: list[tuple[float, float]]

    def last(self) -> float | None:
        return self.points[-1][1] if self.points else None


def range_url(base: str, query: str, start: float, end: float, step: float) -> str:
    """The ``query_range`` URL (times in Unix seconds, ``step`` in seconds).

    >>> range_url("http://p:9090", "up", 10, 20, 1)
    'http://p:9090/api/v1/query_range?query=up&start=10.000&end=20.000&step=1'
    """
    qs = urllib.parse.urlencode({"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}",
                                 "step": f"{step:g}"})
    return f"{base.rstrip('/')}/api/v1/query_range?{qs}"


def instant_url(base: str, query: str, at: float | None = None) -> str:
    params = {"query": query} | ({"time": f"{at:.3f}"} if at is not None else {})
    return f"{base.rstrip('/')}/api/v1/query?{urllib.parse.urlencode(params)}"


def parse(body: bytes, url: str) -> list[PromSeries]:
    """Parse an API answer (matrix or vector) into series; NaN samples are dropped."""
    try:
        data = json.loads(body)
    except ValueError as e:
        raise PromError(f"{url}: not a Prometheus API answer ({e})") from e
    if data.get("status") != "success":
        raise PromError(f"{url}: {data.get('errorType', 'error')}: {data.get('error', data)}")
    out = []
    for r in data["data"]["result"]:
        raw = r.get("values") or ([r["value"]] if "value" in r else [])
        points = [(float(t), float(v)) for t, v in raw if not math.isnan(float(v))]
        out.append(PromSeries(labels=dict(r.get("metric", {})), points=points))
    return out


def _urlopen(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            body: bytes = r.read()
            return body
    except urllib.error.HTTPError as e:
        return e.read()  # the API explains 400/422/503 in its JSON body
    except (urllib.error.URLError, OSError) as e:
        raise PromError(f"cannot reach Prometheus ({url.split('/api/', maxsplit=1)[0]}): {e} "
                        "(fix: check --prometheus, or that the lab is up)") from e


class Prom:
    def __init__(self, base: str, fetch: Fetch = _urlopen) -> None:
        self.base = base
        self.fetch = fetch

    def range(self, query: str, start: float, end: float, step: float = 1.0) -> list[PromSeries]:
        url = range_url(self.base, query, start, end, step)
        return parse(self.fetch(url), url)

    def instant(self, query: str, at: float | None = None) -> list[PromSeries]:
        url = instant_url(self.base, query, at)
        return parse(self.fetch(url), url)
