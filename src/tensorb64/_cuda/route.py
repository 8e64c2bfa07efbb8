"""CUDA tensors through the entry points: the one routing decision (``route``) and each entry
point's staged path (the pipeline itself is _staging.py).

``route(x)`` says how every entry point reads an input: "host" (not a CUDA tensor: the binding's
reader, or ``_inputs.readable``), "staged" (a CUDA tensor the pipeline takes) or "host_copy" (a
CUDA tensor read from one copy on the host: small ones, and dtypes and layouts the pipeline does
not take). Nothing else classifies CUDA tensors.

* ``encode_rows``, ``json_rows``: what the fallback hook (_fallback.py) gives the binding's entry
  points of those names, with their own (already checked) arguments, when the input is a CUDA
  tensor. ``row_bytes``, ``response_body_base64``, ``response_body_float``, ``check_finite``: what
  the Python entry points (``encode_binary_body``, ``response_body``, ``iter_response_body``) call
  for a CUDA tensor. They know the output, so from ``narrow_from`` bytes of source the rows cross
  the bus in the narrowest dtype that gives the same bytes (``_staging.bus_dtype``), in chunks:
  chunk k is encoded (the native call, GIL released) while chunk k+1 copies, into the same result
  the host path returns. A result made of more than one chunk of bytes (``encode_binary_body``,
  the response bodies) is joined from the chunks' pieces: one extra copy of the output (rows of
  ``str`` are not copied).
* Every other entry point reads a CUDA tensor from one host copy (``host_copy``, through
  ``_inputs.readable``).

Every function runs with the staging in effect (``_staging.current_staging()``: the process's,
or the one the tests force with ``_staging.forced``, which routes CPU tensors as CUDA ones).
torch is never imported here: every function is reached with a tensor, so torch is loaded.
"""

from __future__ import annotations

import sys
from typing import Literal

from .. import _native
from .._formats import byteorder_name, output_type
from .staging import Staging, bus_dtype, current_staging, forced_staging, pinned_copy, stageable, staged_chunks

Route = Literal["host", "staged", "host_copy"]


def route(x) -> Route:
    """How the entry points read ``x``: "host" for anything but a plain torch.Tensor on a CUDA
    device (read where it lies); for such a tensor, "staged" where the pipeline takes it (at
    least one dimension, ``plain_copy_below`` bytes or more, a staged dtype, dense, no negative
    bit), else "host_copy". Under ``_staging.forced`` CPU tensors are routed as CUDA ones."""
    torch = sys.modules.get("torch")
    if torch is None or type(x) is not torch.Tensor:
        return "host"
    staging = forced_staging()
    if staging is None:
        if not x.is_cuda:
            return "host"
        staging = current_staging()
    if x.ndim >= 1 and x.numel() * x.element_size() >= staging.plain_copy_below and stageable(x, torch):
        return "staged"
    return "host_copy"


def host_copy(t):
    """A CUDA tensor (one ``route`` does not call "host") on the host in its own dtype and
    shape: through a pinned staging buffer where ``route`` says "staged", else the plain copy."""
    if route(t) == "staged":
        return pinned_copy(t, current_staging())
    return t.detach().to("cpu")


# ---- the entry points' staged paths -------------------------------------------------------------


def _rows_2d(t):
    """The rows of a device tensor as a 2-D tensor (leading dimensions merged: a view where the
    strides allow, else a copy on the device)."""
    if t.requires_grad:
        t = t.detach()
    if t.ndim == 1:
        return t[None]
    return t if t.ndim == 2 else t.reshape(-1, t.shape[-1])


def _bus(torch, t, dtype: str, staging: Staging):
    """The dtype rows of ``t`` cross the bus in for output ``dtype``."""
    narrow = t.numel() * t.element_size() >= staging.narrow_from
    return bus_dtype(torch, t.dtype, getattr(torch, output_type(dtype).torch_name), narrow)


def _staged_rows(x, bus, encode_chunk, staging: Staging):
    """The rows of a device tensor (one the pipeline takes), each chunk's list from
    ``encode_chunk(host rows, start)`` in order, staged and overlapped; None when the pool has
    no room."""
    out: list = []
    done = staged_chunks(_rows_2d(x), bus, lambda host, start: out.extend(encode_chunk(host, start)), staging)
    return out if done is not None else None


def _joined(pieces) -> bytes:
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _float_text_of_chunk(write_text, host, start: int):
    """``write_text(host)`` for the chunk of rows from row ``start``: its ValueError for a NaN or
    infinity names the row within the chunk, so it is raised again naming the row of the whole
    input (checked on the chunk already on the host, not another copy of the input)."""
    try:
        return write_text(host)
    except ValueError:
        _native._check_finite(host, start)
        raise


def encode_rows(x, *, dtype: str = "float32", byteorder: str = "little", threads: int = 1) -> list:
    """``tensorb64.encode_rows(x, ...)`` for a CUDA tensor (the fallback hook calls this with the
    entry point's own arguments, already checked): staged and overlapped, narrowed on the GPU
    where the output is narrower; otherwise one host copy, encoded as any CPU tensor."""
    torch = sys.modules["torch"]
    staging = current_staging()
    if route(x) == "staged":
        rows = _staged_rows(x, _bus(torch, x, dtype, staging),
                            lambda host, start: _native.encode_rows(host, dtype=dtype, byteorder=byteorder, threads=threads), staging)
        if rows is not None:
            return rows
    return _native.encode_rows(host_copy(x), dtype=dtype, byteorder=byteorder, threads=threads)


def json_rows(x, *, float_format: str = "repr", threads: int = 1) -> list:
    """``tensorb64.json_rows(x, ...)`` for a CUDA tensor (called by the binding's entry point, as
    encode_rows): staged in the tensor's own dtype (the text is written from the values
    themselves) and overlapped; otherwise one host copy."""
    def write(host, start):
        return _float_text_of_chunk(lambda h: _native.json_rows(h, float_format=float_format, threads=threads), host, start)

    staging = current_staging()
    if route(x) == "staged":
        rows = _staged_rows(x, x.dtype, write, staging)
        if rows is not None:
            return rows
    return _native.json_rows(host_copy(x), float_format=float_format, threads=threads)


def row_bytes(x, dtype: str, byteorder: str, threads: int) -> tuple:
    """``_native._row_bytes`` for a CUDA tensor: ``(body, rows, row_length)``, staged."""
    torch = sys.modules["torch"]
    output_type(dtype), byteorder_name(byteorder), _native._check_threads(threads)  # the argument errors
    staging = current_staging()
    if route(x) == "staged":
        rows = _rows_2d(x)
        pieces = staged_chunks(rows, _bus(torch, x, dtype, staging), lambda host, start: _native._row_bytes(host, dtype=dtype, byteorder=byteorder, threads=threads)[0],
                               staging)
        if pieces is not None:
            return _joined(pieces), rows.shape[0], rows.shape[1]
    return _native._row_bytes(host_copy(x), dtype=dtype, byteorder=byteorder, threads=threads)


def _body_pieces(rows, bus, write_entries, head: bytes, tail: bytes, first_index: int, leading_comma: bool,
                 staging: Staging):
    """The pieces of head + entries + tail, chunk by chunk, or None (not staged):
    ``write_entries(host rows, first index, head, tail, leading_comma)`` writes each chunk's
    entries, the head before the first, the tail after the last, and a leading comma before
    every chunk's entries but the first's (the first's: ``leading_comma``)."""
    count = rows.shape[0]

    def write(host, start):
        last = start + host.shape[0] == count
        return write_entries(host, first_index + start, head if start == 0 else b"", tail if last else b"",
                             leading_comma or start != 0)

    return staged_chunks(rows, bus, write, staging)


def response_body_base64(rows, dtype: str, byteorder: str, head: bytes, tail: bytes, first_index: int, threads: int,
                         layout: str, leading_comma: bool) -> bytes:
    """``_native._response_body_base64`` for rows on a CUDA device, staged."""
    torch = sys.modules["torch"]
    staging = current_staging()
    if rows.ndim == 2 and route(rows) == "staged":
        pieces = _body_pieces(
            _rows_2d(rows), _bus(torch, rows, dtype, staging),
            lambda host, index, h, t, comma: _native._response_body_base64(host, dtype, byteorder, h, t, index, threads,
                                                                           layout, comma),
            head, tail, first_index, leading_comma, staging,
        )
        if pieces is not None:
            return _joined(pieces)
    return _native._response_body_base64(host_copy(rows), dtype, byteorder, head, tail, first_index, threads,
                                         layout, leading_comma)


def response_body_float(rows, float_format: str, head: bytes, tail: bytes, first_index: int, threads: int,
                        layout: str, leading_comma: bool) -> bytes:
    """``_native._response_body_float`` for rows on a CUDA device, staged in their own dtype
    (float text is written from the values themselves: float64 rows as doubles)."""
    staging = current_staging()
    if rows.ndim == 2 and route(rows) == "staged":
        def write(host, index, h, t, comma):
            return _float_text_of_chunk(
                lambda c: _native._response_body_float(c, float_format, h, t, index, threads, layout, comma),
                host, index - first_index)

        pieces = _body_pieces(_rows_2d(rows), rows.dtype, write, head, tail, first_index, leading_comma, staging)
        if pieces is not None:
            return _joined(pieces)
    return _native._response_body_float(host_copy(rows), float_format, head, tail, first_index, threads, layout,
                                        leading_comma)


def check_finite(rows) -> None:
    """``_native._check_finite`` for rows on a CUDA device: checked on the device, the host
    reading one flag; the native check (which names the row and column) only when one fails."""
    torch = sys.modules["torch"]
    if route(rows) == "staged" and bool(torch.isfinite(rows).all()):
        return
    _native._check_finite(host_copy(rows))

