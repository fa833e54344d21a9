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

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Literal

from aiplat.catalog import Catalog
from aiplat.errors import InputError
from aiplat.plan.format import bytes_h, count_h
from aiplat.plan.models import Finding, ReplicaGroup, WorkloadPlan
from aiplat.plan.resolve import Arch, ResolvedPool, gpu_of
from aiplat.plan.training import dump_results
from aiplat.sizing import chunked, disaggregated, inference, lengths, memory, queueing, rag
from aiplat.sizing.result import Result, precision_bytes
from aiplat.spec.models import Platform, Precision, WorkloadKind, WorkloadSpec

DEFAULT_TTFT_S = 2.0
DEFAULT_DECODE_TPS = 10.0
"""Per-user decode rate assumed when the SLO names none (faster than people read)."""


@dataclass
class _Serve:
    """What the steps of ``plan_inference`` share and fill in."""

    w: WorkloadSpec
    arch: Arch
    hw: ResolvedPool
    results: dict[str, Result] = field(default_factory=dict)
    key: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    groups: list[ReplicaGroup] = field(default_factory=list)

    @property
    def subject(self) -> str:
        return f"workload {self.w.name}"

    def run(self, role: str, replicas: int, r: inference.Replica) -> None:
        """Record ``replicas`` replicas of layout ``r``: what the tree will run."""
        self.groups.append(ReplicaGroup(
            role=role, model=self.arch.name, replicas=replicas,
            weight_bytes=self.arch.params * precision_bytes(r.weight_precision),
            gpus=r.tensor_parallel * r.pipeline_parallel,
            tensor_parallel=r.tensor_parallel, pipeline_parallel=r.pipeline_parallel))

    def error(self, message: str, fix: str,
              severity: Literal["warning", "error"] = "error") -> None:
        self.findings.append(Finding(severity=severity, subject=self.subject, message=message,
                                     fix=fix))


@dataclass(frozen=True)
class _Lengths:
    """Mean prompt and output tokens (what throughput and Little's law need) and the p95
    request (what the context must hold)."""

    prompt: int
    output: int
    p95_prompt: int
    p95_sequence: int


def plan_inference(
    w: WorkloadSpec, arch: Arch, hw: ResolvedPool, platform: Platform, catalog: Catalog
) -> WorkloadPlan:
    sv = _Serve(w, arch, hw)
    slo, serving = w.slo, w.serving
    lengths = _lengths(sv)
    context = _context(sv, lengths)
    kv = w.kv_cache_precision or ("fp8" if w.precision.value == "fp8" else "bf16")
    lora = _lora(sv)
    layout = inference.gpus_per_replica(
        arch.shape, context_tokens=context, concurrency=1, weight_precision=w.precision.value,
        pinned=_pinned(sv),
        kv_precision=kv, lora=lora, attention_data_parallel=serving.attention_data_parallel,
        budget=inference.MemoryBudget(
            gpu_memory_bytes=hw.gpu_memory_bytes, gpus_per_node=hw.gpus_per_node,
            nvlink_gpus=hw.nvlink_gpus,
            gpu_memory_utilization=serving.gpu_memory_utilization,
            overhead_bytes_per_gpu=serving.overhead_gib_per_gpu * 2**30))
    sv.results["layout"] = layout
    if serving.attention_data_parallel and arch.shape.moe is not None:
        # The MoE efficiency is fitted on fixed-length benchmarks (sizing.calibration.MOE).
        # TensorRT-LLM's ADP balance blog (tech_blog/blog10) measured the cost of varied
        # lengths: 25,664 TPS against 39,552 at perfect balance, 33 % regained by balancing.
        sv.error("attention data parallelism on a mixture of experts: the throughput is "
                 "calibrated on TensorRT-LLM's fixed-length DeepSeek-R1 benchmarks (within "
                 "12 %); with varied request lengths the ranks wait for the slowest one, which "
                 "cost a published run on a real dataset 35 % of its throughput",
                 "with varied lengths enable attention-DP balancing (TensorRT-LLM "
                 "attention_dp_config.enable_balance) or size with about 1.5x the GPUs; or set "
                 "serving.computeEfficiency from a measured run", severity="warning")
    if w.precision is Precision.FP4 and arch.moe is not None and arch.mla is None:
        # TensorRT-LLM perf overview, Qwen3-235B-A22B on 8xB200 NVFP4: 1.5x to 2.7x below
        # this model (tests/unit/test_moe_published_figures.py; H200 FP8 rows within 30 %).
        sv.error("NVFP4 weights on a mixture of experts without MLA: TensorRT-LLM's "
                 "published Qwen3-235B-A22B throughput on 8xB200 is 1.5x to 2.7x below this "
                 "model (its FP8 rows on H200 hold within 30 %)",
                 "size with about twice the GPUs, or set serving.computeEfficiency from a "
                 "measured run", severity="warning")
    if layout.fits and layout.gpus > hw.gpus_per_node:
        # One vLLM instance over several pods needs a leader and workers started together
        # (LeaderWorkerSet with Ray); the tree renders whole-node pods of a Deployment.
        sv.error(f"a replica spans {math.ceil(layout.gpus / hw.gpus_per_node)} nodes "
                 f"(TP {layout.tensor_parallel} x PP {layout.pipeline_parallel}): the tree "
                 "renders its whole-node pods as separate Deployment pods, which vLLM does "
                 "not join into one replica",
                 "run each replica as a LeaderWorkerSet (not rendered by aiplat yet), or "
                 "fit it in a node: fp8 weights, a shorter contextLength, larger GPUs",
                 severity="warning")
    if not layout.fits:
        sv.error(f"{arch.name} with a {context}-token context does not fit "
                 f"{hw.gpus_per_node} × {gpu_of(hw).name}",
                 "use fp8 or int4 weights, a shorter contextLength, or a larger GPU")
    seq_tokens = lengths.prompt + lengths.output
    batch = max(1, min(serving.max_batch, layout.kv_token_capacity // max(seq_tokens, 1)))
    replica = inference.Replica(
        model=arch.shape, hardware=inference.ServingHardware(
            memory_bandwidth_bps=gpu_of(hw).memory_bandwidth_tbps * 1e12,
            dense_tflops=hw.peak_tflops(w.precision),
            attention_tflops=hw.peak_tflops(Precision(kv))),
        weight_precision=w.precision.value, kv_precision=kv,
        tensor_parallel=layout.tensor_parallel, pipeline_parallel=layout.pipeline_parallel,
        efficiency=_efficiency(w), lora=lora)
    if w.kind is WorkloadKind.BATCH_INFERENCE:
        gpus, run_hours = _serve_batch(sv, replica, lengths, layout.gpus, batch)
        generated = w.data.tokens or 0.0
    else:
        qps, gpus, batch = _serve_online(sv, replica, lengths, layout.gpus, batch)
        run_hours = None
        generated = qps * lengths.output * 730.0 / w.runs_per_month * 3600
    if w.kind is WorkloadKind.RAG:
        gpus += _plan_rag(w, hw, catalog, qps=slo.queries_per_second or 1.0, sv=sv)
    mem = {
        "weights": layout.weights_bytes_per_gpu,
        "kv cache": min(layout.kv_budget_bytes_per_gpu,
                        batch * seq_tokens * layout.kv_cache_bytes_per_gpu / context),
        "overhead": layout.overhead_bytes_per_gpu,
    }
    key = {"GPUs": f"{gpus} (TP {layout.tensor_parallel}"
                   + (f", PP {layout.pipeline_parallel})" if layout.pipeline_parallel > 1 else ")"),
           "memory per GPU": f"{bytes_h(sum(mem.values()))} of {bytes_h(hw.gpu_memory_bytes)}",
           **sv.key}
    hours = run_hours if run_hours is not None else 730.0 / w.runs_per_month
    cost, per_million = _cost(w, hw, gpus=gpus, hours=hours, output_tokens_per_run=generated)
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
        results=dump_results(sv.results), findings=sv.findings, replica_groups=sv.groups,
    )


def _efficiency(w: WorkloadSpec) -> inference.ServingEfficiency:
    s = w.serving
    return inference.ServingEfficiency(
        bandwidth=s.bandwidth_efficiency, compute=s.compute_efficiency,
        tensor_parallel=s.tensor_parallel_efficiency, draft_tokens=s.draft_tokens,
        acceptance_rate=s.acceptance_rate, draft_cost=s.draft_cost,
        prefix_cache_hit=s.prefix_cache_hit_ratio,
        moe_layer_floor=s.moe_layer_floor_us * 1e-6,
        attention_data_parallel=s.attention_data_parallel)


def _lengths(sv: _Serve) -> _Lengths:
    """Mean and p95 lengths: the spec's means, or a lognormal through median and p95; a RAG
    prompt adds its retrieved chunks to every question."""
    slo = sv.w.slo
    extra = 0
    if sv.w.kind is WorkloadKind.RAG:
        assert sv.w.rag is not None
        rp = rag.rag_prompt_tokens(question_tokens=slo.prompt_tokens, top_k=sv.w.rag.top_k,
                                   chunk_tokens=sv.w.rag.chunk_tokens)
        sv.results["rag_prompt"] = rp
        extra = rp.prompt_tokens - slo.prompt_tokens

    def one(p50: int, p95: int | None, name: str) -> tuple[int, int]:
        if p95 is None:
            return p50, p50
        d = lengths.lognormal_lengths(p50=p50, p95=p95)
        sv.results[f"{name}_lengths"] = d
        sv.key[f"{name} tokens p50 / mean / p95"] = f"{p50:,} / {d.mean:,.0f} / {p95:,}"
        return round(d.mean), p95

    prompt, p95_prompt = one(slo.prompt_tokens, slo.prompt_tokens_p95, "prompt")
    output, p95_output = one(slo.output_tokens, slo.output_tokens_p95, "output")
    return _Lengths(prompt=prompt + extra, output=output, p95_prompt=p95_prompt + extra,
                    p95_sequence=p95_prompt + extra + p95_output)


def _context(sv: _Serve, n: _Lengths) -> int:
    """The context a sequence may reach: the spec's, else the longest request (p95 when
    given) rounded up to 4096, within the model's; a request that cannot fit is an error."""
    arch, slo = sv.arch, sv.w.slo
    context = slo.context_length or min(arch.max_context, max(n.p95_sequence, 4096))
    if n.p95_sequence > context:
        what = ("a p95 request (prompt + output)" if slo.prompt_tokens_p95 or
                slo.output_tokens_p95 else "prompt + output")
        sv.error(f"{what} is {n.p95_sequence} tokens, above contextLength {context}",
                 "raise slo.contextLength, or shorten prompts (fewer RAG chunks)")
    if context > arch.max_context:
        sv.error(f"contextLength {context} exceeds {arch.name}'s {arch.max_context}",
                 f"set slo.contextLength ≤ {arch.max_context} or use a long-context variant",
                 severity="warning")
    return context


def _lora(sv: _Serve) -> inference.LoraServing | None:
    """Served adapters: rank r on every linear layer of the base (vLLM --enable-lora)."""
    s, arch = sv.w.serving, sv.arch
    if not s.lora_adapters:
        return None
    per = memory.lora_params(layers=arch.layers, hidden=arch.hidden, ffn_hidden=arch.ffn_hidden,
                             heads=arch.heads, kv_heads=arch.kv_heads, rank=s.lora_rank,
                             targets=memory.LORA_TARGETS)
    sv.results["lora_adapter"] = per
    sv.key["LoRA adapters"] = (f"{s.lora_adapters} × rank {s.lora_rank} "
                               f"({count_h(per.adapter_params)} parameters each)")
    if arch.moe is not None:
        sv.key["LoRA adapters"] += "; attention and dense layers only, experts not adapted"
    return inference.LoraServing(adapters=s.lora_adapters,
                                 params_per_adapter=float(per.adapter_params),
                                 max_loras=s.max_loras)


def _serve_batch(sv: _Serve, replica: inference.Replica, n: _Lengths, layout_gpus: int,
                 batch: int) -> tuple[int, float]:
    """Replicas that finish data.tokens within slo.completionHours: (GPUs, run hours)."""
    w = sv.w
    requests = max(1, math.ceil((w.data.tokens or 0) / (n.prompt + n.output)))

    def run_on(gpus: int) -> inference.BatchInference:
        return inference.batch_inference_duration(
            replica, requests=requests, prompt_tokens=n.prompt, output_tokens=n.output,
            batch=batch, gpus=gpus)

    replicas = 1
    if w.slo.completion_hours:
        replicas = max(1, math.ceil(run_on(layout_gpus).seconds / 3600
                                    / w.slo.completion_hours))
    run = run_on(layout_gpus * replicas)
    sv.run("batch", replicas, replica)
    sv.results["batch"] = run
    run_hours = run.seconds / 3600
    sv.key["requests"] = count_h(requests)
    sv.key["run time"] = f"{run_hours:.1f} h"
    sv.key["throughput"] = f"{run.tokens_per_second:,.0f} tokens/s"
    return layout_gpus * replicas, run_hours


def _serve_online(sv: _Serve, replica: inference.Replica, n: _Lengths, layout_gpus: int,
                  batch: int) -> tuple[float, int, int]:
    """Replicas for the queries/s and the latency SLO, colocated or with prefill on its
    own replicas: (queries/s, GPUs, batch per replica)."""
    slo = sv.w.slo
    qps = slo.queries_per_second
    if qps is None:
        # Only concurrency given: Little's law backwards at the per-user decode rate.
        tps = slo.tokens_per_second or DEFAULT_DECODE_TPS
        qps = (slo.concurrency or 1) / (n.output / tps)
    traffic = inference.Traffic(qps=qps, prompt_tokens=n.prompt, output_tokens=n.output)
    target = inference.LatencyTarget(
        ttft_seconds=(slo.time_to_first_token_ms or DEFAULT_TTFT_S * 1000) / 1000,
        decode_tokens_per_second=slo.tokens_per_second or DEFAULT_DECODE_TPS)
    sv.key["queries/s"] = f"{qps:g}"
    if sv.w.serving.disaggregated_prefill:
        return (qps, *_serve_disaggregated(sv, replica, traffic, target,
                                           layout_gpus=layout_gpus, batch=batch))
    if sv.w.serving.chunked_prefill_tokens is not None:
        return (qps, *_serve_chunked(sv, replica, traffic, target, layout_gpus=layout_gpus,
                                     batch=batch))
    sized = inference.replicas_for_slo(replica, traffic, target, max_batch_per_replica=batch)
    sv.results["slo"] = sized
    if not sized.feasible:
        _slo_error(sv, sized.reasons)
        sv.run("serve", 1, replica)
        return qps, layout_gpus, batch
    sv.run("serve", sized.replicas, replica)
    sv.key["replicas"] = f"{sized.replicas} × {layout_gpus} GPU"
    sv.key["batch per replica"] = str(sized.batch_per_replica)
    sv.key["time to first token"] = f"{sized.ttft_seconds * 1000:,.0f} ms"
    sv.key["decode per user"] = f"{sized.decode_tokens_per_second_per_user:.0f} tokens/s"
    _tail_latency(sv.w, qps / sized.replicas, sized.prefill_seconds, sv.key, sv.findings)
    if slo.prompt_tokens_p95 is not None:
        long = inference.prefill_time(replica, prompt_tokens=n.p95_prompt).ttft_seconds
        sv.key["prefill of a p95 prompt"] = f"{long * 1000:,.0f} ms"
    return qps, sized.gpus, sized.batch_per_replica


def _serve_disaggregated(sv: _Serve, replica: inference.Replica, traffic: inference.Traffic,
                         target: inference.LatencyTarget, *, layout_gpus: int,
                         batch: int) -> tuple[int, int]:
    prefill = _prefill_replica(sv, replica)
    sized = disaggregated.disaggregated_replicas(
        replica, traffic, target, max_batch_per_replica=batch,
        kv_transfer_bps=sv.w.serving.kv_transfer_gbps * 1e9 / 8, prefill=prefill)
    sv.results["disaggregated"] = sized
    if not sized.feasible:
        _slo_error(sv, sized.reasons)
        sv.run("serve", 1, replica)
        return layout_gpus, batch
    sv.run("prefill", sized.prefill_replicas, prefill or replica)
    sv.run("decode", sized.decode_replicas, replica)
    prefill_gpus = prefill.gpus if prefill is not None else layout_gpus
    sv.key["prefill replicas"] = f"{sized.prefill_replicas} × {prefill_gpus} GPU"
    sv.key["decode replicas"] = f"{sized.decode_replicas} × {layout_gpus} GPU"
    sv.key["batch per replica"] = str(sized.batch_per_replica)
    sv.key["time to first token"] = (f"{sized.ttft_seconds * 1000:,.0f} ms (KV transfer "
                                     f"{sized.kv_transfer_seconds * 1000:,.0f} ms)")
    sv.key["decode per user"] = f"{sized.decode_tokens_per_second_per_user:.0f} tokens/s"
    _tail_latency(sv.w, traffic.qps / sized.prefill_replicas, sized.prefill_seconds, sv.key,
                  sv.findings, extra_seconds=sized.kv_transfer_seconds)
    return sized.gpus, sized.batch_per_replica


def _serve_chunked(sv: _Serve, replica: inference.Replica, traffic: inference.Traffic,
                   target: inference.LatencyTarget, *, layout_gpus: int,
                   batch: int) -> tuple[int, int]:
    chunk = sv.w.serving.chunked_prefill_tokens
    assert chunk is not None
    sized = chunked.chunked_replicas(replica, traffic, target, max_batch_per_replica=batch,
                                     chunk_tokens=chunk)
    sv.results["chunked_prefill"] = sized
    if not sized.feasible:
        _slo_error(sv, sized.reasons)
        sv.run("serve", 1, replica)
        return layout_gpus, batch
    sv.run("serve", sized.replicas, replica)
    sv.key["replicas"] = f"{sized.replicas} × {layout_gpus} GPU"
    sv.key["batch per replica"] = str(sized.batch_per_replica)
    sv.key["prefill chunks"] = (f"{sized.chunks_per_prompt} × {chunk} tokens per prompt, "
                                f"chunk slot {sized.chunk_slot_utilization:.0%} busy")
    sv.key["time to first token"] = f"{sized.ttft_seconds * 1000:,.0f} ms"
    sv.key["decode per user"] = f"{sized.decode_tokens_per_second_per_user:.0f} tokens/s"
    # The chunk slot is the prefill queue: its service time is the prompt's chunk iterations.
    _tail_latency(sv.w, traffic.qps / sized.replicas,
                  sized.chunks_per_prompt * sized.step_seconds_with_chunk, sv.key, sv.findings)
    return sized.gpus, sized.batch_per_replica


def _check_tp(sv: _Serve, field: str, tp: int, hint: str = "") -> str:
    """A tensor-parallel degree from the spec, checked: inside an NVLink domain (a node, or
    a rack-scale system's domain; ``hint`` says what goes past one), splitting the heads.
    Returns how the messages name the field."""
    where = f"workload {sv.w.name}: serving.{field} ({tp})"
    shape, gpn = sv.arch.shape, sv.hw.nvlink_gpus
    if tp > gpn:
        domain = "its NVLink domain" if sv.hw.rack_scale else "a node"
        raise InputError(f"{where} exceeds the {gpn} GPUs of {domain} (tensor parallelism "
                         f"stays inside one{hint}) (fix: at most {gpn})")
    if not inference.tp_compatible(tp, shape.heads, shape.kv_heads):
        raise InputError(f"{where} does not split {sv.arch.name}'s {shape.heads} attention "
                         f"heads / {shape.kv_heads} KV heads (fix: a divisor of "
                         f"{shape.heads})")
    return where


def _pinned(sv: _Serve) -> tuple[int, int] | None:
    """The spec's serving.tensorParallel/pipelineParallel, checked: TP inside a node,
    splitting the heads."""
    tp = sv.w.serving.tensor_parallel
    if tp is None:
        return None
    _check_tp(sv, "tensorParallel", tp, "; span nodes with pipelineParallel")
    shape = sv.arch.shape
    pp = sv.w.serving.pipeline_parallel or 1
    if pp > shape.layers:
        raise InputError(f"workload {sv.w.name}: serving.pipelineParallel ({pp}) is more "
                         f"stages than {sv.arch.name}'s {shape.layers} layers (fix: at most "
                         f"{shape.layers})")
    return tp, pp


def _prefill_replica(sv: _Serve, decode: inference.Replica) -> inference.Replica | None:
    """The prefill replicas' own layout (serving.prefillTensorParallel), checked: inside a
    node, splitting the heads, holding the weights."""
    tp = sv.w.serving.prefill_tensor_parallel
    if tp is None:
        return None
    where = _check_tp(sv, "prefillTensorParallel", tp)
    shape = sv.arch.shape
    s = sv.w.serving
    weights = inference.weights_memory(shape.params, decode.weight_precision).weights_bytes / tp
    room = s.gpu_memory_utilization * sv.hw.gpu_memory_bytes - s.overhead_gib_per_gpu * 2**30
    if weights > room:
        raise InputError(f"{where}: the weights take {bytes_h(weights)} per GPU, above the "
                         f"{bytes_h(room)} a GPU may hold (fix: a larger "
                         "prefillTensorParallel, or lower-precision weights)")
    return dataclasses.replace(decode, tensor_parallel=tp, pipeline_parallel=1)


def _slo_error(sv: _Serve, reasons: list[str]) -> None:
    sv.error("the latency SLO cannot be met on " + gpu_of(sv.hw).name + ": "
             + "; ".join(reasons),
             "relax timeToFirstTokenMs/tokensPerSecond, quantize, or use a faster GPU")


def _tail_latency(w: WorkloadSpec, rate: float, prefill_s: float, key: dict[str, str],
                  findings: list[Finding], *, extra_seconds: float = 0.0) -> None:
    """p95/p99 time to first token: the prefill plus the M/D/1 wait quantile (plus a fixed
    ``extra_seconds``, e.g. the disaggregated KV transfer)."""
    p95, p99 = (prefill_s + extra_seconds + queueing.md1_wait_quantile(rate, prefill_s, q)
                for q in (0.95, 0.99))
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


def _plan_rag(w: WorkloadSpec, hw: ResolvedPool, catalog: Catalog, *, qps: float,
              sv: _Serve) -> int:
    """Embedding, index and retrieval for a RAG workload; returns the extra GPUs it needs
    (the query encoder's replicas, one GPU each: a small model)."""
    assert w.rag is not None
    results, key, findings = sv.results, sv.key, sv.findings
    emb = catalog.model(w.rag.embedding_model)
    assert emb is not None and emb.embedding_dim is not None
    peak = hw.peak_tflops(w.precision)
    ingest = rag.embedding_ingest(
        rag.Corpus(documents=w.rag.documents, tokens_per_document=w.rag.tokens_per_document,
                   chunk_tokens=w.rag.chunk_tokens),
        rag.Encoder(params=emb.params, dense_tflops=peak, layers=emb.layers, hidden=emb.hidden),
        gpus=hw.gpus_per_node)
    query = rag.query_embedding_gpus(qps=qps, query_tokens=w.slo.prompt_tokens,
                                     params=emb.params, dense_tflops=peak)
    layout = rag.IndexLayout(kind="ivf_pq" if w.rag.index == "ivf-pq" else w.rag.index,
                             value_precision=w.rag.vector_precision)
    index = rag.vector_index_memory(ingest.chunks, emb.embedding_dim, layout)
    cores = rag.retrieval_cpu_cores(qps, ingest.chunks, emb.embedding_dim, layout)
    results |= {"ingest": ingest, "query_embedding": query, "index": index, "retrieval": cores}
    sv.groups.append(ReplicaGroup(role="embed", model=emb.name, replicas=query.gpus, gpus=1,
                                  tensor_parallel=1, weight_bytes=emb.params * 2))  # bf16
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
