"""Ray Data: a callable class for ``Dataset.map_batches`` that embeds a text column through an
OpenAI-compatible ``/v1/embeddings`` server, each response body read natively into an Arrow column.

    >>> import ray, tensorb64.ray
    >>> ds = ds.map_batches(tensorb64.ray.EmbeddingClient,
    ...                     fn_constructor_kwargs={"base_url": "http://host:8000/v1", "model": "m",
    ...                                            "input_column": "text"},
    ...                     batch_size=64, concurrency=2, batch_format="pyarrow")

Each of Ray's actors makes one ``EmbeddingClient``, which keeps one pool of keep-alive connections
(tensorb64._ingest.http, shared with tensorb64.daft). Ray itself is not imported here: the
class is plain Python that Ray constructs in each worker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from ._ingest.http import EmbeddingRequestError, EmbeddingsEndpoint, texts_of
from .arrow import with_embeddings

__all__ = ["EmbeddingClient", "EmbeddingRequestError"]


class EmbeddingClient:
    """Embeds ``batch[input_column]`` (strings) into ``batch[output_column]``, rows in the batch's
    order, every other column kept.

    A ``pyarrow.Table`` batch (``batch_format="pyarrow"``) gets a ``fixed_size_list<float32>[D]``
    column sharing the memory the body was read into; a dict of numpy arrays
    (``batch_format="numpy"``) a ``[B, D]`` float32 array. The batch is sent as one request (or
    requests of ``request_size`` texts, ``max_in_flight`` at once); base64 bodies by default.
    Options, as ``tensorb64``'s HTTP client takes them: ``encoding_format`` ("base64" or
    "float"), ``dimensions``, ``api_key``, ``headers``, ``timeout`` (seconds; None: 60, or the
    timeouts of ``http_client``'s client), ``max_retries`` (408, 429, 5xx and failed connections
    asked again, after ``Retry-After`` or a doubling backoff), ``backoff_s``, ``max_backoff_s``,
    ``http_client``: None (the standard library's keep-alive connections), or a zero-argument
    callable that returns an ``httpx.Client`` (or ``httpx2.Client``), for httpx's proxies from
    the environment, ``verify``/``cert`` or limits, such as ``lambda:
    httpx.Client(verify=ssl.create_default_context(cafile="ca.pem"))``: Ray pickles the
    constructor's arguments to each actor, where it is called once (a client itself cannot be
    pickled). A batch that fails for good raises ``EmbeddingRequestError`` naming its rows and
    the server's message, whichever the transport. An empty batch makes no request: a column of
    0 rows (of D = ``dimensions``, or the D of this worker's last answer).
    """

    def __init__(self, base_url: str, model: str, *, input_column: str = "text", output_column: str = "embedding",
                 encoding_format: str = "base64", dimensions: int | None = None, api_key: str | None = None,
                 headers: Mapping[str, str] | None = None, timeout: float | None = None, max_retries: int = 5,
                 backoff_s: float = 0.5, max_backoff_s: float = 30.0, request_size: int | None = None,
                 max_in_flight: int = 1, http_client: Callable[[], Any] | None = None):
        for name, value in (("input_column", input_column), ("output_column", output_column)):
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a str (a column name), got {type(value).__name__}")
        self.input_column, self.output_column = input_column, output_column
        self.endpoint = EmbeddingsEndpoint(
            base_url, model, encoding_format=encoding_format, dimensions=dimensions, api_key=api_key, headers=headers,
            timeout=timeout, max_retries=max_retries, backoff_s=backoff_s, max_backoff_s=max_backoff_s,
            request_size=request_size, max_in_flight=max_in_flight, http_client=http_client)
        self._width = dimensions  # the D of an empty batch's column

    def _embed(self, texts: list) -> np.ndarray:
        if not texts:
            return np.empty((0, self._width or 0), np.float32)
        vectors = self.endpoint.embed(texts)
        self._width = vectors.shape[1]
        return vectors

    def __call__(self, batch: Any) -> Any:
        if isinstance(batch, (pa.Table, pa.RecordBatch)):
            if self.input_column not in batch.column_names:
                raise KeyError(f"the batch has no column {self.input_column!r} (input_column); it has {batch.column_names}")
            texts = batch.column(self.input_column)
            if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
                raise TypeError(f"column {self.input_column!r} must hold strings, got {texts.type}")
            texts = texts_of(texts, f"column {self.input_column!r}")
            return with_embeddings(batch, self._embed(texts), name=self.output_column)
        if isinstance(batch, Mapping):
            if self.input_column not in batch:
                raise KeyError(f"the batch has no column {self.input_column!r} (input_column); it has {list(batch)}")
            return {**batch, self.output_column: self._embed(list(batch[self.input_column]))}
        raise TypeError("the batch must be a pyarrow.Table (batch_format='pyarrow') or a dict of numpy arrays "
                        f"(batch_format='numpy'), got {type(batch).__name__}")
