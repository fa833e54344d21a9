"""Plan an inference workload (online, RAG, batch) from the spec.

1. Layout: the smallest tensor-parallel group whose GPUs hold the weights, one sequence at the
   full ``contextLength`` and the runtime overhead (``gpus_per_replica``).
2. Batch: as many average sequences (prompt + output) as the KV budget of that layout holds,
   capped at ``serving.maxBatch`` (vLLM's default ``max_num_seqs``, 256).
3. Online and RAG: replicas for the queries/s, time-to-first-token and per-user decode SLO
   (``replicas_for_slo``); an SLO the GPU cannot meet at any replica count is an error
   finding with the reason; p95/p99 TTFT from the M/D/1 tail (``sizing.queueing``). RAG adds
   the retrieved chunks to every prompt, GPUs for query embedding, the vector index's memory
   and CPU cores for retrieval, and the one-off ingestion time of the corpus.
4. Batch: replicas that finish ``data.tokens`` within ``slo.completionHours``.
A mixture of experts holds every expert and, per decode step, reads the experts its batch
touches (``sizing.shape``); MLA models cache one latent per token and layer. The serving
efficiencies come from the spec's ``serving`` block (defaults: ``sizing.inference``); cost
is GPU-hours at the pool's ``pricePerGpuHour``.
"""

from __future__ import annotations

import math
from typing import TypedDict

from aiplat.catalog import Catalog
from aiplat.plan.format import bytes_h, count_h
from aiplat.plan.models import Finding, WorkloadPlan
from aiplat.plan.resolve import Arch, ResolvedPool, gpu_of
from aiplat.plan.training import dump_results
from aiplat.sizing import inference, queueing, rag
from aiplat.sizing.result import Result
from aiplat.spec.models import Platform, WorkloadKind, WorkloadSpec


class _Precisions(TypedDict):
    weight_precision: str
    kv_precision: str


class _Layout(TypedDict):
    tensor_parallel: int
    pipeline_parallel: int


DEFAULT_TTFT_S = 2.0
DEFAULT_DECODE_TPS = 10.0
"""Per-user decode rate assumed when the SLO names none (faster than people read)."""


def plan_inference(
    w: WorkloadSpec, arch: Arch, hw: ResolvedPool, platform: Platform, catalog: Catalog
) -> WorkloadPlan:
    slo = w.slo
    subject = f"workload {w.name}"
    findings: list[Finding] = []
    results: dict[str, Result] = {}
    key: dict[str, str] = {}
    shape = arch.shape
    kv = w.kv_cache_precision or ("fp8" if w.precision.value == "fp8" else "bf16")
    prec = _Precisions(weight_precision=w.precision.value, kv_precision=kv)
    serving = w.serving
    eff = inference.ServingEfficiency(
        bandwidth=serving.bandwidth_efficiency, compute=serving.compute_efficiency,
        tensor_parallel=serving.tensor_parallel_efficiency, draft_tokens=serving.draft_tokens,
        acceptance_rate=serving.acceptance_rate, draft_cost=serving.draft_cost,
        prefix_cache_hit=serving.prefix_cache_hit_ratio)
    roof = inference.ServingHardware(memory_bandwidth_bps=gpu_of(hw).memory_bandwidth_tbps * 1e12,
                                     dense_tflops=hw.peak_tflops(w.precision))

    prompt = slo.prompt_tokens
    if w.kind is WorkloadKind.RAG:
        assert w.rag is not None
        rp = rag.rag_prompt_tokens(question_tokens=slo.prompt_tokens, top_k=w.rag.top_k,
                                   chunk_tokens=w.rag.chunk_tokens)
        results["rag_prompt"] = rp
        prompt = rp.prompt_tokens
    seq_tokens = prompt + slo.output_tokens
    context = slo.context_length or min(arch.max_context, max(seq_tokens, 4096))
    if seq_tokens > context:
        findings.append(Finding(
            severity="error", subject=subject,
            message=f"prompt + output is {seq_tokens} tokens, above contextLength {context}",
            fix="raise slo.contextLength, or shorten prompts (fewer RAG chunks)"))
    if context > arch.max_context:
        findings.append(Finding(
            severity="warning", subject=subject,
            message=f"contextLength {context} exceeds {arch.name}'s {arch.max_context}",
            fix=f"set slo.contextLength ≤ {arch.max_context} or use a long-context variant"))

    layout = inference.gpus_per_replica(
        model=shape, **prec, context_tokens=context, concurrency=1,
        gpu_memory_bytes=hw.gpu_memory_bytes, gpus_per_node=hw.gpus_per_node,
        gpu_memory_utilization=serving.gpu_memory_utilization,
        overhead_bytes_per_gpu=serving.overhead_gib_per_gpu * 2**30,
    )
    results["layout"] = layout
    if not layout.fits:
        findings.append(Finding(
            severity="error", subject=subject,
            message=f"{arch.name} with a {context}-token context does not fit "
                    f"{hw.gpus_per_node} × {gpu_of(hw).name}",
            fix="use fp8 or int4 weights, a shorter contextLength, or a larger GPU"))
    batch = max(1, min(serving.max_batch, layout.kv_token_capacity // max(seq_tokens, 1)))
    par = _Layout(tensor_parallel=layout.tensor_parallel,
                  pipeline_parallel=layout.pipeline_parallel)
    run_hours: float | None = None
    qps_served: float | None = None

    if w.kind is WorkloadKind.BATCH_INFERENCE:
        requests = max(1, math.ceil((w.data.tokens or 0) / seq_tokens))

        def run_on(gpus: int) -> inference.BatchInference:
            return inference.batch_inference_duration(
                **prec, **par, model=shape, hardware=roof, efficiency=eff, requests=requests,
                prompt_tokens=prompt,
                output_tokens=slo.output_tokens, batch=batch, gpus=gpus)

        replicas = 1
        if slo.completion_hours:
            one = run_on(layout.gpus)
            replicas = max(1, math.ceil(one.seconds / 3600 / slo.completion_hours))
        run = run_on(layout.gpus * replicas)
        results["batch"] = run
        gpus = layout.gpus * replicas
        run_hours = run.seconds / 3600
        key["requests"] = count_h(requests)
        key["run time"] = f"{run_hours:.1f} h"
        key["throughput"] = f"{run.tokens_per_second:,.0f} tokens/s"
    else:
        qps = slo.queries_per_second
        if qps is None:
            # Only concurrency given: Little's law backwards at the per-user decode rate.
            tps = slo.tokens_per_second or DEFAULT_DECODE_TPS
            qps = (slo.concurrency or 1) / (slo.output_tokens / tps)
        sized = inference.replicas_for_slo(
            **prec, **par, model=shape, hardware=roof, efficiency=eff, qps=qps,
            prompt_tokens=prompt,
            output_tokens=slo.output_tokens,
            target_ttft_seconds=(slo.time_to_first_token_ms or DEFAULT_TTFT_S * 1000) / 1000,
            target_decode_tokens_per_second=slo.tokens_per_second or DEFAULT_DECODE_TPS,
            max_batch_per_replica=batch,
        )
        results["slo"] = sized
        if sized.feasible:
            gpus = sized.gpus
            batch = sized.batch_per_replica
            key["replicas"] = f"{sized.replicas} × {layout.gpus} GPU"
            key["batch per replica"] = str(sized.batch_per_replica)
            key["time to first token"] = f"{sized.ttft_seconds * 1000:,.0f} ms"
            key["decode per user"] = f"{sized.decode_tokens_per_second_per_user:.0f} tokens/s"
            _tail_latency(w, qps / sized.replicas, sized.prefill_seconds, key, findings)
        else:
            gpus = layout.gpus
            findings.append(Finding(
                severity="error", subject=subject,
                message="the latency SLO cannot be met on " + gpu_of(hw).name + ": "
                        + "; ".join(sized.reasons),
                fix="relax timeToFirstTokenMs/tokensPerSecond, quantize, or use a faster GPU"))
        key["queries/s"] = f"{qps:g}"
        qps_served = qps

    if w.kind is WorkloadKind.RAG:
        gpus += _plan_rag(w, hw, catalog, qps=slo.queries_per_second or 1.0, results=results,
                          key=key, findings=findings)

    mem = {
        "weights": layout.weights_bytes_per_gpu,
        "kv cache": min(layout.kv_budget_bytes_per_gpu,
                        batch * seq_tokens * layout.kv_cache_bytes_per_gpu / context),
        "overhead": layout.overhead_bytes_per_gpu,
    }
    key = {"GPUs": f"{gpus} (TP {layout.tensor_parallel}"
                   + (f", PP {layout.pipeline_parallel})" if layout.pipeline_parallel > 1 else ")"),
           "memory per GPU": f"{bytes_h(sum(mem.values()))} of {bytes_h(hw.gpu_memory_bytes)}",
           **key}
    hours = run_hours if run_hours is not None else 730.0 / w.runs_per_month
    cost, per_million = _cost(w, hw, gpus=gpus, hours=hours, output_tokens_per_run=(
        (w.data.tokens or 0) if run_hours is not None else (qps_served or 0.0)
        * slo.output_tokens * hours * 3600))
    if cost is not None and per_million is not None:
        what = "run" if run_hours is not None else "month"
        key[f"cost per {what}"] = (f"{cost:,.0f} {platform.site.currency} "
                                   f"({per_million:.3g} per million tokens)")
    return WorkloadPlan(
        name=w.name, kind=w.kind.value, tenant=w.tenant, pool=hw.name,
        gpu_model=gpu_of(hw).name, model=arch.name, params=arch.params,
        precision=w.precision.value, gpus=gpus, nodes=gpus / hw.gpus_per_node,
        cost_per_run=cost, cost_per_million_tokens=per_million,
        run_hours=run_hours, gpu_hours_per_month=gpus * hours * w.runs_per_month,
        memory_per_gpu_bytes=mem, gpu_memory_bytes=hw.gpu_memory_bytes, key_figures=key,
        results=dump_results(results), findings=findings,
    )


def _tail_latency(w: WorkloadSpec, rate: float, prefill_s: float, key: dict[str, str],
                  findings: list[Finding]) -> None:
    """p95/p99 time to first token: the prefill plus the M/D/1 wait quantile."""
    p95, p99 = (prefill_s + queueing.md1_wait_quantile(rate, prefill_s, q) for q in (0.95, 0.99))
    key["TTFT p95 / p99"] = f"{p95 * 1000:,.0f} / {p99 * 1000:,.0f} ms"
    target = w.slo.time_to_first_token_p99_ms
    if target is not None and p99 * 1000 > target:
        findings.append(Finding(
            severity="warning", subject=f"workload {w.name}",
            message=f"p99 time to first token {p99 * 1000:,.0f} ms is over the {target:g} ms "
                    "target (Poisson arrivals queueing for prefill)",
            fix="add replicas (lower each one's load), or shorten prompts"))


def _cost(w: WorkloadSpec, hw: ResolvedPool, *, gpus: int, hours: float,
          output_tokens_per_run: float) -> tuple[float | None, float | None]:
    """GPU-hours at the pool's pricePerGpuHour; per million tokens processed (batch) or
    generated at the sized load (online: a month, fully used)."""
    price = hw.spec.node.gpu.price_per_gpu_hour if hw.spec.node.gpu else None
    if price is None:
        return None, None
    cost = gpus * hours * price
    return cost, (cost / (output_tokens_per_run / 1e6) if output_tokens_per_run > 0 else None)


def _plan_rag(
    w: WorkloadSpec, hw: ResolvedPool, catalog: Catalog, *, qps: float,
    results: dict[str, Result], key: dict[str, str], findings: list[Finding],
) -> int:
    """Embedding, index and retrieval for a RAG workload; returns the extra GPUs it needs."""
    assert w.rag is not None
    emb = catalog.model(w.rag.embedding_model)
    assert emb is not None and emb.embedding_dim is not None
    peak = hw.peak_tflops(w.precision)
    ingest = rag.embedding_ingest(
        documents=w.rag.documents, tokens_per_document=w.rag.tokens_per_document,
        chunk_tokens=w.rag.chunk_tokens, params=emb.params, dense_tflops=peak,
        gpus=hw.gpus_per_node, layers=emb.layers, hidden=emb.hidden,
    )
    query = rag.query_embedding_gpus(qps=qps, query_tokens=w.slo.prompt_tokens,
                                     params=emb.params, dense_tflops=peak)
    index_kind = "ivf_pq" if w.rag.index == "ivf-pq" else w.rag.index
    index = rag.vector_index_memory(ingest.chunks, emb.embedding_dim, index_kind,
                                    w.rag.vector_precision)
    cores = rag.retrieval_cpu_cores(qps, ingest.chunks, emb.embedding_dim, index_kind,
                                    w.rag.vector_precision)
    results |= {"ingest": ingest, "query_embedding": query, "index": index, "retrieval": cores}
    key["vectors"] = f"{count_h(ingest.chunks)} × {emb.embedding_dim} ({w.rag.index})"
    key["index memory"] = bytes_h(index.index_bytes)
    key["retrieval CPU cores"] = str(cores.cores)
    key["corpus ingest"] = f"{ingest.seconds / 3600:.1f} h on {hw.gpus_per_node} GPUs"
    node_ram = hw.spec.node.memory_gib * 2**30
    if index.index_bytes > 0.5 * node_ram:
        findings.append(Finding(
            severity="warning", subject=f"workload {w.name}",
            message=f"the vector index needs {bytes_h(index.index_bytes)}, over half of a "
                    f"{hw.name} node's memory",
            fix="use ivf-pq or int8 vectors, or shard the index over several nodes"))
    return query.gpus
