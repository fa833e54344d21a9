"""Plan a training workload (pretrain, full fine-tune, LoRA/QLoRA) from the spec.

Order of decisions, as an administrator would take them:
1. GPUs: from the target time (``slo.targetDays``) at the assumed MFU, rounded to whole
   model replicas and whole nodes; or ``tensor × pipeline × data`` when data is fixed.
2. Memory per GPU at that parallelism; a workload that does not fit is an error finding with
   the knobs to turn, not a silent re-plan.
3. Time, checkpoint bandwidth, dataset capacity and read rate, gradient traffic against the
   pool's high-performance NICs, energy and cost per run.
LoRA counts 4 FLOPs per parameter and token (forward 2, activation gradients 2, no weight
gradients for the frozen base), 6 with full recomputation; its base weights are sharded over
the tensor × pipeline group (FSDP/ZeRO-3 style), the adapters are replicated.
"""

from __future__ import annotations

import math
from typing import Any

from aiplat.catalog import NodeType
from aiplat.plan.context import Arch, PoolHardware
from aiplat.plan.format import bytes_h, rate_h
from aiplat.plan.models import Finding, WorkloadPlan
from aiplat.sizing import memory, power, training
from aiplat.sizing.result import Result
from aiplat.spec.models import LoraSpec, Platform, PoolSpec, WorkloadKind, WorkloadSpec

OPTIMIZER = {"adamw": "adam", "adamw-8bit": "adam8bit", "sgd": "sgd_momentum"}
TOKENS_PER_STEP = 4_000_000
"""Default global batch in tokens when the spec gives none (Llama 3 used 4M-16M)."""
GPU_UTILISATION = 0.8
"""Average share of TDP a GPU draws during training, for energy (an assumption)."""


def plan_training(w: WorkloadSpec, arch: Arch, hw: PoolHardware, site: Platform) -> WorkloadPlan:
    par = w.parallelism
    tp, pp = par.tensor, par.pipeline
    tokens = (w.data.tokens or 0) * w.data.epochs
    peak = hw.peak_tflops(w.precision)
    lora = w.kind is WorkloadKind.LORA
    k = (6.0 if par.recompute.value == "full" else 4.0) if lora else None
    results: dict[str, Result] = {}
    findings: list[Finding] = []
    subject = f"workload {w.name}"

    if w.slo.target_days is not None:
        need = training.gpus_for_target_time(
            tokens=tokens, params=arch.params, target_seconds=w.slo.target_days * 86400,
            mfu=w.mfu, peak_tflops_per_gpu=peak, flops_per_param_token=k,
            tp=tp, pp=pp, gpus_per_node=hw.gpus_per_node,
        )
        results["gpus"] = need
        gpus = need.gpus
    else:
        gpus = tp * pp * (par.data or 1)
    dp = gpus // (tp * pp)
    seq = par.sequence_length
    global_batch = par.global_batch or max(dp * par.micro_batch, round(TOKENS_PER_STEP / seq))
    micro_steps = max(1, math.ceil(global_batch / (par.micro_batch * dp)))

    time = training.training_time(
        tokens=tokens, params=arch.params, gpus=gpus, mfu=w.mfu, peak_tflops_per_gpu=peak,
        flops_per_param_token=k,
    )
    results["time"] = time
    if w.slo.target_days is not None and time.days > w.slo.target_days * 1.001:
        findings.append(Finding(severity="warning", subject=subject,
                                message=f"takes {time.days:.1f} days, over the "
                                        f"{w.slo.target_days:g}-day target",
                                fix="raise parallelism.data or drop slo.targetDays"))

    mem: dict[str, float]
    if lora:
        spec_lora = w.lora or LoraSpec()  # kind lora without settings: the spec's defaults
        shard = tp * pp
        ft = memory.finetune_memory(
            arch.params, layers=arch.layers, hidden=arch.hidden, ffn_hidden=arch.ffn_hidden,
            heads=arch.heads, kv_heads=arch.kv_heads, rank=spec_lora.rank,
            seq_len=seq, micro_batch=par.micro_batch, gpu_memory_bytes=hw.gpu_memory_bytes,
            method="qlora" if spec_lora.quantized_base else "lora",
            targets=("q", "k", "v", "o") if spec_lora.target == "attention"
            else memory.LORA_TARGETS,
            base_precision=w.precision.value, recompute=par.recompute.value,
        )
        results["memory_single_gpu"] = ft
        mem = {
            "weights": ft.base_weights_bytes / shard,
            "gradients": ft.adapter_gradients_bytes,
            "optimizer": ft.adapter_optimizer_bytes + ft.adapter_weights_bytes,
            "activations": ft.activations_bytes / tp,
        }
        # The same allowance as finetune_memory's, taken on what one GPU of the group holds.
        mem["overhead"] = (memory.DEFAULT_OVERHEAD_FIXED_BYTES
                           + memory.DEFAULT_OVERHEAD_FRACTION * sum(mem.values()))
        fix = "raise parallelism.tensor/pipeline (shards the base), or set lora.quantizedBase"
    else:
        tm = memory.training_memory(
            arch.params, layers=arch.layers, hidden=arch.hidden, heads=arch.heads,
            seq_len=seq, micro_batch=par.micro_batch, gpu_memory_bytes=hw.gpu_memory_bytes,
            precision=w.precision.value, optimizer=OPTIMIZER[w.optimizer],
            zero_stage=par.zero_stage, dp=dp, tp=tp, pp=pp, recompute=par.recompute.value,
            microbatches=micro_steps,
        )
        results["memory"] = tm
        mem = {
            "weights": tm.weights_bytes,
            "gradients": tm.gradients_bytes,
            "optimizer": tm.optimizer_bytes,
            "activations": tm.activations_bytes,
            "overhead": tm.overhead_bytes,
        }
        fix = ("raise parallelism.zeroStage, tensor or pipeline, lower microBatch, or "
               "set recompute: full")
    total = sum(mem.values())
    if total > hw.gpu_memory_bytes:
        findings.append(Finding(
            severity="error", subject=subject,
            message=f"needs {bytes_h(total)} per GPU; {hw.gpu.name} has "
                    f"{bytes_h(hw.gpu_memory_bytes)}",
            fix=fix))

    ckpt = training.checkpoint_size(
        arch.params, precision=w.precision.value,
        optimizer=OPTIMIZER[w.optimizer] if not lora else "adam",
        include_optimizer=not lora,
    )
    nodes = max(1, math.ceil(gpus / hw.gpus_per_node))
    ckpt_bw = training.checkpoint_write_bandwidth(
        checkpoint_bytes=ckpt.total_bytes, interval_seconds=w.checkpoint.interval_minutes * 60,
        blocking_share=w.checkpoint.max_overhead, writers=nodes,
    )
    results["checkpoint"] = ckpt
    results["checkpoint_bandwidth"] = ckpt_bw
    ds = training.dataset_storage(tokens=w.data.tokens or 0)
    results["dataset"] = ds
    read = training.data_read_throughput(tokens_per_second=time.tokens_per_second)
    results["read"] = read

    step = training.iteration_time(
        global_batch=global_batch, seq_len=seq, layers=arch.layers, hidden=arch.hidden,
        vocab=arch.vocab, gpus=gpus, mfu=w.mfu, peak_tflops_per_gpu=peak,
    )
    results["step"] = step
    key: dict[str, str] = {}
    if dp > 1 and not lora:
        ar = training.gradient_allreduce_bandwidth(
            params=arch.params, dp=dp, step_seconds=step.seconds, tp=tp, pp=pp,
            zero_stage=par.zero_stage,
        )
        results["allreduce"] = ar
        key["all-reduce per GPU"] = rate_h(ar.bandwidth_bps)
        have = hw.hpc_bytes_per_second_per_gpu()
        if nodes > 1 and ar.bandwidth_bps > have:
            findings.append(Finding(
                severity="warning", subject=subject,
                message=f"gradient all-reduce needs {rate_h(ar.bandwidth_bps)} per GPU; the "
                        f"pool's hpc NICs give {rate_h(have)} per GPU",
                fix="add hpc NIC bandwidth, raise the global batch, or overlap communication"))

    hours = time.seconds / 3600
    node_w = node_watts(hw.pool, hw.gpu.tdp_w, hw.node_type)
    energy = power.run_energy(
        gpus=gpus, hours=hours, gpu_tdp_w=hw.gpu.tdp_w, avg_utilisation=GPU_UTILISATION,
        pue=site.site.pue, price_per_kwh=site.site.electricity_price_per_kwh,
        host_overhead_factor=node_w / (hw.gpus_per_node * hw.gpu.tdp_w),
    )
    results["energy"] = energy
    key |= {
        "GPUs": f"{gpus} ({tp}×TP, {pp}×PP, {dp}×DP)",
        "run time": f"{time.days:.1f} days" if time.days >= 1 else f"{hours:.1f} h",
        "memory per GPU": f"{bytes_h(total)} of {bytes_h(hw.gpu_memory_bytes)}",
        "checkpoint": f"{bytes_h(ckpt.total_bytes)}, write ≥ {rate_h(ckpt_bw.write_bps)}",
        "dataset": bytes_h(_dataset_bytes(w, ds.stored_bytes)),
        "read rate": rate_h(read.read_bps),
        "energy per run": f"{energy.facility_energy_kwh:,.0f} kWh, "
                          f"{energy.cost:,.0f} {site.site.currency}",
    }
    return WorkloadPlan(
        name=w.name, kind=w.kind.value, tenant=w.tenant, pool=hw.pool.name,
        gpu_model=hw.gpu.name, model=arch.name, params=arch.params,
        precision=w.precision.value, gpus=gpus, nodes=gpus / hw.gpus_per_node,
        run_hours=hours, gpu_hours_per_month=gpus * hours * w.runs_per_month,
        memory_per_gpu_bytes=mem, gpu_memory_bytes=hw.gpu_memory_bytes, key_figures=key,
        results=dump_results(results), findings=findings,
    )


def _dataset_bytes(w: WorkloadSpec, estimated: float) -> float:
    return w.data.dataset_size_gb * 1e9 if w.data.dataset_size_gb else estimated


def node_watts(pool: PoolSpec, gpu_tdp_w: float, node_type: NodeType | None) -> float:
    """A node's power: measured (spec) beats the vendor's figure (catalog) beats an estimate."""
    if pool.node.power_kw:
        return pool.node.power_kw * 1000
    if node_type is not None:
        return node_type.system_power_kw * 1000
    gpus = pool.node.gpu.count if pool.node.gpu else 0
    return power.node_power(gpus_per_node=gpus, gpu_tdp_w=gpu_tdp_w).node_power_w


def dump_results(results: dict[str, Result]) -> dict[str, dict[str, Any]]:
    return {k: r.model_dump(mode="json") for k, r in results.items()}
