"""float32 output is byte-identical to the struct reference embedding workers use today."""

from __future__ import annotations

import base64
import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorb64
from tests.support.oracles import raw_reference, struct_reference

pytestmark = pytest.mark.usefixtures("each_simd_level")

FLT_MAX = float(np.finfo(np.float32).max)
SPECIALS = np.array(
    [0.0, -0.0, math.inf, -math.inf, math.nan, FLT_MAX, -FLT_MAX, 1e-45, -1e-45, 1.1754942e-38, 1.0, -2.5],
    dtype=np.float32,
)
QUIET_NAN_PAYLOADS = np.array([0x7FC00000, 0xFFC00000, 0x7FC00001, 0x7FFFFFFF, 0xFFD2A5A5], dtype=np.uint32)
SIGNALING_NANS = np.array([0x7F800001, 0xFF800001, 0x7FA00000, 0x7FBFFFFF], dtype=np.uint32)


def is_signaling_nan(bits: np.ndarray) -> np.ndarray:
    return ((bits & 0x7F800000) == 0x7F800000) & ((bits & 0x007FFFFF) != 0) & ((bits & 0x00400000) == 0)


@pytest.mark.parametrize("n", range(0, 301))
def test_every_length_matches_struct(n):
    values = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    assert tensorb64.encode(values) == struct_reference(values.tolist())


def test_special_values_match_struct():
    values = np.concatenate([SPECIALS, QUIET_NAN_PAYLOADS.view(np.float32)])
    assert tensorb64.encode(values) == struct_reference(values.tolist())
    assert tensorb64.encode_rows(values) == [struct_reference(values.tolist())]


def test_signaling_nan_keeps_raw_bits_unlike_struct():
    # Documented difference: tolist() widens to double, which quiets a signaling NaN; tensorb64
    # keeps the tensor's bits, like numpy.tobytes.
    values = SIGNALING_NANS.view(np.float32)
    out = tensorb64.encode(values)
    assert out == raw_reference(values)
    assert out != struct_reference(values.tolist())
    decoded_bits = np.frombuffer(base64.b64decode(out), "<u4")
    np.testing.assert_array_equal(decoded_bits, SIGNALING_NANS)


def test_float64_beyond_float32_range_casts_like_torch():
    # Documented difference: struct.pack("<f") refuses these; tensorb64 rounds like
    # tensor.to(torch.float32): overflow to inf, and FLT_MAX's upper half-ulp tie to inf.
    values = np.array([1e39, -1e300, 3.4028235677973366e38, 3.402823567797336e38, 1e-50], dtype=np.float64)
    with pytest.raises(OverflowError):
        struct_reference(values.tolist())
    expected = np.array([math.inf, -math.inf, math.inf, FLT_MAX, 0.0], dtype=np.float32)
    assert tensorb64.encode(values) == raw_reference(expected)
    torch = pytest.importorskip("torch")
    assert tensorb64.encode(values) == raw_reference(torch.from_numpy(values).to(torch.float32).numpy())


float32_bits = hnp.arrays(np.uint32, st.integers(0, 64), elements=st.integers(0, 2**32 - 1))


@settings(max_examples=300, deadline=None)
@given(float32_bits)
def test_arbitrary_bits_match_raw_bytes_and_struct(bits):
    values = bits.view(np.float32)
    out = tensorb64.encode(values)
    assert out == raw_reference(values)
    if not is_signaling_nan(bits).any():
        assert out == struct_reference(values.tolist())


@settings(max_examples=150, deadline=None)
@given(
    hnp.arrays(np.float32, hnp.array_shapes(min_dims=2, max_dims=2, max_side=12), elements=st.floats(width=32, allow_nan=False)),
    st.integers(1, 3),
    st.integers(1, 3),
    st.booleans(),
)
def test_rows_with_strides_match_struct(matrix, row_step, col_step, flip):
    view = matrix[::row_step, ::col_step]
    if flip:
        view = view[::-1, ::-1]
    rows = tensorb64.encode_rows(view)
    assert rows == [struct_reference(row.tolist()) for row in view]
    assert tensorb64.encode(view) == struct_reference(view.ravel().tolist())


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("offset", range(0, 8))
def test_byte_order_and_misalignment(order, offset):
    values = np.random.default_rng(offset).standard_normal(37).astype(np.float32)
    storage = bytearray(offset + values.nbytes)
    misaligned = np.frombuffer(storage, dtype=order + "f4", offset=offset, count=values.size)
    misaligned[:] = values
    assert tensorb64.encode(misaligned) == struct_reference(values.tolist())
    assert tensorb64.encode_rows(misaligned.reshape(1, -1)) == [struct_reference(values.tolist())]


def test_matryoshka_truncation_is_a_view_with_row_stride():
    batch = np.random.default_rng(1).standard_normal((5, 64)).astype(np.float32)
    truncated = batch[:, :20]
    assert tensorb64.encode_rows(truncated) == [struct_reference(row[:20].tolist()) for row in batch]


def test_nd_input_has_leading_dimensions_as_rows():
    batch = np.random.default_rng(2).standard_normal((2, 3, 7)).astype(np.float32)
    assert tensorb64.encode_rows(batch) == [struct_reference(r.tolist()) for r in batch.reshape(6, 7)]


def test_empty_inputs():
    assert tensorb64.encode(np.zeros(0, np.float32)) == ""
    assert tensorb64.encode_rows(np.zeros((0, 4), np.float32)) == []
    assert tensorb64.encode_rows(np.zeros((3, 0), np.float32)) == ["", "", ""]
    assert tensorb64.encode_rows(np.zeros((0, 2, 0), np.float32)) == []
    assert tensorb64.encode([]) == ""


def test_zero_stride_broadcast_rows():
    row = np.arange(9, dtype=np.float32)
    broadcast = np.broadcast_to(row, (4, 9))
    assert tensorb64.encode_rows(broadcast) == [struct_reference(row.tolist())] * 4


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_threads_give_the_same_strings(threads):
    batch = np.random.default_rng(3).standard_normal((301, 1024)).astype(np.float32)
    assert tensorb64.encode_rows(batch, threads=threads) == [struct_reference(r.tolist()) for r in batch]


def test_lists_and_tuples_of_numbers():
    rows = [[0.5, -1.25, 3.0], [1, 2, 3]]
    assert tensorb64.encode_rows(rows) == [struct_reference(r) for r in rows]
    assert tensorb64.encode((1.5, float("inf"))) == struct_reference([1.5, math.inf])
    assert tensorb64.encode([True, False]) == struct_reference([1.0, 0.0])


def test_python_floats_round_like_struct():
    values = [0.1, 1 / 3, 1e-40, 2.0**-149 * 1.5]  # doubles that float32 must round (subnormals too)
    assert tensorb64.encode(values) == base64.b64encode(struct.pack("<4f", *values)).decode()
