"""Disaggregated prefill: prompts on their own replicas, decode on others, the KV cache between.

Design. Colocated serving (``inference.replicas_for_slo``) pays for prefill twice: prompts
queue behind each other for the first token, and every prefill stalls the decode steps of
the batch sharing the GPUs. DistServe (Zhong et al., OSDI 2024, "DistServe: Disaggregating
Prefill and Decoding for Goodput-optimized Large Language Model Serving", sections 2-3) and
Splitwise (Patel et al., ISCA 2024) split the two phases onto separate GPU groups, so each
is sized for its own target:

- Prefill replicas: an M/D/1 queue per replica (Poisson arrivals split evenly, deterministic
  prefill time t_p): TTFT = t_p·(1 + ρ/(2(1 − ρ))) + KV transfer, ρ = λ·t_p / r_p. The TTFT
  target bounds ρ, hence r_p ≥ λ·t_p / ρ_max.
- KV transfer: the prompt's cache, layers · values per token · bytes · prompt tokens, over
  the link between the groups (``kv_transfer_bps``), once per request.
- Decode replicas: no prefill interference, so a batch b decodes at its full rate; Little's
  law over the decode time alone, r_d · b ≥ λ · output / rate(b); the batch needing fewest
  replicas wins.

Both groups use the decode layout (``Replica``), DistServe's simplest placement, unless a
``prefill`` replica of its own is given: DistServe (section 4) picks the parallelism of each
phase apart, prefill usually wider (its compute splits over TP, shortening TTFT), decode
narrower (fewer all-reduces per token). The prefill side then takes that replica's time and
GPUs; the KV cache still crosses the link once per request.
"""

from __future__ import annotations

import math

from aiplat.errors import InputError
from aiplat.sizing.inference import (
    LatencyTarget,
    Replica,
    Traffic,
    decode_throughput,
    prefill_time,
)
from aiplat.sizing.result import Result, precision_bytes


class Disaggregated(Result):
    feasible: bool
    reasons: list[str]
    prefill_seconds: float
    kv_transfer_seconds: float
    ttft_seconds: float
    prefill_replicas: int
    prefill_utilization: float
    decode_replicas: int
    batch_per_replica: int
    decode_tokens_per_second_per_user: float
    gpus: int


def _decode_side(replica: Replica, traffic: Traffic, target: LatencyTarget,
                 max_batch: int) -> tuple[int, int, float]:
    """(decode replicas, batch, per-user rate) with the fewest replicas; (0, 0, 0) if even
    batch 1 is too slow."""
    context = traffic.prompt_tokens + traffic.output_tokens / 2
    best: tuple[int, int, float] | None = None
    for b in range(1, max_batch + 1):
        rate = decode_throughput(replica, batch=b, context_tokens=context
                                 ).tokens_per_second_per_sequence
        if rate < target.rate:
            break  # per-user rate only falls as the batch grows
        replicas = max(1, math.ceil(traffic.qps * traffic.output_tokens / rate / b - 1e-9))
        if best is None or replicas < best[0]:
            best = (replicas, b, rate)
    return best or (0, 0, 0.0)


def disaggregated_replicas(
    replica: Replica, traffic: Traffic, target: LatencyTarget, *, max_batch_per_replica: int,
    kv_transfer_bps: float, prefill: Replica | None = None,
) -> Disaggregated:
    """Prefill replicas (``prefill``'s layout, else ``replica``'s) and decode replicas of
    ``replica``'s layout that meet the TTFT and per-user decode targets at ``traffic.qps``
    (formulas in the module docstring)."""
    if not kv_transfer_bps > 0:
        raise InputError(f"kv_transfer_bps must be > 0, got {kv_transfer_bps!r}")
    model = replica.model
    pre = prefill or replica
    t_p = prefill_time(pre, prompt_tokens=traffic.prompt_tokens).ttft_seconds
    kv_bytes = (model.layers * model.kv_values_per_token() * precision_bytes(
        replica.kv_precision) * traffic.prompt_tokens)
    transfer = kv_bytes / kv_transfer_bps
    reasons = []
    slack = target.ttft_seconds - transfer
    if slack <= t_p:
        reasons.append(
            f"prefill ({t_p:.3g} s) plus moving its KV cache ({transfer:.3g} s) is not under "
            f"the TTFT target {target.ttft_seconds:.3g} s (fix: a faster link between "
            "prefill and decode GPUs, more tensor parallelism, or colocated serving)")
    r_d, batch, rate = _decode_side(replica, traffic, target, max_batch_per_replica)
    if r_d == 0:
        reasons.append(f"even at batch 1 decode is slower than {target.rate:.3g} tokens/s "
                       "per user (fix: more tensor parallelism or lower-precision weights)")
    r_p, rho, ttft = 0, 0.0, t_p + transfer
    if not reasons:
        a = slack / t_p - 1
        rho_max = 2 * a / (1 + 2 * a)
        r_p = max(1, math.ceil(traffic.qps * t_p / rho_max - 1e-9))
        rho = traffic.qps * t_p / r_p
        ttft = t_p * (1 + rho / (2 * (1 - rho))) + transfer
    ok = not reasons
    return Disaggregated(
        feasible=ok, reasons=reasons, prefill_seconds=t_p, kv_transfer_seconds=transfer,
        ttft_seconds=ttft, prefill_replicas=r_p, prefill_utilization=rho,
        decode_replicas=r_d if ok else 0, batch_per_replica=batch if ok else 0,
        decode_tokens_per_second_per_user=rate if ok else 0.0,
        gpus=r_p * pre.gpus + r_d * replica.gpus if ok else 0,
        formula=("prefill: r_p = ⌈λ·t_p/ρ_max⌉, TTFT = t_p·(1 + ρ/(2(1−ρ))) + KV bytes / "
                 "link ≤ target (M/D/1); decode: r_d = ⌈λ·output/(rate(b)·b)⌉, fewest over "
                 "b with rate(b) ≥ target (DistServe, OSDI 2024)"),
        inputs={"qps": traffic.qps, "prompt_tokens": traffic.prompt_tokens,
                "output_tokens": traffic.output_tokens,
                "target_ttft_seconds": target.ttft_seconds,
                "target_decode_tokens_per_second": target.rate,
                "max_batch_per_replica": max_batch_per_replica,
                "kv_transfer_bps": kv_transfer_bps, "kv_bytes_per_prompt": kv_bytes,
                "tensor_parallel": replica.tensor_parallel,
                "pipeline_parallel": replica.pipeline_parallel,
                "prefill_tensor_parallel": pre.tensor_parallel,
                "prefill_pipeline_parallel": pre.pipeline_parallel},
        notes=[("same layout for both phases" if prefill is None else
                f"prefill at TP {pre.tensor_parallel}, decode at TP {replica.tensor_parallel}")
               + "; Poisson arrivals; mean, not tail, latencies"],
    )
