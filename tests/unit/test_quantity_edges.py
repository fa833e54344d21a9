"""Quantities at the edges of the grammar: the 'E' and 'Ei' suffixes are not exponents, and
an exponent past any 64-bit amount is a clear error, fast, in both readers (kube's exact
Decimals and Kueue's integer units) and through the commands that read manifests."""

from __future__ import annotations

import time
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from test_kube_lint_rbac_round2 import aiplat

from aiplat.errors import InputError
from aiplat.kube.quantity import QuantityError, parse_quantity
from aiplat.kueue.snapshot import amount


@pytest.mark.parametrize(("text", "value"), [
    ("1Ei", Decimal(2) ** 60), ("5E", Decimal("5e18")), ("3E2", Decimal(300)),
    ("2e3", Decimal(2000)), ("1.5Gi", Decimal(3 * 2**29)),
])
def test_suffixes_and_exponents(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value
    assert amount(text, "memory", "x") == int(value)


@pytest.mark.parametrize("text", ["1e99999999", "1e-99999999"])
def test_an_exponent_past_any_amount_is_refused_fast(text: str) -> None:
    start = time.process_time()
    if not text.startswith("1e-"):  # a tiny one is a tiny Decimal, rounded up where read
        with pytest.raises(QuantityError, match="out of any quantity's range"):
            parse_quantity(text)
    with pytest.raises(InputError, match="out of range"):
        amount(text, "memory", "spec.x")
    assert time.process_time() - start < 5  # 10**99999999 as an integer takes minutes


def _pod(cpu: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "a"},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


@pytest.mark.parametrize("cpu", ["1Ei", "5E", "1e99999999"])
def test_lint_and_validate_read_such_a_pod_without_a_traceback(
        cpu: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "pod.yaml"
    f.write_text(yaml.safe_dump(_pod(cpu)))
    for cmd in (["kube", "lint", str(f)], ["kube", "validate", str(f)]):
        code = aiplat(cmd)
        out, err = capsys.readouterr()
        assert code in (0, 1, 2) and "Traceback" not in out + err, (cmd, out, err)
        assert "--k8s-version" not in err, err  # not blamed on the version option
