"""Input dtypes x output dtypes x byte orders, byte for byte against torch's own casts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorb64
from tests.support import torch_behaviour
from tests.support.oracles import struct_reference, tensor_from_bits, torch_reference

torch = pytest.importorskip("torch", reason="torch is the oracle for dtype conversions")
pytestmark = pytest.mark.usefixtures("each_simd_level")

INPUT_DTYPES = {
    "float32": (torch.float32, np.uint32),
    "float16": (torch.float16, np.uint16),
    "bfloat16": (torch.bfloat16, np.uint16),
    "float64": (torch.float64, np.uint64),
}
OUTPUT_DTYPES = ["float32", "float16", "bfloat16", "fp8_e4m3", "fp8_e5m2"]
# Compared with the installed torch only where it casts as torch 2.13 does (the package's
# documented bytes); elsewhere skipped, naming the torch version and the behaviour.
OUTPUT_PARAMS = torch_behaviour.output_params(OUTPUT_DTYPES)
COMPARED_OUTPUT_DTYPES = torch_behaviour.compared_outputs(OUTPUT_DTYPES)
BYTEORDERS = ["little", "big"]


def special_bits(storage) -> np.ndarray:
    """Edge bit patterns of a source format: zeros, infinities, NaN payloads, subnormals, and
    values at and around each output format's rounding ties and largest finite value."""
    if storage is np.uint16:
        # every float16/bfloat16 bit pattern: all of them are edges of something
        return np.arange(2**16, dtype=np.uint16)
    if storage is np.uint64:
        values = np.array([0.0, -0.0, np.inf, -np.inf, 1e39, -1e39, 1e-46, 5e-324, 3.4028235677973366e38], np.float64)
        nans = np.array([0x7FF0000000000001, 0xFFF8000000000000, 0x7FF4A5A5A5A5A5A5, 0x7FFFFFFFFFFFFFFF], np.uint64)
        ties = np.array([1 + 2**-11 + 2**-40, 1 + 2**-8 + 2**-30, 1 + 2**-4 + 2**-40, 65520.0, 448.0, 464.0, 57344.0, 61440.0], np.float64)
        return np.concatenate([values.view(np.uint64), nans, ties.view(np.uint64), (-ties).view(np.uint64)])
    edges = np.array(
        [0.0, -0.0, np.inf, -np.inf, 65504.0, 65519.99, 65520.0, 448.0, 464.0, 465.0, 480.0, 57344.0, 61439.0, 61440.0,
         2.0**-14, 2.0**-24, 2.0**-25, 1.5 * 2.0**-25, 2.0**-9, 2.0**-10, 2.0**-16, 2.0**-17, 1.0 + 2.0**-11, 1.0 + 2.0**-8,
         1.0 + 3 * 2.0**-11, 3.3895314e38, 3.4028235e38, 1e-45, 1.17549435e-38],
        np.float32,
    ).view(np.uint32)
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFA5A5A5, 0x7FFFFFFF, 0x7F802000], np.uint32)
    near = np.concatenate([edges - 1, edges, edges + 1]).astype(np.uint32)
    return np.concatenate([near, near | 0x80000000, nans]).astype(np.uint32)


@pytest.mark.parametrize("byteorder", BYTEORDERS)
@pytest.mark.parametrize("out_dtype", OUTPUT_PARAMS)
@pytest.mark.parametrize("in_dtype", list(INPUT_DTYPES))
def test_special_values_match_torch(in_dtype, out_dtype, byteorder):
    torch_dtype, storage = INPUT_DTYPES[in_dtype]
    t = tensor_from_bits(special_bits(storage), torch_dtype)
    assert tensorb64.encode(t, dtype=out_dtype, byteorder=byteorder) == torch_reference(t, out_dtype, byteorder)


@pytest.mark.parametrize("out_dtype", OUTPUT_PARAMS)
def test_random_tests_compare_this_output_with_torch(out_dtype):
    # The hypothesis tests below draw only COMPARED_OUTPUT_DTYPES; an output they leave out
    # shows here as skipped, with the reason (the torch version and the behaviour).
    assert out_dtype in COMPARED_OUTPUT_DTYPES


@settings(max_examples=60, deadline=None)
@given(
    in_dtype=st.sampled_from(list(INPUT_DTYPES)),
    out_dtype=st.sampled_from(COMPARED_OUTPUT_DTYPES),
    byteorder=st.sampled_from(BYTEORDERS),
    data=st.data(),
)
def test_random_bits_match_torch(in_dtype, out_dtype, byteorder, data):
    torch_dtype, storage = INPUT_DTYPES[in_dtype]
    bits = data.draw(hnp.arrays(storage, st.integers(0, 200), elements=st.integers(0, np.iinfo(storage).max)))
    t = tensor_from_bits(bits, torch_dtype)
    assert tensorb64.encode(t, dtype=out_dtype, byteorder=byteorder) == torch_reference(t, out_dtype, byteorder)


@settings(max_examples=60, deadline=None)
@given(
    in_dtype=st.sampled_from(list(INPUT_DTYPES)),
    out_dtype=st.sampled_from(COMPARED_OUTPUT_DTYPES),
    shape=st.tuples(st.integers(1, 6), st.integers(1, 40)),
    steps=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    source_order=st.sampled_from("<>"),
    seed=st.integers(0, 2**32 - 1),
)
def test_strided_numpy_of_any_byte_order_matches_torch(in_dtype, out_dtype, shape, steps, source_order, seed):
    torch_dtype, storage = INPUT_DTYPES[in_dtype]
    rng = np.random.default_rng(seed)
    values = torch.from_numpy(rng.standard_normal(shape) * 300).to(torch_dtype)
    view = values[:: steps[0], :: steps[1]]
    if in_dtype == "bfloat16":  # numpy has no bfloat16: numpy byte orders are covered by the others
        array = view
    else:
        array = view.numpy().astype(view.numpy().dtype.newbyteorder(source_order))
    expected = [torch_reference(row.contiguous(), out_dtype) for row in view]
    assert tensorb64.encode_rows(array, dtype=out_dtype) == expected


@pytest.mark.parametrize("in_dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool])
def test_integer_and_bool_tensors_cast_like_torch(in_dtype):
    if in_dtype == torch.bool:
        t = torch.tensor([True, False, True])
    else:
        info = torch.iinfo(in_dtype)
        t = torch.tensor([info.min, info.max, 0, 1, -1 if info.min < 0 else 2, 16777217 % (info.max + 1)], dtype=in_dtype)
    assert tensorb64.encode(t) == struct_reference(t.to(torch.float32).tolist())
    assert tensorb64.encode(t.numpy()) == struct_reference(t.to(torch.float32).tolist())


@pytest.mark.parametrize("in_dtype", ["float16", "bfloat16", "float64"])
def test_wide_inputs_equal_reference_after_cast(in_dtype):
    t = torch.randn(4, 300, dtype=torch.float64).to(INPUT_DTYPES[in_dtype][0])
    assert tensorb64.encode_rows(t) == [struct_reference(r.to(torch.float32).tolist()) for r in t]


def test_float8_tensors_encode_their_bits_or_widen():
    bits = np.arange(256, dtype=np.uint8)
    for fp8, name in [(torch.float8_e4m3fn, "fp8_e4m3"), (torch.float8_e5m2, "fp8_e5m2")]:
        t = tensor_from_bits(bits, fp8)
        assert tensorb64.encode(t, dtype=name) == torch_reference(t, name)
        finite = t[~torch.isnan(t.to(torch.float32))]
        assert tensorb64.encode(finite) == struct_reference(finite.to(torch.float32).tolist())


def test_requires_grad_and_non_contiguous_tensors():
    t = torch.randn(6, 50, requires_grad=True)
    view = t[1::2, 3:40]
    assert tensorb64.encode_rows(view) == [struct_reference(r.tolist()) for r in view.detach()]
    transposed = torch.randn(20, 5).t()
    assert tensorb64.encode_rows(transposed) == [struct_reference(r.tolist()) for r in transposed]


@pytest.mark.parametrize("out_dtype", OUTPUT_PARAMS)
@pytest.mark.parametrize("byteorder", ["little", "big", "native"])
def test_decode_inverts_encode(out_dtype, byteorder):
    t = tensor_from_bits(special_bits(np.uint32), torch.float32)
    encoded = tensorb64.encode(t, dtype=out_dtype, byteorder=byteorder)
    decoded = tensorb64.decode(encoded, dtype=out_dtype, byteorder=byteorder)
    expected = t.to(OUTPUT_TORCH[out_dtype])
    padded = torch.cat([expected, torch.zeros(64 - expected.numel() % 64, dtype=expected.dtype)])
    widened = padded.to(torch.float32)[: expected.numel()]  # torch's vectorised widening
    np.testing.assert_array_equal(decoded.view(np.uint32), widened.numpy().view(np.uint32))
    rows = tensorb64.decode_rows([encoded, encoded], dtype=out_dtype, byteorder=byteorder)
    assert rows.shape == (2, t.numel()) and rows.dtype == np.float32


OUTPUT_TORCH = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "fp8_e4m3": torch.float8_e4m3fn,
    "fp8_e5m2": torch.float8_e5m2,
}


def test_decode_keeps_stored_dtype_where_numpy_has_one():
    values = np.array([1.5, -2.0, 65504.0], np.float16)
    out = tensorb64.decode(tensorb64.encode(values, dtype="float16"), dtype="float16", widen=False)
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, values)
    with pytest.raises(ValueError, match="numpy has no bfloat16"):
        tensorb64.decode(tensorb64.encode(values, dtype="bfloat16"), dtype="bfloat16", widen=False)


def test_fp8_widening_tables_match_torch():
    for fp8, name in [(torch.float8_e4m3fn, "fp8_e4m3"), (torch.float8_e5m2, "fp8_e5m2")]:
        t = tensor_from_bits(np.arange(256, dtype=np.uint8), fp8)
        decoded = tensorb64.decode(tensorb64.encode(t, dtype=name), dtype=name)
        np.testing.assert_array_equal(decoded.view(np.uint32), t.to(torch.float32).numpy().view(np.uint32))


@pytest.mark.parametrize("n", [767, 768, 769, 1535, 1536, 1537, 2305, 4099])
@pytest.mark.parametrize("out_dtype", OUTPUT_PARAMS)
@pytest.mark.parametrize("in_dtype", list(INPUT_DTYPES))
def test_rows_across_block_boundaries_match_torch(in_dtype, out_dtype, n):
    # The core converts in blocks of 768 elements; these lengths end inside, at and past them.
    torch_dtype, storage = INPUT_DTYPES[in_dtype]
    bits = np.random.default_rng(n).integers(0, np.iinfo(storage).max, size=n, dtype=storage, endpoint=True)
    t = tensor_from_bits(bits, torch_dtype)
    assert tensorb64.encode(t, dtype=out_dtype) == torch_reference(t, out_dtype)
    every_other = t[::2]  # a strided view: gathered block by block
    assert tensorb64.encode_rows(every_other.reshape(1, -1), dtype=out_dtype, byteorder="big") == [
        torch_reference(every_other.contiguous(), out_dtype, "big")
    ]


def test_negative_bit_views_encode_their_values():
    # x.conj().imag is a view whose memory holds the negated values (torch's negative bit).
    z = torch.tensor([1 + 2j, 3 - 4j, -5 + 0.5j], dtype=torch.complex64)
    imag = z.conj().imag
    assert imag.is_neg()
    expected = struct_reference(imag.tolist())
    assert tensorb64.encode(imag) == expected
    assert tensorb64.encode_rows(imag.reshape(1, 3)) == [expected]
    assert tensorb64.encode_rows(imag.reshape(1, 1, 3)) == [expected]
    from tensorb64.openai import embedding_data

    assert embedding_data(imag, encoding_format="base64")[0]["embedding"] == expected
