"""Encoding: the public encode and encode_rows."""

from __future__ import annotations

import math

from . import _native
from ._inputs import as_core_array, tensor_source_dtype


def encode(x, *, dtype: str = "float32", byteorder: str = "little") -> str:
    """The whole input, flattened in C order, as one base64 str.

    x: a torch.Tensor (any device), a numpy array, a float buffer, or a list/tuple of numbers.
    dtype: the stored type of each value: "float32", "float16", "bfloat16", "fp8_e4m3", "fp8_e5m2".
    byteorder: "little" (default), "big" or "native".
    """
    source = tensor_source_dtype(x)
    if source is not None:
        rows = _native.encode_tensor(x, source, dtype, byteorder, 1, True)
        if rows is not None:
            return rows[0]
    array, source, order = as_core_array(x, dtype)
    return _native.encode(array.reshape(-1), source, order, dtype, byteorder)


def encode_rows(x, *, dtype: str = "float32", byteorder: str = "little", threads: int = 1) -> list:
    """One base64 str per row: a 1-D input is one row; an N-D input has all its leading
    dimensions as rows. Row strides are honoured without a copy (``t[:, :256]`` costs nothing).

    threads: split a large batch across this many threads inside the one call (default 1:
    servers already encode several requests at once).
    """
    if type(threads) is not int or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    source = tensor_source_dtype(x)
    if source is not None:
        rows = _native.encode_tensor(x, source, dtype, byteorder, threads, False)
        if rows is not None:
            return rows
    array, source, order = as_core_array(x, dtype)
    if array.ndim != 2:
        if array.ndim == 0:
            raise ValueError("encode_rows needs an input with at least one dimension; use encode() for a single value")
        if array.ndim > 2:
            array = array.reshape(math.prod(array.shape[:-1]), array.shape[-1])
    return _native.encode_rows(array, source, order, dtype, byteorder, threads)
