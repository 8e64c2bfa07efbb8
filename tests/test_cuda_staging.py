"""The CUDA staging pipeline (src/tensorb64/_cuda/) on CPU, through a stand-in copier.

The copier below keeps the CUDA copier's contract with CPU tensors standing in for device ones:
copies run later, in order, on a worker thread (a stream), after a delay; a destination holds
0xFF bytes from the moment its copy is queued until it lands, so a pipeline that read a slot
before waiting for it, or queued into a slot still being encoded, would give wrong bytes. The
entry points are run with CPU tensors staged through a `Staging` of those (`routed`), so the code
exercised is the code that runs on CUDA, narrowing included (torch's CPU casts stand in for the GPU's);
every result is compared with the host path's.
"""

from __future__ import annotations

import os
import queue
import random
import subprocess
import sys
import threading
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.threads import failures_in_threads

torch = pytest.importorskip("torch")

import tensorb64  # noqa: E402
from tensorb64 import _native, openai  # noqa: E402
from tensorb64._codec import input_hook  # noqa: E402
from tensorb64._cuda import route as _cuda  # noqa: E402
from tensorb64._cuda import staging as _staging  # noqa: E402
from tensorb64.openai import embedding_data, response_body  # noqa: E402

OUTPUTS = ("float32", "float16", "bfloat16", "fp8_e4m3", "fp8_e5m2")
SOURCES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


class FakeCopier:
    """CudaCopier's contract on CPU tensors, with copies that land late (see the module doc)."""

    def __init__(self, delay: float = 0.0, seed: int = 0, disagree: bool = True):
        self.delay = delay
        self.disagree = disagree
        self.log: list = []
        self._random = random.Random(seed)
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._pending: Counter = Counter()  # slot storage address -> copies queued, not landed
        self._worker = threading.Thread(target=self._run, daemon=True)
        self._worker.start()

    def begin(self, source):
        self.log.append(("begin", source.data_ptr()))

    def narrow(self, source, dtype):
        """torch's cast, except where a device's casts may disagree with the host's (NaN bits,
        overflow): there it writes 0, which the pipeline must never let through."""
        narrowed = source.to(dtype)
        self.log.append(("narrow", source.dtype, dtype))
        if self.disagree:
            bits = narrowed.view(torch.uint8) if narrowed.element_size() == 1 else narrowed  # (no masked_fill for float8)
            bits[~torch.isfinite(narrowed.to(torch.float32)) | ~torch.isfinite(source)] = 0
        return narrowed

    def copy(self, source, host):
        assert source.shape == host.shape and source.dtype == host.dtype and host.is_contiguous()
        key = host.untyped_storage().data_ptr()
        with self._lock:
            self._pending[key] += 1
        host.view(-1).view(torch.uint8).fill_(0xFF)  # undefined until the copy lands
        self.log.append(("copy", key, source.dtype, host.shape[0] if host.ndim else 1))
        self._queue.put((source, host, key))

    def record(self):
        event = threading.Event()
        self._queue.put(event)
        return event

    def wait(self, event):
        assert event.wait(timeout=60), "a copy never landed"
        self.log.append(("wait",))

    def pending_into(self, buffer) -> int:
        with self._lock:
            return self._pending[buffer.untyped_storage().data_ptr()]

    def close(self):
        self._queue.put(None)
        self._worker.join(timeout=60)

    def _run(self):
        while True:
            item = self._queue.get()
            if item is None:
                return
            if isinstance(item, threading.Event):
                item.set()
                continue
            if self.delay:
                threading.Event().wait(self._random.uniform(0, self.delay))
            source, host, key = item
            host.copy_(source)
            del item, source, host  # hold no tensor between copies (host_copy's lease ends with its tensor)
            with self._lock:
                self._pending[key] -= 1


class CheckedPool(_staging.StagingPool):
    """A pool of plain host buffers that refuses to take back a buffer a copy is still queued
    into, and records the most bytes it ever held."""

    def __init__(self, limit, copier):
        super().__init__(limit, lambda n: torch.empty(n, dtype=torch.uint8))
        self.copier = copier
        self.most_held = 0

    def acquire(self, nbytes):
        buffer = super().acquire(nbytes)
        self.most_held = max(self.most_held, self.held)
        return buffer

    def release(self, buffer):
        assert self.copier.pending_into(buffer) == 0, "a buffer went back to the pool with a copy still queued into it"
        super().release(buffer)


class Route:
    """The entry points with every tensor staged through one `Staging` whatever its device (the
    CUDA path, run on CPU tensors, through `_staging.forced` around each call): small chunks
    (many per call), a plain-copy threshold of 256 bytes, a fresh pool and a copier that copies
    late."""

    def __init__(self):
        self.copier = FakeCopier(delay=0.0005)
        self.pool = CheckedPool(1 << 20, self.copier)
        self.staging = _staging.Staging(self.pool, lambda t: self.copier, chunk_bytes=1024, plain_copy_below=256, narrow_from=512)

    def _forced(self):
        return _staging.forced(self.staging)

    def encode_binary_body(self, x, **kwargs):
        with self._forced():
            return tensorb64.encode_binary_body(x, **kwargs)

    def response_body(self, x, **kwargs):
        with self._forced():
            return response_body(x, **kwargs)

    def iter_response_body(self, x, **kwargs):
        """The chunks, each written with the staging forced (and nothing forced in between);
        the arguments checked at the call, as iter_response_body checks them."""
        with self._forced():
            chunks = openai.iter_response_body(x, **kwargs)

        def each_forced():
            while True:
                with self._forced():
                    piece = next(chunks, None)
                if piece is None:
                    return
                yield piece

        return each_forced()

    def embedding_data(self, x, **kwargs):
        with self._forced():
            return embedding_data(x, **kwargs)

    def encode_rows(self, x, **kwargs):  # (what the binding's input hook is handed for a tensor on a device)
        with self._forced():
            return input_hook.fallback("encode_rows", x, **kwargs)

    def json_rows(self, x, **kwargs):
        with self._forced():
            return input_hook.fallback("json_rows", x, **kwargs)


@pytest.fixture
def routed():
    route = Route()
    yield route
    route.copier.close()
    assert route.pool.leased == 0


def values(rows: int, width: int, dtype, *, specials: bool = True, seed: int = 0) -> torch.Tensor:
    """Normal values with, in a few rows, what narrowing must not change: NaN payloads,
    infinities, values past float16's and fp8's range, subnormals and rounding ties."""
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(rows, width, generator=g, dtype=torch.float64) * 0.05
    if specials and rows > 3:
        t[1, :8] = torch.tensor([float("nan"), float("inf"), -float("inf"), 70000.0, -1e30, 500.0, 1e-40, 2**-25])
        t[rows - 2, 3] = 65520.0
        bits = torch.tensor([0x7FC00001, 0xFFA00000 - (1 << 32), 0x00000001, 0x33000000], dtype=torch.int32)
        t32 = t.to(torch.float32)
        t32[rows // 2, :4] = bits.view(torch.float32)
        return t32.to(dtype) if dtype != torch.float64 else t32.to(torch.float64)
    return t.to(dtype)


# ---- the entry points through the pipeline equal the host path ------------------------------------


@pytest.mark.parametrize("source", SOURCES, ids=str)
@pytest.mark.parametrize("output", OUTPUTS)
def test_encode_body_and_response_body_equal_the_host_path(routed, source, output):
    t = values(40, 37, source)
    for byteorder in ("little", "big"):
        assert routed.encode_binary_body(t, dtype=output, byteorder=byteorder) == tensorb64.encode_binary_body(
            t, dtype=output, byteorder=byteorder)
    kwargs = {"model": "m", "encoding_format": "base64", "dtype": output, "dimensions": 30, "usage": {"prompt_tokens": 3, "total_tokens": 3}}
    expected = response_body(t, **kwargs)
    assert routed.response_body(t, **kwargs) == expected
    assert b"".join(routed.iter_response_body(t, chunk_size=700, **kwargs)) == expected


def test_vllm_layout_bodies_equal_the_host_path(routed):
    """layout="vllm" through the pipeline (chunk by chunk): the host path's bytes, whole and in
    chunks."""
    t = values(40, 37, torch.float32, specials=False)
    for options in ({"encoding_format": "base64", "dtype": "float16"}, {"encoding_format": "float", "float_format": "orjson"}):
        kwargs = {"model": "m", "layout": "vllm", "extra": {"id": "embd-1", "created": 3}, **options}
        expected = response_body(t, **kwargs)
        assert expected.startswith(b'{"id":"embd-1","object":"list","created":3,"model":"m","data":[{"index":0,"object":"embedding",')
        routed.copier.log.clear()
        assert routed.response_body(t, **kwargs) == expected
        assert sum(1 for entry in routed.copier.log if entry[0] == "copy") > 2  # staged in chunks
        assert b"".join(routed.iter_response_body(t, chunk_size=700, **kwargs)) == expected


@pytest.mark.parametrize("source", SOURCES, ids=str)
def test_embedding_data_and_float_bodies_equal_the_host_path(routed, source):
    t = values(33, 50, source, specials=False)
    assert routed.embedding_data(t, encoding_format="base64") == embedding_data(t, encoding_format="base64")
    assert routed.embedding_data(t[0], encoding_format="base64", dimensions=7) == embedding_data(
        t[0], encoding_format="base64", dimensions=7)
    for float_format in ("repr", "shortest"):
        kwargs = {"model": "m", "encoding_format": "float", "float_format": float_format}
        expected = response_body(t, **kwargs)
        assert routed.response_body(t, **kwargs) == expected
        assert b"".join(routed.iter_response_body(t, chunk_size=2000, **kwargs)) == expected


def test_n_dimensional_and_strided_inputs(routed):
    t = values(6 * 7, 40, torch.float32).view(6, 7, 40)
    for x in (t, t.permute(1, 0, 2), t[:, :, ::3], t[0]):
        assert routed.encode_binary_body(x, dtype="float16") == tensorb64.encode_binary_body(x, dtype="float16")
        assert routed.encode_rows(x, dtype="bfloat16", byteorder="big") == tensorb64.encode_rows(x, dtype="bfloat16", byteorder="big")
        finite = torch.nan_to_num(x, nan=0.0, posinf=1.0, neginf=-1.0)  # (float text refuses NaN)
        assert routed.json_rows(finite, float_format="shortest") == tensorb64.json_rows(finite, float_format="shortest")


def test_narrowing_crosses_the_bus_narrow_and_falls_back_where_it_must(routed):
    copier = routed.copier
    t = values(64, 16, torch.float32)  # 64-byte float16 rows: 15 rows a 1 KiB chunk
    assert routed.encode_binary_body(t, dtype="float16") == tensorb64.encode_binary_body(t, dtype="float16")
    copies = [entry for entry in copier.log if entry[0] == "copy"]
    assert {dtype for _, _, dtype, _ in copies} == {torch.float32, torch.float16}  # range checks, float16 rows
    assert sum(rows for _, _, dtype, rows in copies if dtype == torch.float16) == 64
    # below narrow_from (512 bytes of source) rows cross in their own dtype, and nothing is narrowed
    copier.log.clear()
    small = values(5, 16, torch.float32)  # 320 bytes: staged (plain_copy_below is 256), not narrowed
    assert routed.encode_binary_body(small, dtype="float16") == tensorb64.encode_binary_body(small, dtype="float16")
    assert [entry[2] for entry in copier.log if entry[0] in ("copy", "narrow")] == [torch.float32]
    # float text keeps the source's own values: nothing is narrowed
    copier.log.clear()
    routed.response_body(values(64, 16, torch.float64, specials=False), model="m", encoding_format="float")
    assert {entry[2] for entry in copier.log if entry[0] == "copy"} == {torch.float64}


def test_which_dtype_crosses_the_bus():
    f32, f16, bf16, f64, e4 = torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.float8_e4m3fn
    table = {
        (f32, f32): f32, (f32, f16): f16, (f32, bf16): bf16, (f32, e4): e4,
        (bf16, f32): bf16, (bf16, f16): bf16, (bf16, e4): e4, (f16, bf16): f16,
        (f64, f32): f32, (f64, f16): f32, (f64, e4): f32, (f32, None): f32, (f64, None): f64,
    }
    for (source, output), bus in table.items():
        assert _staging.bus_dtype(torch, source, output) == bus, (source, output)
        assert _staging.bus_dtype(torch, source, output, narrow=False) == source


# ---- ordering, slot reuse, waiting -----------------------------------------------------------------


def test_chunks_are_copied_ahead_awaited_before_reading_and_slots_alternate():
    copier = FakeCopier(delay=0.002)
    staging = CheckedPool(1 << 20, copier)
    t = values(50, 64, torch.float32, specials=False)  # 256-byte rows
    events = []

    def write(host, start):
        assert copier.pending_into(host) == 0, "a slot was read with a copy into it still queued"
        assert torch.equal(host, t[start : start + host.shape[0]]), "a slot was read before its copy landed"
        events.append(("write", host.untyped_storage().data_ptr(), start))
        copier.log.append(events[-1])
        return _native.encode_rows(host)

    config = _staging.Staging(staging, lambda t: copier, chunk_bytes=1024)  # 4 rows a chunk: 13 chunks
    results = _staging.staged_chunks(t, torch.float32, write, config)
    copier.close()
    assert [row for chunk in results for row in chunk] == tensorb64.encode_rows(t)
    assert [start for _, _, start in events] == list(range(0, 50, 4))
    log = [entry[0] for entry in copier.log]
    assert log[:3] == ["begin", "copy", "wait"]
    # after each wait: the next chunk's copy is queued before the awaited chunk is written
    assert log[3:] == ["copy", "write", "wait"] * 12 + ["write"]
    slots = [entry[1] for entry in copier.log if entry[0] == "copy"]
    assert len(set(slots)) == 2 and all(slots[i] != slots[i + 1] for i in range(len(slots) - 1))
    assert [slot for _, slot, _ in events] == slots
    assert staging.leased == 0 and staging.idle_bytes() == staging.held


def test_a_failing_write_waits_for_queued_copies_before_the_slots_are_reused():
    copier = FakeCopier(delay=0.01)
    staging = CheckedPool(1 << 20, copier)
    t = values(40, 64, torch.float32, specials=False)

    def write(host, start):
        if start == 8:
            raise ValueError("boom")
        return start

    with pytest.raises(ValueError, match="boom"):
        _staging.staged_chunks(t, torch.float32, write, _staging.Staging(staging, lambda t: copier, chunk_bytes=1024))
    copier.close()
    assert staging.leased == 0 and staging.held == staging.idle_bytes() > 0  # given back only once landed


def test_a_non_finite_float_row_is_named_as_in_the_whole_input(routed):
    t = values(40, 16, torch.float32, specials=False)
    t[33, 5] = float("nan")
    with pytest.raises(ValueError) as routed_error:
        routed.response_body(t, model="m", encoding_format="float")
    with pytest.raises(ValueError) as host_error:
        response_body(t, model="m", encoding_format="float")
    assert str(routed_error.value) == str(host_error.value) and "row 33, column 5" in str(host_error.value)
    with pytest.raises(ValueError, match="row 33, column 5"):
        routed.iter_response_body(t, model="m", encoding_format="float", chunk_size=1 << 20)


def test_bad_arguments_raise_what_the_host_path_raises(routed):
    t = values(20, 16, torch.float32, specials=False)
    for kwargs in ({"dtype": "float8"}, {"byteorder": "middle"}, {"threads": 0}, {"dtype": None}):
        with pytest.raises((TypeError, ValueError)) as routed_error:
            routed.encode_binary_body(t, **kwargs)
        with pytest.raises((TypeError, ValueError)) as host_error:
            tensorb64.encode_binary_body(t, **kwargs)
        assert type(routed_error.value) is type(host_error.value) and str(routed_error.value) == str(host_error.value)
    with pytest.raises(ValueError, match="encode_rows needs an input with at least one dimension"):
        routed.encode_rows(torch.tensor(1.0))
    with pytest.raises(ValueError, match="json_rows needs an input with at least one dimension"):
        routed.json_rows(torch.tensor(1.0))
    assert routed.pool.leased == 0


# ---- bounds, reuse, concurrency -----------------------------------------------------------------


def test_pool_reuses_bounds_and_evicts():
    made = []
    staging = _staging.StagingPool(1 << 20, lambda n: made.append(n) or torch.empty(n, dtype=torch.uint8))
    a = staging.acquire(100_000)  # a 128 KiB class
    assert a.numel() == 128 << 10
    staging.release(a)
    assert staging.acquire(70_000) is a and staging.reuses == 1
    b = staging.acquire(512 << 10)
    c = staging.acquire(300 << 10)  # 128 + 512 + 512 KiB > 1 MiB
    assert c is None and staging.refusals == 1
    staging.release(b)
    c = staging.acquire(300 << 10)  # the idle 512 KiB one, reused
    assert c is b
    staging.release(c)
    d = staging.acquire(1 << 19 | 1)  # 1 MiB class: the idle 512 KiB is dropped, still too much with `a`
    assert d is None and staging.held == 128 << 10
    staging.release(a)
    d = staging.acquire(600 << 10)  # now the idle 128 KiB goes too
    assert d is not None and staging.held == 1 << 20 and staging.leased == 1 << 20
    staging.release(d)
    assert made == [128 << 10, 512 << 10, 1 << 20]

    def refuse(n):
        raise RuntimeError("CUDA error: out of memory")

    failing = _staging.StagingPool(1 << 20, refuse)
    assert failing.acquire(10) is None and failing.held == 0 and failing.leased == 0


def test_a_full_pool_takes_the_plain_path(routed):
    routed.pool.limit = 1000  # smaller than one slot
    t = values(40, 37, torch.float32)
    assert routed.encode_binary_body(t, dtype="float16") == tensorb64.encode_binary_body(t, dtype="float16")
    assert routed.response_body(t, model="m", encoding_format="base64") == response_body(t, model="m", encoding_format="base64")
    assert routed.pool.refusals >= 2 and routed.pool.held == 0


def test_concurrent_calls_never_share_a_slot(routed):
    routed.pool.limit = 320 << 10  # room for two calls' slots at once: the rest take the plain copy
    tensors = [values(30 + i, 24 + i, (torch.float32, torch.bfloat16)[i % 2], seed=i) for i in range(8)]
    expected = [response_body(t, model="m", encoding_format="base64", dtype="float16") for t in tensors]
    failures = failures_in_threads(lambda i: routed.response_body(tensors[i], model="m", encoding_format="base64", dtype="float16") == expected[i],
                                   count=8, repeats=10)
    assert failures == []
    assert routed.pool.leased == 0 and routed.pool.most_held <= routed.pool.limit and routed.pool.reuses > 0


def test_a_suspended_generator_holds_no_staging_buffer(routed):
    t = values(60, 64, torch.float32, specials=False)
    expected = response_body(t, model="m", encoding_format="base64")
    chunks = routed.iter_response_body(t, model="m", encoding_format="base64", chunk_size=2000)
    pieces = []
    for piece in chunks:
        assert routed.pool.leased == 0
        other = values(20, 64, torch.float32, seed=1)  # another call in between reuses the buffers
        assert routed.response_body(other, model="m", encoding_format="base64") == response_body(other, model="m", encoding_format="base64")
        pieces.append(piece)
    assert len(pieces) > 2 and b"".join(pieces) == expected


# ---- the whole-tensor copy (the binding's own entry points) ------------------------------------------


def host_copy(t):
    return _cuda.route(t).host_copy(t)


def test_a_view_of_a_host_copy_keeps_its_lease():
    """The pinned buffer's lease is held by its memory's owner: a row taken from a host copy keeps
    the buffer from the next copy, which would otherwise overwrite the row's values."""
    copier = FakeCopier()
    staging = CheckedPool(1 << 20, copier)
    t = values(64, 96, torch.float32, specials=False)
    with _staging.forced(_staging.Staging(staging, lambda t: copier, plain_copy_below=1024)):
        row = host_copy(t)[7]
        for _ in range(2):  # the next copies, each freed at once, made while the row is alive
            assert torch.equal(host_copy(t + 1)[7], t[7] + 1)
        assert torch.equal(row, t[7]), "a row of a host copy was overwritten by a later copy"
        assert staging.leased == 64 << 10 and staging.allocations == 2  # (the row's buffer, and one reused)
        del row
        assert staging.leased == 0
    copier.close()


def test_host_copy_keeps_its_buffer_until_the_copy_is_freed():
    copier = FakeCopier(delay=0.002)
    staging = CheckedPool(1 << 20, copier)
    t = values(64, 96, torch.bfloat16)
    config = _staging.Staging(staging, lambda t: copier, plain_copy_below=1024)
    with _staging.forced(config):
        host = host_copy(t[:, :90])
        assert staging.leased == 64 << 10  # the smallest buffer
        assert tensorb64.encode_rows(host) == tensorb64.encode_rows(t[:, :90])
        assert tensorb64.encode_rows(host_copy(t)) == tensorb64.encode_rows(t)
        assert staging.leased == 64 << 10 and staging.allocations == 2  # the second, freed, went back
        del host
        assert staging.leased == 0
        assert tensorb64.encode_rows(host_copy(t)) == tensorb64.encode_rows(t)
        assert staging.leased == 0 and staging.reuses == 1 and staging.allocations == 2
        small = host_copy(t[:2])  # below the threshold: plain
        assert torch.equal(small.view(torch.int16), t[:2].view(torch.int16)) and staging.leased == 0
    copier.close()


def test_route_is_the_one_decision():
    """Outside `forced` a CPU tensor is read on the host; inside it, as a CUDA tensor is: through
    the pipeline where it takes the tensor (a staged dtype, dense, at least one dimension), each
    piece from plain_copy_below bytes, else one copy."""
    config = _staging.Staging(_staging.StagingPool(1 << 20, bytearray), plain_copy_below=256)
    t = torch.zeros(8, 8)  # 256 bytes
    assert _cuda.route(t) is None and _cuda.route(t.numpy()) is None
    with _staging.forced(config):
        assert _staging.current_staging() is config
        assert _cuda.route(t) == _cuda.Route(config, True) and _cuda.route(t).stages(t)
        assert not _cuda.route(t[:7]).stages(t[:7]) and not _cuda.route(t).stages(t[:7])  # 224 bytes
        assert _cuda.route(t.to(torch.int32)).stageable is False  # a dtype the pipeline does not take
        negated = torch.zeros(8, 8, dtype=torch.complex64).conj().imag  # values negated by a bit, not in memory
        assert negated.is_neg() and _cuda.route(negated).stageable is False
        assert not _cuda.route(negated).host_copy(negated).is_neg()  # its values in memory
        assert _cuda.route(torch.tensor(1.0)).stageable is False
        assert _cuda.route(t.numpy()) is None and _cuda.route([[1.0]]) is None
        with _staging.forced(config):  # the same staging nests
            assert _cuda.route(t).stageable
        assert _cuda.route(t).stageable
        with pytest.raises(RuntimeError, match="another staging"), _staging.forced(replace(config)):
            pass
    assert _cuda.route(t) is None and _staging.forced_staging() is None


def leases(pool) -> int:
    """The buffers a pool was asked for: each lease of one (made or reused), or refused."""
    return pool.allocations + pool.reuses + pool.refusals


def test_a_piece_below_the_threshold_takes_the_plain_copy(routed):
    """The size rule applies to the piece that is copied, not the whole input: chunks of
    iter_response_body and rows cut to ``dimensions`` below plain_copy_below bytes take the plain
    copy (no lease of the pool), though the whole input is staged; pieces above it are staged."""
    t = values(60, 32, torch.float32, specials=False)  # 7,680 bytes; a row of 128, below the 256-byte threshold
    whole = response_body(t, model="m", encoding_format="base64")
    chunks = list(routed.iter_response_body(t, model="m", encoding_format="base64", chunk_size=100))
    assert len(chunks) >= 60 and b"".join(chunks) == whole  # a row a chunk
    assert leases(routed.pool) == 0, f"{leases(routed.pool)} leases for pieces below the threshold"
    cut = {"model": "m", "encoding_format": "float", "dimensions": 4}  # 8 rows of 4 values: 128 bytes of 1,024
    assert routed.response_body(t[:8], **cut) == response_body(t[:8], **cut)
    assert routed.encode_binary_body(t[:1]) == tensorb64.encode_binary_body(t[:1])
    assert leases(routed.pool) == 0
    assert b"".join(routed.iter_response_body(t, model="m", encoding_format="base64", chunk_size=2000)) == whole
    assert routed.response_body(t, model="m", encoding_format="base64") == whole
    assert leases(routed.pool) > 0


class Elsewhere(torch.Tensor):
    """A CPU row that says it is on another device (``Elsewhere.on(t, device)``): like a row
    there, torch.stack refuses it beside rows elsewhere (cuda:0 beside cuda:1, or the CPU),
    detach keeps it there, and ``.to("cpu")`` gives the plain CPU tensor (counted in ``copies``)."""

    copies = 0

    @staticmethod
    def on(t, device: str):
        row = torch.Tensor._make_subclass(Elsewhere, t)
        row.where = torch.device(device)
        return row

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func == torch.Tensor.device.__get__:
            return args[0].where
        if func is torch.stack and len({row.device for row in args[0]}) > 1:
            raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices")
        with torch._C.DisableTorchFunctionSubclass():
            if func is torch.Tensor.detach:
                return Elsewhere.on(func(*args, **kwargs), str(args[0].where))
            if func is torch.Tensor.to:
                assert args[1:] == ("cpu",) and not kwargs, (args[1:], kwargs)
                Elsewhere.copies += 1
                return args[0].clone()
            return func(*args, **kwargs)


@pytest.mark.parametrize("devices", [("cpu", "cuda:0"), ("cuda:0", "cuda:1")])
def test_rows_on_different_devices_are_copied_to_the_host_one_by_one(devices):
    """A list of rows on several devices (which torch.stack refuses) is read as before: each row
    copied to the host, then stacked; rows of one device are stacked where they are."""
    t = values(6, 16, torch.float32, specials=False)
    rows = [Elsewhere.on(row, devices[i % 2]) if devices[i % 2] != "cpu" else row for i, row in enumerate(t)]
    with pytest.raises(RuntimeError, match="same device"):  # (the stand-in refuses as torch does)
        torch.stack(rows)
    Elsewhere.copies = 0
    assert tensorb64.encode_rows(rows) == tensorb64.encode_rows(t)
    assert response_body(rows, model="m", encoding_format="float") == response_body(t, model="m", encoding_format="float")
    assert Elsewhere.copies == 2 * sum(isinstance(row, Elsewhere) for row in rows)  # each row of another device, each call
    Elsewhere.copies = 0
    stacked = _cuda.stacked([Elsewhere.on(row, "cuda:1") for row in t])
    assert Elsewhere.copies == 0 and torch.equal(stacked.as_subclass(torch.Tensor), t)  # (stacked where they are)
    for ragged in ([t[0], t[1, :8]], [Elsewhere.on(t[0], "cuda:0"), t[1, :8]]):
        with pytest.raises(ValueError, match="a list of tensors must hold rows of one shape"):
            tensorb64.encode_rows(ragged)


@pytest.mark.parametrize("call", [
    lambda x: tensorb64.encode_rows(x, dtype="float16"),
    lambda x: tensorb64.json_rows(x),
    lambda x: tensorb64.encode(x),
    lambda x: tensorb64.encode_binary_body(x),
    lambda x: response_body(x, model="m", encoding_format="base64", dimensions=10),
    lambda x: response_body(x, model="m", encoding_format="float"),
    lambda x: b"".join(openai.iter_response_body(x, model="m", encoding_format="base64", chunk_size=500)),
    lambda x: embedding_data(x, encoding_format="base64"),
    lambda x: embedding_data(x, encoding_format="float", dimensions=5),
], ids=["encode_rows", "json_rows", "encode", "encode_binary_body", "response_body", "response_body float",
        "iter_response_body", "embedding_data", "embedding_data float"])
@pytest.mark.parametrize("form", ["parameter", "rows of tensors", "tensor"])
def test_an_input_on_a_device_is_routed_once(monkeypatch, routed, call, form):
    """Where an input enters, its route is decided once and passed down: one decision a call,
    whatever the entry point and the form of the input (a second decision would be a second
    call of route, or a Route made some other way: both counted), and the result is the host
    path's. (A plain tensor on the CPU is read by the binding itself, as on a GPU machine: the
    binding's entry points are given the other forms, which reach the input hook.)"""
    t = values(24, 40, torch.float32, specials=False)
    x = {"tensor": t, "parameter": torch.nn.Parameter(t, requires_grad=False), "rows of tensors": list(t)}[form]
    decided, made = [], []
    route, make = _cuda.route, _cuda.Route.__init__
    monkeypatch.setattr(_cuda, "route", lambda x: decided.append(1) or route(x))
    monkeypatch.setattr(_cuda.Route, "__init__", lambda self, *args, **kwargs: made.append(1) or make(self, *args, **kwargs))
    with routed._forced():
        got = call(x)
    binding_reads_it = form == "tensor" and call.__code__.co_names[-1] in ("encode_rows", "json_rows", "encode")
    assert (len(decided), len(made)) == ((0, 0) if binding_reads_it else (1, 1)), f"{len(decided)} decisions, {len(made)} routes"
    monkeypatch.undo()
    assert got == call(t)


def test_importing_tensorb64_does_not_import_torch():
    code = "import sys, tensorb64, tensorb64._cuda.route, tensorb64._cuda.staging; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_the_binding_hands_device_tensors_to_the_pipeline_with_its_own_arguments():
    # encode_rows and json_rows are the binding's functions: for an input their reader does not
    # read in place (here a TensorLike registered as the tensor type, saying it is not on the CPU),
    # they hand the call to the fallback hook, with the call's own arguments once they are
    # checked; the hook gives a CUDA tensor to the pipeline. In a subprocess: install() replaces
    # torch's registration, and the hook is replaced by one that records its calls.
    code = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
import numpy as np
import tensorb64
from tensorb64 import _native
from tensorb64._codec import input_hook
from tests.support.tensor_like import TensorLike, install
install()
calls = []
_native._set_fallback(lambda entry, *a, **k: calls.append((entry, a, k)) or ["routed"])
a = np.arange(8, dtype=np.float32)
p = a.ctypes.data
device = TensorLike(p, (2, 4), (4, 1), p, 32)
device.is_cpu, device.is_cuda = False, True
assert tensorb64.encode_rows(device, dtype="float16", threads=2) == ["routed"]
assert calls[-1] == ("encode_rows", (device,), {{"dtype": "float16", "threads": 2}}), calls
assert tensorb64.json_rows(device, float_format="shortest") == ["routed"]
assert calls[-1] == ("json_rows", (device,), {{"float_format": "shortest"}}), calls
for bad in ({{"dtype": "float8"}}, {{"threads": 0}}, {{"byteorder": "middle"}}):
    try:
        tensorb64.encode_rows(device, **bad)
    except ValueError:
        pass
    else:
        raise AssertionError(f"{{bad}} was not refused before routing")
assert len(calls) == 2, calls
host = TensorLike(p, (2, 4), (4, 1), p, 32)
host.is_cuda = False
assert tensorb64.encode_rows(host) == tensorb64.encode_rows(a.reshape(2, 4))  # read in place, not routed
assert len(calls) == 2, calls
assert input_hook._STAGED == {{"encode_rows": input_hook.cuda.Route.encode_rows, "json_rows": input_hook.cuda.Route.json_rows}}
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"


def test_json_rows_through_the_pipeline_names_the_row_of_the_whole_input(routed):
    t = values(40, 16, torch.float32, specials=False)
    t[33, 5] = float("nan")
    with pytest.raises(ValueError) as routed_error:
        routed.json_rows(t)
    with pytest.raises(ValueError) as host_error:
        tensorb64.json_rows(t)
    assert str(routed_error.value) == str(host_error.value)
    assert "33" in str(host_error.value)


@pytest.mark.parametrize("value", ["abc", "-1", "1.5"])
def test_a_bad_pinned_limit_names_the_variable_on_first_use_not_at_import(value):
    # Read when the process's staging is made (first CUDA use): the import, and every CPU call, work.
    code = ("import numpy, torch, tensorb64; from tensorb64._cuda import staging as _staging; print(tensorb64.encode(numpy.ones(1, 'f4')));"
            "_staging.default_staging()")
    env = {**os.environ, "TENSORB64_PINNED_MIB": value}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.stdout.strip() == "AACAPw==", result.stderr
    assert result.returncode != 0
    assert f"TENSORB64_PINNED_MIB must be a whole number of MiB, 0 or more (0 turns pinned staging off), got {value!r}" \
        in result.stderr


def test_a_pinned_limit_of_zero_turns_staging_off():
    code = "from tensorb64._cuda import staging as s; print(s.pinned_limit(), s.StagingPool(s.pinned_limit(), bytearray).acquire(1))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "TENSORB64_PINNED_MIB": "0"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "None"]
