"""The HTTP client's transport through a user's ``httpx.Client`` (or ``httpx2.Client``, the fork
openai 3 runs on): for what httpx configures and the standard library's pool does not (proxies
from the environment, ``verify``/``cert``, limits, HTTP/2), with the retries, backoff and errors
of ``_ingest.http`` unchanged. Imported only when a client is given: httpx is no dependency.

The client comes from a factory (a zero-argument callable), called once in each process that
sends a request: Ray and Daft pickle the adapters' arguments to every worker, and a client (its
sockets, locks and TLS context) cannot be pickled. The client the factory returns is this
transport's: closed with it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from .failures import Unanswered, refused_at_connect

_MODULES = ("httpx", "httpx2")  # the same API under two names


def _root_cause(error: BaseException) -> BaseException:
    """The error at the bottom of ``error``'s chain: httpx's ConnectError is raised from
    httpcore's, which holds what the socket or the TLS handshake raised as its argument (and, as
    it is raised again by httpcore's pool, as its context alone)."""
    seen = {id(error)}
    while True:
        held = error.args[0] if error.args and isinstance(error.args[0], BaseException) else None
        below = error.__cause__ or held or error.__context__
        if below is None or id(below) in seen:
            return error
        error = below
        seen.add(id(error))


def _permanent(httpx, error: BaseException) -> bool:
    """Whether a request that raised ``error`` (one of ``httpx``'s) would fail the same way if
    sent again: connecting refused for good (the rule of ``failures.refused_at_connect``, applied
    to what the socket or the handshake raised), or a request that cannot be sent or a body
    that cannot be decoded. Every other transport error (a timeout, a connection cut, a read or
    a proxy's failure) is asked again."""
    if isinstance(error, httpx.ConnectError):
        return refused_at_connect(_root_cause(error))
    return isinstance(error, (httpx.UnsupportedProtocol, httpx.LocalProtocolError, httpx.InvalidURL,
                              httpx.DecodingError, httpx.TooManyRedirects))


class HttpxTransport:
    """POSTs through the client ``factory()`` returns (made on first use in each process);
    ``timeout``: seconds for each request, or None for the client's own timeouts."""

    def __init__(self, factory: Callable[[], Any], url: str, timeout: float | None):
        self._factory, self._url, self._timeout = factory, url, timeout
        self._client: Any = None
        self._httpx: Any = None
        self._lock = threading.Lock()

    def _made(self) -> tuple:
        with self._lock:
            if self._client is None:
                client = self._factory()
                # (a client's module is loaded: the factory made the client, or a subclass of it)
                module = next((m for m in map(sys.modules.get, _MODULES) if m is not None and isinstance(client, m.Client)),
                              None)
                if module is None:
                    raise TypeError(f"http_client() must return an httpx.Client (or an httpx2.Client), got "
                                    f"{type(client).__module__}.{type(client).__qualname__}")
                self._client, self._httpx = client, module
            return self._client, self._httpx

    def post(self, payload: bytes, headers: Mapping[str, str]) -> tuple[int, str, Any, bytes]:
        client, httpx = self._made()
        options = {} if self._timeout is None else {"timeout": self._timeout}
        try:
            response = client.post(self._url, content=payload, headers=headers, **options)
        except (httpx.RequestError, httpx.InvalidURL) as error:
            raise Unanswered(error, _permanent(httpx, error)) from error
        return response.status_code, response.reason_phrase, response.headers, response.content

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __getstate__(self):  # pickled with its endpoint to an engine's workers: the factory, not the client
        state = self.__dict__.copy()
        state["_client"], state["_httpx"], state["_lock"] = None, None, None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()
