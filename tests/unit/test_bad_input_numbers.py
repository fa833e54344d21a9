"""Numbers and options at the CLI boundary: finite, ranged, refused with the option's name
(exit 2); work bounded by the input gets a ceiling; no work done is never a pass (issue 22)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiplat.cli.main import main
from aiplat.errors import InputError
from aiplat.node.burnin import Counters, Sample, evaluate_burnin, parse_duration


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as e:
        code = int(e.code or 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return code, err


@pytest.mark.parametrize("argv, words", [
    ("sharing plan --gpu H100-SXM-80GB --demand 1g.10gb=" + "1" + "0" * 30, "COUNT must be"),
    ("sharing plan --gpu H100-SXM-80GB --demand 1g.10gb=0", "COUNT must be"),
    ("sharing plan --gpu H100-SXM-80GB --demand 1g.10gb=1 --gpus -1", "--gpus"),
    ("sharing config mps --target dra --memory-gb inf", "--memory-gb"),
    ("sharing config mps --target dra --memory-gb nan", "not a finite number"),
    ("sharing config mps --target dra --memory-gb -1", "--memory-gb"),
    ("sharing config time-slicing --replicas -1", "--replicas"),
    ("node baseline record --scale nan --runs 1 -w x.json", "not a finite number"),
    ("node baseline record --scale 1e308 --runs 1 -w x.json", "--scale"),
    ("node baseline record --scale 0 --runs 1 -w x.json", "--scale"),
    ("node baseline record --scale -1 --runs 1 -w x.json", "--scale"),
    ("node baseline record --runs -1 -w x.json", "--runs"),
    ("node burnin --workers -1 --duration 1s", "--workers"),
    ("node burnin --workers 0 --duration 1s", "--workers"),
    ("node burnin --workers 1000 --duration 1s", "4 per CPU available"),
    ("node burnin --duration nan", "not a number"),
    ("node burnin --duration 1e308h", "at most a week"),
    ("node burnin --duration inf", "at most a week"),
    ("node burnin --duration -5s", "at least 1 s"),
    ("node burnin --temp-limit nan --duration 1s", "not a finite number"),
    ("node agent --interval nan --once --dry-run", "not a finite number"),
    ("sim run --months nan", "not a finite number"),
    ("sim run --months 1e308", "--months"),
    ("sim compare --months nan", "not a finite number"),
    ("sim run --mtbf nan", "not a finite number"),
    ("sim run --seed -1", "--seed"),
    ("plan --k8s-version junk", "not a Kubernetes version"),
    ("plan --k8s-version 99.0", "not covered"),
    ("kube validate . --k8s-version junk", "not a Kubernetes version"),
    ("diagnose --prometheus junk", "not an http(s) URL"),
    ("diagnose --prometheus ::::", "not an http(s) URL"),
    ("diagnose --prometheus http://host:port", "not an http(s) URL"),
    ("lab fault add loss --value nan --dry-run", "not a finite number"),
    ("lab fault add loss --value 1e308 --dry-run", "--value"),
])
def test_options_are_finite_and_ranged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str],
                                       argv: str, words: str) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = _run(argv.split(), capsys)
    assert code == 2, err
    assert words in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("count, words", [(1e308, "at most 100,000"), (-1, "above 0"),
                                          (True, "not a number"), (0, "above 0")])
def test_accounting_counts_are_sane(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    count: object, words: str) -> None:
    rec = tmp_path / "a.json"
    rec.write_text(json.dumps([{"tenant": "a", "start": "2024-01-01T00:00:00Z",
                                "end": "2024-01-02T00:00:00Z", "count": count}]))
    code, err = _run(["accounting", "report", str(rec)], capsys)
    assert code == 2 and words in err, err


def test_duration_bounds() -> None:
    assert parse_duration("90s") == 90 and parse_duration("2h") == 7200
    for bad in ("nan", "1e308h", "0", "-1m", "169h"):
        with pytest.raises(InputError, match="--duration"):
            parse_duration(bad)


def test_no_iterations_is_never_a_pass() -> None:
    c = Counters()
    samples = [Sample(t=0.0, iterations=0, max_temp_c=None),
               Sample(t=1.0, iterations=0, max_temp_c=None)]
    r = evaluate_burnin(samples, c, c, 85, 0.15, 2, False, 1.0)
    assert r.status == "fail" and "nothing was tested" in r.problems[0]
    r = evaluate_burnin([samples[0], Sample(t=1.0, iterations=5, max_temp_c=None)], c, c,
                        85, 0.15, 0, False, 1.0)
    assert r.status == "fail"


def test_baseline_scale_is_checked_in_the_layer_too() -> None:
    from aiplat.node.baseline import record

    for scale in (0.0, -1.0, float("nan"), 1e308):
        with pytest.raises(InputError, match="--scale"):
            record(runs=1, scale=scale)


def test_seed_and_months_in_range_still_work(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = _run(["sim", "run", "--months", "0.05", "--seed", "4294967295", "-o", "json"],
                   capsys)
    assert code in (0, 1)
