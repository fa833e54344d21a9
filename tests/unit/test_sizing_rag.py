"""RAG sizing checked against the Faiss memory layouts, published figures and stated rules."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiplat.errors import InputError
from aiplat.sizing.inference import Replica, ServingHardware, prefill_time
from aiplat.sizing.rag import (
    Corpus,
    Encoder,
    IndexLayout,
    chunking,
    embedding_ingest,
    embedding_model,
    query_embedding_gpus,
    rag_prompt_tokens,
    retrieval_cpu_cores,
    vector_index_memory,
)
from aiplat.sizing.shape import ModelShape

# BAAI/bge-large-en-v1.5: 335M parameters, 24 layers, hidden 1024, 1024-dimensional output.
BGE_LARGE = 335e6
H100_BF16_TFLOPS = 989.0


# --- Vector index memory ----------------------------------------------------------------


def test_flat_index_of_10m_1024d_fp32_is_40_96_gb() -> None:
    r = vector_index_memory(10_000_000, 1024, IndexLayout("flat", "fp32"))
    assert r.index_bytes == 40.96e9
    assert r.overhead_factor == 1.0


def test_hnsw_adds_faiss_link_bytes() -> None:
    # Faiss wiki, "Guidelines to choose an index": HNSW uses (d * 4 + M * 2 * 4) bytes/vector.
    for m in (16, 32):
        r = vector_index_memory(1_000_000, 768, IndexLayout("hnsw", hnsw_m=m))
        assert r.bytes_per_vector == 768 * 4 + m * 2 * 4
    default = vector_index_memory(10_000_000, 1024)
    assert default.inputs["hnsw_m"] == 16
    assert default.index_bytes == 10_000_000 * (4096 + 128)
    assert default.overhead_factor > 1


def test_hnsw_over_fp16_vectors_halves_the_vector_part_only() -> None:
    fp32 = vector_index_memory(1_000_000, 1024, IndexLayout("hnsw", "fp32"))
    fp16 = vector_index_memory(1_000_000, 1024, IndexLayout("hnsw", "fp16"))
    assert fp32.index_bytes - fp16.index_bytes == 1_000_000 * 1024 * 2


def test_ivf_pq_stores_codes_and_ids_not_vectors() -> None:
    r = vector_index_memory(
        100_000_000, 1024, IndexLayout("ivf_pq", pq_subquantizers=64, pq_bits=8, ivf_lists=65_536)
    )
    assert r.index_bytes == 100_000_000 * (64 + 8) + 65_536 * 1024 * 4
    assert r.overhead_factor < 0.03  # ~57× smaller than the raw float32 vectors


def test_unknown_index_kind_is_rejected() -> None:
    with pytest.raises(InputError, match=r"\(fix: "):
        vector_index_memory(10, 8, IndexLayout("annoy"))  # type: ignore[arg-type]


@given(vectors=st.integers(1, 10**9), dim=st.integers(1, 4096))
def test_index_memory_orders_pq_flat_hnsw(vectors: int, dim: int) -> None:
    flat = vector_index_memory(vectors, dim, IndexLayout("flat")).index_bytes
    hnsw = vector_index_memory(vectors, dim, IndexLayout("hnsw")).index_bytes
    assert hnsw > flat
    assert flat == vectors * dim * 4


# --- Chunking and prompts ---------------------------------------------------------------


def test_sliding_window_chunks_cover_the_document_with_the_fewest_windows() -> None:
    t, c, o = 2000, 512, 64
    r = chunking(1000, t, c, o)
    n = r.chunks_per_document
    stride = c - o
    assert c + (n - 1) * stride >= t  # n windows reach the end
    assert c + (n - 2) * stride < t  # n − 1 would not
    assert r.chunks == 1000 * n
    assert r.tokens_to_embed == 1000 * (t + (n - 1) * o)


def test_short_document_is_one_chunk() -> None:
    r = chunking(10, 300, 512, 64)
    assert (r.chunks_per_document, r.tokens_to_embed, r.tokens_per_chunk) == (1, 3000, 300)


def test_overlap_must_be_smaller_than_chunk() -> None:
    with pytest.raises(InputError, match="overlap_tokens"):
        chunking(1, 1000, 256, 256)


def test_rag_prompt_adds_top_k_chunks() -> None:
    r = rag_prompt_tokens(question_tokens=60, top_k=5, chunk_tokens=512, template_tokens=150)
    assert r.retrieved_tokens == 2560
    assert r.prompt_tokens == 60 + 2560 + 150


def test_rag_context_lengthens_time_to_first_token() -> None:
    shape: dict[str, Any] = {
        "model": ModelShape(params=8.03e9, layers=32, hidden=4096, heads=32, kv_heads=8),
        "hardware": ServingHardware(memory_bandwidth_bps=3.35e12, dense_tflops=H100_BF16_TFLOPS),
    }
    plain = prefill_time(Replica(**shape), prompt_tokens=60)
    rag = prefill_time(Replica(**shape), prompt_tokens=rag_prompt_tokens(60, 8, 512).prompt_tokens)
    assert rag.ttft_seconds > 10 * plain.ttft_seconds


# --- Embedding --------------------------------------------------------------------------


def test_embedding_throughput_is_peak_over_2p() -> None:
    r = embedding_model(BGE_LARGE, H100_BF16_TFLOPS, compute_efficiency=0.4)
    assert r.flops_per_token == 2 * BGE_LARGE
    assert r.tokens_per_second_per_gpu == pytest.approx(989e12 * 0.4 / (2 * BGE_LARGE))
    assert r.weights_bytes == BGE_LARGE * 2


def test_encoder_attention_term_is_small_at_512_tokens() -> None:
    with_attention = embedding_model(
        BGE_LARGE, H100_BF16_TFLOPS, layers=24, hidden=1024, sequence_tokens=512
    )
    share = with_attention.flops_per_token / (2 * BGE_LARGE) - 1
    assert 0.05 < share < 0.10  # 4·24·512·1024 / (2·335e6) ≈ 7.5 %


def test_ingest_time_scales_with_corpus_and_gpus() -> None:
    corpus = Corpus(documents=1_000_000, tokens_per_document=2000, chunk_tokens=512,
                    overlap_tokens=64)
    encoder = Encoder(params=BGE_LARGE, dense_tflops=H100_BF16_TFLOPS)
    one = embedding_ingest(corpus, encoder, gpus=1)
    eight = embedding_ingest(corpus, encoder, gpus=8)
    assert eight.seconds == pytest.approx(one.seconds / 8)
    assert eight.gpu_hours == pytest.approx(one.gpu_hours)
    assert one.chunks == chunking(1_000_000, 2000, 512, 64).chunks
    assert one.seconds == pytest.approx(one.tokens_to_embed * 2 * BGE_LARGE / (989e12 * 0.4))


def test_query_embedding_needs_at_least_one_gpu_and_grows_with_qps() -> None:
    small = query_embedding_gpus(
        qps=10, query_tokens=32, params=BGE_LARGE, dense_tflops=H100_BF16_TFLOPS
    )
    assert small.gpus == 1
    assert small.gpu_load < 0.01
    big = query_embedding_gpus(
        qps=1_000_000, query_tokens=32, params=BGE_LARGE, dense_tflops=H100_BF16_TFLOPS
    )
    assert big.gpus == math.ceil(big.gpu_load / 0.5)
    assert big.gpus > 1


# --- Retrieval CPU cores ----------------------------------------------------------------


def test_hnsw_reference_point_and_dimension_scaling() -> None:
    # USearch BENCHMARKS.md: 131,654 searches/s on 64 cores at f32 × 256.
    at_256 = retrieval_cpu_cores(1000, 1_000_000, 256, IndexLayout("hnsw"))
    assert at_256.qps_per_core == pytest.approx(131_654 / 64)
    at_1024 = retrieval_cpu_cores(1000, 1_000_000, 1024, IndexLayout("hnsw"))
    assert at_1024.qps_per_core == pytest.approx(at_256.qps_per_core / 4)
    assert at_1024.cores == math.ceil(1000 / (at_1024.qps_per_core * 0.7))


def test_measured_qps_per_core_overrides_the_assumption() -> None:
    r = retrieval_cpu_cores(3000, 10_000_000, 768, qps_per_core=1000, target_utilization=0.5)
    assert r.cores == 6


def test_flat_scan_cost_grows_with_the_collection() -> None:
    small = retrieval_cpu_cores(100, 100_000, 1024, IndexLayout("flat"))
    large = retrieval_cpu_cores(100, 10_000_000, 1024, IndexLayout("flat"))
    assert small.qps_per_core == pytest.approx(5e9 / (100_000 * 1024 * 4))
    assert large.cores > small.cores


@given(qps=st.floats(0.1, 1e6), extra=st.floats(0.1, 1e6))
def test_cores_never_fall_as_qps_rises(qps: float, extra: float) -> None:
    for index in ("hnsw", "flat", "ivf_pq"):
        low = retrieval_cpu_cores(qps, 5_000_000, 768, IndexLayout(index))
        high = retrieval_cpu_cores(qps + extra, 5_000_000, 768, IndexLayout(index))
        assert high.cores >= low.cores >= 1
