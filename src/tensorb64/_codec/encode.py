"""Encoding: the public encode, encode_rows, json_rows and encode_binary_body.

``encode``, ``encode_rows`` and ``json_rows`` are the binding's own functions (a Python wrapper would cost more
than encoding a 384-value row); their argument checks and names live in the binding.
"""

from __future__ import annotations

from typing import Any

from .. import _native
from .._formats import byteorder_name
from .._types import BodyMetadata, ByteOrder, DType
from .inputs import entered

encode = _native.encode
encode_rows = _native.encode_rows
json_rows = _native.json_rows


def encode_binary_body(embeddings: Any, /, *, dtype: DType = "float32", byteorder: ByteOrder = "little",
                       threads: int = 1) -> tuple[bytes, list[BodyMetadata]]:
    """vLLM's binary embeddings response (``encoding_format="bytes"``): ``(body, metadata)``.

    body: the bytes of every row (as ``encode_rows`` sees rows), one row after another, each the
    bytes of ``row.to(dtype)`` in ``byteorder``; no base64.
    metadata: one dict per row, as vLLM sends beside the body: ``{"index", "embed_dtype",
    "endianness", "start", "end", "shape"}``, ``body[start:end]`` being the row. ``byteorder=
    "native"`` is recorded as the order it stands for here ("little" or "big"), so that the
    receiver need not share this host's. ``decode_binary_body`` is the inverse.
    """
    embeddings, route = entered(embeddings)  # (a tensor's route decided here, once)
    if route is not None:  # staged through pinned memory, narrowed on the GPU where narrower
        body, count, length = route.row_bytes(embeddings, dtype, byteorder, threads)
    else:
        body, count, length = _native._row_bytes(embeddings, dtype=dtype, byteorder=byteorder, threads=threads)
    endianness = byteorder_name(byteorder)
    row_bytes = len(body) // count if count else 0
    metadata: list[BodyMetadata] = [
        {"index": i, "embed_dtype": dtype, "endianness": endianness, "start": i * row_bytes, "end": (i + 1) * row_bytes, "shape": [length]}
        for i in range(count)
    ]
    return body, metadata
