"""No read past the end of the input: every input ends exactly where an inaccessible page begins.

The Python twin of the C++ guard-page test (cpp/tests/core_levels_tests.cpp), run against whatever
extension is installed, so a wheel's tests catch what the release build does: a SIMD tail load one
element too long faults here (SIGSEGV kills the test run) instead of reading a neighbour's bytes
unnoticed. Memory comes from mmap with the page after it made inaccessible (mprotect PROT_NONE;
VirtualProtect PAGE_NOACCESS on Windows); numpy arrays are laid over it so that their last byte
is the last readable byte. Every length 1..200, at every SIMD level, for float32, float16 and
float64 sources and every output dtype, through encode, encode_rows (also a strided view whose
last element ends at the page) and encode_binary_body, and every prefix of response bodies through
decode_response_body; each result equals the same call on an ordinary
copy of the input, and decodes back to it.
"""

from __future__ import annotations

import ctypes
import mmap
import sys

import numpy as np
import pytest

import tensorb64

SOURCE_DTYPES = ["float32", "float16", "float64"]
OUTPUT_DTYPES = ["float32", "float16", "bfloat16", "fp8_e4m3", "fp8_e5m2"]
LENGTHS = range(1, 201)
PAGE = mmap.PAGESIZE


class GuardedRegion:
    """Read-write memory of `size` bytes (whole pages) followed by one inaccessible page."""

    def __init__(self, size: int):
        self.size = -(-size // PAGE) * PAGE
        total = self.size + PAGE
        if sys.platform == "win32":
            kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
            kernel32.VirtualAlloc.restype = ctypes.c_void_p
            kernel32.VirtualAlloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32, ctypes.c_uint32]
            kernel32.VirtualProtect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32,
                                                ctypes.POINTER(ctypes.c_uint32)]
            kernel32.VirtualFree.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32]
            mem_commit_reserve, page_readwrite, page_noaccess = 0x3000, 0x04, 0x01
            self.address = kernel32.VirtualAlloc(None, total, mem_commit_reserve, page_readwrite)
            if not self.address:
                raise OSError(ctypes.get_last_error(), "VirtualAlloc failed")
            old = ctypes.c_uint32()
            if not kernel32.VirtualProtect(self.address + self.size, PAGE, page_noaccess, ctypes.byref(old)):
                raise OSError(ctypes.get_last_error(), "VirtualProtect failed")
            self._free = lambda: kernel32.VirtualFree(self.address, 0, 0x8000)  # MEM_RELEASE
        else:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_long]
            libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            address = libc.mmap(None, total, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                                -1, 0)
            if address in (None, ctypes.c_void_p(-1).value):
                raise OSError(ctypes.get_errno(), "mmap failed")
            self.address = address
            prot_none = 0  # PROT_NONE (0 on every POSIX system; the mmap module does not name it)
            if libc.mprotect(self.address + self.size, PAGE, prot_none) != 0:
                raise OSError(ctypes.get_errno(), "mprotect failed")
            self._free = lambda: libc.munmap(self.address, total)
        self.buffer = (ctypes.c_char * self.size).from_address(self.address)

    def array_at_end(self, count: int, dtype) -> np.ndarray:
        """A 1-D array of `count` elements whose last byte is the last readable one."""
        nbytes = count * np.dtype(dtype).itemsize
        assert nbytes <= self.size
        return np.frombuffer(self.buffer, dtype=dtype, count=count, offset=self.size - nbytes)

    def close(self) -> None:
        self.buffer = None
        self._free()


@pytest.fixture(scope="module")
def region():
    # Large enough for the strided case at the longest length in float64 (2*200-1 elements).
    guarded = GuardedRegion(4 * PAGE)
    try:
        yield guarded
    finally:
        guarded.close()


def _values(count: int, dtype: str) -> np.ndarray:
    # Ordinary values, subnormals, ties and values past the narrow formats' ranges, so every
    # conversion path (not only the copy path) reaches the tail.
    rng = np.random.default_rng(count)
    pool = np.array([0.0, -0.0, 1.0, -2.5, 65504.0, 70000.0, 448.0, 500.0, 1e-40, -3e-39, 6e-8, 1e-5,
                     3.0000001, 1 / 3, np.inf, -np.inf, 1e300, -1e-300], dtype=np.float64)
    values = np.where(rng.random(count) < 0.5, pool[rng.integers(0, len(pool), count)],
                      rng.standard_normal(count) * 10.0 ** rng.integers(-6, 6, count))
    with np.errstate(over="ignore", under="ignore"):
        return values.astype(dtype)


@pytest.mark.parametrize("source", SOURCE_DTYPES)
def test_input_ending_at_a_guard_page(each_simd_level, region, source):
    for count in LENGTHS:
        reference = _values(count, source)
        guarded = region.array_at_end(count, source)
        guarded[:] = reference
        for dtype in OUTPUT_DTYPES:
            expected = tensorb64.encode(reference, dtype=dtype)
            assert tensorb64.encode(guarded, dtype=dtype) == expected, (count, dtype)
            assert tensorb64.encode_rows(guarded, dtype=dtype) == [expected], (count, dtype)
            body, _ = tensorb64.encode_binary_body(guarded, dtype=dtype)
            assert body == tensorb64.encode_binary_body(reference, dtype=dtype)[0], (count, dtype)
            decoded = tensorb64.decode(expected, dtype=dtype)
            assert len(decoded) == count
            if dtype == "float32" and source == "float32":
                assert decoded.tobytes() == reference.astype("<f4").tobytes()


@pytest.mark.parametrize("source", SOURCE_DTYPES)
def test_rows_and_strided_views_ending_at_a_guard_page(each_simd_level, region, source):
    for count in LENGTHS:
        # Three rows, the last ending at the page.
        reference = _values(3 * count, source).reshape(3, count)
        guarded = region.array_at_end(3 * count, source).reshape(3, count)
        guarded[:] = reference
        for dtype in OUTPUT_DTYPES:
            assert tensorb64.encode_rows(guarded, dtype=dtype) == tensorb64.encode_rows(reference, dtype=dtype)
            assert (tensorb64.encode_binary_body(guarded, dtype=dtype, byteorder="big")[0]
                    == tensorb64.encode_binary_body(reference, dtype=dtype, byteorder="big")[0])
        # Every other element of a buffer whose last element is the last readable one: a kernel
        # that loads a whole vector from the last element's address reads past the page.
        base = region.array_at_end(2 * count - 1, source)
        base[:] = _values(2 * count - 1, source)
        strided = base[::2]
        assert strided.shape == (count,)
        strided_copy = np.ascontiguousarray(strided)
        for dtype in OUTPUT_DTYPES:
            assert tensorb64.encode_rows(strided, dtype=dtype) == tensorb64.encode_rows(strided_copy, dtype=dtype)
            assert tensorb64.encode(strided, dtype=dtype) == tensorb64.encode(strided_copy, dtype=dtype)


def _bodies() -> list:
    """(body, options): response bodies whose every prefix the body reader must read or refuse
    without reading past it: base64 rows long enough for the SIMD decoders' 64-character blocks
    and their tails, float rows in both layouts, escaped text, a string running to the very end."""
    from tensorb64.openai import response_body

    rows = _values(3 * 70, "float32").reshape(3, 70)
    rows = np.where(np.isfinite(rows), rows, 1.5).astype(np.float32)
    half = {"dtype": "float16", "byteorder": "big"}
    return [
        (response_body(rows, model="m", encoding_format="base64"), {}),
        (response_body(rows[:, :9], model="m", encoding_format="float"), {}),
        (response_body(rows[:, :9], model="m", encoding_format="float", float_format="shortest"), {}),
        (response_body(rows[:2, :5], model="m/", encoding_format="base64", **half).replace(b"/", b"\\/"), half),
        (b'{"data":[{"index":0,"embedding":"' + b"A" * 200, {}),
    ]


def test_response_bodies_ending_at_a_guard_page(each_simd_level, region):
    from tensorb64.openai import decode_response_body

    for body, options in _bodies():
        for n in range(len(body) + 1):
            guarded = region.array_at_end(n, np.uint8)
            guarded[:] = np.frombuffer(body[:n], np.uint8)
            try:
                expected = decode_response_body(body[:n], **options)
            except ValueError as e:
                with pytest.raises(ValueError) as info:
                    decode_response_body(memoryview(guarded), **options)
                assert str(info.value) == str(e)
            else:
                assert decode_response_body(memoryview(guarded), **options).tobytes() == expected.tobytes()
