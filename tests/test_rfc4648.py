"""The byte-level base64 kernel: RFC 4648 test vectors and arbitrary bytes, at every SIMD level.

float8 elements encoded as float8 are copied unchanged, so they reach the kernel as raw bytes.
"""

from __future__ import annotations

import base64

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorb64

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.usefixtures("each_simd_level")

RFC4648_VECTORS = [
    (b"", ""),
    (b"f", "Zg=="),
    (b"fo", "Zm8="),
    (b"foo", "Zm9v"),
    (b"foob", "Zm9vYg=="),
    (b"fooba", "Zm9vYmE="),
    (b"foobar", "Zm9vYmFy"),
]


def as_float8(data):
    """Bytes as float8 elements: encoded as float8, they are copied unchanged."""
    if not data:
        return torch.empty(0, dtype=torch.float8_e4m3fn)
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).view(torch.float8_e4m3fn)


def encode_bytes(data: bytes) -> str:
    return tensorb64.encode(as_float8(data), dtype="fp8_e4m3")


@pytest.mark.parametrize(("data", "expected"), RFC4648_VECTORS)
def test_rfc4648_vectors(data, expected):
    assert encode_bytes(data) == expected


def test_every_byte_value_and_length_up_to_512():
    data = bytes(range(256)) * 2
    for n in range(len(data) + 1):
        assert encode_bytes(data[:n]) == base64.b64encode(data[:n]).decode(), n


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4096), st.integers(0, 63))
def test_arbitrary_bytes_at_any_alignment(data, offset):
    storage = np.zeros(offset + len(data), np.uint8)
    storage[offset:] = np.frombuffer(data, np.uint8)
    assert encode_bytes(storage[offset:].tobytes()) == base64.b64encode(data).decode()
    unaligned = torch.from_numpy(storage).view(torch.float8_e4m3fn)[offset:]
    assert tensorb64.encode(unaligned, dtype="fp8_e4m3") == base64.b64encode(data).decode()


def test_fp8_output_of_float32_is_the_bytes_of_the_cast():
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.0, -2.0, 448.0, 0.0])
    assert tensorb64.encode(t, dtype="fp8_e4m3") == base64.b64encode(t.to(torch.float8_e4m3fn).view(torch.uint8).numpy().tobytes()).decode()
