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
    which is the one tensorb64 follows (see cpp/src/common/formats.hpp).
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


def fp8_to_f32_bits(exponent_bits: int, mantissa_bits: int, nan_bits: int, has_inf: bool) -> np.ndarray:
    """float32 bits of each of the 256 values of a float8 format, as torch widens them: the rules
    written out from their definition, independent of the core's bit arithmetic."""
    bias = (1 << (exponent_bits - 1)) - 1
    codes = np.arange(256, dtype=np.uint32)
    sign = (codes >> 7) & 1
    exponent = (codes >> mantissa_bits) & ((1 << exponent_bits) - 1)
    mantissa = codes & ((1 << mantissa_bits) - 1)
    # ldexp's exponents as int32: numpy 1.x has loops for C int and C long only, and C long is 32-bit
    # on Windows, where an int64 array is refused ("ufunc 'ldexp' not supported for the input types").
    magnitude = np.where(
        exponent == 0,
        np.ldexp(mantissa.astype(np.float64), np.int32(1 - bias - mantissa_bits)),
        np.ldexp((mantissa + (1 << mantissa_bits)).astype(np.float64),
                 exponent.astype(np.int32) - np.int32(bias + mantissa_bits)),
    )
    bits = magnitude.astype(np.float32).view(np.uint32) | (sign << 31).astype(np.uint32)
    all_ones = (1 << exponent_bits) - 1
    if has_inf:  # IEEE-like: all-ones exponent is inf (zero mantissa) or NaN
        special = exponent == all_ones
        inf = (mantissa == 0) & special
        bits = np.where(inf, (sign << 31) | 0x7F800000, bits)
        nan = special & (mantissa != 0)
        # NaNs widen through float16, which quiets them and keeps their payload.
        payload = mantissa << (23 - mantissa_bits)
        bits = np.where(nan, (sign << 31) | 0x7FC00000 | payload, bits)
    else:  # float8_e4m3fn: only S.1111.111 is NaN, widened by torch to 0x7FF00000
        nan = (codes & 0x7F) == 0x7F
        bits = np.where(nan, (sign << 31) | nan_bits, bits)
    return bits.astype(np.uint32)
