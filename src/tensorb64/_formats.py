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
