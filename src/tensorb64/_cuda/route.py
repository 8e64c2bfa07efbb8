"""CUDA tensors through the entry points: the one decision of how a tensor on a device is read
(``route``), made where an input enters, and each entry point's staged path, which the decision
carries down (the pipeline itself is staging.py).

``route(x)`` is None for an input read on the host (anything but a plain torch.Tensor on a CUDA
device: the binding's reader, or ``_codec.inputs.readable``), else a ``Route``: whether the
pipeline takes the tensor (``stageable``: at least one dimension, a staged dtype, dense, no
negative bit; else it is read from one host copy) and the staging it runs with. Nothing else
tests a tensor's device: where an input enters (the binding's input hook through
``_codec.inputs``, ``_codec.body.batch_rows``, ``_codec.encode.encode_binary_body``) the route is
decided once and passed down with the rows, their cut views and their chunks. What each of those
pieces costs is a size rule, applied to the piece itself (``Route.stages``): one below
``plain_copy_below`` bytes takes the plain copy, as a small tensor does. Rows given as a list of
tensors are stacked here too (``stacked``): where they are when they share a device, else each
copied to the host.

* ``Route.encode_rows``, ``Route.json_rows``: what the input hook gives the binding's entry points
  of those names, with their own (already checked) arguments. ``row_bytes``,
  ``response_body_base64``, ``response_body_float``, ``check_finite``: what the Python entry
  points (``encode_binary_body``, ``response_body``, ``iter_response_body``) call. They know the
  output, so from ``narrow_from`` bytes of source the rows cross the bus in the narrowest dtype
  that gives the same bytes (``staging.bus_dtype``), in chunks: chunk k is encoded (the native
  call, GIL released) while chunk k+1 copies, into the same result the host path returns. A
  result made of more than one chunk of bytes (``encode_binary_body``, the response bodies) is
  joined from the chunks' pieces: one extra copy of the output (rows of ``str`` are not copied).
* Every other entry point reads a tensor on a device from one host copy (``Route.host_copy``).

The staging is the one in effect when the route is decided (``staging.current_staging()``: the
process's, or the one the tests force with ``staging.forced``, which routes CPU tensors as CUDA
ones). torch is never imported here: every function is reached with a tensor, so torch is loaded.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, NamedTuple

from .. import _native
from .._formats import byteorder_name, output_type
from .staging import Staging, bus_dtype, current_staging, forced_staging, pinned_copy, stageable, staged_chunks


@dataclass(frozen=True)
class Route:
    """How a tensor on a device is read, decided once (``route``): whether the pipeline takes it
    (``stageable``), with ``staging`` (None for a device other than CUDA: a plain copy). Its
    methods take the tensor the route was decided for, or a view of it (rows cut to
    ``dimensions``, a chunk of rows), each staged where ``stages`` says so."""

    staging: Staging | None
    stageable: bool

    def stages(self, piece) -> bool:
        """Whether ``piece`` (the tensor or a view of it) crosses through the pipeline: one the
        pipeline takes, of ``plain_copy_below`` bytes or more (below it the plain copy is faster
        whatever the whole input's size: a 16 KiB chunk of a large batch too)."""
        return self.stageable and piece.numel() * piece.element_size() >= self.staging.plain_copy_below

    def host_copy(self, t):
        """``t`` on the host in its own dtype and shape: through a pinned staging buffer where
        staged (leased until the copy's memory is freed), else the plain copy; its values in
        memory (a negative bit resolved)."""
        if self.stages(t):
            return pinned_copy(t, self.staging)
        host = t.detach().to("cpu")
        return host.resolve_neg() if host.is_neg() else host

    def encode_rows(self, x, *, dtype: str = "float32", byteorder: str = "little", threads: int = 1) -> list:
        """``tensorb64.encode_rows(x, ...)`` (the input hook calls this with the entry point's
        own arguments, already checked): staged and overlapped, narrowed on the GPU where the
        output is narrower; otherwise one host copy, encoded as any CPU tensor."""
        if self.stages(x):
            torch = sys.modules["torch"]
            rows = _staged_rows(x, _bus(torch, x, dtype, self.staging),
                                lambda host, start: _native.encode_rows(host, dtype=dtype, byteorder=byteorder,
                                                                        threads=threads), self.staging)
            if rows is not None:
                return rows
        return _native.encode_rows(self.host_copy(x), dtype=dtype, byteorder=byteorder, threads=threads)

    def json_rows(self, x, *, float_format: str = "repr", threads: int = 1) -> list:
        """``tensorb64.json_rows(x, ...)`` (called by the input hook, as encode_rows): staged in
        the tensor's own dtype (the text is written from the values themselves) and overlapped;
        otherwise one host copy."""
        def write(host, start):
            return _float_text_of_chunk(lambda h: _native.json_rows(h, float_format=float_format, threads=threads),
                                        host, start)

        if self.stages(x):
            rows = _staged_rows(x, x.dtype, write, self.staging)
            if rows is not None:
                return rows
        return _native.json_rows(self.host_copy(x), float_format=float_format, threads=threads)

    def row_bytes(self, x, dtype: str, byteorder: str, threads: int) -> tuple:
        """``_native._row_bytes``: ``(body, rows, row_length)``, staged."""
        output_type(dtype), byteorder_name(byteorder), _native._check_threads(threads)  # the argument errors
        if self.stages(x):
            torch = sys.modules["torch"]
            rows = _rows_2d(x)
            pieces = staged_chunks(rows, _bus(torch, x, dtype, self.staging),
                                   lambda host, start: _native._row_bytes(host, dtype=dtype, byteorder=byteorder,
                                                                          threads=threads)[0], self.staging)
            if pieces is not None:
                return _joined(pieces), rows.shape[0], rows.shape[1]
        return _native._row_bytes(self.host_copy(x), dtype=dtype, byteorder=byteorder, threads=threads)

    def response_body_base64(self, rows, dtype: str, byteorder: str, head: bytes, tail: bytes, first_index: int,
                             threads: int, layout: str, leading_comma: bool) -> bytes:
        """``_native._response_body_base64`` for 2-D rows, staged."""
        if self.stages(rows):
            torch = sys.modules["torch"]
            pieces = _body_pieces(
                _rows_2d(rows), _bus(torch, rows, dtype, self.staging),
                lambda host, index, h, t, comma: _native._response_body_base64(host, dtype, byteorder, h, t, index,
                                                                               threads, layout, comma),
                head, tail, first_index, leading_comma, self.staging,
            )
            if pieces is not None:
                return _joined(pieces)
        return _native._response_body_base64(self.host_copy(rows), dtype, byteorder, head, tail, first_index, threads,
                                             layout, leading_comma)

    def response_body_float(self, rows, float_format: str, head: bytes, tail: bytes, first_index: int, threads: int,
                            layout: str, leading_comma: bool) -> bytes:
        """``_native._response_body_float`` for 2-D rows, staged in their own dtype (float text is
        written from the values themselves: float64 rows as doubles)."""
        if self.stages(rows):
            def write(host, index, h, t, comma):
                return _float_text_of_chunk(
                    lambda c: _native._response_body_float(c, float_format, h, t, index, threads, layout, comma),
                    host, index - first_index)

            pieces = _body_pieces(_rows_2d(rows), rows.dtype, write, head, tail, first_index, leading_comma,
                                  self.staging)
            if pieces is not None:
                return _joined(pieces)
        return _native._response_body_float(self.host_copy(rows), float_format, head, tail, first_index, threads,
                                            layout, leading_comma)

    def check_finite(self, rows) -> None:
        """``_native._check_finite``: checked on the device, the host reading one flag; the
        native check (which names the row and column) only when one fails."""
        torch = sys.modules["torch"]
        if self.stages(rows) and bool(torch.isfinite(rows).all()):
            return
        _native._check_finite(self.host_copy(rows))


class OnDevice(NamedTuple):
    """A tensor whose route was decided (``route``), and that route: what ``_codec.inputs``
    hands on for a tensor on a device."""

    tensor: Any
    route: Route


def route(x) -> Route | None:
    """How the entry points read ``x``, decided once where it enters: None for anything but a
    plain torch.Tensor off the CPU (read on the host; a "meta" tensor is refused there); else its
    ``Route``: on a CUDA device, staged or one host copy; on another device (MPS, XPU...), one
    plain host copy. Under ``staging.forced`` CPU tensors are routed as CUDA ones."""
    torch = sys.modules.get("torch")
    if torch is None or type(x) is not torch.Tensor:
        return None
    staging = forced_staging()
    if staging is None:
        if not x.is_cuda:
            return None if x.is_cpu or x.is_meta else Route(None, False)
        staging = current_staging()
    return Route(staging, bool(x.ndim >= 1 and stageable(x, torch)))


def stacked(rows: list | tuple):
    """Rows given as a list of tensors (each row one tensor), as one tensor: stacked where they
    are when they share a device (on a GPU: one batch, routed once, one copy to the host), else
    each copied to the host first (rows on several devices, which torch.stack refuses)."""
    torch = sys.modules["torch"]
    if len({row.device for row in rows}) == 1:
        return torch.stack([row.detach() for row in rows])
    return torch.stack([row.detach().to("cpu") for row in rows])


# ---- the staged paths' pieces -------------------------------------------------------------------


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
