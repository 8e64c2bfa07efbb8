"""Decoding base64 embeddings back to numpy arrays, strictly."""

from __future__ import annotations

import binascii
import re
import sys

import numpy as np

from ._formats import STORAGE, byteorder_name, output_dtype, widen_to_float32

# numpy dtypes for the stored types numpy has; bfloat16 and float8 have none.
_NUMPY_STORED = {"float32": np.float32, "float16": np.float16}

# Python < 3.11 has no strict mode: this pattern stands in for it there. It refuses all that
# strict mode refuses, and superfluous padding ("AAAA=") too.
_STRICT = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")

if sys.version_info >= (3, 11):

    def _strict_b64decode(data) -> bytes:
        return binascii.a2b_base64(data, strict_mode=True)

else:
    def _strict_b64decode(data) -> bytes:
        raw = data.encode("ascii") if isinstance(data, str) else bytes(data)
        if not _STRICT.fullmatch(raw):
            raise binascii.Error("not strict base64 (characters outside the alphabet, or bad padding)")
        return binascii.a2b_base64(raw)


def _decode_bytes(s) -> bytes:
    if not isinstance(s, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"expected a base64 str or bytes, got {type(s).__name__}")
    try:
        return _strict_b64decode(s)
    except ValueError as e:  # binascii.Error, and non-ASCII str
        raise ValueError(f"invalid base64: {e}") from None


def _stored_array(raw: bytes, dtype: str, byteorder: str, widen: bool) -> np.ndarray:
    storage = np.dtype(STORAGE[dtype])
    if len(raw) % storage.itemsize:
        raise ValueError(
            f"decoded length {len(raw)} bytes is not a whole number of {dtype} values ({storage.itemsize} bytes each)"
        )
    stored = np.frombuffer(raw, dtype=storage.newbyteorder("<" if byteorder == "little" else ">"))
    stored = stored.astype(storage)  # host order, and a writable copy
    if widen:
        return widen_to_float32(stored, dtype)
    if dtype not in _NUMPY_STORED:
        raise ValueError(f"numpy has no {dtype} dtype; decode with widen=True for float32")
    return stored.view(_NUMPY_STORED[dtype])


def _check_options(dtype: str, byteorder: str) -> str:
    output_dtype(dtype)  # validates the name
    return byteorder_name(byteorder)


def decode(s, *, dtype: str = "float32", byteorder: str = "little", widen: bool = True) -> np.ndarray:
    """A 1-D array of the values in one base64 str (or bytes) made by ``encode``.

    dtype and byteorder must be those it was encoded with. The result is float32 (the exact
    widening), or with widen=False the stored dtype where numpy has one (float32, float16).
    Decoding is strict: whatever ``binascii.a2b_base64(s, strict_mode=True)`` refuses is a
    ValueError, and so is a length that is not a whole number of values.
    """
    order = _check_options(dtype, byteorder)
    return _stored_array(_decode_bytes(s), dtype, order, widen)


def decode_rows(strings, *, dtype: str = "float32", byteorder: str = "little", widen: bool = True) -> np.ndarray:
    """A 2-D array with one row per base64 str (or bytes); rows must all have the same length."""
    order = _check_options(dtype, byteorder)
    if isinstance(strings, (str, bytes, bytearray)):
        raise TypeError("decode_rows expects a list of base64 strings; use decode() for one string")
    rows = [_decode_bytes(s) for s in strings]
    lengths = {len(r) for r in rows}
    if len(lengths) > 1:
        raise ValueError(f"rows of unequal length cannot form a 2-D array (decoded byte lengths {sorted(lengths)})")
    raw = b"".join(rows)
    flat = _stored_array(raw, dtype, order, widen)
    return flat.reshape(len(rows), -1 if rows and rows[0] else 0)


def decode_body(body, metadata, *, widen: bool = True) -> list:
    """The rows of a binary embeddings response (``encode_body``'s, or vLLM's
    ``encoding_format="bytes"``), in ``index`` order: one array per metadata entry, of its
    ``shape``, float32 (or with widen=False the stored dtype where numpy has one)."""
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise TypeError(f"body must be bytes, got {type(body).__name__}")
    body = memoryview(body).cast("B")
    rows = []
    for item in sorted(metadata, key=lambda entry: entry["index"]):
        start, end = item["start"], item["end"]
        if not (type(start) is int and type(end) is int and 0 <= start <= end <= len(body)):
            raise ValueError(f"row {item['index']}: start {start!r} and end {end!r} must lie within the {len(body)}-byte body")
        dtype = item["embed_dtype"]
        order = _check_options(dtype, item["endianness"])
        rows.append(_stored_array(body[start:end], dtype, order, widen).reshape(item["shape"]))
    return rows
