"""The HTTP client the engine adapters share (tensorb64.ray, tensorb64.daft): texts posted to an
OpenAI-compatible ``/v1/embeddings`` server, each response body read natively into one float32
array, with the retries and backoff, and the errors naming the rows, that every transport shares.

The transport: the standard library's ``http.client``, a pool of keep-alive connections
(``connections``: why it is the default, with figures), or a user's ``httpx.Client``
(``httpx_transport``); what a request that got no answer means (asked again or reported at once)
is ``failures``'s. The body is read once into ``bytes`` and handed to ``decode_response_body``,
which releases the GIL while it reads, so requests on several threads overlap their network
waits and their reads.
"""

from __future__ import annotations

import email.utils
import json
import math
import random
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .._codec.body_reader import decode_response_body
from .._types import is_count
from .connections import ConnectionPool
from .failures import Unanswered

__all__ = ["EmbeddingRequestError", "EmbeddingsEndpoint"]

# What is worth asking again: rate limiting, a timeout, and the server's own failures.
RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
# Seconds for each connect and each read where no timeout is given and no client of the user's.
DEFAULT_TIMEOUT = 60.0


class EmbeddingRequestError(RuntimeError):
    """A batch that failed for good: ``rows`` (a ``range`` of the rows of the batch the caller
    passed), ``status`` (the last HTTP status, or None where no answer came) and ``message`` (the
    server's own error message, or what the connection raised)."""

    def __init__(self, text: str, rows: range, status: int | None, message: str):
        super().__init__(text)
        self.rows, self.status, self.message = rows, status, message

    def __reduce__(self):  # raised in an engine's worker, pickled to the driver with its fields
        return type(self), (self.args[0], self.rows, self.status, self.message)


def _server_message(body: bytes) -> str:
    """The error message of an error body: OpenAI's ``{"error": {"message": ...}}``, vLLM's and
    SGLang's ``{"message": ...}``, FastAPI's ``{"detail": ...}``, else the text itself (cut)."""
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        for found in (error.get("message") if isinstance(error, dict) else error, parsed.get("message"),
                      parsed.get("detail")):
            if found:
                return str(found)[:1000]
    text = body.decode("utf-8", "replace").strip()
    return text[:1000] + ("..." if len(text) > 1000 else "") if text else "(an empty body)"


def _is_seconds(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value >= 0


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


class EmbeddingsEndpoint:
    """One server's ``/embeddings`` route for one model, through a pool of keep-alive connections
    (at most ``max_in_flight`` open: one per request in flight) or a user's httpx client;
    thread-safe.

    base_url: the server's OpenAI base URL, as the openai client takes it (``http://host:8000/v1``;
    the request goes to ``{base_url}/embeddings``); http or https. encoding_format: "base64" (the
    default: 4 bytes a value on the wire, read at memory speed) or "float". dimensions: asked of
    the server where given (the Matryoshka cut), and each body's row length checked against it.
    api_key: sent as ``Authorization: Bearer``; headers: further request headers. timeout: seconds
    for each connection's connect and each read (None: 60, or the timeouts of the user's client).
    max_retries: how many times a request answered 408, 429 or 5xx, or whose connection failed,
    is sent again, waiting ``Retry-After`` where the server gives one (at most ``max_backoff_s``),
    else ``backoff_s`` doubled each time (with jitter); what would fail the same way again
    (another 4xx, a host name not found, a TLS certificate or handshake refused) is reported at
    once. request_size: texts per request (None: a whole call's texts in one request);
    max_in_flight: the requests of one call sent at once (on that many threads). http_client:
    None (the standard library's keep-alive pool), or a zero-argument callable that returns an
    ``httpx.Client`` (or an ``httpx2.Client``), such as ``lambda:
    httpx.Client(verify=ssl.create_default_context(cafile="ca.pem"))``: called once in each
    process that sends a request (a client cannot be pickled to an engine's workers; its factory
    can), its client closed with this endpoint; the retries and errors are the same.
    """

    def __init__(self, base_url: str, model: str, *, encoding_format: str = "base64", dimensions: int | None = None,
                 api_key: str | None = None, headers: Mapping[str, str] | None = None, timeout: float | None = None,
                 max_retries: int = 5, backoff_s: float = 0.5, max_backoff_s: float = 30.0,
                 request_size: int | None = None, max_in_flight: int = 1,
                 http_client: Callable[[], Any] | None = None):
        if not isinstance(base_url, str):
            raise TypeError(f"base_url must be a str such as 'http://127.0.0.1:8000/v1', got {type(base_url).__name__}")
        url = urllib.parse.urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"base_url must be an http:// or https:// URL such as 'http://127.0.0.1:8000/v1', got {base_url!r}")
        if not isinstance(model, str):
            raise TypeError(f"model must be a str, got {type(model).__name__}")
        if encoding_format not in ("base64", "float"):
            raise ValueError(f"encoding_format must be 'base64' or 'float', got {encoding_format!r}")
        if dimensions is not None and not (is_count(dimensions) and dimensions >= 1):
            raise ValueError(f"dimensions must be a positive int or None, got {dimensions!r}")
        for name, value, least in (("max_retries", max_retries, 0), ("max_in_flight", max_in_flight, 1)):
            if not (is_count(value) and value >= least):
                raise ValueError(f"{name} must be an int >= {least}, got {value!r}")
        if request_size is not None and not (is_count(request_size) and request_size >= 1):
            raise ValueError(f"request_size must be a positive int or None, got {request_size!r}")
        for name, value in (("backoff_s", backoff_s), ("max_backoff_s", max_backoff_s)):
            if not _is_seconds(value):
                raise ValueError(f"{name} must be a number of seconds >= 0, got {value!r}")
        if timeout is not None and not _is_seconds(timeout):
            raise ValueError(f"timeout must be a number of seconds >= 0, or None, got {timeout!r}")
        if http_client is not None and not callable(http_client):
            raise TypeError("http_client must be a zero-argument callable that returns an httpx.Client, such as "
                            "lambda: httpx.Client(proxy=...), not a client: the adapters' arguments are sent to each "
                            f"engine worker, and a client cannot be pickled; got {type(http_client).__name__}")
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model, self.encoding_format, self.dimensions = model, encoding_format, dimensions
        self.timeout = None if timeout is None else float(timeout)
        if http_client is None:
            path = url.path.rstrip("/") + "/embeddings" + (f"?{url.query}" if url.query else "")
            self._transport: Any = ConnectionPool(url.scheme == "https", url.hostname, url.port, path,
                                                  DEFAULT_TIMEOUT if self.timeout is None else self.timeout)
        else:
            from .httpx_transport import HttpxTransport  # httpx is imported only by a client's factory

            self._transport = HttpxTransport(http_client, self.url, self.timeout)
        self.max_retries = int(max_retries)
        self.backoff_s, self.max_backoff_s = float(backoff_s), float(max_backoff_s)
        self.request_size, self.max_in_flight = request_size, int(max_in_flight)
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key is not None:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._headers.update(headers or {})
        self._lock = threading.Lock()
        self._threads: ThreadPoolExecutor | None = None

    def close(self) -> None:
        """Closes the open connections (or the client made for this endpoint) and the threads (a
        later call opens new ones)."""
        self._transport.close()
        with self._lock:
            threads, self._threads = self._threads, None
        if threads is not None:
            threads.shutdown(wait=False)

    def __enter__(self) -> EmbeddingsEndpoint:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # an engine drops its workers' callables without a word: their sockets closed, not leaked
        if getattr(self, "_lock", None) is not None:
            self.close()

    def __getstate__(self):  # an engine may pickle its callable to each worker: no threads (and the
        state = self.__dict__.copy()  # transport leaves out its connections or client)
        state["_lock"], state["_threads"] = None, None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -- one request --------------------------------------------------------------------------

    def _wait(self, attempt: int, retry_after: float | None) -> None:
        if retry_after is not None:
            delay = min(retry_after, self.max_backoff_s)
        else:
            delay = min(self.backoff_s * 2**attempt, self.max_backoff_s) * random.uniform(0.5, 1.0)
        time.sleep(delay)

    def _request(self, texts: list[str], rows: range) -> np.ndarray:
        """The [len(texts), D] float32 rows of one request, asked again as max_retries allows."""
        request: dict[str, Any] = {"input": texts, "model": self.model, "encoding_format": self.encoding_format}
        if self.dimensions is not None:
            request["dimensions"] = self.dimensions
        payload = json.dumps(request, ensure_ascii=False).encode("utf-8")
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                status, reason, headers, body = self._transport.post(payload, self._headers)
            except Unanswered as unanswered:
                error = unanswered.error
                if last or unanswered.permanent:
                    raise self._failure(rows, None, f"{type(error).__name__}: {error}", attempt) from error
                self._wait(attempt, None)
                continue
            if status == 200:
                return self._rows(body, rows, attempt)
            if status not in RETRIED_STATUSES or last:
                raise self._failure(rows, status, f"{status} {reason}: {_server_message(body)}", attempt)
            self._wait(attempt, _retry_after(headers.get("Retry-After")))
        raise AssertionError("unreachable")  # the loop's last attempt returns or raises

    def _rows(self, body: bytes, rows: range, retries: int) -> np.ndarray:
        """The rows of a 200's body; an EmbeddingRequestError (``retries``: the requests sent
        before this one) where they are not the batch's."""
        try:
            array = decode_response_body(body)
        except ValueError as error:  # DecodeError: the reason and the byte offset
            raise self._failure(rows, 200, f"the response body could not be read: {error}", retries) from error
        if array.shape[0] != len(rows):
            raise self._failure(rows, 200, f"the response has {array.shape[0]} embeddings for {len(rows)} inputs",
                                retries)
        if self.dimensions is not None and array.shape[1] != self.dimensions:
            raise self._failure(rows, 200, f"the response's embeddings have {array.shape[1]} values, "
                                f"not the {self.dimensions} asked for (dimensions)", retries)
        return array

    def _failure(self, rows: range, status: int | None, message: str, retries: int) -> EmbeddingRequestError:
        tried = f" (after {retries} {'retry' if retries == 1 else 'retries'})" if retries else ""
        return EmbeddingRequestError(
            f"rows {rows.start}..{rows.stop - 1} of the batch ({len(rows)} texts): POST {self.url} failed{tried}: {message}",
            rows, status, message)

    # -- a call -------------------------------------------------------------------------------

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The ``[len(texts), D]`` float32 embeddings of ``texts``, row i that of texts[i]: one
        request of ``request_size`` texts at a time, ``max_in_flight`` of them at once. No
        request for no texts: an array of 0 rows (D = dimensions, or 0 where not given)."""
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"each input must be a str; row {i} is {type(text).__name__}: {text!r:.80}")
        if not texts:
            return np.empty((0, self.dimensions or 0), np.float32)
        size = self.request_size or len(texts)
        spans = [range(start, min(start + size, len(texts))) for start in range(0, len(texts), size)]
        if len(spans) == 1 or self.max_in_flight == 1:
            parts = [self._request(texts[s.start:s.stop], s) for s in spans]
        else:
            parts = list(self._thread_pool().map(lambda s: self._request(texts[s.start:s.stop], s), spans))
        if len({part.shape[1] for part in parts}) > 1:
            raise self._failure(range(len(texts)), 200, "the responses' embeddings differ in length: "
                                f"{sorted({part.shape[1] for part in parts})}", 0)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _thread_pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._threads is None:
                self._threads = ThreadPoolExecutor(self.max_in_flight, thread_name_prefix="tensorb64-embeddings")
            return self._threads


def texts_of(column: Any, name: str) -> list:
    """The strings of an Arrow column of texts (a pyarrow Array or ChunkedArray), to embed; a
    ValueError naming ``name``, the nulls' count and the first null's row where it has nulls."""
    if column.null_count:
        first = next(i for i, null in enumerate(column.is_null().to_pylist()) if null)
        raise ValueError(f"{name} has {column.null_count} nulls (the first at row {first}): "
                         "each row needs a text to embed")
    return column.to_pylist()
