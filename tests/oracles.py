"""Reference implementations the tests compare tensorb64 with, byte for byte."""

from __future__ import annotations

import base64
import struct

import numpy as np

try:
    import torch
except ImportError:  # the torch-based oracles are skipped by the tests that need them
    torch = None


def struct_reference(values) -> str:
    """What embedding workers do today: struct.pack of the values as little-endian float32."""
    values = list(values)
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


def raw_reference(array: np.ndarray) -> str:
    """base64 of the little-endian float32 bytes of an array, bits untouched (numpy.tobytes)."""
    return base64.b64encode(np.ascontiguousarray(array, dtype="<f4").tobytes()).decode()


TORCH_OUTPUT = {}
if torch is not None:
    TORCH_OUTPUT = {
        "float32": (torch.float32, torch.int32, "i4"),
        "float16": (torch.float16, torch.int16, "i2"),
        "bfloat16": (torch.bfloat16, torch.int16, "i2"),
        "fp8_e4m3": (torch.float8_e4m3fn, torch.uint8, "u1"),
        "fp8_e5m2": (torch.float8_e5m2, torch.uint8, "u1"),
    }


def torch_bits(t, dtype: str, byteorder: str = "little") -> bytes:
    """The bytes of t.to(dtype) in C order and the given byte order: the output-dtype oracle.

    torch's NaN bit patterns differ between its vectorised loop and its scalar tail, so the
    input is padded to a multiple of 64 elements: every element then takes the vectorised path,
    which is the one tensorb64 follows (see cpp/src/formats.hpp).
    """
    target, as_int, code = TORCH_OUTPUT[dtype]
    flat = t.reshape(-1)
    n = flat.numel()
    padded = torch.cat([flat, torch.zeros((-n) % 64 + 64, dtype=flat.dtype)])
    converted = padded.to(target) if padded.dtype != target else padded
    bits = converted.view(as_int).numpy()[:n]
    return bits.astype(("<" if byteorder == "little" else ">") + code).tobytes()


def torch_reference(t, dtype: str = "float32", byteorder: str = "little") -> str:
    return base64.b64encode(torch_bits(t, dtype, byteorder)).decode()


def tensor_from_bits(bits: np.ndarray, dtype):
    """A torch tensor of `dtype` holding exactly the bit patterns of an unsigned integer array."""
    signed = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[bits.dtype.itemsize]
    return torch.from_numpy(np.ascontiguousarray(bits).view(signed).copy()).view(dtype)
