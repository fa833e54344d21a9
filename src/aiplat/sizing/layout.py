"""Value objects for how a model is trained: parallelism, precisions, the batch, allowances.

Design. The training-memory and time functions used to take 15-25 loose numbers each, and
their callers wrote the same long keyword calls several times. These small frozen objects
carry what belongs together and check it once; ``ModelShape`` (``sizing.shape``) carries the
model. Each object states its defaults, the same the functions used before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from aiplat.errors import InputError
from aiplat.sizing.result import require_positive

Recompute = Literal["none", "selective", "full"]

DEFAULT_OVERHEAD_FIXED_BYTES = 1 << 30
"""Allowance for the CUDA context, NCCL buffers and library workspaces (1 GiB); an
assumption to revisit against a measured baseline, not a published figure."""

DEFAULT_OVERHEAD_FRACTION = 0.10
"""Share added on top of states and activations for allocator fragmentation and temporary
buffers (10 %); an assumption, stated in every result that uses it."""



@dataclass(frozen=True)
class Parallelism:
    """How one model replica is split (tp, pp, cp, ep) and replicated (dp), and ZeRO."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    zero_stage: int = 0
    sequence_parallel: bool = True

    def __post_init__(self) -> None:
        require_positive(tp=self.tp, pp=self.pp, dp=self.dp, cp=self.cp, ep=self.ep)
        if self.zero_stage not in (0, 1, 2, 3):
            raise InputError(f"zero_stage must be 0, 1, 2 or 3, got {self.zero_stage!r}")

    @property
    def model_parallel(self) -> int:
        """GPUs of one replica: tp · pp · cp."""
        return self.tp * self.pp * self.cp


@dataclass(frozen=True)
class Precisions:
    """Weights and gradients' precision, the optimizer, and whether it keeps an fp32 master
    copy (None: for weights narrower than 32 bits)."""

    weights: str = "bf16"
    optimizer: str = "adam"
    master_weights: bool | None = None


@dataclass(frozen=True)
class TrainingBatch:
    """One micro-batch's shape, the micro-batches a step runs, and activation recomputation."""

    seq_len: int
    micro_batch: int
    microbatches: int | None = None
    """Micro-batches per step and pipeline (1F1B keeps min(pp, this) in flight); None: ≥ pp."""
    recompute: Recompute = "none"

    def __post_init__(self) -> None:
        require_positive(seq_len=self.seq_len, micro_batch=self.micro_batch)
        if self.microbatches is not None:
            require_positive(microbatches=self.microbatches)
        if self.recompute not in ("none", "selective", "full"):
            raise InputError(
                f"recompute must be 'none', 'selective' or 'full', got {self.recompute!r}")


@dataclass(frozen=True)
class Allowance:
    """What no formula covers: a fixed amount per GPU plus a share of the rest."""

    fixed_bytes: float = DEFAULT_OVERHEAD_FIXED_BYTES
    fraction: float = DEFAULT_OVERHEAD_FRACTION

    def __post_init__(self) -> None:
        if self.fixed_bytes < 0 or self.fraction < 0:
            raise InputError("overhead allowances must be zero or positive")

    def of(self, subtotal: float) -> float:
        return self.fixed_bytes + self.fraction * subtotal

    def note(self, what: str) -> str:
        return (f"allowance: {self.fixed_bytes / 2**30:.2f} GiB fixed + {self.fraction:.0%} of "
                f"{what} (an assumption)")


@dataclass(frozen=True)
class Adapter:
    """A LoRA/QLoRA adapter: rank, adapted matrices, the base's storage and the adapters'."""

    rank: int
    method: Literal["lora", "qlora"] = "lora"
    targets: tuple[str, ...] = ("q", "v")
    gated_mlp: bool = True
    double_quant: bool = True
    precision: str = "bf16"
    master_weights: bool = False

    def __post_init__(self) -> None:
        require_positive(rank=self.rank)
        if self.method not in ("lora", "qlora"):
            raise InputError(f"method must be 'lora' or 'qlora', got {self.method!r}")


SINGLE_GPU = Parallelism()
"""No parallelism: one GPU holds the whole model."""
MIXED_PRECISION_ADAM = Precisions()
"""bf16 weights and gradients, Adam with an fp32 master copy (ZeRO's 16 bytes per parameter)."""
ADAMW = Precisions(optimizer="adamw")
"""What LoRA fine-tuning uses for its adapters by default."""
DEFAULT_ALLOWANCE = Allowance()


@dataclass(frozen=True)
class Speed:
    """How fast one GPU trains: measured TFLOP/s, or MFU against the dense peak; the FLOPs per
    parameter and token that figure counts (unset: 8 for measured TFLOP/s, which include the
    recomputed forward pass, 6 for MFU); and the attention FLOPs per token on top."""

    achieved_tflops_per_gpu: float | None = None
    mfu: float | None = None
    peak_tflops_per_gpu: float | None = None
    flops_per_param_token: float | None = None
    attention_flops_per_token: float = 0.0

    def __post_init__(self) -> None:
        if not self.attention_flops_per_token >= 0:
            raise InputError("attention_flops_per_token must be >= 0")
