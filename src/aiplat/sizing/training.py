"""Training compute, time, GPU count, checkpoint, dataset and gradient-traffic sizing.

Design. Compute follows Narayanan et al. 2021, "Efficient Large-Scale Language Model Training
on GPU Clusters Using Megatron-LM" (SC21, arXiv:2104.04473), section 5.1:

* parameters  P = 12*l*h^2 * (1 + 13/(12h) + (V + s)/(12*l*h));
* FLOPs per iteration (eq. 3, with activation recomputation)
  F = 96*B*s*l*h^2 * (1 + s/(6h) + V/(16*l*h)); without recomputation the transformer part
  is three forward passes instead of four, F = 72*B*s*l*h^2 * (1 + s/(6h) + V/(12*l*h))
  (the logit layer's 6*B*s*h*V is the same in both);
* end-to-end time  ~ 8*T*P/(n*X) with recomputation, 6*T*P/(n*X) without (eq. 4).

X, the achieved FLOP/s per GPU, comes either as measured TFLOP/s or as MFU x peak. The
two count different FLOPs: Narayanan's X counts the recomputed forward pass (8 FLOPs per
parameter and token with full recomputation), while MFU counts model FLOPs only (6 per
parameter and token, as PaLM (Chowdhery et al. 2022) defines it; Korthikanti et al. 2022
report both, as MFU and HFU). ``flops_per_param_token`` therefore defaults to 8 for
TFLOP/s and to 6 for MFU; pass it to override.

The storage and network figures are plain dimensional arithmetic, with their assumptions
written in the results: a checkpoint holds weights plus optimizer states (with the fp32
master copy); the blocking write must fit in a share of the checkpoint interval; a
data-parallel ring all-reduce sends 2*(n-1)/n of the gradient bytes from each GPU, the
quantity nccl-tests reports as bus bandwidth (nccl-tests doc/PERFORMANCE.md); ZeRO-3 adds
a parameter all-gather, 1.5x the traffic (ZeRO paper, section 7).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aiplat.errors import InputError
from aiplat.sizing.layout import SINGLE_GPU, Parallelism, Speed, TrainingBatch
from aiplat.sizing.memory import (
    MASTER_WEIGHT_BYTES,
    needs_master_weights,
    optimizer_state_bytes,
    stored_bytes,
)
from aiplat.sizing.result import Result, require_positive

SECONDS_PER_DAY = 86_400.0
TERA = 1e12

BYTES_PER_TOKEN: dict[str, float] = {
    "uint16": 2.0,
    "uint32": 4.0,
    "raw_text": 4.0,
}
"""Dataset bytes per token. Tokenized: token ids as uint16 (vocabularies up to 65,536) or
uint32. Raw English text: about 4 characters per token (OpenAI's rule of thumb for its
tokenizers), about 1 byte per character in UTF-8; other scripts take more bytes."""

DEFAULT_BYTES_PER_TOKEN = BYTES_PER_TOKEN["uint32"]


class ParamCount(Result):
    params: float


def transformer_params(*, layers: int, hidden: int, vocab: int, seq_len: int) -> ParamCount:
    """GPT parameter count, Narayanan et al. 2021 section 5.1 (4h MLP, learned positions)."""
    require_positive(layers=layers, hidden=hidden, vocab=vocab, seq_len=seq_len)
    n, h = layers, hidden
    p = 12 * n * h**2 * (1 + 13 / (12 * h) + (vocab + seq_len) / (12 * n * h))
    return ParamCount(
        formula="P = 12*l*h^2*(1 + 13/(12h) + (V+s)/(12*l*h)) (Narayanan et al. 2021, 5.1)",
        inputs={"layers": layers, "hidden": hidden, "vocab": vocab, "seq_len": seq_len},
        params=p,
    )


class IterationFlops(Result):
    flops: float


def iteration_flops(
    *,
    global_batch: int,
    seq_len: int,
    layers: int,
    hidden: int,
    vocab: int,
    full_recompute: bool = True,
) -> IterationFlops:
    """FLOPs of one training iteration (Narayanan et al. 2021, eq. 3; 72-variant without)."""
    require_positive(global_batch=global_batch, seq_len=seq_len, layers=layers, hidden=hidden)
    require_positive(vocab=vocab)
    b, s, n, h, v = global_batch, seq_len, layers, hidden, vocab
    if full_recompute:
        f = 96 * b * s * n * h**2 * (1 + s / (6 * h) + v / (16 * n * h))
        formula = "F = 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)) (Narayanan et al. 2021, eq. 3)"
    else:
        f = 72 * b * s * n * h**2 * (1 + s / (6 * h) + v / (12 * n * h))
        formula = "F = 72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h)) (eq. 3 without recomputation)"
    return IterationFlops(
        formula=formula,
        inputs={
            "global_batch": global_batch,
            "seq_len": seq_len,
            "layers": layers,
            "hidden": hidden,
            "vocab": vocab,
            "full_recompute": full_recompute,
        },
        flops=f,
    )


def _per_gpu_flops(
    achieved_tflops_per_gpu: float | None, mfu: float | None, peak_tflops_per_gpu: float | None
) -> tuple[float, bool]:
    """X in FLOP/s, and whether it came from MFU (model FLOPs only)."""
    if achieved_tflops_per_gpu is not None:
        if mfu is not None:
            raise InputError("give either achieved_tflops_per_gpu or mfu with peak, not both")
        require_positive(achieved_tflops_per_gpu=achieved_tflops_per_gpu)
        return achieved_tflops_per_gpu * TERA, False
    if mfu is None or peak_tflops_per_gpu is None:
        raise InputError(
            "throughput missing: give achieved_tflops_per_gpu (measured), "
            "or mfu (0-1) together with peak_tflops_per_gpu (the GPU's dense peak)"
        )
    if not 0 < mfu <= 1:
        raise InputError(f"mfu is a fraction in (0, 1], got {mfu!r}")
    require_positive(peak_tflops_per_gpu=peak_tflops_per_gpu)
    return mfu * peak_tflops_per_gpu * TERA, True


class Throughput(Result):
    per_gpu_flops_per_second: float
    aggregate_flops_per_second: float


def aggregate_throughput(
    *,
    gpus: int,
    achieved_tflops_per_gpu: float | None = None,
    mfu: float | None = None,
    peak_tflops_per_gpu: float | None = None,
) -> Throughput:
    """Aggregate FLOP/s = n x X (Narayanan et al. 2021, Table 1's last column)."""
    require_positive(gpus=gpus)
    x, _ = _per_gpu_flops(achieved_tflops_per_gpu, mfu, peak_tflops_per_gpu)
    return Throughput(
        formula="aggregate = n x X",
        inputs={
            "gpus": gpus,
            "achieved_tflops_per_gpu": achieved_tflops_per_gpu,
            "mfu": mfu,
            "peak_tflops_per_gpu": peak_tflops_per_gpu,
        },
        per_gpu_flops_per_second=x,
        aggregate_flops_per_second=gpus * x,
    )


class IterationTime(Result):
    flops: float
    aggregate_flops_per_second: float
    seconds: float


def iteration_time(
    *,
    global_batch: int,
    seq_len: int,
    layers: int,
    hidden: int,
    vocab: int,
    gpus: int,
    achieved_tflops_per_gpu: float | None = None,
    mfu: float | None = None,
    peak_tflops_per_gpu: float | None = None,
    full_recompute: bool | None = None,
) -> IterationTime:
    """Seconds per iteration = F / (n x X).

    ``full_recompute`` picks the 96 or 72 form of F; by default 96 for measured TFLOP/s (which
    count the recomputation) and 72 for MFU (which does not).
    """
    x, from_mfu = _per_gpu_flops(achieved_tflops_per_gpu, mfu, peak_tflops_per_gpu)
    rc = (not from_mfu) if full_recompute is None else full_recompute
    f = iteration_flops(
        global_batch=global_batch,
        seq_len=seq_len,
        layers=layers,
        hidden=hidden,
        vocab=vocab,
        full_recompute=rc,
    )
    require_positive(gpus=gpus)
    agg = gpus * x
    return IterationTime(
        formula=f"t = F / (n*X), {f.formula}",
        inputs={
            **f.inputs,
            "gpus": gpus,
            "achieved_tflops_per_gpu": achieved_tflops_per_gpu,
            "mfu": mfu,
            "peak_tflops_per_gpu": peak_tflops_per_gpu,
        },
        flops=f.flops,
        aggregate_flops_per_second=agg,
        seconds=f.flops / agg,
    )


class TrainingTime(Result):
    flops_per_param_token: float
    total_flops: float
    aggregate_flops_per_second: float
    tokens_per_second: float
    seconds: float
    days: float


def _k(flops_per_param_token: float | None, from_mfu: bool) -> float:
    k = (6.0 if from_mfu else 8.0) if flops_per_param_token is None else flops_per_param_token
    require_positive(flops_per_param_token=k)
    return k


def training_time(*, tokens: float, params: float, gpus: int, speed: Speed) -> TrainingTime:
    """End-to-end time ~ T*(k*P + A) / (n*X), Narayanan et al. 2021 eq. 4 when A = 0.

    k = 8 with activation recomputation (the default for measured TFLOP/s), 6 without
    (the default for MFU, which counts model FLOPs only). P is the parameters each token
    multiplies through: a mixture of experts' active count. A is the attention-score work per
    token (``training_flops_per_token``), which eq. 4 drops and long sequences cannot.
    """
    require_positive(tokens=tokens, params=params, gpus=gpus)
    x, from_mfu = _per_gpu_flops(speed.achieved_tflops_per_gpu, speed.mfu,
                                 speed.peak_tflops_per_gpu)
    k = _k(speed.flops_per_param_token, from_mfu)
    per_token = k * params + speed.attention_flops_per_token
    total = tokens * per_token
    agg = gpus * x
    seconds = total / agg
    return TrainingTime(
        formula="t = T*(k*P + A)/(n*X), k = 8 with recomputation, 6 without, A attention "
                "(Narayanan 2021, eq. 4 with A = 0)",
        inputs={
            "tokens": tokens,
            "params": params,
            "gpus": gpus,
            **_speed_inputs(speed, k),
        },
        flops_per_param_token=k,
        total_flops=total,
        aggregate_flops_per_second=agg,
        tokens_per_second=agg / per_token,
        seconds=seconds,
        days=seconds / SECONDS_PER_DAY,
    )


class TokenFlops(Result):
    flops_per_param_token: float
    param_flops_per_token: float
    attention_flops_per_token: float
    flops_per_token: float


def training_flops_per_token(
    *, params: float, layers: int, attention_dim: int, seq_len: int,
    flops_per_param_token: float = 6.0,
) -> TokenFlops:
    """Training FLOPs per token: k*P + 2k*l*s*d_attn, one count for run time and step time.

    At k = 6 this is PaLM's MFU numerator (Chowdhery et al. 2022, appendix B: 6N + 12*L*H*Q*T,
    H*Q = heads x head dim = d_attn); at k = 8 it is Narayanan et al. 2021 eq. 3's
    96*B*s*l*h^2*(1 + s/(6h)) per token (the attention term 16*l*s*h). ``params`` is what a
    token multiplies through (a mixture of experts' active count; 6*N_active per token).
    Causal masking halves the score work that FlashAttention actually does; the convention
    counts it whole, as MFU reports do.
    """
    require_positive(params=params, layers=layers, attention_dim=attention_dim, seq_len=seq_len)
    require_positive(flops_per_param_token=flops_per_param_token)
    k = flops_per_param_token
    attention = 2 * k * layers * seq_len * attention_dim
    return TokenFlops(
        formula="k*P + 2k*l*s*d_attn (PaLM appendix B at k = 6; Narayanan 2021 eq. 3 at k = 8)",
        inputs={"params": params, "layers": layers, "attention_dim": attention_dim,
                "seq_len": seq_len, "flops_per_param_token": k},
        flops_per_param_token=k,
        param_flops_per_token=k * params,
        attention_flops_per_token=attention,
        flops_per_token=k * params + attention,
    )


class GpusNeeded(Result):
    exact_gpus: float
    model_parallel_gpus: int
    gpus: int
    data_parallel: int
    seconds: float
    days: float


def _speed_inputs(speed: Speed, k: float) -> dict[str, float | None]:
    return {
        "achieved_tflops_per_gpu": speed.achieved_tflops_per_gpu,
        "mfu": speed.mfu,
        "peak_tflops_per_gpu": speed.peak_tflops_per_gpu,
        "flops_per_param_token": k,
        "attention_flops_per_token": speed.attention_flops_per_token,
    }


def gpus_for_target_time(
    *,
    tokens: float,
    params: float,
    target_seconds: float,
    speed: Speed,
    parallelism: Parallelism = SINGLE_GPU,
    gpus_per_node: int = 1,
) -> GpusNeeded:
    """GPUs to train T tokens within ``target_seconds``: n = k*T*P/(t*X), rounded up.

    The count is rounded up to a multiple of tp x pp x cp (one model replica) times ep and of
    ``gpus_per_node`` (whole nodes); the data-parallel degree is what that leaves,
    n / (tp x pp x cp). ``seconds`` is the time the rounded count takes; ``parallelism.dp``
    is not read (it is the answer).
    """
    require_positive(tokens=tokens, params=params, target_seconds=target_seconds)
    require_positive(gpus_per_node=gpus_per_node)
    x, from_mfu = _per_gpu_flops(speed.achieved_tflops_per_gpu, speed.mfu,
                                 speed.peak_tflops_per_gpu)
    k = _k(speed.flops_per_param_token, from_mfu)
    work = tokens * (k * params + speed.attention_flops_per_token)
    exact = work / (target_seconds * x)
    # Context parallelism splits each sequence inside a replica; expert parallelism is carved
    # out of data parallelism, so the data-parallel degree must be a multiple of it.
    par = parallelism
    replica = par.model_parallel
    unit = math.lcm(replica * par.ep, gpus_per_node)
    gpus = max(unit, math.ceil(exact / unit - 1e-9) * unit)
    seconds = work / (gpus * x)
    return GpusNeeded(
        formula=(
            "n = T*(k*P + A)/(t_target*X) rounded up to a multiple of lcm(tp*pp*cp*ep, GPUs "
            "per node); dp = n/(tp*pp*cp)"
        ),
        inputs={
            "tokens": tokens,
            "params": params,
            "target_seconds": target_seconds,
            **_speed_inputs(speed, k),
            "tp": par.tp,
            "pp": par.pp,
            "gpus_per_node": gpus_per_node,
            "cp": par.cp,
            "ep": par.ep,
        },
        exact_gpus=exact,
        model_parallel_gpus=replica,
        gpus=gpus,
        data_parallel=gpus // replica,
        seconds=seconds,
        days=seconds / SECONDS_PER_DAY,
    )


class CheckpointSize(Result):
    weights_bytes: float
    optimizer_bytes: float
    total_bytes: float


def checkpoint_size(
    params: float,
    *,
    precision: str = "bf16",
    optimizer: str = "adam",
    master_weights: bool | None = None,
    include_optimizer: bool = True,
    fp8_storage: str = "bf16",
) -> CheckpointSize:
    """Checkpoint bytes: weights in ``precision`` plus optimizer states with the master copy.

    Mixed-precision Adam: 2 + 12 = 14 bytes per parameter (BLOOM-176B: 329 GB of bf16
    weights, 2.3 TB with optimizer states, both in binary units; BigScience model page).
    Gradients are not saved. A weights-only export sets ``include_optimizer=False``.
    """
    require_positive(params=params)
    # FP8 training saves the weights it keeps: 16-bit, or 1 byte with fp8_storage "fp8"
    w = stored_bytes(precision, fp8_storage)
    k = optimizer_state_bytes(optimizer)
    if needs_master_weights(precision, master_weights):
        k += MASTER_WEIGHT_BYTES
    opt = params * k if include_optimizer else 0.0
    return CheckpointSize(
        formula="P x weight bytes + P x optimizer bytes (incl. fp32 master copy)",
        inputs={
            "params": params,
            "precision": precision,
            **({"fp8_storage": fp8_storage} if precision == "fp8" else {}),
            "optimizer": optimizer,
            "master_weights": master_weights,
            "include_optimizer": include_optimizer,
        },
        weights_bytes=params * w,
        optimizer_bytes=opt,
        total_bytes=params * w + opt,
    )


class CheckpointBandwidth(Result):
    write_seconds: float
    write_bps: float
    per_writer_bps: float


def checkpoint_write_bandwidth(
    *,
    checkpoint_bytes: float,
    interval_seconds: float,
    blocking_share: float = 0.05,
    writers: int = 1,
) -> CheckpointBandwidth:
    """Write bandwidth that keeps a blocking checkpoint under a share of the interval.

    bw = size / (share x interval). With sharded checkpoints every data-parallel rank 0 of
    a model shard writes its part, so ``writers`` splits the aggregate evenly.
    """
    require_positive(checkpoint_bytes=checkpoint_bytes, interval_seconds=interval_seconds)
    require_positive(writers=writers)
    if not 0 < blocking_share <= 1:
        raise InputError(f"blocking_share is a fraction in (0, 1], got {blocking_share!r}")
    budget = blocking_share * interval_seconds
    bw = checkpoint_bytes / budget
    return CheckpointBandwidth(
        formula="bw = checkpoint bytes / (share x interval)",
        inputs={
            "checkpoint_bytes": checkpoint_bytes,
            "interval_seconds": interval_seconds,
            "blocking_share": blocking_share,
            "writers": writers,
        },
        write_seconds=budget,
        write_bps=bw,
        per_writer_bps=bw / writers,
    )


class DatasetStorage(Result):
    dataset_bytes: float
    stored_bytes: float


def dataset_storage(
    *, tokens: float, bytes_per_token: float = DEFAULT_BYTES_PER_TOKEN, copies: int = 1
) -> DatasetStorage:
    """Dataset capacity = tokens x bytes per token (x copies, e.g. raw + tokenized)."""
    require_positive(tokens=tokens, bytes_per_token=bytes_per_token, copies=copies)
    size = tokens * bytes_per_token
    return DatasetStorage(
        formula="bytes = tokens x bytes/token x copies",
        inputs={"tokens": tokens, "bytes_per_token": bytes_per_token, "copies": copies},
        notes=["bytes/token: uint16 ids 2, uint32 ids 4, raw English text ~4 (4 chars/token)"],
        dataset_bytes=size,
        stored_bytes=size * copies,
    )


class ReadThroughput(Result):
    tokens_per_second: float
    read_bps: float


def data_read_throughput(
    *,
    tokens_per_second: float,
    bytes_per_token: float = DEFAULT_BYTES_PER_TOKEN,
    headroom: float = 2.0,
) -> ReadThroughput:
    """Sustained read rate = tokens/s x bytes/token x headroom.

    Headroom (default 2x, an assumption) covers shuffled reads, restarts that re-read from a
    checkpoint, and evaluation passes. Take tokens/s from ``TrainingTime.tokens_per_second``.
    """
    require_positive(tokens_per_second=tokens_per_second, bytes_per_token=bytes_per_token)
    if headroom < 1:
        raise InputError(f"headroom is a multiplier >= 1, got {headroom!r}")
    return ReadThroughput(
        formula="read = tokens/s x bytes/token x headroom",
        inputs={
            "tokens_per_second": tokens_per_second,
            "bytes_per_token": bytes_per_token,
            "headroom": headroom,
        },
        tokens_per_second=tokens_per_second,
        read_bps=tokens_per_second * bytes_per_token * headroom,
    )


class AllReduceBandwidth(Result):
    gradient_bytes: float
    bytes_sent_per_gpu: float
    comm_seconds: float
    bandwidth_bps: float


def gradient_allreduce_bandwidth(
    *,
    params: float,
    dp: int,
    step_seconds: float,
    comm_share: float = 0.25,
    tp: int = 1,
    pp: int = 1,
    grad_precision: str = "bf16",
    zero_stage: int = 0,
    fp8_storage: str = "bf16",
) -> AllReduceBandwidth:
    """Per-GPU bandwidth to all-reduce the gradients in ``comm_share`` of a step.

    A ring all-reduce over n ranks sends 2*(n-1)/n x the gradient bytes from each GPU
    (reduce-scatter + all-gather); the gradient bytes are those of one model shard,
    P/(tp*pp) x bytes per value. ZeRO stages 1-2 move the same volume; stage 3 adds a
    parameter all-gather, 1.5x in all (ZeRO, section 7). The result compares with the
    bus bandwidth nccl-tests reports for all_reduce_perf. The share is how much of the
    step the traffic may take where it does not overlap with the backward pass.
    """
    require_positive(params=params, dp=dp, step_seconds=step_seconds, tp=tp, pp=pp)
    if not 0 < comm_share <= 1:
        raise InputError(f"comm_share is a fraction in (0, 1], got {comm_share!r}")
    if zero_stage not in (0, 1, 2, 3):
        raise InputError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}")
    # FP8 training's gradients are 16-bit, or 1 byte with fp8_storage "fp8"
    grad = params / (tp * pp) * stored_bytes(grad_precision, fp8_storage)
    sent = 2 * (dp - 1) / dp * grad * (1.5 if zero_stage == 3 else 1.0)
    budget = comm_share * step_seconds
    return AllReduceBandwidth(
        formula="bw = 2*(n-1)/n x gradient bytes (x1.5 for ZeRO-3) / (share x step time)",
        inputs={
            "params": params,
            "dp": dp,
            "step_seconds": step_seconds,
            "comm_share": comm_share,
            "tp": tp,
            "pp": pp,
            "grad_precision": grad_precision,
            **({"fp8_storage": fp8_storage} if grad_precision == "fp8" else {}),
            "zero_stage": zero_stage,
        },
        gradient_bytes=grad,
        bytes_sent_per_gpu=sent,
        comm_seconds=budget,
        bandwidth_bps=sent / budget,
    )


class ModelParallelTraffic(Result):
    tp_bytes_per_step: float
    pp_bytes_per_step: float
    tp_seconds: float
    pp_seconds: float
    ep_bytes_per_step: float = 0.0
    ep_seconds: float = 0.0


@dataclass(frozen=True)
class MoeTraffic:
    """A mixture of experts' all-to-all: MoE layers per pipeline stage, experts each token
    goes to, and the expert-parallel link's bandwidth per GPU (one direction)."""

    moe_layers_per_stage: int
    experts_per_token: int
    link_bytes_per_second: float


def model_parallel_traffic(
    batch: TrainingBatch, parallelism: Parallelism, *, hidden: int, layers_per_stage: int,
    links_bytes_per_second: tuple[float, float], activation_bytes: float = 2.0,
    moe: MoeTraffic | None = None,
) -> ModelParallelTraffic:
    """Tensor- and pipeline-parallel bytes a GPU sends per step, and their time if not
    overlapped.

    Megatron's tensor parallelism all-reduces the b·s·h activations twice per layer forward
    and twice backward (Narayanan et al. 2021, section 3.3; Korthikanti et al. 2022: with
    sequence parallelism as reduce-scatter + all-gather, the same bytes), twice more when full
    recomputation re-runs the forward; a ring all-reduce sends 2(t−1)/t of the buffer. Each
    pipeline boundary sends b·s·h activations forward and their gradients back per
    micro-batch. ``batch.microbatches`` is the micro-batches per step (1 if unset);
    ``links_bytes_per_second`` the (tensor-parallel, pipeline) link bandwidth per GPU.
    """
    micro_batch, seq_len = batch.micro_batch, batch.seq_len
    micro_steps = batch.microbatches or 1
    tp, pp = parallelism.tp, parallelism.pp
    full_recompute = batch.recompute == "full"
    tp_bytes_per_second, pp_bytes_per_second = links_bytes_per_second
    require_positive(hidden=hidden, layers_per_stage=layers_per_stage)
    require_positive(tp_bytes_per_second=tp_bytes_per_second,
                     pp_bytes_per_second=pp_bytes_per_second)
    buffer = micro_batch * seq_len * hidden * activation_bytes
    reductions = 6 if full_recompute else 4
    tp_bytes = (layers_per_stage * reductions * 2 * (tp - 1) / tp * buffer * micro_steps
                if tp > 1 else 0.0)
    pp_bytes = 2 * buffer * micro_steps if pp > 1 else 0.0
    ep = parallelism.ep
    ep_bytes = ep_seconds = 0.0
    ep_inputs: dict[str, float] = {}
    if moe is not None and ep > 1:
        require_positive(experts_per_token=moe.experts_per_token,
                         ep_bytes_per_second=moe.link_bytes_per_second)
        # Dispatch and combine: each GPU sends its (sequence-parallel) 1/t of the tokens, k
        # copies each, and keeps the 1/ep routed to its own experts; twice forward, twice
        # backward, twice more when full recomputation re-runs the forward.
        a2a = micro_batch * seq_len / tp * moe.experts_per_token * hidden * activation_bytes
        ep_bytes = (moe.moe_layers_per_stage * reductions * (ep - 1) / ep * a2a * micro_steps)
        ep_seconds = ep_bytes / moe.link_bytes_per_second
        ep_inputs = {"ep": ep, "moe_layers_per_stage": moe.moe_layers_per_stage,
                     "experts_per_token": moe.experts_per_token,
                     "ep_bytes_per_second": moe.link_bytes_per_second}
    return ModelParallelTraffic(
        formula=("TP: layers/stage · (4, 6 recomputed) all-reduces · 2(t−1)/t · b·s·h·2 B per "
                 "micro-batch; PP: 2 · b·s·h·2 B per micro-batch (Narayanan 2021, 3.3); EP: "
                 "MoE layers/stage · (4, 6) all-to-alls · (e−1)/e · b·(s/t)·k·h·2 B"),
        inputs={"micro_batch": micro_batch, "seq_len": seq_len, "hidden": hidden,
                "layers_per_stage": layers_per_stage, "micro_steps": micro_steps, "tp": tp,
                "pp": pp, "tp_bytes_per_second": tp_bytes_per_second,
                "pp_bytes_per_second": pp_bytes_per_second, "full_recompute": full_recompute,
                **ep_inputs},
        notes=["each figure is the time the bytes take on their link; what the step exposes "
               "is in step_communication"],
        tp_bytes_per_step=tp_bytes,
        pp_bytes_per_step=pp_bytes,
        tp_seconds=tp_bytes / tp_bytes_per_second,
        pp_seconds=pp_bytes / pp_bytes_per_second,
        ep_bytes_per_step=ep_bytes,
        ep_seconds=ep_seconds,
    )


@dataclass(frozen=True)
class Overlap:
    """How much of each kind of traffic hides under compute: assumptions, stated in every
    result that uses them.

    * ``tp`` 0: Megatron's tensor-parallel all-reduces (reduce-scatter/all-gather with
      sequence parallelism) sit on the critical path between a layer's GEMMs (Narayanan et
      al. 2021, section 3.3); TE's tp-comm-overlap can hide part of them on NVLink, which is
      not assumed.
    * ``pp`` 0: a stage waits for its neighbour's activations (the point-to-point sends are
      small next to the bubble, which is counted apart).
    * ``ep`` 0: the dispatch and combine all-to-alls sit between the router and the expert
      GEMMs.
    * ``dp_backward_share`` 2/3: the gradient reduce-scatter overlaps the backward pass
      (Megatron's overlap-grad-reduce, PyTorch DDP buckets), which is 2 of the 3 compute
      parts (forward 2, backward 4 FLOPs per parameter and token); only traffic longer than
      the backward shows.
    """

    tp: float = 0.0
    pp: float = 0.0
    ep: float = 0.0
    dp_backward_share: float = 2 / 3

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "ep", "dp_backward_share"):
            v = getattr(self, name)
            if not 0 <= v <= 1:
                raise InputError(f"overlap {name} is a fraction in [0, 1], got {v!r}")


DEFAULT_OVERLAP = Overlap()


class StepCommunication(Result):
    compute_seconds: float
    tp_exposed_seconds: float
    pp_exposed_seconds: float
    ep_exposed_seconds: float
    dp_exposed_seconds: float
    exposed_seconds: float
    seconds: float
    slowdown: float


def step_with_communication(
    *, compute_seconds: float, traffic: ModelParallelTraffic | None = None,
    dp_seconds: float = 0.0, overlap: Overlap = DEFAULT_OVERLAP,
) -> StepCommunication:
    """A step's time with its communication: compute (at the assumed MFU) plus what the
    tensor-, pipeline- and expert-parallel traffic and the gradient reduction expose.

    t = t_compute + (1−o_tp)·t_tp + (1−o_pp)·t_pp + (1−o_ep)·t_ep
        + max(0, t_dp − o_dp·t_compute)

    Each t_x is the time its bytes take on the link they cross (NVLink or PCIe inside a
    node, the fabric between nodes); the overlaps are ``Overlap``'s assumptions. Context
    parallelism's key/value exchange is taken as hidden under the attention it feeds (TE's
    ring attention overlaps the two), and is not added.
    """
    require_positive(compute_seconds=compute_seconds)
    if dp_seconds < 0:
        raise InputError(f"dp_seconds must be >= 0, got {dp_seconds!r}")
    o = overlap
    tp = (1 - o.tp) * (traffic.tp_seconds if traffic else 0.0)
    pp = (1 - o.pp) * (traffic.pp_seconds if traffic else 0.0)
    ep = (1 - o.ep) * (traffic.ep_seconds if traffic else 0.0)
    dp = max(0.0, dp_seconds - o.dp_backward_share * compute_seconds)
    exposed = tp + pp + ep + dp
    total = compute_seconds + exposed
    return StepCommunication(
        formula="t = t_compute + (1−o_tp)·t_tp + (1−o_pp)·t_pp + (1−o_ep)·t_ep + "
                "max(0, t_dp − o_dp·t_compute)",
        inputs={"compute_seconds": compute_seconds,
                "tp_seconds": traffic.tp_seconds if traffic else 0.0,
                "pp_seconds": traffic.pp_seconds if traffic else 0.0,
                "ep_seconds": traffic.ep_seconds if traffic else 0.0,
                "dp_seconds": dp_seconds, "overlap_tp": o.tp, "overlap_pp": o.pp,
                "overlap_ep": o.ep, "overlap_dp_backward_share": o.dp_backward_share},
        notes=["overlaps are assumptions (sizing.training.Overlap): TP, PP and EP traffic on "
               "the critical path, the gradient reduction hidden under the backward pass",
               "context parallelism's key/value exchange is taken as hidden under attention",
               "the assumed MFU is the compute rate; the communication is added to it"],
        compute_seconds=compute_seconds,
        tp_exposed_seconds=tp,
        pp_exposed_seconds=pp,
        ep_exposed_seconds=ep,
        dp_exposed_seconds=dp,
        exposed_seconds=exposed,
        seconds=total,
        slowdown=total / compute_seconds,
    )
