"""encode_binary_body / decode_binary_body against vLLM's `encoding_format="bytes"` layout, reimplemented here
from vLLM's serial_utils (tensor2binary per row, metadata items with index, embed_dtype,
endianness, start, end and shape)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tensorb64
from tests.support.oracles import torch_bits

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
    body, metadata = tensorb64.encode_binary_body(batch, dtype=embed_dtype, byteorder=endianness)
    expected_body, expected_items = vllm_encode_pooling_bytes(batch, embed_dtype, endianness)
    assert body == expected_body
    resolved = sys.byteorder if endianness == "native" else endianness  # recorded as what it means
    assert metadata == [{**item, "endianness": resolved, "shape": list(item["shape"])} for item in expected_items]
    # vLLM's client decodes what tensorb64 sent
    for item, row in zip(metadata, batch, strict=True):
        got = vllm_binary2tensor(body[item["start"] : item["end"]], item["shape"], embed_dtype, item["endianness"])
        assert torch.equal(got.view(VLLM_VIEW_DTYPE[embed_dtype]), row.to(VLLM_TORCH_DTYPE[embed_dtype]).view(VLLM_VIEW_DTYPE[embed_dtype]))


@pytest.mark.parametrize("embed_dtype", list(VLLM_TORCH_DTYPE))
def test_decode_body_inverts_encode_body(embed_dtype):
    batch = torch.randn(4, 300, generator=torch.Generator().manual_seed(1))
    body, metadata = tensorb64.encode_binary_body(batch[:, ::2], dtype=embed_dtype, byteorder="big")
    rows = tensorb64.decode_binary_body(body, list(reversed(metadata)))  # order comes from "index"
    assert len(rows) == 4
    for row, original in zip(rows, batch[:, ::2], strict=True):
        assert row.dtype == np.float32 and row.shape == (150,)
        expected = original.contiguous().to(VLLM_TORCH_DTYPE[embed_dtype]).to(torch.float32).numpy()
        np.testing.assert_array_equal(row.view(np.uint32), expected.view(np.uint32))
    assert torch_bits(batch[0, ::2].contiguous(), embed_dtype, "big") == body[: metadata[0]["end"]]


def test_body_of_one_row_and_of_no_rows():
    body, metadata = tensorb64.encode_binary_body(np.ones(3, np.float32))
    assert body == np.ones(3, "<f4").tobytes() and metadata[0]["shape"] == [3]
    assert tensorb64.encode_binary_body(np.zeros((0, 4), np.float32)) == (b"", [])
    assert tensorb64.decode_binary_body(b"", []) == []


def test_decode_body_refuses_bad_metadata():
    body, metadata = tensorb64.encode_binary_body(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="must lie within the 24-byte body"):
        tensorb64.decode_binary_body(body, [{**metadata[0], "end": 25}])
    with pytest.raises(ValueError, match="unknown dtype 'int8'"):
        tensorb64.decode_binary_body(body, [{**metadata[0], "embed_dtype": "int8"}])
    with pytest.raises(ValueError, match="unknown byteorder 'middle'"):
        tensorb64.decode_binary_body(body, [{**metadata[0], "endianness": "middle"}])
    with pytest.raises(TypeError, match="body must be bytes"):
        tensorb64.decode_binary_body("AAAA", metadata)
    with pytest.raises(ValueError, match="not a whole number of float32 values"):
        tensorb64.decode_binary_body(body, [{**metadata[0], "end": 5}])


# ---- decode_binary_body's metadata: mappings or objects (vLLM's MetadataItem), every error named ----

import dataclasses  # noqa: E402
import re  # noqa: E402
from types import MappingProxyType, SimpleNamespace  # noqa: E402


@dataclasses.dataclass
class MetadataItem:  # the fields of vLLM's MetadataItem
    index: int
    embed_dtype: str
    endianness: str
    start: int
    end: int
    shape: tuple


@pytest.mark.parametrize("kind", ["dict", "dataclass", "namespace", "mappingproxy", "numpy ints"])
def test_decode_body_takes_mappings_and_objects(kind):
    batch = np.arange(24, dtype=np.float32).reshape(4, 6)
    body, metadata = tensorb64.encode_binary_body(batch, dtype="float16", byteorder="big")
    if kind == "dataclass":
        metadata = [MetadataItem(**item) for item in metadata]
    elif kind == "namespace":
        metadata = [SimpleNamespace(**item) for item in metadata]
    elif kind == "mappingproxy":
        metadata = [MappingProxyType(item) for item in metadata]
    elif kind == "numpy ints":
        metadata = [
            {**item, "index": np.int64(item["index"]), "start": np.int32(item["start"]), "end": np.uint64(item["end"]),
             "shape": np.array(item["shape"])}
            for item in metadata
        ]
    rows = tensorb64.decode_binary_body(body, list(reversed(metadata)))
    for row, expected in zip(rows, batch, strict=True):
        assert row.dtype == np.float32 and row.shape == (6,)
        np.testing.assert_array_equal(row, expected)


def test_decode_body_shapes_and_stored_dtypes():
    batch = np.arange(24, dtype=np.float32).reshape(2, 12)
    body, metadata = tensorb64.encode_binary_body(batch, dtype="float16")
    metadata = [{**item, "shape": (3, 4)} for item in metadata]
    rows = tensorb64.decode_binary_body(body, metadata, widen=False)
    assert [row.shape for row in rows] == [(3, 4), (3, 4)] and rows[0].dtype == np.float16
    np.testing.assert_array_equal(rows[1], batch[1].reshape(3, 4))
    body, metadata = tensorb64.encode_binary_body(batch, dtype="bfloat16")
    with pytest.raises(ValueError, match=re.escape("row 0 (metadata item 0): numpy has no bfloat16 dtype")):
        tensorb64.decode_binary_body(body, metadata, widen=False)


def test_decode_body_peaks_at_its_result():
    import tracemalloc

    batch = np.random.default_rng(2).standard_normal((500, 4000)).astype(np.float32)
    for dtype in ("float32", "float16", "fp8_e5m2"):
        body, metadata = tensorb64.encode_binary_body(batch, dtype=dtype, byteorder="big")
        tracemalloc.start()
        try:
            rows = tensorb64.decode_binary_body(body, metadata)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        result = sum(row.nbytes for row in rows)
        assert result == batch.nbytes and peak <= 1.1 * result, (dtype, peak, result)


BAD_METADATA = [
    # (change to item 1, the error)
    ({"shape": 5}, ValueError, "row 1 (metadata item 1): 'shape' must be a sequence of integers, got 5"),
    ({"shape": [2, 2]}, ValueError, "row 1 (metadata item 1): 'shape' [2, 2] does not hold the 3 float32 values of its 12 bytes (start 12, end 24)"),
    ({"shape": [3.0]}, ValueError, "row 1 (metadata item 1): 'shape' must be an integer, got 3.0"),
    ({"shape": [-3]}, ValueError, "row 1 (metadata item 1): 'shape' [-3] has a negative size"),
    ({"shape": "3"}, ValueError, "row 1 (metadata item 1): 'shape' must be a sequence of integers, got '3'"),
    ({"end": 25}, ValueError, "row 1 (metadata item 1): start 12 and end 25 must lie within the 24-byte body"),
    ({"start": -1}, ValueError, "row 1 (metadata item 1): start -1 and end 24 must lie within the 24-byte body"),
    ({"start": 20, "end": 16}, ValueError, "row 1 (metadata item 1): start 20 and end 16 must lie within the 24-byte body"),
    ({"start": "12"}, ValueError, "row 1 (metadata item 1): 'start' must be an integer, got '12'"),
    ({"end": 24.0}, ValueError, "row 1 (metadata item 1): 'end' must be an integer, got 24.0"),
    ({"end": True}, ValueError, "row 1 (metadata item 1): 'end' must be an integer, got True"),
    ({"index": "1"}, ValueError, "metadata item 1: 'index' must be an integer, got '1'"),
    ({"index": None}, ValueError, "metadata item 1: 'index' must be an integer, got None"),
    ({"embed_dtype": "int8"}, ValueError, "row 1 (metadata item 1): unknown dtype 'int8'"),
    ({"embed_dtype": None}, ValueError, "row 1 (metadata item 1): unknown dtype None"),
    ({"endianness": "middle"}, ValueError, "row 1 (metadata item 1): unknown byteorder 'middle'"),
    ({"end": 17, "shape": [1]}, ValueError, "row 1 (metadata item 1): decoded length 5 bytes is not a whole number of float32 values"),
]


@pytest.mark.parametrize(("change", "error", "message"), BAD_METADATA)
def test_decode_body_names_the_row_and_field(change, error, message):
    body, metadata = tensorb64.encode_binary_body(np.ones((2, 3), np.float32))
    bad = [metadata[0], {**metadata[1], **change}]
    with pytest.raises(error, match="^" + re.escape(message)):
        tensorb64.decode_binary_body(body, bad)
    # the same through an object with those attributes
    with pytest.raises(error, match="^" + re.escape(message)):
        tensorb64.decode_binary_body(body, [SimpleNamespace(**item) for item in bad])


@pytest.mark.parametrize("field", ["index", "embed_dtype", "endianness", "start", "end", "shape"])
def test_decode_body_names_a_missing_field(field):
    body, metadata = tensorb64.encode_binary_body(np.ones((2, 3), np.float32))
    item = {key: value for key, value in metadata[1].items() if key != field}
    where = "metadata item 1" if field == "index" else "row 1 (metadata item 1)"
    with pytest.raises(ValueError, match="^" + re.escape(f"{where}: no {field!r} field (each metadata item is a mapping or an object with index, embed_dtype, endianness, start, end, shape; got dict)")):
        tensorb64.decode_binary_body(body, [metadata[0], item])
    with pytest.raises(ValueError, match=re.escape(f"{where}: no {field!r} field") + ".*got SimpleNamespace"):
        tensorb64.decode_binary_body(body, [metadata[0], SimpleNamespace(**item)])


def test_decode_body_refuses_what_is_not_a_list_of_items():
    body, metadata = tensorb64.encode_binary_body(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="metadata must be a list of metadata items, got dict"):
        tensorb64.decode_binary_body(body, metadata[0])
    with pytest.raises(TypeError, match="metadata must be a list of metadata items, got NoneType"):
        tensorb64.decode_binary_body(body, None)
    with pytest.raises(ValueError, match=r"^metadata item 0: no 'index' field .*got int"):
        tensorb64.decode_binary_body(body, [5])
    with pytest.raises(TypeError, match="body must be bytes, got str"):
        tensorb64.decode_binary_body("AAAA", metadata)
