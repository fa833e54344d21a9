"""RAG sizing: chunking, embedding (ingest and queries), vector index memory, retrieval CPUs.

Design. Retrieval-augmented generation adds three sized parts to an LLM service; the LLM part
itself is sized by ``aiplat.sizing.inference`` once ``rag_prompt_tokens`` has added the
retrieved chunks to each prompt.

- Embedding is an encoder forward pass: ≈ 2 · P FLOPs per token (plus a bidirectional
  attention term, 4 · layers · sequence · hidden per token, when the shape is given). It is
  compute bound once batched, so throughput = peak · efficiency / FLOPs per token.
- Vector index memory is the raw vectors plus what the index adds per vector. Exact figures
  follow the Faiss layouts (facebookresearch/faiss wiki, "Guidelines to choose an index"):
  flat stores d values per vector and nothing else; HNSW adds M · 2 · 4 bytes of graph links
  ("(d * 4 + M * 2 * 4) bytes per vector" for float32); IVF-PQ stores a PQ code of
  m · nbits / 8 bytes plus an 8-byte id per vector in its inverted lists, plus nlist float32
  centroids.
- Retrieval throughput per CPU core cannot be derived from first principles for graph
  indexes, so it is a stated assumption that a benchmark should replace. The default for
  HNSW scales one published point by dimension (distance computations dominate and cost ∝ d):
  USearch's BENCHMARKS.md reports 131,654 searches/s on the 64 cores of an AWS c7g.metal for
  f32 × 256 dimensions, M = 16, ef_search 64, recall@1 99.3 % — about 2,057 per core. Flat and
  IVF scans are modelled as streaming the bytes they compare at an assumed per-core rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from aiplat.errors import InputError
from aiplat.sizing.inference import (
    DEFAULT_OVERHEAD_BYTES_PER_GPU,
)
from aiplat.sizing.result import (
    Result,
    precision_bytes,
    require_fraction,
    require_non_negative,
    require_positive,
)

IndexKind = Literal["flat", "hnsw", "ivf_pq"]

DEFAULT_HNSW_M = 16
"""Links per node (hnswlib's and pgvector's default; the graph's base layer keeps 2·M)."""

HNSW_REFERENCE_QPS_PER_CORE = 131_654 / 64
"""USearch BENCHMARKS.md: f32 × 256, M=16, ef_search=64, recall@1 99.3 %, 64 Graviton 3 cores."""

HNSW_REFERENCE_DIM = 256

DEFAULT_SCAN_BYTES_PER_SECOND_PER_CORE = 5e9
"""Assumed bytes one core compares per second in a flat or IVF scan (DRAM streaming bound)."""

DEFAULT_EMBEDDING_EFFICIENCY = 0.4
"""MFU-like fraction for batched encoder inference: short sequences, smaller GEMMs than LLMs."""


# --- Chunking and prompts ---------------------------------------------------------------


class Chunking(Result):
    chunks_per_document: int
    chunks: int
    tokens_per_chunk: int
    tokens_to_embed: int


def chunking(
    documents: int,
    tokens_per_document: int,
    chunk_tokens: int,
    overlap_tokens: int = 0,
) -> Chunking:
    """Chunks (= vectors) and tokens to embed when documents are split with a sliding window.

    A document of T tokens with window C and overlap O yields 1 chunk if T ≤ C, else
    ceil((T − O) / (C − O)); overlap makes T + (chunks − 1) · O tokens to embed per document.
    """
    require_positive(
        documents=documents, tokens_per_document=tokens_per_document, chunk_tokens=chunk_tokens
    )
    require_non_negative(overlap_tokens=overlap_tokens)
    if overlap_tokens >= chunk_tokens:
        raise InputError(f"overlap_tokens {overlap_tokens} must be < chunk_tokens {chunk_tokens}")
    stride = chunk_tokens - overlap_tokens
    if tokens_per_document <= chunk_tokens:
        per_doc = 1
    else:
        per_doc = math.ceil((tokens_per_document - overlap_tokens) / stride)
    per_doc_tokens = tokens_per_document + (per_doc - 1) * overlap_tokens
    return Chunking(
        chunks_per_document=per_doc,
        chunks=per_doc * documents,
        tokens_per_chunk=min(chunk_tokens, tokens_per_document),
        tokens_to_embed=per_doc_tokens * documents,
        formula=(
            "chunks/doc = 1 if T ≤ C else ceil((T − O)/(C − O)); "
            "tokens = documents · (T + (chunks/doc − 1) · O)"
        ),
        inputs={
            "documents": documents,
            "tokens_per_document": tokens_per_document,
            "chunk_tokens": chunk_tokens,
            "overlap_tokens": overlap_tokens,
        },
    )


class RagPrompt(Result):
    retrieved_tokens: int
    prompt_tokens: int


def rag_prompt_tokens(
    question_tokens: int,
    top_k: int,
    chunk_tokens: int,
    template_tokens: int = 0,
) -> RagPrompt:
    """Prompt length the LLM sees: question + top_k retrieved chunks + template/system text.

    Feed ``prompt_tokens`` to the inference functions (prefill time, KV cache, SLO replicas).
    """
    require_positive(question_tokens=question_tokens, top_k=top_k, chunk_tokens=chunk_tokens)
    require_non_negative(template_tokens=template_tokens)
    retrieved = top_k * chunk_tokens
    return RagPrompt(
        retrieved_tokens=retrieved,
        prompt_tokens=question_tokens + retrieved + template_tokens,
        formula="question + top_k · chunk_tokens + template",
        inputs={
            "question_tokens": question_tokens,
            "top_k": top_k,
            "chunk_tokens": chunk_tokens,
            "template_tokens": template_tokens,
        },
    )


# --- Embedding model --------------------------------------------------------------------


class EmbeddingModel(Result):
    weights_bytes: float
    memory_bytes_per_gpu: float
    flops_per_token: float
    tokens_per_second_per_gpu: float


def embedding_model(
    params: float,
    dense_tflops: float,
    precision: str = "bf16",
    *,
    layers: int = 0,
    hidden: int = 0,
    sequence_tokens: int = 0,
    compute_efficiency: float = DEFAULT_EMBEDDING_EFFICIENCY,
    overhead_bytes_per_gpu: float = DEFAULT_OVERHEAD_BYTES_PER_GPU,
) -> EmbeddingModel:
    """Memory and throughput of one GPU running an embedding (encoder) model.

    FLOPs per token ≈ 2 · params, plus 4 · layers · sequence_tokens · hidden for
    bidirectional attention when the shape is given (≈ 7 % for a 335M, 24-layer, 1024-wide
    encoder at 512 tokens). ``dense_tflops`` is the GPU's dense peak for ``precision``.
    """
    require_positive(params=params, dense_tflops=dense_tflops)
    require_non_negative(
        layers=layers,
        hidden=hidden,
        sequence_tokens=sequence_tokens,
        overhead_bytes_per_gpu=overhead_bytes_per_gpu,
    )
    require_fraction(compute_efficiency=compute_efficiency)
    weights = params * precision_bytes(precision)
    flops_per_token = 2 * params + 4 * layers * sequence_tokens * hidden
    notes = []
    if not (layers and hidden and sequence_tokens):
        notes.append("attention FLOPs left out: give layers, hidden and sequence_tokens")
    return EmbeddingModel(
        weights_bytes=weights,
        memory_bytes_per_gpu=weights + overhead_bytes_per_gpu,
        flops_per_token=flops_per_token,
        tokens_per_second_per_gpu=dense_tflops * 1e12 * compute_efficiency / flops_per_token,
        formula=(
            "tokens/s = peak · compute_efficiency / (2·params + 4·layers·seq·hidden); "
            "memory = params · bytes + runtime overhead"
        ),
        inputs={
            "params": params,
            "dense_tflops": dense_tflops,
            "precision": precision,
            "layers": layers,
            "hidden": hidden,
            "sequence_tokens": sequence_tokens,
            "compute_efficiency": compute_efficiency,
            "overhead_bytes_per_gpu": overhead_bytes_per_gpu,
        },
        notes=notes,
    )


class EmbeddingIngest(Result):
    chunks: int
    tokens_to_embed: int
    flops: float
    seconds: float
    gpu_hours: float


@dataclass(frozen=True)
class Corpus:
    """Documents to index: how many, their mean length, and how they are chunked."""

    documents: int
    tokens_per_document: int
    chunk_tokens: int
    overlap_tokens: int = 0


@dataclass(frozen=True)
class Encoder:
    """An embedding model on one GPU: its parameters, the GPU's dense peak at ``precision``,
    the shape for the attention term (0: left out) and the compute efficiency reached."""

    params: float
    dense_tflops: float
    precision: str = "bf16"
    layers: int = 0
    hidden: int = 0
    compute_efficiency: float = DEFAULT_EMBEDDING_EFFICIENCY


def embedding_ingest(corpus: Corpus, encoder: Encoder, *, gpus: int = 1) -> EmbeddingIngest:
    """Time to embed a corpus once: chunk it, then run every chunk token through the encoder.

    Embedding batches are independent, so ``gpus`` scale it linearly (data parallel).
    """
    require_positive(gpus=gpus)
    c = chunking(corpus.documents, corpus.tokens_per_document, corpus.chunk_tokens,
                 corpus.overlap_tokens)
    e = encoder
    model = embedding_model(
        e.params,
        e.dense_tflops,
        e.precision,
        layers=e.layers,
        hidden=e.hidden,
        sequence_tokens=c.tokens_per_chunk,
        compute_efficiency=e.compute_efficiency,
    )
    flops = c.tokens_to_embed * model.flops_per_token
    seconds = c.tokens_to_embed / (model.tokens_per_second_per_gpu * gpus)
    return EmbeddingIngest(
        chunks=c.chunks,
        tokens_to_embed=c.tokens_to_embed,
        flops=flops,
        seconds=seconds,
        gpu_hours=seconds * gpus / 3600,
        formula="tokens_to_embed · FLOPs per token / (gpus · peak · compute_efficiency)",
        inputs={
            "documents": corpus.documents,
            "tokens_per_document": corpus.tokens_per_document,
            "chunk_tokens": corpus.chunk_tokens,
            "overlap_tokens": corpus.overlap_tokens,
            "params": e.params,
            "dense_tflops": e.dense_tflops,
            "gpus": gpus,
            "precision": e.precision,
            "layers": e.layers,
            "hidden": e.hidden,
            "compute_efficiency": e.compute_efficiency,
        },
        notes=["excludes document parsing, tokenisation and index build time"],
    )


class QueryEmbedding(Result):
    flops_per_second: float
    gpu_load: float
    gpus: int


def query_embedding_gpus(
    *,
    qps: float,
    query_tokens: int,
    params: float,
    dense_tflops: float,
    precision: str = "bf16",
    compute_efficiency: float = DEFAULT_EMBEDDING_EFFICIENCY,
    target_utilization: float = 0.5,
) -> QueryEmbedding:
    """GPUs to embed ``qps`` queries of ``query_tokens`` tokens each.

    ``gpu_load`` is the busy fraction of one GPU; GPUs = ceil(load / target_utilization), at
    least one (a replica is needed at any load). The target leaves headroom for bursts and
    for the small, latency-bound batches of online queries.
    """
    require_positive(qps=qps, query_tokens=query_tokens)
    require_fraction(target_utilization=target_utilization)
    model = embedding_model(params, dense_tflops, precision, compute_efficiency=compute_efficiency)
    load = qps * query_tokens / model.tokens_per_second_per_gpu
    return QueryEmbedding(
        flops_per_second=qps * query_tokens * model.flops_per_token,
        gpu_load=load,
        gpus=max(1, math.ceil(load / target_utilization - 1e-9)),
        formula="ceil(qps · query_tokens · 2·params / (peak · compute_efficiency) / target)",
        inputs={
            "qps": qps,
            "query_tokens": query_tokens,
            "params": params,
            "dense_tflops": dense_tflops,
            "precision": precision,
            "compute_efficiency": compute_efficiency,
            "target_utilization": target_utilization,
        },
    )


# --- Vector index -----------------------------------------------------------------------


class VectorIndex(Result):
    raw_vector_bytes: float
    index_bytes: float
    bytes_per_vector: float
    overhead_factor: float


@dataclass(frozen=True)
class IndexLayout:
    """A vector index: its kind, the precision of stored values and the knobs of its kind
    (HNSW's M; IVF-PQ's sub-quantizers, code bits, lists and probed lists). Unset IVF-PQ
    knobs follow the defaults in ``vector_index_memory``."""

    kind: IndexKind = "hnsw"
    value_precision: str = "fp32"
    hnsw_m: int = DEFAULT_HNSW_M
    pq_subquantizers: int | None = None
    pq_bits: int = 8
    ivf_lists: int | None = None
    ivf_probes: int = 16


HNSW_FP32 = IndexLayout()


def vector_index_memory(vectors: int, dim: int, layout: IndexLayout = HNSW_FP32) -> VectorIndex:
    """Memory of a vector index held in RAM, after the Faiss layouts.

    - flat: vectors · dim · bytes per value (overhead factor 1.0).
    - hnsw: + M · 2 · 4 bytes of neighbour ids per vector (base layer; upper layers add
      ~1/M more and are ignored), M = ``hnsw_m``, default 16.
    - ivf_pq: no raw vectors kept; per vector ceil(m · nbits / 8) code bytes + an 8-byte id,
      plus ivf_lists · dim · 4 bytes of coarse centroids. Defaults: m = dim / 16 (a common
      choice that keeps 16-dimensional sub-vectors), nbits 8, ivf_lists = 4·√vectors.

    ``raw_vector_bytes`` is the flat size of the same vectors, so ``overhead_factor`` =
    index / raw reads > 1 for HNSW and < 1 for compressed indexes.
    """
    require_positive(vectors=vectors, dim=dim)
    index, value_precision, hnsw_m = layout.kind, layout.value_precision, layout.hnsw_m
    pq_subquantizers, pq_bits, ivf_lists = layout.pq_subquantizers, layout.pq_bits, layout.ivf_lists
    value_bytes = precision_bytes(value_precision)
    raw = vectors * dim * value_bytes
    inputs: dict[str, float | int | str | bool | None] = {
        "vectors": vectors,
        "dim": dim,
        "index": index,
        "value_precision": value_precision,
    }
    notes: list[str] = []
    if index == "flat":
        total = raw
        formula = "vectors · dim · bytes per value"
    elif index == "hnsw":
        require_positive(hnsw_m=hnsw_m)
        total = vectors * (dim * value_bytes + hnsw_m * 2 * 4)
        formula = "vectors · (dim · bytes + M · 2 · 4) (Faiss wiki: (d*4 + M*2*4) per vector)"
        inputs["hnsw_m"] = hnsw_m
    elif index == "ivf_pq":
        m = pq_subquantizers if pq_subquantizers is not None else max(1, dim // 16)
        lists = ivf_lists if ivf_lists is not None else max(1, round(4 * math.sqrt(vectors)))
        require_positive(pq_subquantizers=m, pq_bits=pq_bits, ivf_lists=lists)
        code_bytes = math.ceil(m * pq_bits / 8)
        total = vectors * (code_bytes + 8) + lists * dim * 4
        formula = "vectors · (ceil(m · nbits / 8) + 8 id bytes) + ivf_lists · dim · 4"
        inputs.update({"pq_subquantizers": m, "pq_bits": pq_bits, "ivf_lists": lists})
        notes.append("raw vectors not kept; add raw_vector_bytes if re-ranking needs them")
    else:
        raise InputError(f"unknown index {index!r} (fix: use flat, hnsw or ivf_pq)")
    return VectorIndex(
        raw_vector_bytes=raw,
        index_bytes=total,
        bytes_per_vector=total / vectors,
        overhead_factor=total / raw,
        formula=formula,
        inputs=inputs,
        notes=[*notes, "excludes document text and metadata stored next to the vectors"],
    )


class RetrievalCores(Result):
    qps_per_core: float
    cores: int


def retrieval_cpu_cores(
    qps: float,
    vectors: int,
    dim: int,
    layout: IndexLayout = HNSW_FP32,
    *,
    qps_per_core: float | None = None,
    scan_bytes_per_second_per_core: float = DEFAULT_SCAN_BYTES_PER_SECOND_PER_CORE,
    target_utilization: float = 0.7,
) -> RetrievalCores:
    """CPU cores to answer ``qps`` nearest-neighbour searches.

    Pass ``qps_per_core`` from a benchmark of your index when you have one. Otherwise:
    hnsw — the USearch reference (≈ 2,057 searches/s per core at d = 256, ef_search 64)
    scaled by 256 / dim, ignoring the slow (logarithmic) growth with collection size; flat —
    each search compares all vectors · dim · bytes; ivf_pq — it compares the centroids and
    ``ivf_probes`` / ivf_lists of the PQ codes; scans run at
    ``scan_bytes_per_second_per_core``. Cores = ceil(qps / (qps_per_core · target)).
    """
    require_positive(qps=qps, vectors=vectors, dim=dim)
    require_fraction(target_utilization=target_utilization)
    require_positive(scan_bytes_per_second_per_core=scan_bytes_per_second_per_core)
    index, value_precision = layout.kind, layout.value_precision
    ivf_lists, ivf_probes, pq_subquantizers = layout.ivf_lists, layout.ivf_probes, (
        layout.pq_subquantizers)
    value_bytes = precision_bytes(value_precision)
    notes: list[str] = []
    if qps_per_core is not None:
        require_positive(qps_per_core=qps_per_core)
        per_core = qps_per_core
        notes.append("qps_per_core given by the caller")
    elif index == "hnsw":
        per_core = HNSW_REFERENCE_QPS_PER_CORE * HNSW_REFERENCE_DIM / dim
        notes.append(
            "assumed: USearch HNSW reference (M=16, ef_search=64, recall@1 ≈ 0.99) scaled by "
            "dimension; benchmark your index and pass qps_per_core"
        )
    elif index == "flat":
        per_core = scan_bytes_per_second_per_core / (vectors * dim * value_bytes)
        notes.append("assumed: exhaustive scan streaming every vector once per query")
    elif index == "ivf_pq":
        lists = ivf_lists if ivf_lists is not None else max(1, round(4 * math.sqrt(vectors)))
        m = pq_subquantizers if pq_subquantizers is not None else max(1, dim // 16)
        require_positive(ivf_lists=lists, ivf_probes=ivf_probes, pq_subquantizers=m)
        scanned = lists * dim * 4 + vectors * min(ivf_probes, lists) / lists * m
        per_core = scan_bytes_per_second_per_core / scanned
        notes.append("assumed: centroids plus the probed lists' 8-bit PQ codes streamed")
    else:
        raise InputError(f"unknown index {index!r} (fix: use flat, hnsw or ivf_pq)")
    return RetrievalCores(
        qps_per_core=per_core,
        cores=max(1, math.ceil(qps / (per_core * target_utilization) - 1e-9)),
        formula="ceil(qps / (qps_per_core · target_utilization))",
        inputs={
            "qps": qps,
            "vectors": vectors,
            "dim": dim,
            "index": index,
            "value_precision": value_precision,
            "qps_per_core": qps_per_core,
            "ivf_lists": ivf_lists,
            "ivf_probes": ivf_probes,
            "pq_subquantizers": pq_subquantizers,
            "scan_bytes_per_second_per_core": scan_bytes_per_second_per_core,
            "target_utilization": target_utilization,
        },
        notes=notes,
    )
