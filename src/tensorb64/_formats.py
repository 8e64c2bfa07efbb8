"""The registry of names: output dtypes and byte orders as users name them, the core's element
types, and how numpy stores each type. Every name is resolved here and nowhere else; the
binding gets these tables once, at import (see _inputs.py)."""

from __future__ import annotations

import sys

import numpy as np

from . import _native

# The core's element types: name -> the code the binding takes.
CORE_DTYPES = dict(_native.DTYPES)

# Output dtypes, named as vLLM's `embed_dtype` names them, and the core's name for each.
OUTPUT_DTYPES = {
    "float32": "float32",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "fp8_e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
}
OUTPUT_DTYPE_CODES = {name: CORE_DTYPES[core] for name, core in OUTPUT_DTYPES.items()}

# Byte orders: "native" is the host's. Codes as the binding takes them.
BYTEORDER_CODES = {"little": 0, "big": 1, "native": 0 if sys.byteorder == "little" else 1}

# Float text modes (json_rows, response bodies), as the core numbers them.
FLOAT_FORMAT_CODES = {"repr": 0, "shortest": 1}

# The unsigned integer type of each output dtype's width: how its bits are held in numpy.
STORAGE = {"float32": np.uint32, "float16": np.uint16, "bfloat16": np.uint16, "fp8_e4m3": np.uint8, "fp8_e5m2": np.uint8}

# numpy extension dtypes (ml_dtypes) with the bits of a core type, read as their storage type.
EXTENSION_DTYPES = {"bfloat16": (np.uint16, "bfloat16"), "float8_e4m3fn": (np.uint8, "float8_e4m3fn"), "float8_e5m2": (np.uint8, "float8_e5m2")}


def output_dtype(dtype: str) -> str:
    """The core's name for an output dtype name; ValueError naming the accepted ones."""
    try:
        return OUTPUT_DTYPES[dtype]
    except (KeyError, TypeError):
        raise ValueError(f"unknown dtype {dtype!r}; expected one of {', '.join(map(repr, OUTPUT_DTYPES))}") from None


def byteorder_name(byteorder: str) -> str:
    """'little' or 'big' for a byteorder argument ('native' is the host's order)."""
    try:
        return "little" if BYTEORDER_CODES[byteorder] == 0 else "big"
    except (KeyError, TypeError):
        raise ValueError(f"unknown byteorder {byteorder!r}; expected one of {', '.join(map(repr, BYTEORDER_CODES))}") from None


def numpy_byteorder(dtype: np.dtype) -> str:
    """'little' or 'big': the order of a numpy dtype's bytes."""
    order = dtype.byteorder
    if order in ("=", "|"):
        return sys.byteorder
    return "little" if order == "<" else "big"


def _fp8_to_f32_bits(exponent_bits: int, mantissa_bits: int, nan_bits: int, has_inf: bool) -> np.ndarray:
    """float32 bits of each of the 256 values of a float8 format, as torch widens them."""
    bias = (1 << (exponent_bits - 1)) - 1
    codes = np.arange(256, dtype=np.uint32)
    sign = (codes >> 7) & 1
    exponent = (codes >> mantissa_bits) & ((1 << exponent_bits) - 1)
    mantissa = codes & ((1 << mantissa_bits) - 1)
    magnitude = np.where(
        exponent == 0,
        np.ldexp(mantissa.astype(np.float64), 1 - bias - mantissa_bits),
        np.ldexp((mantissa + (1 << mantissa_bits)).astype(np.float64), exponent.astype(np.int64) - bias - mantissa_bits),
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


_FP8_TABLES: dict = {}


def widen_to_float32(stored: np.ndarray, dtype: str) -> np.ndarray:
    """Exact float32 values of host-ordered stored bits of an output dtype, as torch widens them."""
    if dtype == "float32":
        return stored.view(np.float32)
    if dtype == "float16":
        wide = stored.view(np.float16).astype(np.float32)
        bits = wide.view(np.uint32)
        bits[np.isnan(wide)] |= 0x00400000  # torch quiets signaling NaNs; numpy keeps them
        return wide
    if dtype == "bfloat16":
        return (stored.astype(np.uint32) << 16).view(np.float32)
    table = _FP8_TABLES.get(dtype)
    if table is None:
        table = _fp8_to_f32_bits(4, 3, 0x7FF00000, False) if dtype == "fp8_e4m3" else _fp8_to_f32_bits(5, 2, 0, True)
        _FP8_TABLES[dtype] = table
    return table[stored].view(np.float32)
