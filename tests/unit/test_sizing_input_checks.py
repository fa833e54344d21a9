"""Every sizing module checks its inputs with the one rule of each kind (issue #39): a value
that is not positive, a precision nobody knows, get the same error type (``InputError``: the
CLI exits 2) and the same words whichever formula was asked."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from aiplat.errors import InputError
from aiplat.sizing import goodput, inference, layout, memory, power, queueing, rag, roles, training
from aiplat.sizing.result import precision_bytes

NOT_POSITIVE: list[tuple[str, Callable[[float], object]]] = [
    ("layers", lambda v: inference.kv_cache_per_token(v, 4096, 32, 8)),  # type: ignore[arg-type]
    ("params", lambda v: inference.weights_memory(v, "bf16")),
    ("params", memory.model_state_memory),
    ("tp", lambda v: layout.Parallelism(tp=v)),  # type: ignore[arg-type]
    ("node_power_w", lambda v: power.rack_layout(nodes=4, node_power_w=v, node_height_u=8,
                                                 rack_power_limit_w=130_000)),
    ("checkpoint_seconds", lambda v: goodput.young_daly_interval(v, 3600.0)),
    ("arrival_rate", lambda v: queueing.md1_wait_quantile(v, 1.0, 0.5)),
    ("scrape_interval_s", lambda v: roles.prometheus_estimate(series=1000, scrape_interval_s=v)),
    ("vectors", lambda v: rag.vector_index_memory(v, 1024)),  # type: ignore[arg-type]
    ("tokens", lambda v: training.dataset_storage(tokens=v, bytes_per_token=4.0)),
]


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
@pytest.mark.parametrize(("name", "call"), NOT_POSITIVE, ids=[n for n, _ in NOT_POSITIVE])
def test_a_value_that_is_not_positive_is_one_error(name: str, call: Callable[[float], object],
                                                   bad: float) -> None:
    with pytest.raises(InputError, match=f"^{name} must be a positive finite number, got "):
        call(bad)


@pytest.mark.parametrize("name", ["bf16", "BF16", "fp8", "nf4", "fp4"])
def test_a_known_precision_in_any_case(name: str) -> None:
    assert precision_bytes(name) == precision_bytes(name.lower()) > 0


def test_an_unknown_precision_names_the_known_ones() -> None:
    with pytest.raises(InputError, match=r"unknown precision 'fp12' \(fix: use one of .*bf16"):
        precision_bytes("fp12")
    with pytest.raises(InputError, match="unknown precision"):
        inference.weights_memory(1e9, "fp12")
    with pytest.raises(InputError, match="unknown precision"):
        memory.stored_bytes("fp12")
