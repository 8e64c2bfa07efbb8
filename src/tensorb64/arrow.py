"""Embeddings as Arrow columns: a ``/v1/embeddings`` response body, or a ``[B, D]`` float32 array,
to a ``fixed_size_list<float32>[D]`` array over the same memory (no copy, no Python object per
row or value), and that column beside a table's own.

    >>> from tensorb64.arrow import embedding_array, with_embeddings
    >>> column = embedding_array(response_body_bytes)      # pyarrow.FixedSizeListArray, B rows of D
    >>> table = with_embeddings(texts_table, vectors)      # texts_table's columns, then "embedding"

This is the form Ray Data's pyarrow batches, Daft's embedding type, Parquet and LanceDB take
(tensorb64.ray, tensorb64.daft build on it). pyarrow is imported here, not by ``import tensorb64``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ._codec.body_reader import decode_response_body

__all__ = ["embedding_array", "with_embeddings"]


def embedding_array(embeddings: Any, /) -> pa.FixedSizeListArray:
    """A ``fixed_size_list<float32>[D]`` array of the B rows of ``embeddings``: a response body
    (``bytes``, ``bytearray``, ``memoryview`` or ``str``, read by ``decode_response_body``), or a
    ``[B, D]`` float32 C-contiguous numpy array, whose memory the Arrow array then shares (it
    keeps the numpy array alive). An array of another dtype or layout is refused rather than
    copied: ``numpy.ascontiguousarray(x, numpy.float32)`` makes one that is taken."""
    if isinstance(embeddings, (bytes, bytearray, memoryview, str)):
        embeddings = decode_response_body(embeddings)
    if not isinstance(embeddings, np.ndarray):
        raise TypeError("embeddings must be a response body (bytes, bytearray, memoryview, str) or a [B, D] "
                        f"float32 numpy array, got {type(embeddings).__name__}")
    if embeddings.ndim != 2 or embeddings.dtype != np.float32 or embeddings.dtype.byteorder == ">":
        raise ValueError(f"embeddings must be a [B, D] float32 array, got {embeddings.dtype} of shape {embeddings.shape}")
    if not embeddings.flags.c_contiguous:
        raise ValueError("embeddings must be C-contiguous to be shared without a copy "
                         "(numpy.ascontiguousarray(x) makes a copy that is)")
    rows, width = embeddings.shape
    # py_buffer shares the array's memory (and holds it); from_buffers wraps it as float32 values
    # without looking at them.
    values = pa.Array.from_buffers(pa.float32(), rows * width, [None, pa.py_buffer(embeddings.reshape(-1))])
    return pa.FixedSizeListArray.from_arrays(values, width)


def with_embeddings(table: pa.Table | pa.RecordBatch, embeddings: Any, /, *, name: str = "embedding") -> Any:
    """``table`` (a ``pyarrow.Table`` or ``RecordBatch``) with the column ``name`` appended: the
    ``embedding_array`` of ``embeddings``, which must have one row per row of the table. A
    column of that name already there is replaced, in its place."""
    if not isinstance(table, (pa.Table, pa.RecordBatch)):
        raise TypeError(f"table must be a pyarrow.Table or pyarrow.RecordBatch, got {type(table).__name__}")
    column = embedding_array(embeddings)
    if len(column) != table.num_rows:
        raise ValueError(f"embeddings have {len(column)} rows for a table of {table.num_rows}")
    if name in table.column_names:
        return table.set_column(table.column_names.index(name), name, column)
    return table.append_column(name, column)
