"""encode_body / decode_body against vLLM's `encoding_format="bytes"` layout, reimplemented here
from vLLM's serial_utils (tensor2binary per row, metadata items with index, embed_dtype,
endianness, start, end and shape)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tensorb64
from oracles import torch_bits

torch = pytest.importorskip("torch", reason="torch is the oracle for vLLM's layout")
pytestmark = pytest.mark.usefixtures("each_simd_level")

VLLM_TORCH_DTYPE = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "fp8_e4m3": torch.float8_e4m3fn,
    "fp8_e5m2": torch.float8_e5m2,
}
VLLM_VIEW_DTYPE = {  # what vLLM views each dtype as before .numpy()
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.float16,
    "fp8_e4m3": torch.uint8,
    "fp8_e5m2": torch.uint8,
}


def vllm_tensor2binary(row, embed_dtype: str, endianness: str) -> bytes:
    array = row.to(VLLM_TORCH_DTYPE[embed_dtype]).flatten().contiguous().view(VLLM_VIEW_DTYPE[embed_dtype]).numpy()
    if endianness != "native" and endianness != sys.byteorder:
        array = array.byteswap()
    return array.tobytes()


def vllm_encode_pooling_bytes(rows, embed_dtype: str, endianness: str):
    body, items, offset = [], [], 0
    for index, row in enumerate(rows):
        binary = vllm_tensor2binary(row, embed_dtype, endianness)
        items.append(
            {"index": index, "embed_dtype": embed_dtype, "endianness": endianness, "start": offset,
             "end": offset + len(binary), "shape": tuple(row.shape)}
        )
        body.append(binary)
        offset += len(binary)
    return b"".join(body), items


def vllm_binary2tensor(binary: bytes, shape, embed_dtype: str, endianness: str):
    numpy_view = {"float32": np.float32, "float16": np.float16, "bfloat16": np.float16, "fp8_e4m3": np.uint8, "fp8_e5m2": np.uint8}
    array = np.frombuffer(binary, dtype=numpy_view[embed_dtype]).reshape(shape)
    if endianness != "native" and endianness != sys.byteorder:
        array = array.byteswap()
    return torch.from_numpy(array.copy()).view(VLLM_TORCH_DTYPE[embed_dtype])


@pytest.mark.parametrize("endianness", ["little", "big", "native"])
@pytest.mark.parametrize("embed_dtype", list(VLLM_TORCH_DTYPE))
@pytest.mark.parametrize("input_dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_body_and_metadata_match_vllm(input_dtype, embed_dtype, endianness):
    batch = (torch.randn(5, 769, generator=torch.Generator().manual_seed(5)) * 100).to(input_dtype)
    body, metadata = tensorb64.encode_body(batch, dtype=embed_dtype, byteorder=endianness)
    expected_body, expected_items = vllm_encode_pooling_bytes(batch, embed_dtype, endianness)
    assert body == expected_body
    resolved = sys.byteorder if endianness == "native" else endianness  # recorded as what it means
    assert metadata == [{**item, "endianness": resolved, "shape": list(item["shape"])} for item in expected_items]
    # vLLM's client decodes what tensorb64 sent
    for item, row in zip(metadata, batch):
        got = vllm_binary2tensor(body[item["start"] : item["end"]], item["shape"], embed_dtype, item["endianness"])
        assert torch.equal(got.view(VLLM_VIEW_DTYPE[embed_dtype]), row.to(VLLM_TORCH_DTYPE[embed_dtype]).view(VLLM_VIEW_DTYPE[embed_dtype]))


@pytest.mark.parametrize("embed_dtype", list(VLLM_TORCH_DTYPE))
def test_decode_body_inverts_encode_body(embed_dtype):
    batch = torch.randn(4, 300, generator=torch.Generator().manual_seed(1))
    body, metadata = tensorb64.encode_body(batch[:, ::2], dtype=embed_dtype, byteorder="big")
    rows = tensorb64.decode_body(body, list(reversed(metadata)))  # order comes from "index"
    assert len(rows) == 4
    for row, original in zip(rows, batch[:, ::2]):
        assert row.dtype == np.float32 and row.shape == (150,)
        expected = original.contiguous().to(VLLM_TORCH_DTYPE[embed_dtype]).to(torch.float32).numpy()
        np.testing.assert_array_equal(row.view(np.uint32), expected.view(np.uint32))
    assert torch_bits(batch[0, ::2].contiguous(), embed_dtype, "big") == body[: metadata[0]["end"]]


def test_body_of_one_row_and_of_no_rows():
    body, metadata = tensorb64.encode_body(np.ones(3, np.float32))
    assert body == np.ones(3, "<f4").tobytes() and metadata[0]["shape"] == [3]
    assert tensorb64.encode_body(np.zeros((0, 4), np.float32)) == (b"", [])
    assert tensorb64.decode_body(b"", []) == []


def test_decode_body_refuses_bad_metadata():
    body, metadata = tensorb64.encode_body(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="must lie within the 24-byte body"):
        tensorb64.decode_body(body, [{**metadata[0], "end": 25}])
    with pytest.raises(ValueError, match="unknown dtype 'int8'"):
        tensorb64.decode_body(body, [{**metadata[0], "embed_dtype": "int8"}])
    with pytest.raises(ValueError, match="unknown byteorder 'middle'"):
        tensorb64.decode_body(body, [{**metadata[0], "endianness": "middle"}])
    with pytest.raises(TypeError, match="body must be bytes"):
        tensorb64.decode_body("AAAA", metadata)
    with pytest.raises(ValueError, match="not a whole number of float32 values"):
        tensorb64.decode_body(body, [{**metadata[0], "end": 5}])
