"""The staging pipeline: CUDA tensors to the host through pinned buffers reused across calls,
narrowed on the GPU, copies overlapped with encoding.

``staged_chunks`` hands consecutive chunks of rows, each copied into one of two alternating
staging slots, to a writer, chunk k+1's copy running while chunk k is written; ``pinned_copy``
copies a whole tensor through one buffer. What they run with is a ``Staging``: the pool
(``StagingPool``), the copier (``CudaCopier``: begin, narrow, copy, record, wait), the chunk size
and the plain-copy threshold; ``current_staging()`` is the one in effect: the process's
(``default_staging()``, made on first CUDA use), or the one set by ``forced``.

``with forced(staging):`` (private, for the tests and the bench) runs every staged path with
``staging`` and routes CPU tensors as CUDA ones (``_cuda.route``), so that the tests run this same
pipeline on CPU tensors: a copier that copies later, on another thread, with delays, to check
ordering, slot reuse and waiting without a GPU. It is process-wide (threads started inside it see
it too), not for production use. What the entry points do with the pipeline is in route.py.

Bounds (``StagingPool``): at most ``pinned_limit()`` bytes of pinned buffers are held by the
package at once, leased and idle together (``TENSORB64_PINNED_MIB``, default 256 MiB); a buffer
is leased to one call at a time and comes back to the pool only when that call has finished
reading it (for ``pinned_copy``, when the memory of the host tensor it returned is freed: that
tensor's and every view's of it). When a buffer would
pass the bound the call takes the plain copy (``tensor.to("cpu")``) instead; so does an input
below ``plain_copy_below`` bytes. Buffers the pool drops go back to torch's caching host
allocator, which keeps them pinned for torch's own reuse.

torch is never imported here: every function is reached with a tensor, so torch is loaded.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# Measured on the H200 machine (16-core Xeon host, torch 2.11, CUDA 13) by `python -m tensorb64
# bench --device cuda`, which prints the tables these were read from:
#
# Below this many bytes of source a CUDA tensor takes the plain blocking copy (t.to("cpu")): the
# pinned staged copy costs ~25-30 µs whatever its size (pool, views, stream, event), t.cpu()
# ~13 µs plus ~0.1 µs a KiB; encode_rows through each broke even near 64 KiB of float32 (staged
# against plain: 32.2 against 19.8 µs at 16 KiB, 39.3 against 36.0 at 64 KiB, 48.2 against 51.4
# at 128 KiB, 65.2 against 88.8 at 256 KiB).
PLAIN_COPY_BELOW = 64 << 10

# The bus bytes of one chunk of the overlapped pipeline (and so the size of its two staging
# slots). Larger was faster up to 4 MiB and the same beyond: float32 1024x3072 2.50 ms with
# 256 KiB chunks, 2.07 with 2 MiB, 2.01 with 4, 1.99 with 8; bfloat16 8192x1024 10.7, 9.66,
# 9.40, 9.41 ms (each chunk costs some tens of µs of Python and launches, and the bus is far
# ahead of the encoder). 4 MiB: the gain, with half the pinned memory a call holds at 8 MiB.
CHUNK_BYTES = 4 << 20

# From this many bytes of source, rows whose output is narrower than the source are narrowed on
# the GPU before they cross the bus. Below it narrowing costs more (a cast, a range check and
# their launches) than the bus time it saves: float32 to float16 output, with against without,
# 0.87x at 64x3072 (768 KiB) and 1.14x at 1024x3072 (12 MiB); a sweep by hand gave 0.88x at
# 64x3072, 1.15x at 256x3072 (3 MiB), 1.20x at 1024x3072 and 1.40x at 4096x3072.
NARROW_FROM = 2 << 20


def pinned_limit() -> int:
    """TENSORB64_PINNED_MIB in bytes (default 256 MiB; 0 turns pinned staging off), read when the
    process's staging is made (on first CUDA use), so that a bad value cannot break the import."""
    text = os.environ.get("TENSORB64_PINNED_MIB", "256")
    try:
        mib = int(text)
    except ValueError:
        mib = -1
    if mib < 0:
        raise ValueError(f"TENSORB64_PINNED_MIB must be a whole number of MiB, 0 or more (0 turns pinned staging "
                         f"off), got {text!r}")
    return mib << 20


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


# ---- the device side ---------------------------------------------------------------------------


class CudaCopier:
    """Copies from a CUDA tensor to pinned host buffers on that tensor's current stream.

    begin(source): takes the source device's current stream (this thread's), on which every
        copy and cast of the call is queued: after the work already queued there (the producer's),
        with no wait between streams and no record_stream (the caching allocator reuses memory
        freed on a stream only for work queued on it later, so after these copies).
    narrow(source, dtype): ``source.to(dtype)`` on the device (torch's own cast).
    copy(source, host): an asynchronous copy into a host tensor of the same shape and dtype.
    record(): an event after everything queued so far; wait(event) blocks this thread until it.

    One stream, no side stream: on the H200 machine a side stream (its wait, record_stream and
    the stream context) cost ~30 µs a call of Python and driver calls in a probe by hand, more
    than the bus time of a 64x3072 float32 batch. Copies still overlap the host's encoding: they
    are asynchronous whichever stream they are queued on.
    """

    def __init__(self, torch):
        self._event = torch.cuda.Event
        self._current_stream = torch.cuda.current_stream
        self.stream = None

    def begin(self, source) -> None:
        self.stream = self._current_stream(source.device)

    def narrow(self, source, dtype):
        return source.to(dtype)

    def copy(self, source, host) -> None:
        host.copy_(source, non_blocking=True)

    def record(self):
        event = self._event()
        event.record(self.stream)
        return event

    def wait(self, event) -> None:
        event.synchronize()


# ---- the configuration ---------------------------------------------------------------------------


def cuda_copier(t) -> CudaCopier:
    """The copier for a CUDA tensor (one per call: it holds the call's stream)."""
    return CudaCopier(sys.modules["torch"])


@dataclass(frozen=True)
class Staging:
    """What the pipeline runs with, passed down to every function that stages: the pool of
    buffers, the copier for a tensor (``copier_for(t)``), the chunk size, the source size below
    which a tensor takes the plain copy, and the source size from which rows are narrowed on the
    device (the bench sets it out of reach to measure what narrowing saves). The tests pass their
    own (a pool of plain buffers, a copier that copies late on another thread, small chunks)."""

    pool: StagingPool
    copier_for: Callable = cuda_copier
    chunk_bytes: int = CHUNK_BYTES
    plain_copy_below: int = PLAIN_COPY_BELOW
    narrow_from: int = NARROW_FROM


_DEFAULT: Staging | None = None
_DEFAULT_LOCK = threading.Lock()


def default_staging() -> Staging:
    """The process's staging: pinned buffers up to ``pinned_limit()`` (made on first CUDA use)."""
    global _DEFAULT
    if _DEFAULT is None:
        with _DEFAULT_LOCK:
            if _DEFAULT is None:
                torch = sys.modules["torch"]
                pool = StagingPool(pinned_limit(), lambda n: torch.empty(n, dtype=torch.uint8, pin_memory=True))
                _DEFAULT = Staging(pool)
    return _DEFAULT


_FORCED: Staging | None = None
_FORCED_DEPTH = 0  # the forced() blocks open with it, on every thread
_FORCED_LOCK = threading.Lock()


def current_staging() -> Staging:
    """The staging the staged paths run with: the forced one, else the process's."""
    forced = _FORCED
    return forced if forced is not None else default_staging()


def forced_staging() -> Staging | None:
    """The staging set by ``forced``, or None outside it."""
    return _FORCED


@contextmanager
def forced(staging: Staging) -> Iterator[Staging]:
    """Within it, every staged path runs with ``staging`` and CPU tensors are routed as CUDA
    tensors are (staged, or host-copied through ``staging``): the tests' way to the CUDA path
    without a GPU, and the bench's to vary the configuration. Process-wide: blocks with the same
    staging may overlap (nested, or on several threads), it lasts until the last one ends;
    another staging while one is forced is a RuntimeError."""
    global _FORCED, _FORCED_DEPTH
    with _FORCED_LOCK:
        if _FORCED is not None and _FORCED is not staging:
            raise RuntimeError("another staging is forced already")
        _FORCED = staging
        _FORCED_DEPTH += 1
    try:
        yield staging
    finally:
        with _FORCED_LOCK:
            _FORCED_DEPTH -= 1
            if _FORCED_DEPTH == 0:
                _FORCED = None


# ---- what crosses the bus -------------------------------------------------------------------------


def stageable(t, torch) -> bool:
    """A dense tensor of a staged dtype whose values are its memory (no negative bit)."""
    return (
        t.layout == torch.strided and not t.is_nested and t.dtype in staged_dtypes(torch) and not t.is_neg()
    )


@functools.cache
def staged_dtypes(torch) -> tuple:
    return tuple(getattr(torch, name) for name in _STAGED_DTYPES)


def bus_dtype(torch, source, output, narrow: bool = True):
    """The dtype the rows cross the bus in: where ``narrow`` (the caller's decision, from the
    tensor's size) and the output dtype (a torch dtype) is narrower than the source, the output
    dtype (float32 for a float64 source), else the source's own; None output (float text) keeps
    the source's.

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
    if output is None or not narrow or output.itemsize >= source.itemsize:
        return source
    return torch.float32 if source == torch.float64 else output


# ---- the pipeline --------------------------------------------------------------------------------


def _align(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


def _rows_view(buffer, dtype, rows: int, width: int):
    """The start of a pool buffer as a contiguous rows x width tensor of ``dtype`` (two torch
    calls: the buffer's size is a power of two of at least 64 KiB, so any dtype divides it)."""
    return buffer.view(dtype).as_strided((rows, width), (width, 1))


def staged_chunks(t, bus_dtype, write, staging: Staging):
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
    pool = staging.pool
    rows, width = t.shape
    row_bytes = width * bus_dtype.itemsize
    narrowed = bus_dtype != t.dtype
    stats_bytes = _ALIGN if narrowed else 0
    per_chunk = max(1, (staging.chunk_bytes - stats_bytes) // max(row_bytes, 1))
    count = -(-rows // per_chunk)
    if count == 0:
        return []
    chunk_rows = min(rows, per_chunk)
    data_bytes = _align(chunk_rows * row_bytes)
    slots = []
    for _ in range(min(2, count)):
        buffer = pool.acquire(data_bytes + stats_bytes)
        if buffer is None:
            for s in slots:
                pool.release(s)
            return None
        slots.append(buffer)
    # Each slot's views made once a call, not once a chunk: each torch call costs a few µs of
    # Python on the GPU host, which is the whole bus time of a small batch. The rows as a 2-D
    # tensor of the bus dtype; after them (narrowed chunks) the chunk's largest magnitude.
    views = [(_rows_view(buffer, bus_dtype, chunk_rows, width),
              buffer.view(t.dtype)[data_bytes // t.element_size()] if narrowed else None) for buffer in slots]
    copier = staging.copier_for(t)
    limit = torch.finfo(bus_dtype).max if narrowed else None

    def issue(k):
        start = k * per_chunk
        stop = min(rows, start + per_chunk)
        host, largest = views[k % 2]
        if stop - start != chunk_rows:
            host = host[: stop - start]
        chunk = t if count == 1 else t[start:stop]
        if narrowed:
            copier.copy(torch.linalg.vector_norm(chunk, ord=math.inf), largest)  # NaN stays NaN
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
            if largest is not None and not float(largest) <= limit:
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
            (pool.release if reusable else pool.discard)(s)
    return results


def _leased(host, release):
    """``host`` (a view of a pool buffer) as a tensor whose memory has an owner of its own: the
    buffer's lease, which ``release`` ends, lasts as long as that owner, which every tensor
    derived from the result (views, slices, rows) holds, not as long as one tensor object. The
    owner is a ctypes array over the same bytes: torch.frombuffer keeps the object it reads
    alive for as long as the memory it made is."""
    torch = sys.modules["torch"]
    nbytes = host.numel() * host.element_size()
    if nbytes == 0:
        release()
        return host.clone()
    owner = (ctypes.c_char * nbytes).from_address(host.data_ptr())
    weakref.finalize(owner, release)
    return torch.frombuffer(owner, dtype=host.dtype).view(host.shape)


def pinned_copy(t, staging: Staging):
    """``t`` (a device tensor the pipeline takes) on the host in its own dtype and shape,
    contiguous: through a pinned staging buffer that stays leased until the last tensor over its
    memory is freed (the result, or any view of it), or by the plain copy when the pool has no
    room."""
    if t.requires_grad:
        t = t.detach()
    buffer = staging.pool.acquire(t.numel() * t.element_size())
    if buffer is None:
        return t.to("cpu")
    copier = staging.copier_for(t)
    host = _rows_view(buffer, t.dtype, *t.shape) if t.ndim == 2 else buffer.view(t.dtype)[: t.numel()].view(t.shape)
    try:
        copier.begin(t)
        copier.copy(t, host)
        copier.wait(copier.record())
    except BaseException:
        staging.pool.discard(buffer)  # a copy may still be queued into it
        raise
    return _leased(host, functools.partial(staging.pool.release, buffer))
