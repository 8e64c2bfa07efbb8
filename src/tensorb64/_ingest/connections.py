"""The default transport of the HTTP client (``_ingest.http``): the standard library's
``http.client``, a pool of keep-alive connections, each connected explicitly so that what
connecting raises (name resolution, the TLS handshake) is told apart from what an established
connection raises (``failures``).

Why not httpx by default: a request through this pool costs the client 1.9-2.7 times less CPU
than through ``httpx.Client`` (64 texts, D 1024 and 3072, base64 and float bodies:
benchmarks/ingest_transport_bench.py, whose figures docs/ingest.md gives); it adds no dependency
(numpy stays the only one); and the adapters send one request a batch, or a few on threads,
where a pool of keep-alive connections is all they need. A user who needs httpx's settings
(proxies from the environment, ``verify``/``cert``, limits) passes a client of their own
(``httpx_transport``).
"""

from __future__ import annotations

import http.client
import queue
import ssl
from collections.abc import Mapping
from typing import Any

from .failures import Unanswered, refused_at_connect

# What a failed connection raises (OSError covers socket errors, timeouts and ssl.SSLError).
_CONNECTION_ERRORS = (http.client.HTTPException, OSError)
# What a pooled connection the server has closed since its last answer raises before anything is
# answered (a keep-alive timeout).
_CLOSED_BY_THE_SERVER = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


class ConnectionPool:
    """Keep-alive connections to one server (``https`` or not, ``host``, ``port``), each used by
    one request at a time; thread-safe. ``post(payload, headers)`` POSTs to ``path`` and gives
    ``(status, reason, headers, body)`` or raises ``Unanswered``."""

    def __init__(self, https: bool, host: str, port: int | None, path: str, timeout: float):
        self._kind = http.client.HTTPSConnection if https else http.client.HTTPConnection
        self._host, self._port, self._path, self._timeout = host, port, path, timeout
        self._idle: queue.LifoQueue = queue.LifoQueue()  # open connections not in use

    def _connected(self) -> http.client.HTTPConnection:
        """A new connection, connected (the TLS handshake done): what fails here is classified
        as connecting's failure."""
        connection = self._kind(self._host, self._port, timeout=self._timeout)
        try:
            connection.connect()
        except _CONNECTION_ERRORS as error:
            connection.close()
            raise Unanswered(error, refused_at_connect(error)) from error
        return connection

    def post(self, payload: bytes, headers: Mapping[str, str]) -> tuple[int, str, Any, bytes]:
        """One POST on a pooled connection; the connection goes back to the pool unless the
        server closes it; a failed one is closed. A pooled connection the server has closed
        since its last answer fails before anything is answered: the request is sent once more
        on a new one, not counted as a retry."""
        try:
            connection, reused = self._idle.get_nowait(), True
        except queue.Empty:
            connection, reused = self._connected(), False
        try:
            try:
                connection.request("POST", self._path, body=payload, headers=headers)
                response = connection.getresponse()
            except _CLOSED_BY_THE_SERVER:
                if not reused:
                    raise
                connection.close()
                connection = self._connected()
                connection.request("POST", self._path, body=payload, headers=headers)
                response = connection.getresponse()
            body = response.read()
        except _CONNECTION_ERRORS as error:
            connection.close()
            # After connecting, only a request that cannot be sent (a path http.client refuses)
            # fails again; a certificate is checked only in a handshake, but is never retried.
            raise Unanswered(error, isinstance(error, (http.client.InvalidURL, ssl.SSLCertVerificationError))) from error
        except BaseException:
            connection.close()
            raise
        if response.will_close:
            connection.close()
        else:
            self._idle.put(connection)
        return response.status, response.reason, response.headers, body

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                break

    def __getstate__(self):  # pickled with its endpoint to an engine's workers: no open sockets
        state = self.__dict__.copy()
        state["_idle"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._idle = queue.LifoQueue()
