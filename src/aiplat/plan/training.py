"""Plan a training workload (pretrain, full fine-tune, LoRA/QLoRA) from the spec.

Order of decisions, as an administrator would take them:
0. Layouts no framework can run are refused (``InputError``, exit 2) with the rule and the
   fix: globalBatch not a multiple of microBatch × data, more pipeline stages than layers,
   tensor parallelism not dividing the heads, expert/context parallelism not dividing.
1. GPUs: from the target time (``slo.targetDays``) at the assumed MFU (or measured TFLOP/s,
   or HFU), rounded to whole model replicas and whole nodes; or
   ``tensor × pipeline × context × data`` when data is fixed. One FLOP count per token,
   k·N_active + 2k·l·s·d_attn, serves the GPUs, the run and the step.
2. Memory per GPU at that parallelism (a mixture of experts' routed experts sharded over
   expert parallelism); a workload that does not fit is an error finding with the knobs to
   turn, not a silent re-plan.
3. Time: the compute at the assumed rate plus the TP/PP/EP traffic and the gradient
   reduction the step exposes over the links they cross (NVLink or PCIe inside a node, the
   pool's hpc fabric between nodes; overlap as stated in ``sizing.training.Overlap``), the
   GPUs for a target time sized again at that rate; then goodput (checkpoints,
   interruptions, restarts), checkpoint bandwidth, dataset capacity and read rate, pipeline
   bubble, energy and cost per run.
LoRA counts 4 FLOPs per parameter and token (forward 2, activation gradients 2, no weight
gradients for the frozen base), 6 with full recomputation; its base weights are sharded over
the tensor × pipeline group (FSDP/ZeRO-3 style), the adapters are replicated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from aiplat.errors import InputError
from aiplat.plan.format import bytes_h, rate_h
from aiplat.plan.models import Finding, WorkloadPlan
from aiplat.plan.resolve import Arch, ResolvedPool, gpu_of
from aiplat.sizing import goodput, layout, memory, power, training
from aiplat.sizing.result import Result, precision_bytes
from aiplat.spec.models import LoraSpec, Platform, Precision, WorkloadKind, WorkloadSpec

OPTIMIZER = {"adamw": "adam", "adamw-8bit": "adam8bit", "sgd": "sgd_momentum"}
TOKENS_PER_STEP = 4_000_000
"""Default global batch in tokens when the spec gives none (Llama 3 used 4M-16M)."""
GPU_UTILISATION = 0.8
"""Average share of TDP a GPU draws during training, for energy (an assumption)."""


@dataclass(frozen=True)
class FullMemory:
    """Memory per GPU of a full (pre-)training run by part, and the sizing behind it."""

    per_gpu: dict[str, float]
    states: memory.ModelStateMemory
    expert_states: memory.ModelStateMemory | None
    activations: memory.ActivationMemory
    deepspeed: memory.DeepSpeedEstimate | None = None
    accelerate: memory.AccelerateEstimate | None = None

    def results(self) -> dict[str, Result]:
        out: dict[str, Result] = {"memory_states": self.states}
        if self.expert_states is not None:
            out["memory_expert_states"] = self.expert_states
        out["memory_activations"] = self.activations
        if self.deepspeed is not None:
            out["deepspeed_estimate"] = self.deepspeed
        if self.accelerate is not None:
            out["accelerate_estimate"] = self.accelerate
        return out


@dataclass(frozen=True)
class LoraMemory:
    """Memory per GPU of a LoRA/QLoRA run by part: the sharded base, replicated adapters."""

    per_gpu: dict[str, float]
    lora: memory.LoraParams
    activations: memory.ActivationMemory

    def results(self) -> dict[str, Result]:
        return {"lora": self.lora, "memory_activations": self.activations}


@dataclass(frozen=True)
class Traffic:
    """A communication estimate: its result (under ``name`` in plan.json), its key figure,
    and a finding when it may not hide behind compute."""

    name: str
    result: Result
    figure: tuple[str, str]
    finding: Finding | None


@dataclass(frozen=True)
class TrainingSizing:
    """Everything plan_training decided for one workload, as value objects; plan.json's
    ``results`` and the key figures are read from it."""

    gpus: int
    dp: int
    nodes: int
    global_batch: int
    micro_steps: int
    k: float  # FLOPs per parameter and token
    peak: float  # the GPU's dense TFLOP/s at the workload's precision
    convention: str  # how the achieved TFLOP/s was given, in words
    flops_per_token: training.TokenFlops
    gpus_needed: training.GpusNeeded | None
    time: training.TrainingTime
    memory: FullMemory | LoraMemory
    checkpoint: training.CheckpointSize
    checkpoint_bandwidth: training.CheckpointBandwidth
    dataset: training.DatasetStorage
    read: training.ReadThroughput
    step: training.TrainingTime
    communication: training.StepCommunication
    traffic: tuple[Traffic, ...]
    goodput: goodput.Goodput
    energy: power.RunEnergy
    findings: tuple[Finding, ...]

    @property
    def hours(self) -> float:
        return self.goodput.wall_seconds / 3600

    def results(self) -> dict[str, Result]:
        """plan.json's ``results``, by the names it has always had."""
        out: dict[str, Result] = {"flops_per_token": self.flops_per_token}
        if self.gpus_needed is not None:
            out["gpus"] = self.gpus_needed
        out["time"] = self.time
        out |= self.memory.results()
        out |= {"checkpoint": self.checkpoint, "checkpoint_bandwidth": self.checkpoint_bandwidth,
                "dataset": self.dataset, "read": self.read, "step": self.step,
                "step_communication": self.communication}
        out |= {t.name: t.result for t in self.traffic}
        return out | {"goodput": self.goodput, "energy": self.energy}


def plan_training(w: WorkloadSpec, arch: Arch, hw: ResolvedPool, site: Platform) -> WorkloadPlan:
    s = size_training(w, arch, hw, site)
    mem = s.memory.per_gpu
    price = hw.spec.node.gpu.price_per_gpu_hour if hw.spec.node.gpu else None
    cost = s.gpus * s.hours * price if price is not None else None
    tokens = (w.data.tokens or 0) * w.data.epochs
    return WorkloadPlan(
        name=w.name, kind=w.kind.value, tenant=w.tenant, pool=hw.name,
        gpu_model=gpu_of(hw).name, model=arch.name, params=arch.params,
        precision=w.precision.value, gpus=s.gpus, nodes=s.gpus / hw.gpus_per_node,
        goodput=s.goodput.goodput, cost_per_run=cost,
        cost_per_million_tokens=cost / (tokens / 1e6) if cost is not None else None,
        run_hours=s.hours, gpu_hours_per_month=s.gpus * s.hours * w.runs_per_month,
        memory_per_gpu_bytes=mem, gpu_memory_bytes=hw.gpu_memory_bytes,
        key_figures=key_figures(w, arch, hw, site, s=s, cost=cost),
        results=dump_results(s.results()), findings=list(s.findings),
    )


def size_training(w: WorkloadSpec, arch: Arch, hw: ResolvedPool, site: Platform
                  ) -> TrainingSizing:
    """GPUs, time, memory, checkpoint, data, traffic, goodput and energy of one run, with
    the findings in the order an administrator meets them."""
    par = w.parallelism
    tokens = (w.data.tokens or 0) * w.data.epochs
    peak = hw.peak_tflops(w.precision)
    k, x_tflops, convention = _throughput(w, peak, w.kind is WorkloadKind.LORA)
    check_layout(w, arch)
    findings = _found(_moe_default_mfu(w, arch), _tensor_spans_nodes(w, hw))
    seq = par.sequence_length
    # One FLOP count per token for the run, the step and the GPU count (6·N_active + attention).
    fpt = training.training_flops_per_token(
        params=arch.active_params, layers=arch.layers, attention_dim=arch.shape.attention_dim,
        seq_len=seq, flops_per_param_token=k)
    speed = layout.Speed(achieved_tflops_per_gpu=x_tflops, flops_per_param_token=k,
                         attention_flops_per_token=fpt.attention_flops_per_token)
    need = _gpus_needed(w, hw, arch, tokens, speed)
    lay = _layout(w, arch, hw, need)
    comm = _communication(w, arch, hw, lay, speed)
    if need is not None and comm.step.slowdown > 1:
        # The target time is met with the communication in it: size again at the rate the
        # step reaches, once (the share barely moves with the data-parallel degree). A count
        # whose data parallelism the spec's globalBatch does not divide keeps the first one
        # (the over-target finding then says so).
        again = _batch_fit(w, hw, _gpus_needed(w, hw, arch, tokens,
                                               _slowed(speed, comm.step.slowdown)))
        if again is not None:
            need = again
            lay = _layout(w, arch, hw, need)
            comm = _communication(w, arch, hw, lay, speed)
    gpus, dp, global_batch, micro_steps = lay
    # Compute at the assumed rate, slowed by what the communication exposes: one rate for
    # the run, the step and the MFU derived from them.
    eff = _slowed(speed, comm.step.slowdown)
    time = training.training_time(tokens=tokens, params=arch.active_params, gpus=gpus,
                                  speed=eff)
    mem, ckpt = _memory(w, arch, hw, dp=dp, micro_steps=micro_steps)
    findings += _found(_over_memory(w, hw, mem))
    nodes = max(1, math.ceil(gpus / hw.gpus_per_node))
    ckpt_bw = training.checkpoint_write_bandwidth(
        checkpoint_bytes=ckpt.total_bytes, interval_seconds=w.checkpoint.interval_minutes * 60,
        blocking_share=w.checkpoint.max_overhead, writers=nodes,
    )
    # The step from the same per-token FLOPs as the run: steps x step time = run time.
    step = training.training_time(tokens=global_batch * seq, params=arch.active_params,
                                  gpus=gpus, speed=eff)
    findings += _found(_bubble_finding(w, micro_steps))
    traffic = tuple(t for t in (
        _model_parallel_comm(w, hw, comm),
        _allreduce(w, hw, comm, nodes=nodes, step_seconds=step.seconds)) if t)
    findings += _found(*(t.finding for t in traffic))
    gp, late = _goodput(w, time.seconds, nodes, ckpt_bw.write_seconds)
    findings += _found(late, _over_target(w, gp))
    node_w = hw.node_power_w
    energy = power.run_energy(
        gpus=gpus, hours=gp.wall_seconds / 3600, gpu_tdp_w=gpu_of(hw).tdp_w,
        avg_utilisation=GPU_UTILISATION, pue=site.site.pue,
        price_per_kwh=site.site.electricity_price_per_kwh,
        host_overhead_factor=node_w / (hw.gpus_per_node * gpu_of(hw).tdp_w),
    )
    return TrainingSizing(
        gpus=gpus, dp=dp, nodes=nodes, global_batch=global_batch, micro_steps=micro_steps,
        k=k, peak=peak, convention=convention, flops_per_token=fpt, gpus_needed=need,
        time=time, memory=mem, checkpoint=ckpt, checkpoint_bandwidth=ckpt_bw,
        dataset=training.dataset_storage(tokens=w.data.tokens or 0),
        read=training.data_read_throughput(tokens_per_second=time.tokens_per_second),
        step=step, communication=comm.step, traffic=traffic, goodput=gp, energy=energy,
        findings=tuple(findings))


def key_figures(w: WorkloadSpec, arch: Arch, hw: ResolvedPool, site: Platform, *,
                s: TrainingSizing, cost: float | None) -> dict[str, str]:
    """The figures a reviewer reads first, in the report's order."""
    par = w.parallelism
    seq = par.sequence_length
    key = {"step time": f"{s.step.seconds:.3g} s ({s.global_batch} × {seq} tokens)"}
    key |= _memory_figures(w, s.memory)
    if par.pipeline > 1:
        key["pipeline bubble"] = _bubble_figure(w, s.micro_steps)
    key |= dict(t.figure for t in s.traffic)
    split = f"{par.tensor}×TP, {par.pipeline}×PP" + (
        f", {par.context}×CP" if par.context > 1 else "") + f", {s.dp}×DP" + (
        f" ({par.expert}×EP)" if par.expert > 1 else "")
    gp, hours, ckpt = s.goodput, s.hours, s.checkpoint
    key |= {
        "GPUs": f"{s.gpus} ({split})",
        "run time": (f"{hours / 24:.1f} days" if hours >= 24 else f"{hours:.1f} h")
                    + f" (goodput {gp.goodput:.0%}, {gp.expected_interruptions:.1f} "
                      "interruptions expected)",
        "memory per GPU": f"{bytes_h(sum(s.memory.per_gpu.values()))} of "
                          f"{bytes_h(hw.gpu_memory_bytes)}",
        "checkpoint": f"{bytes_h(ckpt.total_bytes)}, write ≥ "
                      f"{rate_h(s.checkpoint_bandwidth.write_bps)}",
        "dataset": bytes_h(_dataset_bytes(w, s.dataset.stored_bytes)),
        "read rate": rate_h(s.read.read_bps),
        "energy per run": f"{s.energy.facility_energy_kwh:,.0f} kWh, "
                          f"{s.energy.cost:,.0f} {site.site.currency}",
    }
    key["MFU / HFU"] = _utilisation(w, arch, seq=seq, tokens_per_gpu_s=s.time.tokens_per_second
                                    / s.gpus, peak=s.peak, convention=s.convention)
    if arch.moe is not None:
        active_b, total_b = arch.active_params / 1e9, arch.params / 1e9
        key["FLOPs per token"] = (f"{s.flops_per_token.flops_per_token:.3g} ({s.k:g}·"
                                  f"{active_b:.1f}B active of {total_b:.0f}B + attention)")
    if cost is not None:
        tokens = (w.data.tokens or 0) * w.data.epochs
        key["cost per run"] = (f"{cost:,.0f} {site.site.currency} "
                               f"({cost / (tokens / 1e6):.3g} per million tokens)")
    return key


def _memory_figures(w: WorkloadSpec, mem: FullMemory | LoraMemory) -> dict[str, str]:
    """What the memory figure rests on: the estimators' figures beside aiplat's, FP8 storage,
    offloaded bytes."""
    key: dict[str, str] = {}
    if not isinstance(mem, FullMemory):
        return key
    par = w.parallelism
    if mem.deepspeed is not None:
        key["model states, DeepSpeed's estimator"] = (
            f"{bytes_h(mem.deepspeed.deepspeed_bytes)} per GPU vs "
            f"{bytes_h(mem.deepspeed.aiplat_bytes)} here (+ fp32 gradient copy"
            + (", largest tensor gathered" if par.zero_stage == 3 else "") + ")")
    if mem.accelerate is not None:
        key["model states, accelerate estimate-memory"] = (
            f"{bytes_h(mem.accelerate.accelerate_bytes)} (its largest component) vs "
            f"{bytes_h(mem.accelerate.aiplat_bytes)} here, unsharded (its parts add up to "
            f"{bytes_h(mem.accelerate.components_sum_bytes)})")
    if w.precision is Precision.FP8:
        b = mem.states.weight_bytes_per_param
        key["FP8 weights and gradients"] = (
            f"stored in {w.fp8_storage} ({b:g} + {b:g} + {mem.states.optimizer_bytes_per_param:g} "
            "B/param; " + ("MS-AMP O2 / TE fp8_model_init)" if w.fp8_storage == "fp8" else
                           "Transformer Engine's default, FP8 only in the GEMMs)"))
    if par.offload != "none":
        key["offloaded to host memory"] = (f"{bytes_h(_offloaded(w, mem))} per GPU "
                                           f"({par.offload}; ZeRO-Offload)")
    return key


def _found(*findings: Finding | None) -> list[Finding]:
    return [f for f in findings if f is not None]


def _tensor_spans_nodes(w: WorkloadSpec, hw: ResolvedPool) -> Finding | None:
    """TP beyond the NVLink domain runs (Megatron allows it), its all-reduces on the fabric:
    a warning with the step's cost in the plan, not a refusal."""
    tp, domain = w.parallelism.tensor, hw.nvlink_gpus
    if tp <= domain:
        return None
    where = (f"its {domain}-GPU NVLink domain" if hw.rack_scale
             else f"nodes ({domain} GPUs per node)")
    return Finding(
        severity="warning", subject=f"workload {w.name}",
        message=f"tensor parallelism {tp} spans {where}: "
                "its two all-reduces per layer cross the node network",
        fix=f"keep parallelism.tensor ≤ {domain} and add pipeline stages")


def _over_target(w: WorkloadSpec, gp: goodput.Goodput) -> Finding | None:
    days = gp.wall_seconds / 86400
    if w.slo.target_days is None or days <= w.slo.target_days * 1.001:
        return None
    return Finding(severity="warning", subject=f"workload {w.name}",
                   message=f"takes {days:.1f} days with checkpoints and "
                           f"interruptions, over the {w.slo.target_days:g}-day "
                           "target (GPUs are sized on compute time)",
                   fix="raise parallelism.data or drop slo.targetDays")


def _gpus_needed(w: WorkloadSpec, hw: ResolvedPool, arch: Arch, tokens: float,
                 speed: layout.Speed) -> training.GpusNeeded | None:
    """GPUs for the target time (whole replicas, whole nodes); None without a target (the
    layout's product then)."""
    par = w.parallelism
    if w.slo.target_days is None:
        return None
    return training.gpus_for_target_time(
        tokens=tokens, params=arch.active_params, target_seconds=w.slo.target_days * 86400,
        parallelism=layout.Parallelism(tp=par.tensor, pp=par.pipeline, cp=par.context,
                                       ep=par.expert),
        gpus_per_node=hw.gpus_per_node, speed=speed)


def _memory(w: WorkloadSpec, arch: Arch, hw: ResolvedPool, *, dp: int, micro_steps: int,
            ) -> tuple[FullMemory | LoraMemory, training.CheckpointSize]:
    """Memory per GPU and the checkpoint."""
    if w.kind is WorkloadKind.LORA:
        return _lora_memory(w, arch)
    mem = _full_memory(w, arch, hw, dp=dp, micro_steps=micro_steps)
    return mem, training.checkpoint_size(arch.params, precision=w.precision.value,
                                         optimizer=OPTIMIZER[w.optimizer],
                                         fp8_storage=w.fp8_storage)


def _over_memory(w: WorkloadSpec, hw: ResolvedPool, mem: FullMemory | LoraMemory
                 ) -> Finding | None:
    """Over the GPU's memory is an error with the knobs to turn, not a silent re-plan."""
    total = sum(mem.per_gpu.values())
    if total <= hw.gpu_memory_bytes:
        return None
    fix = ("raise parallelism.tensor/pipeline (shards the base), or set lora.quantizedBase"
           if isinstance(mem, LoraMemory) else
           "raise parallelism.zeroStage, tensor, pipeline, context or expert, lower "
           "microBatch, or set recompute: full")
    return Finding(
        severity="error", subject=f"workload {w.name}",
        message=f"needs {bytes_h(total)} per GPU; {gpu_of(hw).name} has "
                f"{bytes_h(hw.gpu_memory_bytes)}",
        fix=fix)


def _bubble(w: WorkloadSpec, micro_steps: int) -> float:
    """Narayanan et al. 2021: 1F1B idles (p−1)/m of the step (eq. 1), interleaved with v
    model chunks per stage (p−1)/(m·v) (eq. 2)."""
    return (w.parallelism.pipeline - 1) / (micro_steps * w.parallelism.virtual_stages)


def _bubble_figure(w: WorkloadSpec, micro_steps: int) -> str:
    v = w.parallelism.virtual_stages
    schedule = "1F1B" if v == 1 else f"interleaved 1F1B, {v} chunks per stage"
    return f"{_bubble(w, micro_steps):.0%} of the step ((p−1)/(m·v), {schedule})"


def _bubble_finding(w: WorkloadSpec, micro_steps: int) -> Finding | None:
    """A tenth of the step or more idle is a finding."""
    pp, v = w.parallelism.pipeline, w.parallelism.virtual_stages
    bubble = _bubble(w, micro_steps)
    if pp == 1 or bubble <= 0.1:
        return None
    return Finding(
        severity="warning", subject=f"workload {w.name}",
        message=f"pipeline bubble (p−1)/(m·v) = ({pp}−1)/({micro_steps}·{v}) = "
                f"{bubble:.0%} of each step idles (Narayanan et al. 2021, eq. 1-2)",
        fix="raise parallelism.globalBatch (more micro-batches per step), "
            "virtualStages (interleaving), or lower pipeline")


def _utilisation(w: WorkloadSpec, arch: Arch, *, seq: int, tokens_per_gpu_s: float,
                 peak: float, convention: str) -> str:
    """MFU and HFU derived back from the tokens/s the run achieves (both conventions)."""
    def util(k: float) -> float:
        f = training.training_flops_per_token(
            params=arch.active_params, layers=arch.layers, attention_dim=arch.shape.attention_dim,
            seq_len=seq, flops_per_param_token=k)
        return f.flops_per_token * tokens_per_gpu_s / (peak * 1e12)

    hw_k = 8.0 if w.parallelism.recompute.value == "full" else 6.0
    return f"{util(6.0):.0%} / {util(hw_k):.0%} ({convention})"


def _moe_default_mfu(w: WorkloadSpec, arch: Arch) -> Finding | None:
    """A mixture of experts planned at the dense default MFU: published MoE runs span 12 % of
    the FP8 peak to 43 % of the BF16 one, so the default can be 3x optimistic."""
    given = {"mfu", "achieved_tflops_per_gpu", "hfu"} & w.model_fields_set
    if arch.moe is None or given:
        return None
    return Finding(
        severity="info", subject=f"workload {w.name}",
        message=f"{arch.name} is a mixture of experts planned at the dense default MFU "
                f"{w.mfu:.0%}: published MoE pre-training reaches 12 % of the FP8 peak "
                "(DeepSeek-V3 on 256 B200, Megatron-Bridge 25.11: 557 TFLOP/s) to about 43 % "
                "of the BF16 peak (DeepSeek-V3's own run on H800, its technical report)",
        fix="set mfu or achievedTflopsPerGpu from a measurement of this model and stack")


def _throughput(w: WorkloadSpec, peak: float, lora: bool) -> tuple[float, float, str]:
    """(FLOPs per parameter and token, achieved TFLOP/s per GPU, the convention in words).

    MFU counts model FLOPs: 6 per parameter and token (PaLM, Chowdhery et al. 2022, app. B).
    Measured TFLOP/s and HFU count what the hardware ran, the recomputed forward pass too:
    8 with full recomputation, 6 without (Narayanan et al. 2021, eq. 4; Korthikanti et al.
    2022 report both). LoRA skips the frozen base's weight gradients: 4, 6 recomputed.
    """
    full = w.parallelism.recompute.value == "full"
    if lora:
        k_model = k_hw = 6.0 if full else 4.0
    else:
        k_model, k_hw = 6.0, (8.0 if full else 6.0)
    if w.achieved_tflops_per_gpu is not None:
        if w.achieved_tflops_per_gpu > peak:
            raise InputError(
                f"workload {w.name}: achievedTflopsPerGpu ({w.achieved_tflops_per_gpu:g}) is "
                f"above the GPU's dense peak ({peak:g} TFLOP/s at {w.precision.value}) (fix: "
                "give the measured dense TFLOP/s (no sparsity), or the precision it ran at)")
        return k_hw, w.achieved_tflops_per_gpu, f"measured, {k_hw:g}·N per token"
    if w.hfu is not None:
        return k_hw, w.hfu * peak, f"HFU {w.hfu:.0%}, {k_hw:g}·N per token"
    return k_model, w.mfu * peak, f"MFU {w.mfu:.0%}, {k_model:g}·N per token"


def _goodput(w: WorkloadSpec, compute_s: float, nodes: int, write_s: float,
             ) -> tuple[goodput.Goodput, Finding | None]:
    """Interruptions, checkpoints and restarts added to the compute time; a finding when the
    configured interval is far from the Young/Daly optimum."""
    ck = w.checkpoint
    gp = goodput.goodput(
        compute_seconds=compute_s, nodes=nodes,
        interruptions_per_node_year=ck.interruptions_per_node_year,
        checkpoint_seconds=write_s, restart_seconds=ck.restart_minutes * 60,
        interval_seconds=ck.interval_minutes * 60)
    best_min = gp.young_daly_interval_seconds / 60
    if 0.5 <= ck.interval_minutes / best_min <= 2 or compute_s <= gp.mtbf_seconds:
        return gp, None
    return gp, Finding(
            severity="info", subject=f"workload {w.name}",
            message=f"checkpoint every {ck.interval_minutes:g} min; with an interruption "
                    f"every {gp.mtbf_seconds / 3600:.3g} h on {nodes} nodes the Young/Daly "
                    f"optimum is {best_min:.0f} min (goodput {gp.goodput:.1%})",
            fix=f"set checkpoint.intervalMinutes near {best_min:.0f}")


def _default_global_batch(unit: int, seq: int) -> int:
    """About TOKENS_PER_STEP tokens, rounded up to whole micro-batches on every DP rank."""
    return max(1, math.ceil(TOKENS_PER_STEP / seq / unit)) * unit


def check_layout(w: WorkloadSpec, arch: Arch) -> None:
    """Refuse layouts no framework can run (exit 2): the rule, and the fix."""
    par = w.parallelism
    where = f"workload {w.name}: parallelism"
    if par.pipeline > arch.layers:
        raise InputError(f"{where}.pipeline ({par.pipeline}) exceeds {arch.name}'s "
                         f"{arch.layers} layers (a stage holds at least one) (fix: "
                         f"pipeline ≤ {arch.layers})")
    if arch.heads % par.tensor:
        raise InputError(f"{where}.tensor ({par.tensor}) does not divide {arch.name}'s "
                         f"{arch.heads} attention heads (fix: use a divisor of {arch.heads})")
    if par.sequence_length % par.context:
        raise InputError(f"{where}.context ({par.context}) does not divide sequenceLength "
                         f"({par.sequence_length}) (fix: a divisor of the sequence length)")
    if par.expert > 1 and arch.moe is None:
        raise InputError(f"{where}.expert ({par.expert}) is set but {arch.name} is dense "
                         "(fix: remove parallelism.expert, or give model.experts)")
    if arch.moe is not None and arch.moe.experts % par.expert:
        raise InputError(f"{where}.expert ({par.expert}) does not divide the "
                         f"{arch.moe.experts} experts (fix: a divisor of {arch.moe.experts})")


def check_data_parallel(w: WorkloadSpec, arch: Arch, dp: int) -> None:
    par = w.parallelism
    where = f"workload {w.name}: parallelism"
    if dp % par.expert:
        raise InputError(f"{where}.expert ({par.expert}) does not divide the data-parallel "
                         f"degree {dp} (experts are sharded over data-parallel ranks) (fix: "
                         f"parallelism.data a multiple of {par.expert})")
    unit = par.micro_batch * dp
    gb = par.global_batch
    if gb is not None and gb % unit:
        up = max(1, math.ceil(gb / unit)) * unit
        raise InputError(
            f"{where}.globalBatch ({gb}) is not a multiple of microBatch ({par.micro_batch}) × "
            f"data parallel ({dp}) = {unit}: every rank must run whole micro-batches (fix: "
            f"globalBatch {up}, or a smaller microBatch or data parallelism)")


def _precisions(w: WorkloadSpec) -> layout.Precisions:
    return layout.Precisions(weights=w.precision.value, optimizer=OPTIMIZER[w.optimizer])


def _states(
    w: WorkloadSpec, params: float, dp: int, shard: int, pp: int
) -> memory.ModelStateMemory:
    return memory.model_state_memory(params, _precisions(w), layout.Parallelism(
        tp=shard, pp=pp, dp=dp, zero_stage=w.parallelism.zero_stage),
        fp8_storage=w.fp8_storage)


def _activations(w: WorkloadSpec, arch: Arch, microbatches: int | None,
                 pp: int) -> memory.ActivationMemory:
    """Activations of seq/cp tokens per GPU with FlashAttention (no score matrices); a
    mixture of experts counts its experts per token in the MLP part."""
    par = w.parallelism
    batch = layout.TrainingBatch(seq_len=par.sequence_length // par.context,
                                 micro_batch=par.micro_batch, microbatches=microbatches,
                                 recompute=par.recompute.value)
    return memory.activation_memory(arch.shape, batch, layout.Parallelism(tp=par.tensor, pp=pp),
                                    flash_attention=True)


def _offloaded(w: WorkloadSpec, mem: FullMemory) -> float:
    """Host bytes per GPU under offload: the states ``_full_memory`` moved off the GPU."""
    parts = [p for p in (mem.states, mem.expert_states) if p is not None]
    moved = sum(p.optimizer_bytes for p in parts)
    if w.parallelism.offload == "optimizer-and-params" and w.parallelism.zero_stage == 3:
        moved += sum(p.weights_bytes for p in parts)
    return moved


def _check_host_memory(w: WorkloadSpec, hw: ResolvedPool, host_per_gpu: float) -> None:
    need = host_per_gpu * hw.gpus_per_node
    have = hw.spec.node.memory_gib * 2**30
    if need > 0.8 * have:
        raise InputError(
            f"workload {w.name}: parallelism.offload puts {bytes_h(need)} of optimizer state "
            f"in each node's host memory; a {hw.name} node has {bytes_h(have)} (80 % "
            "usable) (fix: raise zeroStage or data parallelism, or offload: none)")


def _full_memory(w: WorkloadSpec, arch: Arch, hw: ResolvedPool, *, dp: int, micro_steps: int,
                 ) -> FullMemory:
    """States: the dense part over tp × pp and ZeRO over dp × cp; routed experts over
    tp × pp × ep and ZeRO over the dp·cp/ep ranks holding the same experts (Megatron-Core's
    expert-data-parallel group). Context-parallel ranks hold the same weights and gradients,
    so Megatron's distributed optimizer shards over the data-parallel group *with* context
    parallelism (``get_data_parallel_group(with_context_parallel=True)``), as do ZeRO-2/3 and
    Megatron FSDP. Activations of seq/cp tokens per GPU, FlashAttention (no score matrices)."""
    par = w.parallelism
    shape = arch.shape
    shards = dp * par.context
    dense = _states(w, shape.always_read_params if arch.moe else arch.params, shards,
                    par.tensor, par.pipeline)
    experts = None if arch.moe is None else _states(
        w, shape.routed_expert_params * arch.moe.experts, shards // par.expert,
        par.tensor * par.expert, par.pipeline)
    parts = [p for p in (dense, experts) if p is not None]
    acts = _activations(w, arch, micro_steps, par.pipeline)
    mem = {
        "weights": sum(p.weights_bytes for p in parts),
        "gradients": sum(p.gradients_bytes for p in parts),
        "optimizer": sum(p.optimizer_bytes for p in parts),
        "activations": acts.total_bytes,
    }
    if par.offload != "none":
        # ZeRO-Offload (Ren et al. 2021, arXiv:2101.06840): the optimizer states, fp32 master
        # copy included, live and update in host memory; the GPU keeps 16-bit weights and
        # gradients. With optimizer-and-params (ZeRO-Infinity) ZeRO-3's weight shard moves too.
        host = mem.pop("optimizer")
        if par.offload == "optimizer-and-params" and par.zero_stage == 3:
            host += mem.pop("weights")
        _check_host_memory(w, hw, host)
    mem["overhead"] = _allowance(mem)
    out = FullMemory(per_gpu=mem, states=dense, expert_states=experts, activations=acts)
    if par.tensor == par.pipeline == par.context == 1 and arch.moe is None and par.zero_stage:
        return _with_estimators(w, arch, dp, out)
    return out


def _with_estimators(w: WorkloadSpec, arch: Arch, dp: int, mem: FullMemory) -> FullMemory:
    """Pure data parallelism: DeepSpeed's estimator applies (and accelerate's for the
    precisions it knows); their figures go beside ours."""
    m = mem.per_gpu
    deepspeed = memory.deepspeed_model_states(
        arch.params, largest_layer_params=arch.vocab * arch.hidden, gpus=dp,
        zero_stage=w.parallelism.zero_stage,
        aiplat_bytes=m["weights"] + m["gradients"] + m["optimizer"])
    accelerate = None
    if w.precision.value in memory.ACCELERATE_COMPONENTS:
        whole = _states(w, arch.params, dp=1, shard=1, pp=1)
        accelerate = memory.accelerate_training_estimate(
            arch.params, precision=w.precision.value, aiplat_bytes=whole.weights_bytes
            + whole.gradients_bytes + whole.optimizer_bytes, fp8_storage=w.fp8_storage)
    return replace(mem, deepspeed=deepspeed, accelerate=accelerate)


def _allowance(mem: dict[str, float]) -> float:
    return layout.DEFAULT_ALLOWANCE.of(sum(mem.values()))


LORA_TARGETS = {"qv": ("q", "v"), "attention": ("q", "k", "v", "o"),
                "all-linear": memory.LORA_TARGETS}


def _lora_adapters(arch: Arch, spec_lora: LoraSpec) -> tuple[memory.LoraParams, float]:
    """Adapter parameters: ``lora_params`` for a dense decoder; a mixture of experts adapts
    attention once per layer and the gate/up/down of every routed and shared expert."""
    targets = LORA_TARGETS[spec_lora.target]
    moe = arch.moe
    attention = tuple(t for t in targets if t in ("q", "k", "v", "o"))  # every option has q
    lora = memory.lora_params(
        layers=arch.layers, hidden=arch.hidden, ffn_hidden=arch.ffn_hidden, heads=arch.heads,
        kv_heads=arch.kv_heads, rank=spec_lora.rank,
        targets=targets if moe is None else attention)
    n = float(lora.adapter_params)
    if moe is not None and "up" in targets:
        r, h = spec_lora.rank, arch.hidden
        expert_f = arch.expert_ffn_hidden or arch.ffn_hidden
        per_expert = 3 * r * (h + expert_f)  # gate, up (h -> f) and down (f -> h)
        moe_layers = arch.layers - arch.dense_layers
        n += moe_layers * (moe.experts + moe.shared_experts) * per_expert
        n += arch.dense_layers * 3 * r * (h + arch.ffn_hidden)
    return lora, n


def _lora_memory(w: WorkloadSpec, arch: Arch) -> tuple[LoraMemory, training.CheckpointSize]:
    """The base sharded over tp × pp (FSDP style), adapters replicated; the checkpoint holds
    the adapters and their optimizer states only (the base is not trained). QLoRA stores
    every linear weight in NF4 and the embedding and LM head (2·V·h) in 16 bits, as
    bitsandbytes does; adapters bf16 with fp32 AdamW states, no master copy (QLoRA's set-up)."""
    par = w.parallelism
    spec_lora = w.lora or LoraSpec()  # kind lora without settings: the spec's defaults
    lora, adapters = _lora_adapters(arch, spec_lora)
    base_w = precision_bytes(w.precision.value)
    if spec_lora.quantized_base:
        kept = min(arch.params, 2.0 * arch.vocab * arch.hidden)
        base = (arch.params - kept) * memory.nf4_bytes_per_param() + kept * base_w
    else:
        base = arch.params * base_w
    aw = precision_bytes("bf16")
    acts = _activations(w, arch, None, 1)
    mem = {
        "weights": base / (par.tensor * par.pipeline),
        "adapters": adapters * aw,
        "gradients": adapters * aw,
        "optimizer": adapters * memory.optimizer_state_bytes("adamw"),
        "activations": acts.total_bytes,
    }
    mem["overhead"] = _allowance(mem)
    ckpt = training.checkpoint_size(adapters, precision="bf16", optimizer="adam",
                                    master_weights=False)
    return LoraMemory(per_gpu=mem, lora=lora, activations=acts), ckpt


class Layout(NamedTuple):
    """GPUs, data-parallel degree, global batch and micro-batches per step of one run."""

    gpus: int
    dp: int
    global_batch: int
    micro_steps: int


def _layout(w: WorkloadSpec, arch: Arch, hw: ResolvedPool,
            need: training.GpusNeeded | None) -> Layout:
    par = w.parallelism
    tp, pp, cp = par.tensor, par.pipeline, par.context
    gpus = need.gpus if need is not None else tp * pp * cp * (par.data or 1)
    dp = gpus // (tp * pp * cp)
    check_data_parallel(w, arch, dp)
    global_batch = par.global_batch or _default_global_batch(dp * par.micro_batch,
                                                             par.sequence_length)
    return Layout(gpus, dp, global_batch, global_batch // (par.micro_batch * dp))


def _batch_fit(w: WorkloadSpec, hw: ResolvedPool, need: training.GpusNeeded | None,
               ) -> training.GpusNeeded | None:
    """The first GPU count from ``need`` up (in whole replicas and nodes, to twice it) whose
    data parallelism runs the spec's globalBatch in whole micro-batches; None if none does."""
    par = w.parallelism
    if need is None:
        return None
    replica = par.tensor * par.pipeline * par.context
    unit = math.lcm(replica * par.expert, hw.gpus_per_node)
    gb = par.global_batch
    gpus = need.gpus
    while gpus <= 2 * need.gpus:
        dp = gpus // replica
        if dp % par.expert == 0 and (gb is None or gb % (par.micro_batch * dp) == 0):
            seconds = need.seconds * need.gpus / gpus
            return need.model_copy(update={"gpus": gpus, "data_parallel": dp,
                                           "seconds": seconds,
                                           "days": seconds / training.SECONDS_PER_DAY})
        gpus += unit
    return None


def _slowed(speed: layout.Speed, slowdown: float) -> layout.Speed:
    x = speed.achieved_tflops_per_gpu
    assert x is not None  # the plan always passes the achieved rate
    return replace(speed, achieved_tflops_per_gpu=x / slowdown)


@dataclass(frozen=True)
class Links:
    """Bandwidth per GPU, one direction, of the link each kind of traffic crosses, and the
    link's name: the GPU's own interconnect (NVLink, or PCIe where the GPU has no NVLink)
    inside a node, the pool's hpc fabric between nodes."""

    tp: tuple[float, str]
    pp: tuple[float, str]
    ep: tuple[float, str]
    dp: tuple[float, str]


def _links(w: WorkloadSpec, hw: ResolvedPool, gpus: int) -> Links:
    """Megatron's rank order (tensor fastest, then context, expert/data, pipeline): a group
    stays on NVLink while the ranks it spans fit one NVLink domain (a node, or a rack-scale
    system's whole domain: 72 GPUs on a GB200 NVL72)."""
    par = w.parallelism
    gpu = gpu_of(hw)
    n = hw.nvlink_gpus
    inside = (gpu.interconnect_gbps / 2 * 1e9, gpu.interconnect)  # one direction
    fabric_bps = hw.hpc_bytes_per_second_per_gpu()
    across = (fabric_bps, "the hpc fabric") if fabric_bps else inside

    def link(span: int) -> tuple[float, str]:
        return inside if span <= n else across

    # Pipeline stages and data-parallel replicas are the outer dimensions: they stay inside
    # a node only when the whole run does.
    return Links(tp=link(par.tensor), pp=link(gpus),
                 ep=link(par.tensor * par.context * par.expert), dp=link(gpus))


@dataclass(frozen=True)
class Communication:
    """The model-parallel traffic, the gradient reduction and the step they make."""

    links: Links
    model_parallel: training.ModelParallelTraffic | None
    allreduce: training.AllReduceBandwidth | None
    step: training.StepCommunication
    held_params: float  # parameters whose gradients one GPU reduces
    grad_group: int  # ranks it reduces them over: data × context parallelism


def _communication(w: WorkloadSpec, arch: Arch, hw: ResolvedPool, lay: Layout,
                   speed: layout.Speed) -> Communication:
    """Traffic of one step over the links it crosses, and the step's time with it.

    The compute is the step at the assumed rate (MFU, HFU); a measured achievedTflopsPerGpu
    already holds its run's communication, so nothing is added to it.
    """
    par = w.parallelism
    seq = par.sequence_length
    compute = training.training_time(tokens=lay.global_batch * seq, params=arch.active_params,
                                     gpus=lay.gpus, speed=speed).seconds
    links = _links(w, hw, lay.gpus)
    mp = None
    if par.tensor > 1 or par.pipeline > 1 or par.expert > 1:
        moe = None if arch.moe is None else training.MoeTraffic(
            moe_layers_per_stage=math.ceil((arch.layers - arch.dense_layers) / par.pipeline),
            experts_per_token=arch.moe.experts_per_token, link_bytes_per_second=links.ep[0])
        mp = training.model_parallel_traffic(
            layout.TrainingBatch(seq_len=seq // par.context, micro_batch=par.micro_batch,
                                 microbatches=lay.micro_steps, recompute=par.recompute.value),
            layout.Parallelism(tp=par.tensor, pp=par.pipeline, ep=par.expert),
            hidden=arch.hidden, layers_per_stage=math.ceil(arch.layers / par.pipeline),
            links_bytes_per_second=(links.tp[0], links.pp[0]), moe=moe)
    ar = None
    # A GPU reduces the gradients it holds: the dense part and its 1/ep of the experts, over
    # the data-parallel group with context parallelism (Megatron's dp-cp group).
    shape = arch.shape
    held = (shape.always_read_params + shape.routed_expert_params * arch.moe.experts
            / par.expert) if arch.moe else arch.params
    group = lay.dp * par.context
    if lay.dp > 1 and w.kind is not WorkloadKind.LORA:  # LoRA's adapters' gradients are tiny
        ar = training.gradient_allreduce_bandwidth(
            params=held, dp=group, step_seconds=compute, tp=par.tensor,
            pp=par.pipeline, zero_stage=par.zero_stage,
            # other precisions all-reduce 16-bit gradients; FP8's follow fp8Storage
            grad_precision="fp8" if w.precision is Precision.FP8 else "bf16",
            fp8_storage=w.fp8_storage)
    if w.achieved_tflops_per_gpu is not None:
        step = training.step_with_communication(compute_seconds=compute)
    else:
        step = training.step_with_communication(
            compute_seconds=compute, traffic=mp,
            dp_seconds=ar.bytes_sent_per_gpu / links.dp[0] if ar else 0.0,
            overlap=training.Overlap(tp=par.tensor_overlap, ep=par.expert_overlap))
    return Communication(links=links, model_parallel=mp, allreduce=ar, step=step,
                         held_params=held, grad_group=group)


def _model_parallel_comm(w: WorkloadSpec, hw: ResolvedPool, comm: Communication
                         ) -> Traffic | None:
    traffic, step = comm.model_parallel, comm.step
    if traffic is None:
        return None
    exposed = step.tp_exposed_seconds + step.pp_exposed_seconds + step.ep_exposed_seconds
    total = traffic.tp_seconds + traffic.pp_seconds + traffic.ep_seconds
    share = exposed / step.seconds
    tp_bw, tp_link = comm.links.tp
    figure = ("TP/PP/EP communication",
              f"{total:.3g} s per step, {exposed:.3g} s of the {step.seconds:.3g}-s step "
              f"exposed ({share:.0%}; TP over {tp_link})")
    finding = None if share <= 0.25 else Finding(
            severity="warning", subject=f"workload {w.name}",
            message=f"model-parallel traffic takes {share:.0%} of the {step.seconds:.3g}-s "
                    f"step (tensor parallelism {w.parallelism.tensor} over {tp_link} at "
                    f"{tp_bw / 1e9:.0f} GB/s, {w.parallelism.tensor_overlap:.0%} of it "
                    "overlapped): the step and run times "
                    "include it, so MFU falls to what the step reaches",
            fix="keep tensor parallelism inside an NVLink domain (fewer TP ranks, or "
                "pipeline or data parallelism instead), or measure achievedTflopsPerGpu")
    return Traffic("model_parallel_traffic", traffic, figure, finding)


def _allreduce(w: WorkloadSpec, hw: ResolvedPool, comm: Communication, *, nodes: int,
               step_seconds: float) -> Traffic | None:
    if comm.allreduce is None:
        return None
    par = w.parallelism
    ar = training.gradient_allreduce_bandwidth(
        params=comm.held_params, dp=comm.grad_group,
        step_seconds=step_seconds, tp=par.tensor, pp=par.pipeline, zero_stage=par.zero_stage,
        grad_precision="fp8" if w.precision is Precision.FP8 else "bf16",
        fp8_storage=w.fp8_storage)
    have = hw.hpc_bytes_per_second_per_gpu()
    finding = None if nodes == 1 or ar.bandwidth_bps <= have else Finding(
            severity="warning", subject=f"workload {w.name}",
            message=f"gradient all-reduce needs {rate_h(ar.bandwidth_bps)} per GPU; the "
                    f"pool's hpc NICs give {rate_h(have)} per GPU",
            fix="add hpc NIC bandwidth, raise the global batch, or overlap communication")
    return Traffic("allreduce", ar, ("all-reduce per GPU", rate_h(ar.bandwidth_bps)), finding)


def _dataset_bytes(w: WorkloadSpec, estimated: float) -> float:
    return w.data.dataset_size_gb * 1e9 if w.data.dataset_size_gb else estimated


def dump_results(results: dict[str, Result]) -> dict[str, dict[str, Any]]:
    return {k: r.model_dump(mode="json") for k, r in results.items()}
