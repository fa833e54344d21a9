"""Safetensors header validation and the staged mmap loader."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from aiplat.artifacts.errors import ArtifactError
from aiplat.artifacts.load import load_tensors, map_tensors, parse_header, plan_pieces


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
    assert map_tensors(path, staging) == 4000 + 30


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


@pytest.mark.parametrize(("threads", "staging"), [(1, 1 << 20), (3, 1000), (8, 64)])
def test_load_tensors_delivers_every_tensor_byte_exactly_once(
        tmp_path: Path, threads: int, staging: int) -> None:
    rng = np.random.default_rng(1)
    files = []
    originals: dict[tuple[int, str], bytes] = {}
    for f in range(3):
        tensors = {f"t{i}": rng.standard_normal(int(rng.integers(0, 3000))).astype(np.float32)
                   for i in range(5)}
        path = tmp_path / f"m{f}.safetensors"
        save_file(tensors, str(path))
        files.append(path)
        originals |= {(f, k): v.tobytes() for k, v in tensors.items()}
    got = {key: bytearray(len(v)) for key, v in originals.items()}
    seen = {key: 0 for key in originals}

    def sink(span, offset: int, chunk: memoryview) -> None:  # type: ignore[no-untyped-def]
        key = (span.file, span.tensor.name)
        got[key][offset:offset + len(chunk)] = chunk
        seen[key] += len(chunk)

    total = load_tensors(files, threads, staging, sink)
    assert total == sum(len(v) for v in originals.values())
    assert seen == {key: len(v) for key, v in originals.items()}  # no byte twice
    assert {key: bytes(v) for key, v in got.items()} == originals


def test_pieces_cover_every_tensor_in_balanced_runs() -> None:
    from aiplat.artifacts.load import TensorInfo
    files = [[TensorInfo("a", "U8", (100,), 10, 110), TensorInfo("b", "U8", (50,), 110, 160)],
             [TensorInfo("c", "U8", (0,), 8, 8), TensorInfo("d", "U8", (250,), 8, 258)]]
    pieces = plan_pieces(files, 4)
    assert [sum(s.end - s.begin for s in p) for p in pieces] == [100, 100, 100, 100]
    spans = [s for p in pieces for s in p]
    assert [(s.tensor.name, s.begin, s.end) for s in spans if s.tensor.name == "d"] == [
        ("d", 8, 58), ("d", 58, 158), ("d", 158, 258)]
    assert plan_pieces([[]], 4) == []


def test_a_file_truncated_after_its_header_was_read_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "m.safetensors"
    save_file({"a": np.ones(4096, dtype=np.float32)}, str(path))

    def truncate(span, offset: int, chunk: memoryview) -> None:  # type: ignore[no-untyped-def]
        os.truncate(path, span.begin + len(chunk))  # the rest vanishes under the loader

    with pytest.raises(ArtifactError, match="truncated"):
        load_tensors([path], 1, 1024, truncate)
