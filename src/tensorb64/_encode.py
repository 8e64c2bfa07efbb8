"""Encoding: the public encode, encode_rows and encode_body."""

from __future__ import annotations

import math

from . import _native
from ._formats import byteorder_name
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
    _check_threads(threads)
    source = tensor_source_dtype(x)
    if source is not None:
        rows = _native.encode_tensor(x, source, dtype, byteorder, threads, False)
        if rows is not None:
            return rows
    array, source, order = as_core_array(x, dtype)
    return _native.encode_rows(_as_rows(array), source, order, dtype, byteorder, threads)


def encode_body(x, *, dtype: str = "float32", byteorder: str = "little", threads: int = 1) -> tuple:
    """vLLM's binary embeddings response (``encoding_format="bytes"``): ``(body, metadata)``.

    body: the bytes of every row (as ``encode_rows`` sees rows), one row after another, each the
    bytes of ``row.to(dtype)`` in ``byteorder``; no base64.
    metadata: one dict per row, as vLLM sends beside the body: ``{"index", "embed_dtype",
    "endianness", "start", "end", "shape"}``, ``body[start:end]`` being the row. ``byteorder=
    "native"`` is recorded as the order it stands for here ("little" or "big"), so that the
    receiver need not share this host's. ``decode_body`` is the inverse.
    """
    _check_threads(threads)
    endianness = byteorder_name(byteorder)
    array, source, order = as_core_array(x, dtype)
    rows = _as_rows(array)
    body = _native.encode_body(rows, source, order, dtype, byteorder, threads)
    count, length = (1, rows.shape[0]) if rows.ndim == 1 else rows.shape
    row_bytes = len(body) // count if count else 0
    metadata = [
        {"index": i, "embed_dtype": dtype, "endianness": endianness, "start": i * row_bytes, "end": (i + 1) * row_bytes, "shape": [length]}
        for i in range(count)
    ]
    return body, metadata


def _check_threads(threads) -> None:
    if type(threads) is not int or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")


def _as_rows(array):
    """The rows of a core array: itself if 1-D (one row) or 2-D; all leading dimensions as rows
    if N-D (a view where the strides allow)."""
    if array.ndim == 0:
        raise ValueError("encoding rows needs an input with at least one dimension; use encode() for a single value")
    if array.ndim > 2:
        return array.reshape(math.prod(array.shape[:-1]), array.shape[-1])
    return array
