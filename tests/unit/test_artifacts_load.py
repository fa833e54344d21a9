"""Safetensors header validation and the staged mmap loader."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from aiplat.artifacts.errors import ArtifactError
from aiplat.artifacts.load import parse_header, read_tensors


def test_reads_every_tensor_of_a_real_safetensors_file(tmp_path: Path) -> None:
    tensors = {"a": np.arange(1000, dtype=np.float32), "b": np.ones((3, 5), dtype=np.float16),
               "c": np.zeros(0, dtype=np.int8)}
    path = tmp_path / "m.safetensors"
    save_file(tensors, str(path))
    data = path.read_bytes()
    infos = parse_header(data, len(data), "m")
    assert [t.name for t in infos] == ["a", "b", "c"]
    a = next(t for t in infos if t.name == "a")
    assert np.array_equal(np.frombuffer(data[a.begin:a.end], dtype=np.float32), tensors["a"])
    staging = np.empty(1024, dtype=np.uint8)  # smaller than a tensor: copied in pieces
    assert read_tensors(path, staging) == 4000 + 30


def _file(header: dict[str, object], body: bytes = b"\0" * 16) -> bytes:
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + body


@pytest.mark.parametrize(("header", "fragment"), [
    ({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}, "do not match"),
    ({"x": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]}}, "do not match"),
    ({"x": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 1]}}, "do not match"),
    ({"x": {"dtype": "U8", "shape": [8], "data_offsets": [0, 8]},
      "y": {"dtype": "U8", "shape": [8], "data_offsets": [4, 12]}}, "overlap"),
    ({"x": {"dtype": "U8"}}, "lacks"),
])
def test_bad_headers_are_refused(header: dict[str, object], fragment: str) -> None:
    data = _file(header)
    with pytest.raises(ArtifactError, match=fragment):
        parse_header(data, len(data), "m")


def test_truncated_and_oversized_headers() -> None:
    with pytest.raises(ArtifactError, match="shorter"):
        parse_header(b"\1\0", 2, "m")
    with pytest.raises(ArtifactError, match="does not fit"):
        parse_header(struct.pack("<Q", 10**6) + b"{}", 10, "m")
