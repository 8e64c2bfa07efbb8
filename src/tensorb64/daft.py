"""Daft: an expression that embeds a string column through an OpenAI-compatible
``/v1/embeddings`` server, each response body read natively into Daft's embedding type.

    >>> import daft, tensorb64.daft
    >>> df = df.with_column("embedding", tensorb64.daft.embed_text(daft.col("text"), base_url="http://host:8000/v1",
    ...                                                           model="m"))

The same HTTP client as tensorb64.ray (tensorb64._ingest.http), one per Daft worker (a
``daft.cls`` instance), on Daft's native runner and on Ray. Daft is imported when this module is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import daft
import pyarrow as pa

from ._ingest.http import EmbeddingRequestError, EmbeddingsEndpoint, texts_of
from ._types import is_count
from .arrow import embedding_array

__all__ = ["embed_text", "EmbeddingRequestError"]


class _TextEmbedder:
    """What each Daft worker holds: one endpoint (its connection pool), called once per batch."""

    def __init__(self, endpoint: EmbeddingsEndpoint):
        self.endpoint = endpoint

    def embed(self, texts: daft.Series) -> pa.FixedSizeListArray:
        return embedding_array(self.endpoint.embed(texts_of(texts.to_arrow(), "the text column (in this batch)")))


def embed_text(text: daft.Expression, *, base_url: str, model: str, encoding_format: str = "base64",
               dimensions: int | None = None, api_key: str | None = None, headers: Mapping[str, str] | None = None,
               timeout: float | None = None, max_retries: int = 5, backoff_s: float = 0.5, max_backoff_s: float = 30.0,
               batch_size: int = 64, max_concurrency: int | None = None,
               http_client: Callable[[], Any] | None = None) -> daft.Expression:
    """An expression of Daft's ``embedding[float32; D]`` type: the embeddings of the string
    expression ``text``, ``batch_size`` rows a request (Daft's own ``embed_text`` default, 64).

    D is ``dimensions`` where given (and asked of the server), else what the server answers for
    one short text, asked now (as Daft's own ``embed_text`` asks an OpenAI-compatible server):
    Daft needs a column's type before it runs. The other options are ``tensorb64.ray.EmbeddingClient``'s
    (``http_client``: a factory of an httpx client, called once in each process that sends a
    request: here, for the probe of D, and in each Daft worker).
    max_concurrency: Daft's, for the class each worker makes (None: Daft's default). A batch
    that fails for good raises ``EmbeddingRequestError`` (rows within that batch, the server's
    message) in Daft's own error.
    """
    if not isinstance(text, daft.Expression):
        raise TypeError(f"text must be a daft.Expression such as daft.col('text'), got {type(text).__name__}")
    if not is_count(batch_size) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    endpoint = EmbeddingsEndpoint(
        base_url, model, encoding_format=encoding_format, dimensions=dimensions, api_key=api_key, headers=headers,
        timeout=timeout, max_retries=max_retries, backoff_s=backoff_s, max_backoff_s=max_backoff_s,
        http_client=http_client)
    width = dimensions if dimensions is not None else endpoint.embed(["dimension probe"]).shape[1]
    endpoint.close()  # the probe's connection: each worker opens its own
    # The return type holds D, so each call makes its own subclass carrying its batch method.
    embedder = type("tensorb64_embed_text", (_TextEmbedder,), {"__call__": daft.method.batch(
        _TextEmbedder.embed, return_dtype=daft.DataType.embedding(daft.DataType.float32(), width),
        batch_size=int(batch_size))})
    cls = daft.cls(embedder, max_concurrency=max_concurrency, name_override="tensorb64.embed_text")
    return cls(endpoint)(text)
