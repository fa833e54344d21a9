"""Amounts with units in the spec (issue #45 item 5): ``memoryGiB: 2Ti``, ``powerBudgetKW:
160kW``, ``startupSeconds: 7m``, converted to the unit the field's name carries; decimal
and binary prefixes kept apart (``2TB`` of memory is not 2,048 GiB: refused with both
readings); anything else refused in the spec's error form (file, line, field, fix)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiplat.cli.main import main
from aiplat.errors import InputError
from aiplat.spec import amounts
from aiplat.spec.load import example_text, parse_platform


@pytest.mark.parametrize(("text", "field", "integer", "want"), [
    ("2Ti", "memoryGiB", True, 2048), ("2TiB", "memoryGiB", True, 2048),
    ("1536Gi", "memoryGiB", True, 1536), ("2048", "memoryGiB", True, 2048),
    ("2e3", "memoryGiB", True, 2000), ("80GB", "memoryGB", False, 80.0),
    ("1.5TB", "capacityTB", False, 1.5), ("500Gi", "capacityTB", False, 0.536870912),
    ("1.2MW", "powerBudgetKW", False, 1200.0), ("160kW", "powerKW", False, 160.0),
    ("800W", "tdpW", False, 800.0), ("1kW", "switchPowerW", False, 1000.0),
    ("400Gbps", "rateGbps", False, 400.0), ("400G", "rateGbps", False, 400.0),
    ("50GB/s", "rateGbps", False, 400.0), ("40GBps", "readGBps", False, 40.0),
    ("40G", "readGBps", False, 40.0), ("320Gb/s", "readGBps", False, 40.0),
    ("3.35TB/s", "memoryBandwidthTBps", False, 3.35),
    ("10m", "startupSeconds", True, 600), ("1h30m", "startupSeconds", True, 5400),
    ("14d", "replacementLeadTimeDays", False, 14.0), ("36h", "targetDays", False, 1.5),
    ("250ms", "timeToFirstTokenMs", False, 250.0), ("2s", "timeToFirstTokenMs", False, 2000.0),
])
def test_an_amount_is_converted_to_the_fields_unit(text: str, field: str, integer: bool,
                                                   want: float) -> None:
    got = amounts.convert(text, field, integer=integer)
    assert got == pytest.approx(want) and type(got) is (int if integer else float)


@pytest.mark.parametrize(("text", "field", "says", "fix"), [
    ("2TB", "memoryGiB", "'2TB' is 1,862.65 GiB, not a whole number of GiB",
     ", or 2Ti (2048 GiB) if binary units were meant"),
    ("2 apples", "memoryGiB", "not an amount of bytes", "e.g. 2048, 2Ti"),
    ("5kg", "powerKW", "not an amount of power", "write kW as a number"),
    ("160kW", "memoryGiB", "not an amount of bytes", ""),
    ("2Ti", "powerKW", "not an amount of power", ""),
    ("10 minutes", "startupSeconds", "not an amount of time", "10m"),
    ("1.5s", "startupSeconds", "is 1.50 seconds, not a whole number", ""),
    ("12mb", "memoryGiB", "not an amount of bytes", ""),  # millibits are no memory
])
def test_what_is_not_an_amount_of_the_fields_kind_is_refused(text: str, field: str,
                                                             says: str, fix: str) -> None:
    integer = field in ("memoryGiB", "startupSeconds")
    with pytest.raises(amounts.AmountError) as e:
        amounts.convert(text, field, integer=integer)
    assert says in str(e.value) and fix in e.value.fix


@given(st.integers(1, 65536), st.sampled_from([("Gi", 1), ("Ti", 1024), ("Mi", 1 / 1024)]))
def test_binary_prefixes_are_exact(n: int, prefix: tuple[str, float]) -> None:
    want = n * prefix[1]
    if want != int(want):
        with pytest.raises(amounts.AmountError):
            amounts.convert(f"{n}{prefix[0]}", "memoryGiB", integer=True)
    else:
        assert amounts.convert(f"{n}{prefix[0]}", "memoryGiB", integer=True) == int(want)


def test_the_example_written_with_units_is_the_same_platform() -> None:
    text = example_text()
    units = (text.replace("memoryGiB: 2048", "memoryGiB: 2Ti")
             .replace("powerBudgetKW: 160", "powerBudgetKW: 160kW")
             .replace("startupSeconds: 420", "startupSeconds: 7m")
             .replace("capacityTB: 30}", "capacityTB: 30TB}")
             .replace("readGBps: 40", "readGBps: 320Gbps"))
    assert units.count("2Ti") == 1 and "7m" in units and "320Gbps" in units
    assert parse_platform(units, "units.yaml") == parse_platform(text, "example.yaml")


def test_a_spec_with_2tb_of_memory_names_the_line_and_both_readings(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = example_text().replace("memoryGiB: 2048", "memoryGiB: 2TB")
    line = text.splitlines().index(next(ln for ln in text.splitlines() if "2TB" in ln)) + 1
    spec = tmp_path / "platform.yaml"
    spec.write_text(text)
    assert main(["spec", "validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert f"platform.yaml:{line}" in err and "memoryGiB" in err, err
    assert "1,862.65 GiB" in err and "2Ti (2048 GiB)" in err and "Traceback" not in err
    with pytest.raises(InputError):
        parse_platform(text, "platform.yaml")


def test_the_json_schema_takes_an_amount_where_the_loader_does(
        capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import jsonschema
    import yaml

    assert main(["spec", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    units = example_text().replace("memoryGiB: 2048", "memoryGiB: 2Ti").replace(
        "powerBudgetKW: 160", "powerBudgetKW: 160kW")
    jsonschema.validate(yaml.safe_load(units), schema)
    cut = example_text().replace("memoryGiB: 2048", "memoryGiB: true")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(yaml.safe_load(cut), schema)
