"""Value objects the sizing functions share: a model's shape, its mixture of experts, its
attention cache, and the parameter count that shape implies.

Design. Sizing used to take the shape as eight loose numbers per call (params, layers, hidden,
heads, KV heads, head dim, active params, experts ...), written out again at every call
site. ``ModelShape`` carries them once, frozen, with the derived figures every formula needs
(head dim, KV values cached per token, the parameters a batch of tokens reads). A mixture of
experts is a ``MoeShape`` on it; multi-head latent attention (DeepSeek-V2/V3) caches one
compressed latent per token and layer instead of K and V per head, given as
``kv_latent_dim``.

The expected number of distinct routed experts a batch of B tokens touches, with uniform
top-k routing over E experts, is E·(1 − (1 − k/E)^B) per MoE layer: each expert is missed
by one token with probability 1 − k/E, by all B independently with its B-th power. That is
k at one token and E for large batches; decode reads the weights of exactly those experts.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiplat.errors import InputError


@dataclass(frozen=True)
class MoeShape:
    """Routed experts per MoE layer, how many each token uses, and always-on shared ones."""

    experts: int
    experts_per_token: int
    shared_experts: int = 0

    def __post_init__(self) -> None:
        if self.experts < 2 or not 1 <= self.experts_per_token < self.experts:
            raise InputError(
                f"a mixture of experts needs 1 <= expertsPerToken ({self.experts_per_token}) "
                f"< experts ({self.experts}) (fix: take n_routed_experts and "
                "num_experts_per_tok from the model's config.json)"
            )
        if self.shared_experts < 0:
            raise InputError("sharedExperts must be >= 0")

    def experts_touched(self, tokens: float) -> float:
        """Expected distinct routed experts per layer for ``tokens`` tokens: E·(1−(1−k/E)^B)."""
        e, k = self.experts, self.experts_per_token
        return float(e * (1 - (1 - k / e) ** max(tokens, 0.0)))


@dataclass(frozen=True)
class ModelShape:
    """A decoder's shape as sizing needs it. ``params`` counts every weight (all experts);
    ``active_params`` what one token touches (equal to ``params`` for a dense model)."""

    params: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int | None = None
    active_params: float | None = None
    moe: MoeShape | None = None
    kv_latent_dim: int | None = None
    """MLA: values cached per token and layer (kv_lora_rank + qk_rope_head_dim)."""
    ffn_hidden: int | None = None
    """The dense FFN's width (config.json intermediate_size); LoRA and activations need it."""
    expert_ffn_hidden: int | None = None
    """A routed expert's FFN width (moe_intermediate_size); unset: ffn_hidden."""
    attention_params: float | None = None
    """Attention projections over all layers (MLA: ``MlaShape.attention_params``); unset: the
    Q/K/V/O count of grouped-query attention. Attention data parallelism replicates them."""
    kv_lora_rank: int | None = None
    """MLA: the compressed KV's width (the latent less its RoPE key); decode attends over it."""

    def __post_init__(self) -> None:
        for name in ("params", "layers", "hidden", "heads", "kv_heads"):
            if not getattr(self, name) > 0:
                raise InputError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if self.kv_heads > self.heads or self.heads % self.kv_heads:
            raise InputError(
                f"kv_heads {self.kv_heads} must divide heads {self.heads} (grouped-query "
                "attention) (fix: take num_key_value_heads from the model's config.json)")
        if self.head_dim is None and self.hidden % self.heads:
            raise InputError(
                f"hidden {self.hidden} is not divisible by heads {self.heads} "
                "(fix: give head_dim from the model's config.json)")
        if self.moe is not None and self.active_params is None:
            raise InputError("a mixture of experts needs active_params (what one token uses)")
        if self.active_params is not None and not 0 < self.active_params <= self.params:
            raise InputError(
                f"active_params {self.active_params:.4g} must be in (0, params "
                f"{self.params:.4g}]")
        if self.moe is not None and self.routed_expert_params < 0:
            raise InputError("params, active_params and experts are inconsistent: "
                             "total = dense + E·expert and active = dense + k·expert")

    @property
    def dim_per_head(self) -> int:
        return self.head_dim if self.head_dim is not None else self.hidden // self.heads

    @property
    def attention_dim(self) -> int:
        """heads · head_dim: the width of Q (and of the attention output)."""
        return self.heads * self.dim_per_head

    @property
    def decode_attention_dim(self) -> float:
        """Per head summed over heads, half of QK^T's plus AV's inner widths: a decode step
        spends 4·ctx·this FLOPs per layer on attention. MLA decodes with the up-projections
        absorbed into the query and output (DeepSeek-V2 paper, section 2.1.2; FlashMLA), so
        each head's scores run over the whole cached latent (kv_lora_rank + RoPE key) and its
        values over the compressed KV: heads·(latent + kv_lora_rank)/2, 4.25x GQA's
        heads·head_dim for DeepSeek-V3."""
        if self.kv_latent_dim is not None and self.kv_lora_rank is not None:
            return self.heads * (self.kv_latent_dim + self.kv_lora_rank) / 2
        return float(self.attention_dim)

    @property
    def flops_params(self) -> float:
        """Parameters one token multiplies through: the active count of a mixture of experts."""
        return self.params if self.active_params is None else self.active_params

    @property
    def routed_expert_params(self) -> float:
        """Parameters of one routed expert summed over all MoE layers: (P − P_a) / (E − k)."""
        if self.moe is None:
            return 0.0
        return (self.params - self.flops_params) / (self.moe.experts - self.moe.experts_per_token)

    @property
    def always_read_params(self) -> float:
        """Attention, embeddings, dense layers and shared experts: read for any token."""
        if self.moe is None:
            return self.flops_params
        return self.params - self.moe.experts * self.routed_expert_params

    @property
    def attention_weights(self) -> float:
        """Parameters of the attention projections, all layers: Q and O of heads·head_dim,
        K and V of kv_heads·head_dim (or the given MLA count)."""
        if self.attention_params is not None:
            return self.attention_params
        hd = self.dim_per_head
        return float(self.layers * 2 * self.hidden * hd * (self.heads + self.kv_heads))

    def params_read(self, tokens: float) -> float:
        """Parameters streamed from memory for one forward pass over ``tokens`` tokens."""
        if self.moe is None:
            return self.flops_params
        return self.always_read_params + self.routed_expert_params * self.moe.experts_touched(
            tokens)

    def kv_values_per_token(self, kv_heads_per_gpu: int | None = None) -> int:
        """Cached values per token and layer on one GPU (K and V of its KV heads, or the
        MLA latent, which every tensor-parallel rank holds whole)."""
        if self.kv_latent_dim is not None:
            return self.kv_latent_dim
        heads = self.kv_heads if kv_heads_per_gpu is None else kv_heads_per_gpu
        return 2 * heads * self.dim_per_head


@dataclass(frozen=True)
class MlaShape:
    """Multi-head latent attention projections (DeepSeek-V2 paper, section 2.1.2)."""

    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int

    @property
    def latent_dim(self) -> int:
        """Cached per token and layer: the compressed KV plus the decoupled RoPE key."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    def attention_params(self, hidden: int, heads: int) -> int:
        qk = self.qk_nope_head_dim + self.qk_rope_head_dim
        q = hidden * self.q_lora_rank + self.q_lora_rank * heads * qk
        kv = hidden * self.latent_dim + self.kv_lora_rank * heads * (
            self.qk_nope_head_dim + self.v_head_dim)
        return q + kv + heads * self.v_head_dim * hidden
