"""CUDA tensors to the host: pinned staging buffers reused across calls, narrowing on the GPU,
and copies overlapped with encoding.

Two ways in:

* ``host_copy(t)``: the whole tensor on the host in its own dtype. The reader's fallback
  (``_inputs.readable``) uses it for every CUDA tensor the entry points below do not take
  (``encode``, whose one text does not split at row boundaries, and every other reader).
* ``encode_rows``, ``json_rows``: what the binding's entry points of those names call, with
  their own (already checked) arguments, when the input is a CUDA tensor (the binding's reader
  leaves it to them). ``row_bytes``, ``response_body_base64``, ``response_body_float``: what the
  Python entry points (``encode_body``, ``response_body``, ``iter_response_body``) call for a
  CUDA tensor. They know the output, so the rows cross the
  bus in the narrowest dtype that gives the same bytes (``_bus_dtype``), in chunks of at most
  ``CHUNK_BYTES``: chunk k is encoded (the native call, GIL released) while chunk k+1 copies,
  into the same result the host path returns. A result made of more than one chunk of bytes
  (``encode_body``, the response bodies) is joined from the chunks' pieces: one extra copy of
  the output (rows of ``str`` are not copied).

Everything device-side goes through a copier (``CudaCopier``: begin, device_work, copy,
record, wait); the tests run this same pipeline on CPU tensors with a copier that copies later,
on another thread, with delays, to check ordering, slot reuse and waiting without a GPU.

Bounds (``StagingPool``): at most ``PINNED_LIMIT`` bytes of pinned buffers are held by the
package at once, leased and idle together (``TENSORB64_PINNED_MIB``, default 256 MiB); a buffer
is leased to one call at a time and comes back to the pool only when that call has finished
reading it (for ``host_copy``, when the host tensor it returned is freed). When a buffer would
pass the bound the call takes the plain copy (``tensor.to("cpu")``) instead; so does an input
below ``PLAIN_COPY_BELOW`` bytes. Buffers the pool drops go back to torch's caching host
allocator, which keeps them pinned for torch's own reuse.

torch is never imported here: every function is reached with a tensor, so torch is loaded.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import weakref

from . import _native
from ._formats import byteorder_name, output_type

# Below this many bytes a CUDA tensor takes the plain blocking copy (t.to("cpu")). On the H200
# machine of issue 14, 1x384 float32 (1.5 KiB) took ~10 µs by t.cpu() and ~20 µs by a pinned copy
# plus synchronisation, while at 768 KiB the pinned copy was far ahead; a fixed ~10 µs more per
# call against a copy ~5x faster per byte breaks even near 128 KiB. An estimate from those two
# figures: `python -m tensorb64 bench --device cuda` prints both copies around it.
PLAIN_COPY_BELOW = 128 << 10

# The bus bytes of one chunk of the overlapped pipeline (and so the size of its two staging
# slots). Estimates, not measured on a GPU yet (`bench --device cuda` will): each chunk costs some
# tens of µs of Python and launches, and the first chunk's copy is not hidden; at ~50 GB/s 2 MiB
# copies in ~40 µs and encodes in ~100 µs here, so a 64x3072 float32 batch (768 KiB) is one chunk
# and a 1024x3072 one (12 MiB) six.
CHUNK_BYTES = 2 << 20


def _pinned_limit() -> int:
    """TENSORB64_PINNED_MIB in bytes (default 256 MiB; 0 turns pinned staging off)."""
    text = os.environ.get("TENSORB64_PINNED_MIB", "256")
    try:
        mib = int(text)
    except ValueError:
        mib = -1
    if mib < 0:
        raise ValueError(f"TENSORB64_PINNED_MIB must be a whole number of MiB, 0 or more (0 turns pinned staging "
                         f"off), got {text!r}")
    return mib << 20


# The most pinned memory the package holds (leased and idle), bytes.
PINNED_LIMIT = _pinned_limit()

# Narrow on the GPU when the output is narrower than the tensor (the bench turns it off to
# measure what it saves).
NARROW_ON_DEVICE = True

# Source dtypes the staged paths take; others (integers, bool, float8 sources) take the plain
# copy and the core converts them as before.
_STAGED_DTYPES = ("float32", "float16", "bfloat16", "float64")
# The smallest buffer the pool makes: smaller requests share its size class.
_MIN_BUFFER = 64 << 10
_ALIGN = 64


# ---- the pool of staging buffers -----------------------------------------------------------------


class StagingPool:
    """Host buffers (uint8 tensors from ``allocate(nbytes)``) in power-of-two size classes,
    each leased to one caller at a time, at most ``limit`` bytes held in all.

    ``acquire(nbytes)`` gives a buffer of at least nbytes, reusing an idle one of its class, else
    dropping idle buffers (largest first) to make room, else None when even then it would pass
    the limit (or the allocation fails): the caller copies without staging. ``release(buffer)``
    gives it back for reuse; ``discard(buffer)`` forgets one that may still be written (a copy
    whose completion could not be awaited).
    """

    def __init__(self, limit: int, allocate):
        self.limit = limit
        self._allocate = allocate
        self._lock = threading.Lock()
        self._idle: dict = {}  # size class -> [buffer]
        self.held = 0  # bytes of every buffer made and not dropped: leased + idle
        self.leased = 0  # bytes of buffers out on lease
        self.allocations = self.reuses = self.refusals = 0

    @staticmethod
    def size_class(nbytes: int) -> int:
        return max(_MIN_BUFFER, 1 << (max(nbytes, 1) - 1).bit_length())

    def acquire(self, nbytes: int):
        size = self.size_class(nbytes)
        with self._lock:
            idle = self._idle.get(size)
            if idle:
                buffer = idle.pop()
                if not idle:
                    del self._idle[size]
                self.reuses += 1
                self.leased += size
                return buffer
            while self.held + size > self.limit and self._idle:
                largest = max(self._idle)
                self._idle[largest].pop()
                if not self._idle[largest]:
                    del self._idle[largest]
                self.held -= largest
            if self.held + size > self.limit:
                self.refusals += 1
                return None
            self.held += size  # reserved before allocating outside the lock
            self.leased += size
        try:
            buffer = self._allocate(size)
        except (RuntimeError, MemoryError):  # pinned memory refused: the plain copy instead
            with self._lock:
                self.held -= size
                self.leased -= size
                self.refusals += 1
            return None
        with self._lock:
            self.allocations += 1
        return buffer

    def release(self, buffer) -> None:
        size = buffer.numel()
        with self._lock:
            self.leased -= size
            self._idle.setdefault(size, []).append(buffer)

    def discard(self, buffer) -> None:
        size = buffer.numel()
        with self._lock:
            self.leased -= size
            self.held -= size

    def idle_bytes(self) -> int:
        with self._lock:
            return sum(size * len(buffers) for size, buffers in self._idle.items())


_POOL = None
_POOL_LOCK = threading.Lock()


def pool() -> StagingPool:
    """The process's pool of pinned buffers (made on first use)."""
    global _POOL
    if _POOL is None:
        with _POOL_LOCK:
            if _POOL is None:
                torch = sys.modules["torch"]
                _POOL = StagingPool(PINNED_LIMIT, lambda n: torch.empty(n, dtype=torch.uint8, pin_memory=True))
    return _POOL


# ---- the device side ---------------------------------------------------------------------------


class CudaCopier:
    """Copies from one CUDA device to pinned host buffers on a side stream of this thread.

    begin(source): the side stream waits for the work already queued on the source device's
        current stream (an event wait on the GPU, not a synchronisation of the host or the
        device), and the caching allocator is told the source is in use on the side stream
        (record_stream), so its memory is not handed out again before the copies have read it.
    device_work(): the context in which device work (casts, the range check) is queued: the
        side stream (and its device).
    narrow(source, dtype): ``source.to(dtype)`` on the device (torch's own cast).
    copy(source, host): an asynchronous copy into a host tensor of the same shape and dtype.
    record(): an event after everything queued so far; wait(event) blocks this thread until it.
    """

    _local = threading.local()

    def __init__(self, torch, device):
        self._torch = torch
        streams = self._local.__dict__.setdefault("streams", {})
        stream = streams.get(device)
        if stream is None:
            stream = streams[device] = torch.cuda.Stream(device=device)
        self.stream = stream

    def begin(self, source) -> None:
        self.stream.wait_stream(self._torch.cuda.current_stream(source.device))
        source.record_stream(self.stream)

    def device_work(self):
        return self._torch.cuda.stream(self.stream)

    def narrow(self, source, dtype):
        return source.to(dtype)

    def copy(self, source, host) -> None:
        host.copy_(source, non_blocking=True)

    def record(self):
        event = self._torch.cuda.Event()
        event.record(self.stream)
        return event

    def wait(self, event) -> None:
        event.synchronize()


def copier_for(t):
    """The copier for a tensor's device."""
    return CudaCopier(sys.modules["torch"], t.device)


# ---- routing -------------------------------------------------------------------------------------


def on_device(x) -> bool:
    """True for a plain torch.Tensor on a CUDA device (what the staged paths take)."""
    torch = sys.modules.get("torch")
    return torch is not None and type(x) is torch.Tensor and x.is_cuda


def staged(x) -> bool:
    """True for a CUDA tensor the staged paths read (so the reader need not see it first)."""
    return on_device(x) and _stageable(x, sys.modules["torch"])


def _stageable(t, torch) -> bool:
    """A dense tensor of a staged dtype whose values are its memory (no negative bit)."""
    return (
        t.layout == torch.strided and not t.is_nested and t.dtype in _staged_dtypes(torch) and not t.is_neg()
    )


def _staged_dtypes(torch) -> tuple:
    return tuple(getattr(torch, name) for name in _STAGED_DTYPES)


def _bus_dtype(torch, source, output):
    """The dtype the rows cross the bus in: the output dtype (a torch dtype) where it is narrower
    than the source, float32 for a float64 source, else the source's own; None output (float
    text) keeps the source's.

    Assumed, and checked by the GPU tests against the CPU path: torch's CUDA casts from float32
    (and float16, bfloat16 through float32) to float16, bfloat16 and float8 round finite values
    to nearest even exactly as the core's (torch's CPU) casts do, subnormals included. The
    cases where torch's own paths disagree (NaN bit patterns) or may saturate differently
    (overflow) are not left to that assumption: each narrowed chunk's largest magnitude is
    checked, and a chunk with a NaN, an infinity or a value beyond the narrow type's largest
    finite one is copied again at full width and narrowed by the core. A float64 source is
    narrowed on the GPU only to float32, the first step of the core's own path (float64 narrows
    through float32, as torch does).
    """
    if output is None or not NARROW_ON_DEVICE or output.itemsize >= source.itemsize:
        return source
    return torch.float32 if source == torch.float64 else output


# ---- the pipeline --------------------------------------------------------------------------------


def _align(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


def staged_chunks(t, bus_dtype, write, *, copier=None, staging=None):
    """Calls ``write(host_rows, start)`` for consecutive row ranges of the 2-D device tensor
    ``t``, in order, each ``host_rows`` a host tensor of ``bus_dtype`` holding rows
    ``start:start+len``; returns the list of its results, or None (nothing written) when the
    pool has no room for the staging slots.

    Two slots alternate: chunk k+1's copy is queued into one before chunk k (in the other) is
    written, and a slot is queued into only after the chunk it held was written. Every copy is
    awaited before its slot is read, and before the slots go back to the pool, also when
    ``write`` raises.
    """
    torch = sys.modules["torch"]
    staging = pool() if staging is None else staging
    rows, width = t.shape
    row_bytes = width * bus_dtype.itemsize
    narrowed = bus_dtype != t.dtype
    stats_bytes = _ALIGN if narrowed else 0
    per_chunk = max(1, (CHUNK_BYTES - stats_bytes) // max(row_bytes, 1))
    count = -(-rows // per_chunk)
    if count == 0:
        return []
    data_bytes = _align(min(rows, per_chunk) * row_bytes)
    slots = []
    for _ in range(min(2, count)):
        buffer = staging.acquire(data_bytes + stats_bytes)
        if buffer is None:
            for s in slots:
                staging.release(s)
            return None
        slots.append(buffer)
    copier = copier_for(t) if copier is None else copier
    limit = torch.finfo(bus_dtype).max if narrowed else None

    def issue(k):
        start = k * per_chunk
        stop = min(rows, start + per_chunk)
        buffer = slots[k % 2]
        host = buffer[: (stop - start) * row_bytes].view(bus_dtype).view(stop - start, width)
        largest = None
        with copier.device_work():
            chunk = t[start:stop]
            if narrowed:
                largest = buffer[data_bytes : data_bytes + t.element_size()].view(t.dtype)
                copier.copy(torch.linalg.vector_norm(chunk, ord=math.inf).reshape(1), largest)  # NaN stays NaN
                chunk = copier.narrow(chunk, bus_dtype)
            copier.copy(chunk, host)
            return start, host, largest, copier.record()

    results = []
    finished = False
    try:
        copier.begin(t)
        pending = issue(0)
        for k in range(count):
            start, host, largest, event = pending
            copier.wait(event)
            pending = issue(k + 1) if k + 1 < count else None
            if largest is not None and not float(largest[0]) <= limit:
                # NaN, infinity or overflow: the core narrows these rows (a plain copy in the
                # source dtype, on the current stream, so after the producer's work).
                host = t[start : start + host.shape[0]].to("cpu")
            results.append(write(host, start))
        finished = True
    finally:
        reusable = finished
        if not finished:  # copies may still be queued into the slots: wait for all of them
            try:
                copier.wait(copier.record())
                reusable = True
            except BaseException:  # the error already being raised is the one to report
                pass
        for s in slots:
            (staging.release if reusable else staging.discard)(s)
    return results


def host_copy(t, *, copier=None, staging=None):
    """``t`` (a device tensor) on the host in its own dtype and shape, contiguous: through a
    pinned staging buffer that stays leased until the returned tensor is freed, or by the plain
    copy (small inputs, a full pool, dtypes and layouts the staging does not take)."""
    torch = sys.modules["torch"]
    t = t.detach()
    nbytes = t.numel() * t.element_size()
    if nbytes < PLAIN_COPY_BELOW or not _stageable(t, torch):
        return t.to("cpu")
    staging = pool() if staging is None else staging
    buffer = staging.acquire(nbytes)
    if buffer is None:
        return t.to("cpu")
    copier = copier_for(t) if copier is None else copier
    host = buffer[:nbytes].view(t.dtype).view(t.shape)
    try:
        copier.begin(t)
        with copier.device_work():
            copier.copy(t, host)
            event = copier.record()
        copier.wait(event)
    except BaseException:
        staging.discard(buffer)  # a copy may still be queued into it
        raise
    weakref.finalize(host, staging.release, buffer)
    return host


# ---- the entry points' staged paths -------------------------------------------------------------


def _rows_2d(t):
    """The rows of a device tensor as a 2-D tensor (leading dimensions merged: a view where the
    strides allow, else a copy on the device)."""
    t = t.detach()
    if t.ndim == 1:
        return t[None]
    return t if t.ndim == 2 else t.reshape(-1, t.shape[-1])


def _worth_staging(t, bus_dtype, torch) -> bool:
    return t.ndim >= 1 and _stageable(t, torch) and t.numel() * bus_dtype.itemsize >= PLAIN_COPY_BELOW


def _torch_output(torch, dtype: str):
    return getattr(torch, output_type(dtype).torch_name)


def _staged_rows(x, bus, encode_chunk):
    """The rows of a device tensor, each chunk's list from ``encode_chunk(host rows, start)`` in
    order, staged and overlapped; None where it is not staged (small, a dtype or layout it does
    not take, no room in the pool)."""
    if not _worth_staging(x, bus, sys.modules["torch"]):
        return None
    out: list = []
    done = staged_chunks(_rows_2d(x), bus, lambda host, start: out.extend(encode_chunk(host, start)))
    return out if done is not None else None


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
    """``tensorb64.encode_rows(x, ...)`` for a CUDA tensor (the binding's entry point calls this
    with its own arguments, already checked): staged and overlapped, narrowed on the GPU where
    the output is narrower; otherwise one host copy, encoded as any CPU tensor."""
    torch = sys.modules["torch"]
    bus = _bus_dtype(torch, x.dtype, _torch_output(torch, dtype))
    rows = _staged_rows(x, bus, lambda host, start: _native.encode_rows(host, dtype=dtype, byteorder=byteorder, threads=threads))
    if rows is not None:
        return rows
    return _native.encode_rows(host_copy(x), dtype=dtype, byteorder=byteorder, threads=threads)


def json_rows(x, *, float_format: str = "repr", threads: int = 1) -> list:
    """``tensorb64.json_rows(x, ...)`` for a CUDA tensor (called by the binding's entry point, as
    encode_rows): staged in the tensor's own dtype (the text is written from the values
    themselves) and overlapped; otherwise one host copy."""
    def write(host, start):
        return _float_text_of_chunk(lambda h: _native.json_rows(h, float_format=float_format, threads=threads), host, start)

    rows = _staged_rows(x, x.dtype, write)
    if rows is not None:
        return rows
    return _native.json_rows(host_copy(x), float_format=float_format, threads=threads)


def row_bytes(x, dtype: str, byteorder: str, threads: int) -> tuple:
    """``_native.row_bytes`` for a CUDA tensor: ``(body, rows, row_length)``, staged."""
    torch = sys.modules["torch"]
    output_type(dtype), byteorder_name(byteorder), _native._check_threads(threads)  # the argument errors
    bus = _bus_dtype(torch, x.dtype, _torch_output(torch, dtype))
    if _worth_staging(x, bus, torch):
        rows = _rows_2d(x)
        pieces = staged_chunks(rows, bus, lambda host, start: _native._row_bytes(host, dtype=dtype, byteorder=byteorder, threads=threads)[0])
        if pieces is not None:
            body = pieces[0] if len(pieces) == 1 else b"".join(pieces)
            return body, rows.shape[0], rows.shape[1]
    return _native._row_bytes(x, dtype=dtype, byteorder=byteorder, threads=threads)


def _body_pieces(rows, bus, write_entries, head: bytes, tail: bytes, first_index: int):
    """The pieces of head + entries + tail, chunk by chunk (each chunk's entries after a ","),
    or None (not staged)."""
    count = rows.shape[0]

    def write(host, start):
        last = start + host.shape[0] == count
        return write_entries(host, first_index + start, head if start == 0 else b",", tail if last else b"")

    return staged_chunks(rows, bus, write)


def response_body_base64(rows, dtype: str, byteorder: str, head: bytes, tail: bytes, first_index: int, threads: int) -> bytes:
    """``_native._response_body_base64`` for rows on a CUDA device, staged."""
    torch = sys.modules["torch"]
    bus = _bus_dtype(torch, rows.dtype, _torch_output(torch, dtype))
    if rows.ndim == 2 and _worth_staging(rows, bus, torch):
        pieces = _body_pieces(
            rows.detach(), bus,
            lambda host, index, h, t: _native._response_body_base64(host, dtype, byteorder, h, t, index, threads),
            head, tail, first_index,
        )
        if pieces is not None:
            return pieces[0] if len(pieces) == 1 else b"".join(pieces)
    return _native._response_body_base64(rows, dtype, byteorder, head, tail, first_index, threads)


def response_body_float(rows, float_format: str, head: bytes, tail: bytes, first_index: int, threads: int) -> bytes:
    """``_native._response_body_float`` for rows on a CUDA device, staged in their own dtype
    (float text is written from the values themselves: float64 rows as doubles)."""
    torch = sys.modules["torch"]
    if rows.ndim == 2 and _worth_staging(rows, rows.dtype, torch):
        def write(host, index, h, t):
            return _float_text_of_chunk(lambda c: _native._response_body_float(c, float_format, h, t, index, threads),
                                        host, index - first_index)

        pieces = _body_pieces(rows.detach(), rows.dtype, write, head, tail, first_index)
        if pieces is not None:
            return pieces[0] if len(pieces) == 1 else b"".join(pieces)
    return _native._response_body_float(rows, float_format, head, tail, first_index, threads)


def check_finite(rows) -> None:
    """``_native._check_finite`` for rows on a CUDA device: checked on the device, the host
    reading one flag; the native check (which names the row and column) only when one fails."""
    torch = sys.modules["torch"]
    if _stageable(rows, torch) and bool(torch.isfinite(rows).all()):
        return
    _native._check_finite(rows)
