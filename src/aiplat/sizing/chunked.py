"""Chunked prefill: prompts split into chunks that ride along with the decode steps.

Design. Colocated serving without chunking (``inference.replicas_for_slo``) runs each prompt
whole between decode steps, so a prefill of λ/r prompts per second takes ρ = λ·t_p/r of the
replica and every decode step waits for it. Sarathi-Serve (Agrawal et al., OSDI 2024,
"Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve";
vLLM's ``--enable-chunked-prefill`` with ``--max-num-batched-tokens``) instead adds at most
C prompt tokens to each decode iteration. A decode step reading the weights is memory-bound,
so a chunk's FLOPs largely hide under that read:

- an iteration with a chunk takes T(C) = T₀ · max(M, F + F_C) / max(M, F), with M and F the
  decode step's memory and compute time (``decode_throughput``), F_C = C/s of the prompt's
  prefill compute (the chunk attends to the earlier chunks: on average half the prompt);
- a prompt needs n = ⌈s/C⌉ chunk iterations; the chunk slot is busy ρ = (λ/r)·n·T(C) of
  the time;
- decode per user: every iteration emits one token per sequence, (λ/r)·n of them per second
  with a chunk and (1 − ρ)/T₀ without: rate = (λ/r)·n + (1 − ρ)/T₀ (at C ≥ s this is the
  colocated rate(1 − λ·t_p/r) when T(C) = T₀ + t_p);
- TTFT: n·T(C)·(1 + ρ/(2(1 − ρ))), the M/D/1 wait of a prompt for the chunk slot;
- Little's law r·b ≥ λ·(TTFT + output / rate) as in the colocated sizing.

Each condition gets easier as r grows, so the fewest replicas per batch are found by
bisection, and the batch needing fewest replicas wins. Pipeline parallelism and speculative
decoding scale T₀ as they do in decode; the chunk's work is modelled on one stage's FLOPs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aiplat.errors import InputError
from aiplat.sizing.inference import (
    LatencyTarget,
    Replica,
    Traffic,
    decode_throughput,
    prefill_time,
)
from aiplat.sizing.result import Result


class ChunkedSizing(Result):
    feasible: bool
    reasons: list[str]
    chunk_tokens: int
    chunks_per_prompt: int
    step_seconds_decode_only: float
    step_seconds_with_chunk: float
    chunk_slot_utilization: float
    ttft_seconds: float
    decode_tokens_per_second_per_user: float
    batch_per_replica: int
    replicas: int
    gpus: int


@dataclass(frozen=True)
class _Point:
    replicas: int
    rho: float
    ttft: float
    rate: float


@dataclass(frozen=True)
class _Steps:
    """One batch's iteration times without (t0) and with (tc) a chunk, chunks per prompt."""

    t0: float
    tc: float
    n: int


def _steps(replica: Replica, traffic: Traffic, batch: int, chunk: int) -> _Steps:
    s = traffic.prompt_tokens
    d = decode_throughput(replica, batch=batch,
                          context_tokens=s + traffic.output_tokens / 2)
    # prefill_time divides by the TP factor; the decode step's M and F do not (yet).
    p = prefill_time(replica, prompt_tokens=s)
    tp_factor = float(d.inputs["tp_efficiency"] or 1.0)
    chunk_compute = p.compute_seconds * tp_factor * min(chunk, s) / s
    base = max(d.memory_seconds, d.compute_seconds)
    with_chunk = max(d.memory_seconds, d.compute_seconds + chunk_compute)
    t0 = d.time_per_output_token_seconds
    return _Steps(t0=t0, tc=t0 * with_chunk / base, n=math.ceil(s / chunk))


def _point(qps: float, steps: _Steps, r: int) -> _Point:
    rho = qps / r * steps.n * steps.tc
    if rho >= 1:
        return _Point(r, rho, math.inf, 0.0)
    ttft = steps.n * steps.tc * (1 + rho / (2 * (1 - rho)))
    rate = qps / r * steps.n + (1 - rho) / steps.t0
    return _Point(r, rho, ttft, rate)


def _fewest(traffic: Traffic, target: LatencyTarget, steps: _Steps, batch: int
            ) -> _Point | None:
    """Fewest replicas meeting the targets at ``batch`` sequences each, None if none can."""
    qps, out = traffic.qps, traffic.output_tokens
    lone_ttft = steps.n * steps.tc
    if lone_ttft >= target.ttft_seconds or 1 / steps.t0 <= target.rate:
        return None

    def ok(r: int) -> bool:
        p = _point(qps, steps, r)
        return (p.rho < 1 and p.ttft <= target.ttft_seconds and p.rate >= target.rate
                and r * batch >= qps * (p.ttft + out / p.rate))

    hi = max(1, math.ceil(qps * steps.n * steps.tc))
    while not ok(hi):
        hi *= 2
    lo = 1
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return _point(qps, steps, hi)


def chunked_replicas(
    replica: Replica, traffic: Traffic, target: LatencyTarget, *, max_batch_per_replica: int,
    chunk_tokens: int,
) -> ChunkedSizing:
    """Replicas of ``replica``'s layout that meet the TTFT and per-user decode targets at
    ``traffic.qps`` with prefill chunks of ``chunk_tokens`` (formulas in the module
    docstring)."""
    if chunk_tokens < 1 or max_batch_per_replica < 1:
        raise InputError("chunk_tokens and max_batch_per_replica must be >= 1")
    best: tuple[_Point, int, _Steps] | None = None
    for b in range(1, max_batch_per_replica + 1):
        steps = _steps(replica, traffic, b, chunk_tokens)
        if 1 / steps.t0 < target.rate:
            break  # per-user rate only falls as the batch grows
        p = _fewest(traffic, target, steps, b)
        if p is not None and (best is None or p.replicas < best[0].replicas):
            best = (p, b, steps)
    first = _steps(replica, traffic, 1, chunk_tokens)
    reasons = [] if best is not None else [
        f"with {chunk_tokens}-token chunks a lone prompt takes {first.n} iterations "
        f"({first.n * first.tc:.3g} s) and batch 1 decodes at {1 / first.t0:.3g} tokens/s; "
        f"the targets are {target.ttft_seconds:.3g} s and {target.rate:.3g} tokens/s (fix: "
        "a larger chunk (max-num-batched-tokens), more tensor parallelism, or faster GPUs)"]
    p, b, steps = best if best is not None else (_Point(0, 0.0, 0.0, 0.0), 0, first)
    return ChunkedSizing(
        feasible=best is not None, reasons=reasons, chunk_tokens=chunk_tokens,
        chunks_per_prompt=steps.n, step_seconds_decode_only=steps.t0,
        step_seconds_with_chunk=steps.tc, chunk_slot_utilization=p.rho,
        ttft_seconds=p.ttft, decode_tokens_per_second_per_user=p.rate,
        batch_per_replica=b, replicas=p.replicas, gpus=p.replicas * replica.gpus,
        formula=("T(C) = T0·max(M, F + F_C)/max(M, F); ρ = (λ/r)·⌈s/C⌉·T(C); rate = "
                 "(λ/r)·⌈s/C⌉ + (1−ρ)/T0; TTFT = ⌈s/C⌉·T(C)·(1 + ρ/(2(1−ρ))); r·b ≥ "
                 "λ·(TTFT + out/rate) (Sarathi-Serve, OSDI 2024)"),
        inputs={"qps": traffic.qps, "prompt_tokens": traffic.prompt_tokens,
                "output_tokens": traffic.output_tokens, "chunk_tokens": chunk_tokens,
                "target_ttft_seconds": target.ttft_seconds,
                "target_decode_tokens_per_second": target.rate,
                "max_batch_per_replica": max_batch_per_replica,
                "tensor_parallel": replica.tensor_parallel,
                "pipeline_parallel": replica.pipeline_parallel},
        notes=["Poisson arrivals; one chunk slot per iteration; mean, not tail, latencies"],
    )
