"""Decoding base64 embeddings (and vLLM's binary bodies) back to numpy arrays, strictly.

The C++ core checks and decodes; this layer allocates each result once and has the core fill it
(no intermediate bytes, no full-size temporary). Names are resolved by the binding.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .. import _native
from .._formats import byteorder_name, output_type
from .._native import DecodeError
from .._types import BodyMetadata, ByteOrder, DType

# numpy dtypes for the stored types numpy has; bfloat16 and float8 have none.
_NUMPY_STORED = {"float32": np.float32, "float16": np.float16}
_TEXT_TYPES = (str, bytes, bytearray, memoryview)


def _result_dtype(dtype, byteorder, widen: bool):
    """The numpy dtype of the result; ValueError for an unknown dtype or byteorder."""
    stored = output_type(dtype)
    byteorder_name(byteorder)
    if widen:
        return np.float32
    if stored.name in _NUMPY_STORED:
        return _NUMPY_STORED[stored.name]
    raise ValueError(f"numpy has no {dtype} dtype; decode with widen=True for float32")


def _check_text(text) -> None:
    if not isinstance(text, _TEXT_TYPES):
        raise TypeError(f"expected a base64 str or bytes, got {type(text).__name__}")


def decode(text: str | bytes | bytearray | memoryview, /, *, dtype: DType = "float32", byteorder: ByteOrder = "little",
           widen: bool = True, threads: int = 1) -> np.ndarray:
    """A 1-D array of the values in one base64 str (or bytes) made by ``encode``.

    dtype and byteorder must be those it was encoded with. The result is float32 (the exact
    widening), or with widen=False the stored dtype where numpy has one (float32, float16).
    Decoding is strict and the same on every Python version: the standard alphabet, '=' padding
    exactly as the last group needs, no non-zero bits past the data; whatever
    ``binascii.a2b_base64(s, strict_mode=True)`` refuses on Python 3.13 is a ``DecodeError`` (a
    ValueError naming what was wrong, with its offset as ``pos``), and so is a length that is not
    a whole number of values.
    threads: split the text across this many threads inside the one call (default 1).
    """
    widen = bool(widen)
    result = _result_dtype(dtype, byteorder, widen)
    _native._check_threads(threads)
    _check_text(text)
    out = np.empty(_native._decoded_length(text, dtype), result)
    _native._decode_into(text, out, dtype, byteorder, widen, True, threads)
    return out


def _decode_each(items: list, rows: list, wheres: list, widen: bool, base64: bool, threads: int) -> None:
    """Each (data, out, dtype, byteorder) item decoded into its out by one core call, ``threads``
    splitting them; the first that fails is run again alone, for the error naming it as ``rows``
    (its row) and ``wheres`` (its prefix) say."""
    failed = _native._decode_each(items, widen, base64, threads)
    if failed is not None:
        try:
            _native._decode_into(*items[failed], widen, base64)
        except DecodeError as e:
            raise _in_row(e, rows[failed], wheres[failed]) from None
        except ValueError as e:
            raise ValueError(f"{wheres[failed]}: {e}") from None


def decode_rows(texts: Iterable[str | bytes | bytearray | memoryview], /, *, dtype: DType = "float32",
                byteorder: ByteOrder = "little", widen: bool = True, threads: int = 1) -> np.ndarray:
    """A 2-D array with one row per base64 str (or bytes); rows must all have the same length.

    One core call reads the list, checks each row and decodes it straight into its row of the
    result, ``threads`` splitting the rows; a ``DecodeError`` names the row (``row``) and the
    offset in its string (``pos``)."""
    widen = bool(widen)
    result = _result_dtype(dtype, byteorder, widen)
    if isinstance(texts, (str, bytes, bytearray)):
        raise TypeError("decode_rows expects a list of base64 strings; use decode() for one string")
    return _native._decode_rows(texts, dtype, byteorder, widen, threads,
                                lambda rows, row_length: np.empty((rows, row_length), result))


def _in_row(error: DecodeError, row: int, where: str | None = None) -> DecodeError:
    """``error`` (a string's) as the error of the row ``row`` of a call, named ``where``."""
    return DecodeError(f"{where or f'row {row}'}: {error}", error.reason, error.pos, row)


# ---- decode_binary_body ----------------------------------------------------------------------------

_METADATA_FIELDS = ("index", "embed_dtype", "endianness", "start", "end", "shape")
_MISSING = object()


def _field(item, name: str, where: str):
    """A metadata field, from a mapping or an attribute (vLLM's MetadataItem)."""
    if isinstance(item, Mapping):
        value = item.get(name, _MISSING)
    else:
        value = getattr(item, name, _MISSING)
    if value is _MISSING:
        raise ValueError(
            f"{where}: no {name!r} field (each metadata item is a mapping or an object with "
            f"{', '.join(_METADATA_FIELDS)}; got {type(item).__name__})"
        )
    return value


def _integer(value, name: str, where: str) -> int:
    """A Python int from an int or a numpy integer; bools and everything else refused."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise ValueError(f"{where}: {name!r} must be an integer, got {value!r}")


def _shape(value, where: str) -> tuple:
    sizes = None
    if not isinstance(value, (str, bytes)):
        try:
            sizes = list(value)
        except TypeError:  # not iterable (an int, a 0-d array)
            pass
    if sizes is None:
        raise ValueError(f"{where}: 'shape' must be a sequence of integers, got {value!r}")
    shape = tuple(_integer(size, "shape", where) for size in sizes)
    if any(size < 0 for size in shape):
        raise ValueError(f"{where}: 'shape' {list(shape)} has a negative size")
    return shape


def decode_binary_body(body: bytes | bytearray | memoryview, metadata: Iterable[BodyMetadata | Mapping[str, Any] | Any], /, *,
                       widen: bool = True, threads: int = 1) -> list[np.ndarray]:
    """The rows of a binary embeddings response (``encode_binary_body``'s, or vLLM's
    ``encoding_format="bytes"``), in ``index`` order: one array per metadata item, of its
    ``shape``, float32 (or with widen=False the stored dtype where numpy has one).

    Each metadata item is a mapping or an object with the fields ``index``, ``embed_dtype``,
    ``endianness``, ``start``, ``end`` and ``shape`` (vLLM's ``MetadataItem``); numpy integers are
    accepted. Every error names the row (by its index, and its position in ``metadata``) and the
    field. threads: split the rows across this many threads inside one core call (default 1)."""
    widen = bool(widen)
    _native._check_threads(threads)
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise TypeError(f"body must be bytes, got {type(body).__name__}")
    body = memoryview(body).cast("B")
    try:
        entries = list(metadata) if not isinstance(metadata, (str, bytes, Mapping)) else None
    except TypeError:  # not iterable
        entries = None
    if entries is None:
        raise TypeError(f"metadata must be a list of metadata items, got {type(metadata).__name__}")
    items = []
    for position, item in enumerate(entries):
        where = f"metadata item {position}"
        index = _integer(_field(item, "index", where), "index", where)
        items.append((index, position, item))
    items.sort(key=lambda entry: entry[0])
    rows = []
    tasks = []
    indices = []
    wheres = []
    for index, position, item in items:
        where = f"row {index} (metadata item {position})"
        start = _integer(_field(item, "start", where), "start", where)
        end = _integer(_field(item, "end", where), "end", where)
        if not 0 <= start <= end <= len(body):
            raise ValueError(f"{where}: start {start} and end {end} must lie within the {len(body)}-byte body")
        dtype = _field(item, "embed_dtype", where)
        endianness = _field(item, "endianness", where)
        shape = _shape(_field(item, "shape", where), where)
        try:
            result = _result_dtype(dtype, endianness, widen)
            length = _native._decoded_length(body[start:end], dtype, False)
        except DecodeError as e:
            raise _in_row(e, index, where) from None
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        if math.prod(shape) != length:
            raise ValueError(
                f"{where}: 'shape' {list(shape)} does not hold the {length} {dtype} values of its "
                f"{end - start} bytes (start {start}, end {end})"
            )
        out = np.empty(shape, result)
        tasks.append((body[start:end], out, dtype, endianness))
        indices.append(index)
        wheres.append(where)
        rows.append(out)
    _decode_each(tasks, indices, wheres, widen, False, threads)
    return rows
