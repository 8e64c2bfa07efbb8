"""What a request that got no answer means: asked again, or reported at once (``Unanswered``).

Only what would fail the same way a moment later is reported at once: the host's name not found,
the server's certificate not trusted, a TLS handshake the server refuses, a request that cannot be
sent. Everything else (a refused or cut connection, a timeout, a TLS error on an established
connection: a record that fails its check, an alert mid-stream) is the connection's and is asked
again on a new one, as urllib3 does. Where an error comes from decides: an ``ssl.SSLError`` while
a new connection connects (the handshake) is the server's answer to that handshake; the same
error after it is the connection's.
"""

from __future__ import annotations

import socket
import ssl

# getaddrinfo's answers about the name itself or what was asked: the same a moment later. Not
# here, so asked again: EAI_AGAIN (the resolver did not answer in time), EAI_FAIL (it failed or
# refused the query: a resolver restarting or overloaded recovers), EAI_MEMORY and EAI_SYSTEM (this
# process's state, not the name's).
_NAME_ERRORS = frozenset(getattr(socket, name) for name in (
    "EAI_NONAME", "EAI_NODATA", "EAI_ADDRFAMILY", "EAI_SERVICE", "EAI_FAMILY", "EAI_SOCKTYPE", "EAI_BADFLAGS")
    if hasattr(socket, name))

# TLS errors of a handshake that are the connection cut during it, not the server's refusal.
_CUT_DURING_HANDSHAKE = (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError)


class Unanswered(Exception):
    """A request that got no answer: ``error`` (what the transport raised) and ``permanent``
    (whether sending it again would fail the same way: reported at once, not retried)."""

    def __init__(self, error: BaseException, permanent: bool):
        super().__init__(error)
        self.error, self.permanent = error, permanent


def refused_at_connect(error: BaseException) -> bool:
    """Whether an error raised while a new connection connected (name resolution, TCP, the TLS
    handshake) would be raised again: the name not found, or the handshake refused (a
    certificate not trusted, no protocol or cipher in common, no TLS at all)."""
    if isinstance(error, socket.gaierror):
        return error.errno in _NAME_ERRORS
    if isinstance(error, ssl.SSLCertVerificationError):
        return True
    return isinstance(error, ssl.SSLError) and not isinstance(error, _CUT_DURING_HANDSHAKE)
