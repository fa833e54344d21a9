"""A catalog model entry from a model's published Hugging Face ``config.json`` (pure).

Design. ``model_entry(config, name=..., file=...)`` takes the parsed JSON object and returns
the ``ModelArchitecture`` that ``aiplat catalog import`` writes into an overlay (the
``--catalog FILE`` form): the shape fields mapped one to one from the config's keys, and the
parameter count computed from that shape. Reading the file, ``-`` for stdin and writing the
overlay are the command's (``aiplat.cli.catalog``); nothing here does I/O.

- The architecture is named by ``architectures[0]`` (else ``model_type``) and must be one of
  ``FAMILIES``: decoders whose weights this module can count tensor by tensor from the
  config (Llama, Mistral, Qwen 2/3, Gemma 1/2/3, Mixtral, Qwen3-MoE, DeepSeek-V3). Any other
  is refused (exit 2), never guessed: a count from the wrong layout is a confident wrong
  answer that sizes GPUs. Multimodal wrappers (``...ForConditionalGeneration`` with a
  ``text_config``) are refused for the same reason: their vision towers are not counted.
- The count is exact for what Hugging Face transformers instantiates: embeddings, the LM head
  unless tied (``tie_word_embeddings``, whose default differs by family: Gemma ties), Q/K/V/O
  or MLA projections with their biases and norms, gated FFNs (SwiGLU/GeGLU: gate, up and down
  matrices), MoE routers, routed and shared experts, every RMSNorm weight. A mixture of
  experts' ``active_params`` is the total less the routed experts a token does not use.
  DeepSeek-V3's multi-token-prediction layer (``num_nextn_predict_layers``) is not part of
  the model transformers builds, nor of the published 671B, and is left out.
- Every figure read is checked (an integer, positive, under a bound no published model comes
  near); a problem names the config's field and the fix, as an ``InputError`` (exit 2).

The one parameter counter in aiplat: sizing reads the catalog's ``params`` and
``activeParams``; an imported entry's come from here, a built-in entry's were counted from
its config.json shape when it was added. tests/unit/test_catalog.py checks the built-in ones
against the publishers' totals and an estimate written apart (norms and biases left out,
every embedding untied: within 0.2 % on the untied decoders; it would be over by 15 % on
Qwen2.5-1.5B and 63 % on Gemma-3-270M, whose tied embeddings it counts twice).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aiplat.catalog.models import MlaProjections, ModelArchitecture
from aiplat.errors import InputError

Moe = Literal["mixtral", "qwen3_moe", "deepseek_v3"]


@dataclass(frozen=True)
class Family:
    """How one architecture lays out its weights, as transformers builds it."""

    model_type: str
    qkv_bias: bool | None = False
    """Q/K/V projections have biases: True (Qwen2), False, or None: as ``attention_bias``."""
    o_bias: bool | None = False
    """The output projection has a bias: None: as ``attention_bias``."""
    mlp_bias: bool = False
    """The FFN projections have biases where ``mlp_bias`` says so (Llama only)."""
    qk_norm: bool = False
    """RMSNorm over each head's query and key (Qwen3, Gemma 3): 2·head_dim weights."""
    norms_per_layer: int = 2
    """RMSNorms of width hidden per layer (Gemma 2/3: before and after attention and FFN)."""
    tied_default: bool = False
    """``tie_word_embeddings`` when the config leaves it out (transformers' class default)."""
    moe: Moe | None = None
    mla: bool = False


FAMILIES: dict[str, Family] = {
    "LlamaForCausalLM": Family("llama", qkv_bias=None, o_bias=None, mlp_bias=True),
    "MistralForCausalLM": Family("mistral"),
    "Qwen2ForCausalLM": Family("qwen2", qkv_bias=True),
    "Qwen3ForCausalLM": Family("qwen3", qkv_bias=None, o_bias=None, qk_norm=True),
    "GemmaForCausalLM": Family("gemma", qkv_bias=None, o_bias=None, tied_default=True),
    "Gemma2ForCausalLM": Family("gemma2", qkv_bias=None, o_bias=None, norms_per_layer=4,
                                tied_default=True),
    "Gemma3ForCausalLM": Family("gemma3_text", qkv_bias=None, o_bias=None, qk_norm=True,
                                norms_per_layer=4, tied_default=True),
    "MixtralForCausalLM": Family("mixtral", moe="mixtral"),
    "Qwen3MoeForCausalLM": Family("qwen3_moe", qkv_bias=None, o_bias=None, qk_norm=True,
                                  moe="qwen3_moe"),
    "DeepseekV3ForCausalLM": Family("deepseek_v3", qkv_bias=None, o_bias=None,
                                    moe="deepseek_v3", mla=True),
}
BY_MODEL_TYPE = {f.model_type: arch for arch, f in FAMILIES.items()}

# Upper bounds well past any published model (Llama-3.1-405B: 126 layers, hidden 16,384;
# Llama 4 Scout: 10M context; Gemma 3: 262K vocabulary): a value beyond one is a typo or a
# hostile file, not a model to size.
LIMITS = {"layers": 1_000, "width": 1 << 20, "heads": 4_096, "vocab": 10_000_000,
          "context": 1 << 28, "experts": 8_192}


class _Config:
    """The config's fields, each read once with its check; errors name the field."""

    def __init__(self, data: Mapping[str, Any], file: str) -> None:
        self.data, self.file = data, file

    def fail(self, field: str, problem: str, fix: str) -> InputError:
        return InputError(f"{self.file}: field '{field}': {problem} (fix: {fix})")

    def whole(self, field: str, limit: str, *, default: int | None = None,
            minimum: int = 1) -> int:
        value = self.data.get(field, default)
        if value is None:
            raise self.fail(field, "missing", f"give {field} as the model's published "
                            "config.json does; this is not a complete config")
        # JSON numbers such as 4096.0 are floats; a bool is an int to Python but no count.
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(field, f"{value!r} is not a whole number",
                            f"give {field} as an integer")
        if not minimum <= value <= LIMITS[limit]:
            raise self.fail(field, f"{value} is out of range ({minimum} to {LIMITS[limit]:,})",
                            "give the value the model's published config.json has")
        return value

    def flag(self, field: str, default: bool) -> bool:
        value = self.data.get(field, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(field, f"{value!r} is not true or false", f"give {field}: "
                            "true or false")
        return value

    def text(self, field: str) -> str | None:
        value = self.data.get(field)
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Counted:
    """A model's parameters, total and per token, and the shape they came from."""

    params: int
    active_params: int
    entry: ModelArchitecture


def architecture(data: Mapping[str, Any], file: str = "config.json") -> tuple[str, Family]:
    """The architecture ``data`` declares and how its weights are laid out; refused if it is
    not one this module can count."""
    c = _Config(data, file)
    archs = data.get("architectures")
    model_type = c.text("model_type")
    supported = ", ".join(FAMILIES)
    if archs is not None:
        if (not isinstance(archs, list) or len(archs) != 1
                or not isinstance(archs[0], str)):
            raise c.fail("architectures", f"{archs!r} is not a list of one class name",
                         'give the one model class, e.g. ["LlamaForCausalLM"]')
        name = archs[0]
        field = "architectures"
    elif model_type in BY_MODEL_TYPE:
        name, field = BY_MODEL_TYPE[model_type], "model_type"
    elif model_type is None:
        raise c.fail("architectures", "missing (and no model_type)",
                     "give the model's published config.json, which names its class in "
                     "architectures")
    else:
        name, field = model_type, "model_type"
    if name not in FAMILIES:
        wrapper = " (a multimodal wrapper: its vision tower would not be counted)" \
            if "text_config" in data else ""
        raise c.fail(field, f"'{name}' is not an architecture aiplat can count{wrapper}",
                     f"import a config of one of {supported}, or write the model's entry "
                     "by hand in a --catalog file (`aiplat catalog models NAME -o yaml` "
                     "shows the form)")
    return name, FAMILIES[name]


def count(data: Mapping[str, Any], *, name: str, aliases: Sequence[str] = (),
          provenance: str = "", file: str = "config.json") -> Counted:
    """The catalog entry for the model ``data`` (a parsed config.json) describes."""
    arch, fam = architecture(data, file)
    c = _Config(data, file)
    layers = c.whole("num_hidden_layers", "layers")
    h = c.whole("hidden_size", "width")
    heads = c.whole("num_attention_heads", "heads")
    kv_heads = c.whole("num_key_value_heads", "heads", default=heads)
    if heads % kv_heads:
        raise c.fail("num_key_value_heads", f"{kv_heads} does not divide "
                     f"num_attention_heads {heads}", "give the model's published value")
    vocab = c.whole("vocab_size", "vocab")
    ffn = c.whole("intermediate_size", "width")
    context = c.whole("max_position_embeddings", "context")
    tied = c.flag("tie_word_embeddings", fam.tied_default)
    attn_bias = c.flag("attention_bias", False)

    mla: MlaProjections | None = None
    if fam.mla:
        mla, head_dim, attention = _mla(c, h, heads, attn_bias)
    else:
        head_dim = c.whole("head_dim", "width", default=h // heads if h % heads == 0 else None)
        qkv_bias = attn_bias if fam.qkv_bias is None else fam.qkv_bias
        o_bias = attn_bias if fam.o_bias is None else fam.o_bias
        q, kv = heads * head_dim, kv_heads * head_dim
        attention = (h * (q + 2 * kv) + q * h + (q + 2 * kv if qkv_bias else 0)
                     + (h if o_bias else 0) + (2 * head_dim if fam.qk_norm else 0))
    mlp_bias = fam.mlp_bias and c.flag("mlp_bias", False)

    def gated_ffn(width: int) -> int:  # gate, up and down projections
        return 3 * h * width + ((2 * width + h) if mlp_bias else 0)

    moe = _moe(c, fam, layers, ffn) if fam.moe else None
    per_layer = attention + fam.norms_per_layer * h
    total = layers * per_layer + vocab * h * (1 if tied else 2) + h  # + the final norm
    active = total
    if moe is None:
        total += layers * gated_ffn(ffn)
        active = total
    else:
        expert = gated_ffn(moe.expert_ffn)
        moe_layer = moe.router + moe.experts * expert + gated_ffn(moe.shared_ffn) * (
            moe.shared > 0)
        total += moe.dense_layers * gated_ffn(ffn) + moe.moe_layers * moe_layer
        active = total - moe.moe_layers * (moe.experts - moe.per_token) * expert

    dtype = c.text("torch_dtype") or c.text("dtype")
    mtp = data.get("num_nextn_predict_layers")
    head = " tied to the LM head" if tied else " and LM head"
    source = (f"{provenance or file}: {arch} config.json"
              f"{f', weights in {dtype}' if dtype else ''}; params counted by aiplat catalog "
              f"import from the shape (embeddings{head}"
              f", attention, FFNs, {'router, experts, ' if moe else ''}norms and biases"
              f"{f'; not the {mtp} multi-token-prediction layer(s)' if mtp else ''})")
    fields: dict[str, Any] = dict(
        name=name, aliases=sorted({a.lower() for a in aliases} - {name.lower()}),
        family=fam.model_type.replace("_", "-"), params=total, layers=layers,
        hidden=h, ffn_hidden=ffn, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
        vocab=vocab, max_context=context, mla=mla, source=source)
    if moe is not None:
        fields.update(active_params=active, experts=moe.experts,
                      experts_per_token=moe.per_token, shared_experts=moe.shared,
                      dense_layers=moe.dense_layers,
                      expert_ffn_hidden=None if moe.expert_ffn == ffn else moe.expert_ffn,
                      shared_ffn_hidden=(moe.shared_ffn // moe.shared) if moe.shared else None)
    try:
        entry = ModelArchitecture(**fields)
    except ValueError as e:  # pydantic's checks of what the reads above let through
        raise InputError(f"{file}: not a model aiplat can describe: {e} (fix: give the "
                         "model's published config.json)") from None
    return Counted(total, active, entry)


def overlay(entries: Sequence[ModelArchitecture]) -> dict[str, Any]:
    """The ``--catalog FILE`` document holding ``entries``, as the packaged data files write
    them: camelCase keys, defaults left out, counts as whole numbers (the model's float
    fields would print 8030261248.0)."""
    models = []
    for e in entries:
        d = e.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        for key in ("params", "activeParams"):
            if isinstance(d.get(key), float) and d[key].is_integer():
                d[key] = int(d[key])
        models.append(d)
    return {"models": models}


def _mla(c: _Config, h: int, heads: int,
         bias: bool) -> tuple[MlaProjections, int, int]:
    """DeepSeek-V3's multi-head latent attention: (projections, head dim, weights per
    layer): Q through a rank-q_lora_rank bottleneck with its norm, K/V through the cached
    latent (kv_lora_rank + the RoPE key) with its norm, then per-head up-projections."""
    if c.data.get("q_lora_rank", 0) is None:
        raise c.fail("q_lora_rank", "null (a direct query projection, DeepSeek-V2-Lite's "
                     "form) is not modelled", "write the model's entry by hand in a "
                     "--catalog file")
    ranks = {f: c.whole(f, "width") for f in ("q_lora_rank", "kv_lora_rank",
                                             "qk_nope_head_dim", "qk_rope_head_dim",
                                             "v_head_dim")}
    m = MlaProjections(**ranks)
    qk = m.qk_nope_head_dim + m.qk_rope_head_dim
    weights = (h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * heads * qk
               + h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
               + m.kv_lora_rank * heads * (m.qk_nope_head_dim + m.v_head_dim)
               + heads * m.v_head_dim * h)
    if bias:  # q_a, kv_a and o projections (transformers' DeepseekV3Attention)
        weights += m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim + h
    return m, m.v_head_dim, weights


@dataclass(frozen=True)
class _MoeLayout:
    experts: int
    per_token: int
    expert_ffn: int
    shared: int
    shared_ffn: int
    """All shared experts together (DeepSeek builds them as one FFN of this width)."""
    router: int
    moe_layers: int
    dense_layers: int


def _moe(c: _Config, fam: Family, layers: int, ffn: int) -> _MoeLayout:
    h = c.whole("hidden_size", "width")
    if fam.moe == "mixtral":
        experts = c.whole("num_local_experts", "experts", minimum=2)
        expert_ffn, shared, moe_layers = ffn, 0, layers
    elif fam.moe == "qwen3_moe":
        experts = c.whole("num_experts", "experts", minimum=2)
        expert_ffn, shared = c.whole("moe_intermediate_size", "width"), 0
        step = c.whole("decoder_sparse_step", "layers", default=1)
        dense_only = c.data.get("mlp_only_layers") or []
        if not isinstance(dense_only, list) or not all(
                isinstance(i, int) and not isinstance(i, bool) for i in dense_only):
            raise c.fail("mlp_only_layers", f"{dense_only!r} is not a list of layer numbers",
                         "give the layers with a dense FFN, e.g. [] for none")
        moe_layers = sum(1 for i in range(layers)
                         if i not in dense_only and (i + 1) % step == 0)
    else:  # deepseek_v3
        experts = c.whole("n_routed_experts", "experts", minimum=2)
        expert_ffn = c.whole("moe_intermediate_size", "width")
        shared = c.whole("n_shared_experts", "experts", default=0, minimum=0)
        first_dense = c.whole("first_k_dense_replace", "layers", default=0, minimum=0)
        freq = c.whole("moe_layer_freq", "layers", default=1)
        moe_layers = sum(1 for i in range(layers) if i >= first_dense and i % freq == 0)
    per_token = c.whole("num_experts_per_tok", "experts")
    if per_token >= experts:
        raise c.fail("num_experts_per_tok", f"{per_token} is not fewer than the {experts} "
                     "experts", "give the model's published value")
    router = h * experts
    if fam.moe == "deepseek_v3" and c.text("topk_method") == "noaux_tc":
        router += experts  # the gate's e_score_correction_bias
    if moe_layers == 0:
        field = "mlp_only_layers" if fam.moe == "qwen3_moe" else "first_k_dense_replace"
        raise c.fail(field, "leaves no layer a mixture of experts",
                     "give the model's published value")
    return _MoeLayout(experts, per_token, expert_ffn, shared, shared * expert_ffn, router,
                      moe_layers, layers - moe_layers)
