"""A catalogue of bad inputs: each is a clear TypeError or ValueError naming what was wrong and
what is accepted, never a crash and never wrong bytes."""

from __future__ import annotations

import array

import numpy as np
import pytest

import tensorb64

pytestmark = pytest.mark.usefixtures("each_simd_level")

BAD_TYPES = [
    (np.array([1 + 2j]), "complex arrays are not supported"),
    (np.array([object()], dtype=object), "arrays of dtype object are not supported"),
    (np.zeros(3, dtype=[("a", "f4"), ("b", "f4")]), "structured arrays are not supported"),
    (np.array(["1.5"]), "are not supported"),
    ("1.5", "str is not an array of numbers"),
    (b"\x00\x00\x80\x3f", "numpy.frombuffer"),
    (None, "cannot encode an object of type NoneType"),
    ({"a": 1.0}, "cannot encode an object of type dict"),
    ([1.0, "x"], "must hold only numbers"),
    ([None, 1.0], "must hold only numbers"),
    ([[1.0], ["a"]], "must hold only numbers"),
    (array.array("i", [1, 2]), "a buffer must hold floats"),
    (memoryview(b"abcd"), "a buffer must hold floats"),
    (3.5, "cannot encode an object of type float"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_TYPES, ids=lambda v: type(v).__name__)
def test_type_errors(bad, message):
    with pytest.raises(TypeError, match=message):
        tensorb64.encode(bad)
    with pytest.raises(TypeError, match=message):
        tensorb64.encode_rows(bad)


def test_ragged_rows():
    with pytest.raises(ValueError, match="rows of unequal length"):
        tensorb64.encode_rows([[1.0, 2.0], [3.0]])


def test_scalar_for_rows():
    with pytest.raises(ValueError, match="at least one dimension"):
        tensorb64.encode_rows(np.float32(1.0))
    assert tensorb64.encode(np.float32(1.0)) == "AACAPw=="


@pytest.mark.parametrize("dtype", ["float64", "int8", "fp8", None, 4])
def test_unknown_output_dtype(dtype):
    with pytest.raises(ValueError, match="unknown dtype .* expected 'float32', 'float16', 'bfloat16', 'fp8_e4m3' or 'fp8_e5m2'"):
        tensorb64.encode([1.0], dtype=dtype)


@pytest.mark.parametrize("byteorder", ["LITTLE", "network", "", None])
def test_unknown_byteorder(byteorder):
    with pytest.raises(ValueError, match="expected 'little', 'big' or 'native'"):
        tensorb64.encode_rows([[1.0]], byteorder=byteorder)


@pytest.mark.parametrize("threads", [0, -1, 1.5, "2", True, None])
def test_bad_thread_counts(threads):
    with pytest.raises(ValueError, match="threads must be an int from 1 to 256"):
        tensorb64.encode_rows([[1.0]], threads=threads)


def test_array_buffers_of_floats_are_accepted():
    assert tensorb64.encode(array.array("f", [1.0])) == "AACAPw=="
    assert tensorb64.encode(array.array("d", [1.0])) == "AACAPw=="
    assert tensorb64.encode(memoryview(np.array([1.0], np.float32))) == "AACAPw=="


def test_output_that_cannot_exist_is_a_memory_error_before_allocating():
    # 2**61 float16 values (numpy's limit is 2**63 bytes) widen to 2**63 bytes of float32, whose
    # text no str can hold: refused, naming the size, before anything is allocated.
    huge = np.lib.stride_tricks.as_strided(np.zeros(1, np.float16), shape=(1, 2**61), strides=(0, 0))
    with pytest.raises(MemoryError, match="would take .* GiB"):
        tensorb64.encode_rows(huge)
    with pytest.raises(MemoryError, match="would take .* GiB"):
        tensorb64.encode(huge)
    torch = pytest.importorskip("torch")
    # 2**44 values: each row fits in a str, the whole output (93 TB) in no machine's memory. Row
    # by row it would run until the OOM killer; the error comes first.
    with pytest.raises(MemoryError, match="more than this machine's memory"):
        tensorb64.encode_rows(torch.zeros(1).expand(2**22, 2**22))
    with pytest.raises(MemoryError, match="more than this machine's memory"):
        tensorb64.encode_binary_body(torch.zeros(1).expand(2**22, 2**22))


def test_tensor_errors():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="complex tensors are not supported"):
        tensorb64.encode(torch.zeros(2, dtype=torch.complex64))
    with pytest.raises(ValueError, match="'meta' device has no data"):
        tensorb64.encode_rows(torch.zeros(2, 3, device="meta"))
    with pytest.raises(TypeError, match="sparse, nested and other non-strided tensors"):
        tensorb64.encode(torch.eye(3).to_sparse())
