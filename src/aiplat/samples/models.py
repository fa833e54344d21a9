"""A small model folder as a model hub lays one out, for the tour's ``aiplat model push``.

Two safetensors shards (the format: an 8-byte little-endian header length, a JSON header
naming each tensor's dtype, shape and byte range, padded to 8 bytes, then the data) of
seeded pseudo-random F16 weights, so every machine writes the same bytes and the README's
digests are the reader's too; a config and a tokenizer file beside them.
"""

from __future__ import annotations

import json
import random
import struct

SHARD_MIB = 16
SEED = 2026


def _shard(tensors: dict[str, int], rng: random.Random) -> bytes:
    """``tensors``: name -> element count (F16, one row)."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, count in tensors.items():
        header[name] = {"dtype": "F16", "shape": [count], "data_offsets": [offset,
                                                                         offset + 2 * count]}
        offset += 2 * count
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + rng.randbytes(offset)


def mini_model() -> dict[str, bytes]:
    rng = random.Random(SEED)
    half = SHARD_MIB * 2**20 // 2 // 2  # F16 elements per tensor, two tensors per shard
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
              "hidden_size": 512, "num_hidden_layers": 2, "torch_dtype": "float16"}
    return {
        "config.json": (json.dumps(config, indent=2) + "\n").encode(),
        "tokenizer.json": (json.dumps({"version": "1.0", "model": {"type": "BPE",
                                                                   "vocab": {}}}) + "\n").encode(),
        "model-00001-of-00002.safetensors": _shard({"layers.0.attn": half,
                                                     "layers.0.mlp": half}, rng),
        "model-00002-of-00002.safetensors": _shard({"layers.1.attn": half,
                                                     "layers.1.mlp": half}, rng),
    }
