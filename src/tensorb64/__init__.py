"""tensorb64: embedding tensors to the base64 strings of OpenAI-compatible embedding responses.

    >>> import tensorb64
    >>> tensorb64.encode_rows(embeddings)          # one str per row, float32 little-endian
    >>> tensorb64.decode_rows(strings)             # back to a 2-D float32 numpy array

The bytes are those of ``tensor.to(dtype)`` in the chosen byte order (little-endian float32 by
default), base64-encoded with the standard alphabet and '=' padding: for float32 input,
byte-identical to ``base64.b64encode(struct.pack(f"<{n}f", *values))``.
"""

from __future__ import annotations

import math

from . import _native
from ._decode import decode, decode_rows
from ._inputs import as_core_array, tensor_in_place

__version__ = _native.__version__
__all__ = ["encode", "encode_rows", "decode", "decode_rows", "simd_level", "available_simd_levels", "__version__"]


def encode(x, *, dtype: str = "float32", byteorder: str = "little") -> str:
    """The whole input, flattened in C order, as one base64 str.

    x: a torch.Tensor (any device), a numpy array, a float buffer, or a list/tuple of numbers.
    dtype: the stored type of each value: "float32", "float16", "bfloat16", "fp8_e4m3", "fp8_e5m2".
    byteorder: "little" (default), "big" or "native".
    """
    in_place = tensor_in_place(x, flatten=True)
    if in_place is not None:
        return _native.encode_rows_at(*in_place, dtype, byteorder)[0]
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
    in_place = tensor_in_place(x, flatten=False)
    if in_place is not None:
        return _native.encode_rows_at(*in_place, dtype, byteorder, threads)
    array, source, order = as_core_array(x, dtype)
    if array.ndim != 2:
        if array.ndim == 0:
            raise ValueError("encode_rows needs an input with at least one dimension; use encode() for a single value")
        if array.ndim > 2:
            array = array.reshape(math.prod(array.shape[:-1]), array.shape[-1])
    return _native.encode_rows(array, source, order, dtype, byteorder, threads)


def simd_level() -> str:
    """The SIMD level of the kernel in use: "avx512", "avx2", "neon" or "scalar"."""
    return _native.simd_level()


def available_simd_levels() -> list:
    """The SIMD levels this CPU can run, lowest first (set TENSORB64_SIMD to force one)."""
    return _native.available_simd_levels()
