"""The Prometheus client against canned API answers (an injected fetch, no patching)."""

from __future__ import annotations

import json
import urllib.parse

import pytest

from aiplat.netdiag.correlate import series_by
from aiplat.netdiag.prom import Prom, PromError, instant_url, parse

MATRIX = {"status": "success", "data": {"resultType": "matrix", "result": [
    {"metric": {"node": "node-1", "device": "storage"},
     "values": [[10, "1.5"], [11, "NaN"], [12, "2"]]},
    {"metric": {"node": "node-1", "device": "eth9"}, "values": [[10, "3"]]},
]}}


def test_parse_matrix_drops_nan() -> None:
    s = parse(json.dumps(MATRIX).encode(), "u")
    assert s[0].points == [(10.0, 1.5), (12.0, 2.0)] and s[0].last() == 2.0


def test_parse_vector_and_errors() -> None:
    vec = {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"a": "b"}, "value": [5, "1"]}]}}
    assert parse(json.dumps(vec).encode(), "u")[0].points == [(5.0, 1.0)]
    bad = {"status": "error", "errorType": "bad_data", "error": "parse error at char 3"}
    with pytest.raises(PromError, match="bad_data: parse error"):
        parse(json.dumps(bad).encode(), "u")
    with pytest.raises(PromError, match="not a Prometheus API answer"):
        parse(b"<html>", "u")


def test_client_builds_requests_as_data() -> None:
    seen: list[str] = []

    def fetch(url: str) -> bytes:
        seen.append(url)
        return json.dumps(MATRIX).encode()

    p = Prom("http://prom:9090/", fetch)
    series = p.range('rate(x{lab="a"}[3s])', 100, 160, 1)
    q = urllib.parse.urlparse(seen[0])
    assert q.path == "/api/v1/query_range"
    assert urllib.parse.parse_qs(q.query) == {"query": ['rate(x{lab="a"}[3s])'],
                                              "start": ["100.000"], "end": ["160.000"],
                                              "step": ["1"]}
    by = series_by([(s.labels, s.points) for s in series], "node", "device",
                   segment_of={"storage": "storage"})
    assert list(by) == ["node-1/storage"]  # devices outside the lab are ignored
    assert "time=5.000" in instant_url("http://p", "up", 5)


def test_unreachable_prometheus_says_how_to_fix() -> None:
    p = Prom("http://127.0.0.1:9")
    with pytest.raises(PromError, match=r"cannot reach Prometheus .*--prometheus"):
        p.instant("up")
