"""GPU memory for training and fine-tuning: model states, activations, adapters.

Design. Memory per GPU is the sum of four parts, each from its published source and each a
separate function so it can be checked against that source on its own:

* model states (weights, gradients, optimizer states) in bytes per parameter, divided by
  tensor x pipeline parallelism and then, stage by stage, by ZeRO over data-parallel ranks
  (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
  Models", arXiv:1910.02054, section 5 and Figure 1: mixed-precision Adam holds 2 + 2 + K
  bytes per parameter with K = 12);
* activations per transformer layer after Korthikanti et al. 2022, "Reducing Activation
  Recomputation in Large Transformer Models", arXiv:2205.05198, Table 2, times the layers a
  pipeline stage holds and the micro-batches in flight on the first stage (1F1B schedule);
* an allowance for what no formula covers (CUDA context, NCCL buffers, allocator
  fragmentation): a fixed amount plus a share of the rest, stated in the result;
* for LoRA/QLoRA, frozen base weights (QLoRA: 4-bit NF4 plus quantization constants,
  Dettmers et al. 2023, arXiv:2305.14314, section 3) and trainable adapters of
  r x (d_in + d_out) parameters per adapted matrix (Hu et al. 2021, arXiv:2106.09685).

The functions take value objects (``ModelShape``; ``Parallelism``, ``Precisions``,
``TrainingBatch``, ``Allowance``, ``Adapter`` from ``sizing.layout``) instead of long lists of
numbers; each formula stays checkable against its paper in isolation.
"""

from __future__ import annotations

import math

from aiplat.errors import InputError
from aiplat.sizing.layout import (
    ADAMW,
    DEFAULT_ALLOWANCE,
    MIXED_PRECISION_ADAM,
    SINGLE_GPU,
    Adapter,
    Allowance,
    Parallelism,
    Precisions,
    Recompute,
    TrainingBatch,
)
from aiplat.sizing.result import Result, precision_bytes, require_positive
from aiplat.sizing.shape import ModelShape

OPTIMIZER_STATE_BYTES: dict[str, float] = {
    "adam": 8.0,
    "adamw": 8.0,
    "adam8bit": 2.0,
    "sgd_momentum": 4.0,
    "sgd": 0.0,
}
"""Optimizer state bytes per trainable parameter, without any fp32 master copy.

Adam/AdamW: fp32 momentum + fp32 variance (ZeRO's K = 12 is these 8 plus the 4-byte master
copy). 8-bit Adam (Dettmers et al. 2021, arXiv:2110.02861): both states in 8 bits; its
block-wise fp32 scales (one per 2,048 values) add under 0.2 % and are left out. SGD with
momentum: one fp32 buffer. Plain SGD: none.
"""

MASTER_WEIGHT_BYTES = 4.0
"""fp32 master copy the optimizer keeps when weights are held in 16 bits or fewer."""
FP8_TRAINING_STORED_BYTES = 2.0
"""Bytes per stored weight and gradient in FP8 training: 16-bit, as Transformer Engine keeps
them (its fp8_model_init, FP8-only weights, is not modelled); the DeepSeek-V3 report (section
3.3) likewise keeps master weights and gradients in higher precision and runs GEMMs in FP8.
The default convention; ``fp8_storage="fp8"`` selects the 1-byte one (``stored_bytes``)."""

FP8_STORAGE = ("bf16", "fp8")
"""FP8 training's stored weights and gradients: "bf16" as Transformer Engine keeps them (the
default, 2 bytes each), "fp8" as MS-AMP O2 or TE's fp8_model_init keep them (1 byte each)."""


def stored_bytes(precision: str, fp8_storage: str = "bf16") -> float:
    """Bytes per stored weight and per gradient when training at ``precision``: FP8 training
    keeps them at 16 bits (``FP8_TRAINING_STORED_BYTES``) unless ``fp8_storage`` is "fp8"."""
    if fp8_storage not in FP8_STORAGE:
        raise InputError(f"fp8_storage is 'bf16' or 'fp8', got {fp8_storage!r}")
    if fp8_storage == "fp8" and precision != "fp8":
        raise InputError(f"fp8_storage 'fp8' needs precision fp8, got {precision!r}")
    if precision == "fp8":
        return precision_bytes("fp8") if fp8_storage == "fp8" else FP8_TRAINING_STORED_BYTES
    return precision_bytes(precision)

NF4_BLOCK = 64
"""QLoRA quantizes base weights in blocks of 64 with one absmax constant per block."""
NF4_DQ_BLOCK = 256
"""Double quantization groups 256 first-level constants under one fp32 constant."""



def optimizer_state_bytes(optimizer: str) -> float:
    try:
        return OPTIMIZER_STATE_BYTES[optimizer]
    except KeyError:
        names = ", ".join(sorted(OPTIMIZER_STATE_BYTES))
        raise InputError(f"unknown optimizer {optimizer!r} (fix: use one of: {names})") from None


def needs_master_weights(precision: str, master_weights: bool | None) -> bool:
    """Whether the optimizer keeps an fp32 master copy (default: for sub-32-bit weights)."""
    # Mixed precision keeps an fp32 master copy; fp32 training updates the weights in place.
    if master_weights is not None:
        return master_weights
    return precision_bytes(precision) < 4.0



class ModelStateMemory(Result):
    """Weights, gradients and optimizer states held by one GPU."""

    weight_bytes_per_param: float
    gradient_bytes_per_param: float
    optimizer_bytes_per_param: float
    params_per_model_shard: float
    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    total_bytes: float


def model_state_memory(
    params: float,
    precisions: Precisions = MIXED_PRECISION_ADAM,
    parallelism: Parallelism = SINGLE_GPU,
    *,
    fp8_storage: str = "bf16",
) -> ModelStateMemory:
    """Model states per GPU: split over tp x pp, then partitioned by ZeRO over dp ranks.

    Bytes per parameter: weights and gradients in ``precisions.weights``; optimizer states
    from ``OPTIMIZER_STATE_BYTES`` plus a 4-byte fp32 master copy when ``master_weights`` (by
    default: when the weights are narrower than 32 bits). Mixed-precision Adam is then
    2 + 2 + 12 = 16 bytes (FP8 training too: 16-bit stored weights, FP8 only in the GEMMs;
    with ``fp8_storage="fp8"``, 1-byte weights and gradients, 1 + 1 + 12 = 14);
    fp32 Adam 4 + 4 + 8 = 16; 8-bit Adam 2 + 2 + 6 = 10; SGD with
    momentum 2 + 2 + 8 = 12. ZeRO stage 1 partitions the optimizer states, stage 2 also the
    gradients, stage 3 also the weights (ZeRO section 5.1-5.3). Megatron's distributed
    optimizer corresponds to stage 1. Pipeline stages are taken as equal; in practice the
    first and last stages also hold the embeddings.
    """
    require_positive(params=params)
    par, prec = parallelism, precisions
    # FP8 training (Transformer Engine, Megatron): FP8 is the GEMMs' input format, cast per
    # GEMM; the weights and their gradients are kept at 16 bits beside the fp32 master
    # unless fp8_storage is "fp8" (MS-AMP O2, TE fp8_model_init: 1 byte each).
    w = stored_bytes(prec.weights, fp8_storage)
    master = needs_master_weights(prec.weights, prec.master_weights)
    k = optimizer_state_bytes(prec.optimizer) + (MASTER_WEIGHT_BYTES if master else 0.0)
    shard = params / (par.tp * par.pp)
    dp, zero = par.dp, par.zero_stage
    weights = shard * w / (dp if zero >= 3 else 1)
    grads = shard * w / (dp if zero >= 2 else 1)
    opt = shard * k / (dp if zero >= 1 else 1)
    return ModelStateMemory(
        formula=(
            "per GPU: P/(tp*pp) * [w/(dp if ZeRO>=3) + g/(dp if ZeRO>=2) + K/(dp if ZeRO>=1)] "
            "bytes (Rajbhandari et al. 2020, ZeRO, section 5 and Figure 1)"
        ),
        inputs={
            "params": params,
            "precision": prec.weights,
            **({"fp8_storage": fp8_storage} if prec.weights == "fp8" else {}),
            "optimizer": prec.optimizer,
            "master_weights": master,
            "zero_stage": zero,
            "dp": dp,
            "tp": par.tp,
            "pp": par.pp,
        },
        weight_bytes_per_param=w,
        gradient_bytes_per_param=w,
        optimizer_bytes_per_param=k,
        params_per_model_shard=shard,
        weights_bytes=weights,
        gradients_bytes=grads,
        optimizer_bytes=opt,
        total_bytes=weights + grads + opt,
    )


class ActivationMemory(Result):
    """Activations held by the GPU of the first pipeline stage (the most loaded one)."""

    per_layer_bytes: float
    layers_per_stage: int
    microbatches_in_flight: int
    stored_bytes: float
    recompute_working_bytes: float
    total_bytes: float


def mlp_activation_factors(model: ModelShape) -> tuple[float, float]:
    """(MLP input copies, MLP width in units of the paper's 4h FFN) for one token.

    Dense: (1, 1), the paper's convention whatever the FFN width, so Table 2 holds as
    published. A mixture of experts runs each token through k routed experts and the shared
    ones: k + shared copies of the input, and intermediates of Σ ffn / 4h (expert width from
    ``expert_ffn_hidden``, else ``ffn_hidden``, else 4h).
    """
    moe = model.moe
    if moe is None:
        return 1.0, 1.0
    copies = moe.experts_per_token + moe.shared_experts
    ffn = model.expert_ffn_hidden or model.ffn_hidden or 4 * model.hidden
    return float(copies), copies * ffn / (4 * model.hidden)


def _per_layer_bytes(model: ModelShape, batch: TrainingBatch, par: Parallelism,
                     mode: Recompute, scores: float) -> float:
    """Korthikanti et al. 2022 Table 2, with the MLP's 19·sbh (input 2, intermediates 16,
    dropout 1) scaled by ``mlp_activation_factors``: 34 = 15 + 2·c + 16·w + 1 at c = w = 1."""
    sbh = batch.seq_len * batch.micro_batch * model.hidden
    if mode == "full":
        return 2.0 * sbh
    copies, width = mlp_activation_factors(model)
    keep_scores = 0.0 if mode == "selective" else scores
    t = par.tp
    if par.sequence_parallel or t == 1:
        return sbh / t * (16 + 2 * copies + 16 * width + keep_scores)
    # TP alone splits the attention internals (8) and the MLP intermediates (16·w); the
    # norms, block inputs and dropout masks (8 + 2·c) stay whole on every rank.
    return sbh * (8 + 2 * copies + (8 + 16 * width) / t + keep_scores / t)


def activation_memory(
    model: ModelShape,
    batch: TrainingBatch,
    parallelism: Parallelism = SINGLE_GPU,
    *,
    flash_attention: bool = False,
) -> ActivationMemory:
    """Activation bytes per GPU after Korthikanti et al. 2022 (arXiv:2205.05198), Table 2.

    Per layer, with s = seq_len, b = micro_batch, h = hidden, a = heads, t = tp:

    * no parallelism:              s*b*h*(34 + 5*a*s/h)
    * tensor parallel only:        s*b*h*(10 + 24/t + 5*a*s/(h*t))
    * tensor + sequence parallel:  s*b*h/t*(34 + 5*a*s/h)
    * selective recompute:         the same without the 5*a*s/h attention-score term
    * full recompute:              s*b*h*2 (only the layer input is kept)

    The counts assume 16-bit activations, 1-byte dropout masks and a 4h MLP, as the paper
    does; a mixture of experts scales the MLP part by its experts per token and their width
    (``mlp_activation_factors``). FlashAttention never stores the score matrices:
    ``flash_attention=True`` drops them. With pipeline parallelism under 1F1B the first stage
    holds its L/p layers for min(p, microbatches) micro-batches (L layers' worth when there
    are at least p). Full recompute also needs one layer's activations while that layer is
    recomputed; that working set is reported separately and counted in the total, though
    the paper's table leaves it out. Embedding and output-layer activations are left out
    (the paper finds them small next to the transformer layers).
    """
    par = parallelism
    s, a, h = batch.seq_len, model.heads, model.hidden
    # FlashAttention (Dao et al. 2022) never materialises the a*s*s score and dropout
    # matrices, in any recompute mode and in full recompute's one-layer working set.
    scores = 0.0 if flash_attention else 5 * a * s / h
    per_layer = _per_layer_bytes(model, batch, par, batch.recompute, scores)
    layers_per_stage = math.ceil(model.layers / par.pp)
    in_flight = par.pp if batch.microbatches is None else min(par.pp, batch.microbatches)
    stored_total = per_layer * layers_per_stage * in_flight
    working = _per_layer_bytes(model, batch, par, "none", scores) \
        if batch.recompute == "full" else 0.0
    copies, width = mlp_activation_factors(model)
    return ActivationMemory(
        formula=(
            "per layer s*b*h*(34 + 5*a*s/h) bytes, divided by t with sequence parallelism, "
            "5as/h dropped by selective and only 2*s*b*h kept by full recompute "
            "(Korthikanti et al. 2022, Table 2); MoE: the MLP's 19 as 2·copies + 16·width + 1;"
            " times ceil(L/p) layers x min(p, m) micro-batches on the first pipeline stage"
        ),
        inputs={
            "seq_len": s,
            "micro_batch": batch.micro_batch,
            "hidden": h,
            "heads": a,
            "layers": model.layers,
            "mlp_copies": copies,
            "mlp_width": width,
            "tp": par.tp,
            "pp": par.pp,
            "sequence_parallel": par.sequence_parallel,
            "recompute": batch.recompute,
            "microbatches": batch.microbatches,
            "flash_attention": flash_attention,
        },
        per_layer_bytes=per_layer,
        layers_per_stage=layers_per_stage,
        microbatches_in_flight=in_flight,
        stored_bytes=stored_total,
        recompute_working_bytes=working,
        total_bytes=stored_total + working,
    )


class TrainingMemory(Result):
    """Everything one GPU holds during training, against the memory it has."""

    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    overhead_bytes: float
    total_bytes: float
    gpu_memory_bytes: float
    headroom_bytes: float
    fits: bool


def training_memory(
    model: ModelShape,
    batch: TrainingBatch,
    *,
    gpu_memory_bytes: float,
    parallelism: Parallelism = SINGLE_GPU,
    precisions: Precisions = MIXED_PRECISION_ADAM,
    allowance: Allowance = DEFAULT_ALLOWANCE,
) -> TrainingMemory:
    """Memory per GPU for (pre-)training: model states + activations + allowance, vs capacity."""
    require_positive(gpu_memory_bytes=gpu_memory_bytes)
    states = model_state_memory(model.params, precisions, parallelism)
    acts = activation_memory(model, batch, parallelism)
    subtotal = states.total_bytes + acts.total_bytes
    overhead = allowance.of(subtotal)
    total = subtotal + overhead
    return TrainingMemory(
        formula=(
            "model states (ZeRO) + activations (Korthikanti 2022) + fixed allowance "
            "+ fraction x (states + activations); fits when total <= GPU memory"
        ),
        inputs={
            **states.inputs,
            **acts.inputs,
            "gpu_memory_bytes": gpu_memory_bytes,
            "overhead_fixed_bytes": allowance.fixed_bytes,
            "overhead_fraction": allowance.fraction,
        },
        notes=[allowance.note("states and activations")],
        weights_bytes=states.weights_bytes,
        gradients_bytes=states.gradients_bytes,
        optimizer_bytes=states.optimizer_bytes,
        activations_bytes=acts.total_bytes,
        overhead_bytes=overhead,
        total_bytes=total,
        gpu_memory_bytes=gpu_memory_bytes,
        headroom_bytes=gpu_memory_bytes - total,
        fits=total <= gpu_memory_bytes,
    )


LORA_TARGETS: tuple[str, ...] = ("q", "k", "v", "o", "gate", "up", "down")
"""Matrices LoRA can adapt: attention q/k/v/o and the MLP's gate/up/down projections."""


def _matrix_shapes(
    hidden: int, ffn_hidden: int, heads: int, kv_heads: int, gated_mlp: bool
) -> dict[str, tuple[int, int]]:
    # (d_in, d_out) per matrix; k and v shrink with grouped-query attention.
    kv = hidden * kv_heads // heads
    shapes = {
        "q": (hidden, hidden),
        "k": (hidden, kv),
        "v": (hidden, kv),
        "o": (hidden, hidden),
        "up": (hidden, ffn_hidden),
        "down": (ffn_hidden, hidden),
    }
    if gated_mlp:
        shapes["gate"] = (hidden, ffn_hidden)
    return shapes


class LoraParams(Result):
    """Trainable adapter parameters and the base linear weights they sit on."""

    adapter_params_per_layer: int
    adapter_params: int
    adapted_linear_params: int
    block_linear_params: int


def lora_params(
    *,
    layers: int,
    hidden: int,
    ffn_hidden: int,
    heads: int,
    kv_heads: int | None = None,
    rank: int,
    targets: tuple[str, ...] = ("q", "v"),
    gated_mlp: bool = True,
) -> LoraParams:
    """LoRA adapter count: r x (d_in + d_out) per adapted matrix per layer.

    Hu et al. 2021 (arXiv:2106.09685, section 4.1) write the update as B A with
    B in R^{d x r} and A in R^{r x k}. ``targets`` defaults to q and v, the paper's choice;
    QLoRA adapts every linear layer (``LORA_TARGETS``). ``block_linear_params`` counts all
    linear weights inside the transformer blocks (what QLoRA quantizes to NF4).
    """
    require_positive(layers=layers, hidden=hidden, ffn_hidden=ffn_hidden, heads=heads, rank=rank)
    kvh = heads if kv_heads is None else kv_heads
    require_positive(kv_heads=kvh)
    if heads % kvh:
        raise InputError(f"heads ({heads}) must be a multiple of kv_heads ({kvh})")
    shapes = _matrix_shapes(hidden, ffn_hidden, heads, kvh, gated_mlp)
    unknown = [t for t in targets if t not in shapes]
    if unknown or not targets:
        raise InputError(
            f"LoRA targets {unknown or list(targets)!r} not in {sorted(shapes)}; "
            "'gate' needs gated_mlp=True"
        )
    per_layer = sum(rank * (shapes[t][0] + shapes[t][1]) for t in set(targets))
    adapted = sum(shapes[t][0] * shapes[t][1] for t in set(targets))
    block = sum(d_in * d_out for d_in, d_out in shapes.values())
    return LoraParams(
        formula="layers x sum over targets of r*(d_in + d_out) (Hu et al. 2021, LoRA, 4.1)",
        inputs={
            "layers": layers,
            "hidden": hidden,
            "ffn_hidden": ffn_hidden,
            "heads": heads,
            "kv_heads": kvh,
            "rank": rank,
            "targets": ",".join(sorted(set(targets))),
            "gated_mlp": gated_mlp,
        },
        adapter_params_per_layer=per_layer,
        adapter_params=per_layer * layers,
        adapted_linear_params=adapted * layers,
        block_linear_params=block * layers,
    )


def nf4_bytes_per_param(*, double_quant: bool = True) -> float:
    """Bytes per NF4-quantized weight, quantization constants included.

    QLoRA (Dettmers et al. 2023, section 3): 4 bits per weight plus one fp32 constant per
    64 weights (32/64 = 0.5 bit), or with double quantization one 8-bit constant per 64
    plus one fp32 per 64 x 256 (8/64 + 32/(64*256) = 0.127 bit).
    """
    first_level = 8 if double_quant else 32
    const_bits = first_level / NF4_BLOCK
    if double_quant:
        const_bits += 32 / (NF4_BLOCK * NF4_DQ_BLOCK)
    return (4 + const_bits) / 8


class FinetuneMemory(Result):
    """Memory per GPU for LoRA or QLoRA fine-tuning."""

    base_weights_bytes: float
    adapter_params: int
    adapter_weights_bytes: float
    adapter_gradients_bytes: float
    adapter_optimizer_bytes: float
    activations_bytes: float
    overhead_bytes: float
    total_bytes: float
    gpu_memory_bytes: float
    headroom_bytes: float
    fits: bool


def _base_bytes(model: ModelShape, adapter: Adapter, base_precision: str,
                block_linear_params: float) -> float:
    base_w = precision_bytes(base_precision)
    if adapter.method == "qlora":
        quantized = min(block_linear_params, model.params)
        return (quantized * nf4_bytes_per_param(double_quant=adapter.double_quant)
                + (model.params - quantized) * base_w)
    return model.params * base_w


def finetune_memory(
    model: ModelShape,
    adapter: Adapter,
    batch: TrainingBatch,
    *,
    gpu_memory_bytes: float,
    precisions: Precisions = ADAMW,
    allowance: Allowance = DEFAULT_ALLOWANCE,
) -> FinetuneMemory:
    """Frozen base + trainable adapters (weights, gradients, optimizer states) + activations.

    ``model`` needs ``ffn_hidden``. LoRA keeps the whole base in ``precisions.weights``.
    QLoRA stores the linear weights of the transformer blocks in NF4
    (``nf4_bytes_per_param``) and the rest (embeddings, norms, output layer) in the base
    precision, as bitsandbytes leaves them. The base gets no gradients or optimizer states.
    Adapters default to bf16 with fp32 AdamW states (``precisions.optimizer``) and no master
    copy (QLoRA's set-up); ``Adapter(precision="fp32")`` for PEFT's default. Activations use
    the Korthikanti formula on one GPU (``batch.recompute``, usually full); the adapters' own
    rank-r intermediates are left out (r << h). QLoRA's paged optimizer can move states to CPU
    memory on spikes; that relief is not counted here.
    """
    require_positive(gpu_memory_bytes=gpu_memory_bytes)
    if model.ffn_hidden is None:
        raise InputError("finetune_memory needs the model's ffn_hidden (intermediate_size)")
    lora = lora_params(
        layers=model.layers, hidden=model.hidden, ffn_hidden=model.ffn_hidden,
        heads=model.heads, kv_heads=model.kv_heads, rank=adapter.rank, targets=adapter.targets,
        gated_mlp=adapter.gated_mlp,
    )
    base = _base_bytes(model, adapter, precisions.weights, float(lora.block_linear_params))
    n = lora.adapter_params
    aw = precision_bytes(adapter.precision)
    k = optimizer_state_bytes(precisions.optimizer) + (
        MASTER_WEIGHT_BYTES if adapter.master_weights else 0)
    acts = activation_memory(model, batch)
    subtotal = base + n * (2 * aw + k) + acts.total_bytes
    overhead = allowance.of(subtotal)
    total = subtotal + overhead
    return FinetuneMemory(
        formula=(
            "base (LoRA: P*bytes; QLoRA: block linears in NF4 + constants, rest 16-bit) "
            "+ adapters*(2*adapter bytes + optimizer K) + activations + allowance "
            "(Hu et al. 2021; Dettmers et al. 2023; Korthikanti et al. 2022)"
        ),
        inputs={
            **lora.inputs,
            "params": model.params,
            "seq_len": batch.seq_len,
            "micro_batch": batch.micro_batch,
            "gpu_memory_bytes": gpu_memory_bytes,
            "method": adapter.method,
            "base_precision": precisions.weights,
            "double_quant": adapter.double_quant,
            "adapter_precision": adapter.precision,
            "optimizer": precisions.optimizer,
            "adapter_master_weights": adapter.master_weights,
            "recompute": batch.recompute,
            "overhead_fixed_bytes": allowance.fixed_bytes,
            "overhead_fraction": allowance.fraction,
        },
        notes=[allowance.note("the rest")],
        base_weights_bytes=base,
        adapter_params=n,
        adapter_weights_bytes=n * aw,
        adapter_gradients_bytes=n * aw,
        adapter_optimizer_bytes=n * k,
        activations_bytes=acts.total_bytes,
        overhead_bytes=overhead,
        total_bytes=total,
        gpu_memory_bytes=gpu_memory_bytes,
        headroom_bytes=gpu_memory_bytes - total,
        fits=total <= gpu_memory_bytes,
    )


class DeepSpeedEstimate(Result):
    """DeepSpeed's own model-state estimate per GPU (no offload), beside aiplat's."""

    deepspeed_bytes: float
    aiplat_bytes: float
    difference_bytes: float


def deepspeed_model_states(
    params: float, *, largest_layer_params: float, gpus: int, zero_stage: int,
    aiplat_bytes: float,
) -> DeepSpeedEstimate:
    """What ``estimate_zero2_model_states_mem_needs`` / ``estimate_zero3_...`` print for pure
    data parallelism without offload, so a reader can match DeepSpeed's figure.

    deepspeed/runtime/zero/stage_1_and_2.py: 2·P + 18·P/N (18 = 16-bit grads 2 + fp32 grads 4
    + fp32 params 4 + Adam states 8); stage3.py: 4·largest layer + 18·P/N. The named
    difference: DeepSpeed counts an fp32 gradient buffer (4 bytes per parameter) that the
    ZeRO paper's 16 bytes leave out, and stage 3's gather buffer for the largest tensor.
    """
    require_positive(params=params, largest_layer_params=largest_layer_params, gpus=gpus)
    if zero_stage not in (1, 2, 3):
        raise InputError(f"DeepSpeed's estimators cover ZeRO stages 1-3, got {zero_stage!r}")
    shard = 18 * params / gpus
    ds = (4 * largest_layer_params if zero_stage == 3 else 2 * params) + shard
    return DeepSpeedEstimate(
        formula=("ZeRO-1/2: 2P + 18P/N; ZeRO-3: 4·largest layer + 18P/N (DeepSpeed "
                 "estimate_zero{2,3}_model_states_mem_needs)"),
        inputs={"params": params, "largest_layer_params": largest_layer_params, "gpus": gpus,
                "zero_stage": zero_stage, "aiplat_bytes": aiplat_bytes},
        notes=["DeepSpeed adds an fp32 gradient copy (18 vs the ZeRO paper's 16 bytes per "
               "parameter) and, at stage 3, the largest tensor gathered whole"],
        deepspeed_bytes=ds,
        aiplat_bytes=aiplat_bytes,
        difference_bytes=ds - aiplat_bytes,
    )


# accelerate's per-parameter training components (bytes) by training dtype, after
# huggingface/accelerate src/accelerate/commands/estimate.py ``estimate_training_usage``: the
# model is created in fp32 and sized there; mixed precision keeps the fp32 weights, an fp32 +
# 16-bit gradient, and two fp32 Adam moments; fp32 training adds a 4x-model "step". FP8
# without MS-AMP saves nothing (Transformer Engine keeps the same states). int8/int4: none.
ACCELERATE_COMPONENTS: dict[str, dict[str, float]] = {
    "fp32": {"model": 4, "gradients": 4, "optimizer": 8, "step": 16},
    **{p: {"model": 4, "gradients": 6, "optimizer": 8, "step": 8}
       for p in ("bf16", "fp16", "fp8")},
}


class AccelerateEstimate(Result):
    """``accelerate estimate-memory``'s "Training using Adam" figure beside aiplat's."""

    accelerate_bytes: float
    components_sum_bytes: float
    aiplat_bytes: float
    difference_bytes: float


def accelerate_training_estimate(
    params: float, *, precision: str, aiplat_bytes: float, fp8_storage: str = "bf16"
) -> AccelerateEstimate:
    """What ``accelerate estimate-memory`` prints under "Training using Adam" for a model of
    ``params`` parameters at training dtype ``precision``, against ``aiplat_bytes`` (aiplat's
    unsharded weights + gradients + optimizer states, the same single-device scope).

    Its convention (src/accelerate/commands/estimate.py, ``estimate_command``): the column is
    the *largest* of the components (max over model, gradients, optimizer, step), not their
    sum, for batch size 1 and without activations; it prints binary units labelled "GB". So
    bf16 mixed-precision Adam is 8 bytes per parameter there (the fp32 moments), while its
    components add up to 4 + 6 + 8 = 18 (as DeepSpeed's fp32 gradient copy) and aiplat (the
    ZeRO paper) counts 2 + 2 + 12 = 16. fp32 Adam: max(4, 4, 8, 16) = 16, as aiplat's 16.
    FP8 with ``fp8_storage="fp8"``: aiplat counts 1 + 1 + 12 = 14, accelerate still no saving.
    """
    require_positive(params=params)
    parts = ACCELERATE_COMPONENTS.get(precision)
    if parts is None:
        raise InputError(f"accelerate estimate-memory has no training figure for {precision!r} "
                         "(it prints N/A for int8 and int4)")
    printed = params * max(parts.values())
    summed = params * (parts["model"] + parts["gradients"] + parts["optimizer"])
    return AccelerateEstimate(
        formula=("accelerate estimate-memory 'Training using Adam': P x max(model, gradients, "
                 "optimizer, step) bytes per parameter at the dtype (largest component, batch "
                 "1, no activations)"),
        inputs={"params": params, "precision": precision,
                **({"fp8_storage": fp8_storage} if precision == "fp8" else {}),
                **{f"{k}_bytes_per_param": v
                                                             for k, v in parts.items()},
                "aiplat_bytes": aiplat_bytes},
        notes=["accelerate prints the largest component, not the sum: its model + gradients "
               f"+ optimizer add up to {summed / params:.0f} bytes per parameter; unsharded, "
               "batch 1, no activations; binary units labelled GB"] + (
            ["fp8: accelerate counts no saving (Transformer Engine keeps 16-bit weights and "
             "gradients), as aiplat does: FP8 only in the GEMMs, 16-bit stored weights and "
             "gradients"]
            if precision == "fp8" and fp8_storage != "fp8" else []) + (
            ["fp8 storage: aiplat counts 1-byte weights and gradients (MS-AMP O2, TE "
             "fp8_model_init: 1 + 1 + 12 bytes per parameter), accelerate counts no saving "
             "from FP8"]
            if precision == "fp8" and fp8_storage == "fp8" else []),
        accelerate_bytes=printed,
        components_sum_bytes=summed,
        aiplat_bytes=aiplat_bytes,
        difference_bytes=printed - aiplat_bytes,
    )
