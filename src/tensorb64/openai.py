"""The ``data`` entries of an OpenAI embeddings response, built from a batch of embeddings.

    >>> from tensorb64.openai import embedding_data
    >>> data = embedding_data(pooled, encoding_format=request.encoding_format, dimensions=request.dimensions)
    >>> {"object": "list", "data": data, "model": name, "usage": usage}

One name, because this is the whole of what a worker does between its pooling output and its
response body: cut each row to ``dimensions`` (a view, never a copy), turn the rows into either
base64 strings (one ``encode_rows`` call for the batch) or lists of floats (one ``.tolist()``),
and number them. Everything else in a response (``model``, ``usage``) is the server's business.
"""

from __future__ import annotations

import sys
from numbers import Integral

import numpy as np

from . import _native
from ._encode import encode_rows
from ._inputs import readable

__all__ = ["embedding_data"]

ENCODING_FORMATS = ("float", "base64")


def _is_index(value) -> bool:
    """True for ints (and numpy integers), False for bool: ``dimensions=True`` is a bug, not 1."""
    return isinstance(value, Integral) and not isinstance(value, bool)


def check_dimensions(dimensions, width: int):
    """``dimensions`` as an int from 1 to ``width`` (the row length), or None for whole rows;
    ValueError naming the accepted range otherwise. The one place this check is made."""
    if dimensions is None:
        return None
    if not _is_index(dimensions) or not 1 <= dimensions <= width:
        accepted = f"an int from 1 to {width} (the embedding size)" if width else "None (the rows are empty)"
        raise ValueError(f"dimensions must be {accepted}, or None for whole rows; got {dimensions!r}")
    return int(dimensions)


def _rows(embeddings):
    """The input as a 2-D array or tensor (a view of the caller's memory where it can be), read
    and refused by the one reader, as every encoder reads and refuses it."""
    torch = sys.modules.get("torch")
    if isinstance(embeddings, np.ndarray) or (torch is not None and isinstance(embeddings, torch.Tensor)):
        x = embeddings
    else:
        x = np.asarray(readable(embeddings)[0])  # a list's array, or a view of a buffer
    if x.ndim not in (1, 2):
        raise ValueError(f"embeddings must be a 2-D [batch, dim] array (or one 1-D row), got shape {tuple(x.shape)}")
    _native.row_shape(x)  # refuses what every encoder refuses, in the same words
    return x if x.ndim == 2 else x[None]


def _float_lists(rows) -> list:
    """Each row's float32 values as Python floats, in one ``.tolist()`` call."""
    if isinstance(rows, np.ndarray):
        with np.errstate(over="ignore"):  # float64 beyond float32's range becomes inf, as in torch
            return rows.astype(np.float32, copy=False).tolist()
    import torch

    return rows.to(dtype=torch.float32).tolist()  # no copy when already float32


def embedding_data(embeddings, *, encoding_format: str = "float", dimensions=None, start_index: int = 0) -> list:
    """The ``data`` list of an OpenAI ``/v1/embeddings`` response: one entry per row.

    Each entry is ``{"object": "embedding", "index": start_index + i, "embedding": ...}`` where
    the embedding is, for row ``i``:

    * ``encoding_format="base64"``: the base64 of the row's little-endian float32 bytes, the
      format OpenAI clients decode (``numpy.frombuffer(base64.b64decode(s), "float32")``). All
      rows are encoded in one ``tensorb64.encode_rows`` call, reading the caller's memory in
      place: bf16/fp16 rows are widened inside the encoder, no float32 copy is made.
    * ``encoding_format="float"`` (OpenAI's default): a list of plain Python floats, each
      exactly the row's float32 value (bf16/fp16/float64 input is first converted as
      ``tensor.to(torch.float32)`` would). So both formats carry the same numbers, and a
      client gets bit for bit the same float32 values whichever it asks for. JSON then writes
      each as the shortest repr of the double (``0.10000000149011612`` for float32 0.1), which
      is longer than the float32's own shortest repr: that is the price of exactness, and the
      reason clients prefer base64. Non-finite values (NaN, inf) cannot be written as
      standard JSON; a server that may produce them should use base64.

    embeddings: a ``[batch, dim]`` torch.Tensor (any device and float dtype), numpy array, or
        nested list of numbers; a 1-D input is one row. A batch of 0 rows gives ``[]``.
    encoding_format: ``"float"`` or ``"base64"``, as the request asked.
    dimensions: ``None`` for whole rows, or an int from 1 to ``dim``: keep the first
        ``dimensions`` values of each row (Matryoshka truncation). The cut is a view of the
        input, never a copy. The values are not re-normalised: a server that wants unit-norm
        truncated embeddings normalises after truncating, in its pooler (as vLLM does).
    start_index: the ``index`` of the first row, for a worker that answers one slice of a
        larger request.

    Raises ValueError for an unknown ``encoding_format``, a ``dimensions`` outside 1..dim (or
    not an int), a negative or non-int ``start_index``, or an input that is not 1-D or 2-D;
    TypeError for an input that is not an array of real numbers.
    """
    if encoding_format not in ENCODING_FORMATS:
        raise ValueError(f"unknown encoding_format {encoding_format!r}; expected 'float' or 'base64'")
    if not _is_index(start_index) or start_index < 0:
        raise ValueError(f"start_index must be an int >= 0, got {start_index!r}")
    rows = _rows(embeddings)
    dimensions = check_dimensions(dimensions, rows.shape[1])
    if dimensions is not None:
        rows = rows[:, :dimensions]  # a view: strides do the truncation
    if encoding_format == "base64":
        values = encode_rows(rows)
    else:
        values = _float_lists(rows)
    return [{"object": "embedding", "index": start_index + i, "embedding": value} for i, value in enumerate(values)]
