"""A whole ``/v1/embeddings`` response body read into one numpy array (the client side:
``tensorb64.openai.decode_response_body``, ``decode_response``; and the rows with where each lies,
for the patched clients, which build the rest of the response themselves).

The core reads the body in two native passes (the structure, then each row decoded straight into
its place in the result): no JSON tree, no Python object per row or per value.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .. import _native
from .._types import ByteOrder, DType, ResponseBody
from .decode import _result_dtype


class EmbeddingsResponse(NamedTuple):
    """A response body read once: the ``[B, D]`` array of its rows (by ``index``), and its
    ``model`` and ``usage`` as json.loads gives them (None where the body has none)."""

    embeddings: np.ndarray
    model: Any  # a str in a well-formed body
    usage: Any  # a dict in a well-formed body


def _allocator(result_dtype: Any, out: np.ndarray | None,
               float_rows_dtype: Any = np.float32) -> Callable[[int, int, bool], np.ndarray]:
    """The core's allocator: ``out`` where it has the rows' shape and dtype, else a new array of
    them (a mismatch with ``out`` is raised after the read: _check_result)."""

    def allocate(rows: int, row_length: int, float_rows: bool) -> np.ndarray:
        dtype = np.dtype(float_rows_dtype if float_rows else result_dtype)
        if out is None or out.shape != (rows, row_length) or out.dtype != dtype:
            # Not out's shape: an array of the one offered, and the mismatch raised after the read
            # (_check_result). The reader's first offer may follow a guessed row end; where the
            # guess was wrong it reads the body again and offers the true shape (its allocator's
            # contract, tensorb64/body_reader.hpp), which out must not have refused.
            return np.empty((rows, row_length), dtype)
        return out

    return allocate


def _check_result(result: np.ndarray, out: np.ndarray | None) -> None:
    """A ValueError where ``out`` was given and the body's result is not it (another shape or dtype)."""
    if out is not None and result is not out:
        raise ValueError(
            f"out must be a {result.dtype} array of shape {result.shape} for this body, "
            f"got {out.dtype} {out.shape}"
        )


def _check_out(out: Any) -> None:
    if out is None:
        return
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy array (or None), got {type(out).__name__}")
    if not (out.flags.c_contiguous and out.flags.writeable and out.flags.aligned):
        raise ValueError("out must be a writeable, aligned, C-contiguous numpy array")


def _read(body: ResponseBody, dtype: str, byteorder: str, widen: bool, out: np.ndarray | None,
          threads: int) -> tuple[np.ndarray, bytes | None, bytes | None]:
    widen = bool(widen)
    allocate = _allocator(_result_dtype(dtype, byteorder, widen), out)
    _check_out(out)
    if isinstance(body, memoryview) and not body.c_contiguous:
        raise ValueError("body must be a C-contiguous memoryview")
    try:
        read = _native._decode_response_body(body, dtype, byteorder, widen, threads, allocate)
    except UnicodeEncodeError:  # a str with a lone surrogate, which json.loads takes: read its bytes as json does
        body = body.encode("utf-8", "surrogatepass")
        read = _native._decode_response_body(body, dtype, byteorder, widen, threads, allocate)
    _check_result(read[0], out)
    return read


def decode_response_body(body: ResponseBody, /, *, dtype: DType = "float32", byteorder: ByteOrder = "little",
                         widen: bool = True, out: np.ndarray | None = None, threads: int = 1) -> np.ndarray:
    """The ``[B, D]`` array of a ``/v1/embeddings`` response body, row ``i`` from the data entry
    whose ``index`` is ``i``.

    body: the body as ``bytes``, ``bytearray``, a C-contiguous byte ``memoryview`` or ``str``.
    Base64 rows are decoded strictly (as ``tensorb64.decode``); ``dtype``/``byteorder`` say how
    they were encoded (vLLM's ``embed_dtype``/``endianness``), and ``widen`` gives float32
    (default) or, with ``widen=False``, the stored dtype where numpy has one. Float rows are read
    exactly as ``numpy.asarray(json.loads(body)["data"][i]["embedding"], dtype=numpy.float32)``
    reads them. out: a preallocated C-contiguous array of the result's shape and dtype to fill
    (ValueError if it does not match). threads: split the rows of a large body over this many
    threads.

    Every body json.loads accepts whose ``data`` entries each have an ``embedding`` (a base64
    string or a list of numbers) and an integer ``index`` reads; anything else is a
    ``tensorb64.DecodeError`` (a ValueError) naming what was expected and where: ``reason``,
    ``pos`` (the byte offset in the body; in its UTF-8 form for a str) and ``row`` (the position
    of the data entry at fault, or None): malformed JSON (an integer of more digits than
    ``sys.get_int_max_str_digits()`` allows included, as json.loads refuses it), a missing field,
    indexes that are not each of 0..B-1 once, rows of different lengths, bad base64, a mix of
    formats.
    """
    return _read(body, dtype, byteorder, widen, out, threads)[0]


def decode_response(body: ResponseBody, /, *, dtype: DType = "float32", byteorder: ByteOrder = "little",
                    widen: bool = True, out: np.ndarray | None = None, threads: int = 1) -> EmbeddingsResponse:
    """``decode_response_body``'s array with the body's ``model`` and ``usage``, from the same one
    read: the core reports where their JSON text lies, and only those few bytes are parsed."""
    array, model, usage = _read(body, dtype, byteorder, widen, out, threads)
    return EmbeddingsResponse(
        array, None if model is None else json.loads(model), None if usage is None else json.loads(usage)
    )


def rows_and_offsets(body: bytes, threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """For a client that builds the rest of the response itself (tensorb64.openai.patch): the
    rows of ``body`` (base64 rows as float32; float rows as float64, each exactly the double
    ``json.loads`` gives, so its Python floats are the ones the client would have made) and a
    ``[rows, 2]`` int64 array of where each row's embedding text lies, ``body[start:end]``."""
    allocate = _allocator(np.float32, None, np.float64)
    array, _, _, offsets = _native._decode_response_body(
        body, "float32", "little", True, threads, allocate, True, True)
    return array, np.frombuffer(offsets, np.int64).reshape(-1, 2)


def without_embeddings(body: bytes, offsets: Any) -> bytes:
    """``body`` with each row's embedding text (``offsets``: ``rows_and_offsets``'s)
    replaced by ``[]``: the rest of the response, a few hundred bytes, for a client's own parse."""
    pieces = []
    at = 0
    for start, end in sorted(offsets.tolist()):
        pieces.append(body[at:start])
        at = end
    pieces.append(body[at:])
    return b"[]".join(pieces)
