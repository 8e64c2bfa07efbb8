"""tensorb64: embedding tensors to the base64 strings of OpenAI-compatible embedding responses.

    >>> import tensorb64
    >>> tensorb64.encode_rows(embeddings)          # one str per row, float32 little-endian
    >>> tensorb64.decode_rows(strings)             # back to a 2-D float32 numpy array

The bytes are those of ``tensor.to(dtype)`` in the chosen byte order (little-endian float32 by
default), base64-encoded with the standard alphabet and '=' padding: for float32 input,
byte-identical to ``base64.b64encode(struct.pack(f"<{n}f", *values))``.
"""

from __future__ import annotations

from . import _native
from ._codec import input_hook
from ._codec.decode import decode, decode_binary_body, decode_rows
from ._codec.encode import encode, encode_binary_body, encode_rows, json_rows
from ._hosts import torch_tensors
from ._native import DecodeError
from .openai import embedding_data, iter_response_body, response_body

input_hook.install()  # the binding's hook for inputs its reader does not read in place
torch_tensors.install()  # torch's tensor type registered with the reader, now or when torch loads

__version__ = _native.__version__
__all__ = [
    "encode",
    "encode_rows",
    "json_rows",
    "decode",
    "decode_rows",
    "encode_binary_body",
    "decode_binary_body",
    "DecodeError",
    "embedding_data",
    "response_body",
    "iter_response_body",
    "simd_level",
    "available_simd_levels",
    "__version__",
]


def simd_level() -> str:
    """The SIMD level of the kernel in use: "avx512", "avx2", "neon" or "scalar"."""
    return _native.simd_level()


def available_simd_levels() -> list[str]:
    """The SIMD levels this CPU can run, lowest first (set TENSORB64_SIMD to force one)."""
    return _native.available_simd_levels()
