"""The caller's floating-point environment changes no byte, and is given back unchanged.

The Python twin of the C++ FP-environment test, run against whatever extension is installed: a
server process may run with flush-to-zero / denormals-are-zero set (a library built with
-ffast-math sets them at load time) or another rounding mode, and the SIMD conversions (vcvtpd2ps,
vcvtps2ph; NEON fcvtn) obey MXCSR / FPCR. Each call must produce the bytes it produces in the
default environment, and leave the caller's environment as it found it.

The environment is set through the C library with ctypes: fegetenv/fesetenv, whose fenv_t holds
the raw MXCSR on x86-64 (glibc, musl, macOS) and FPCR on aarch64 (glibc, musl, macOS); on Windows,
_controlfp (its _DN_FLUSH sets both FTZ and DAZ in MXCSR).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import sys
from contextlib import contextmanager

import numpy as np
import pytest

import tensorb64

OUTPUT_DTYPES = ["float32", "float16", "bfloat16", "fp8_e4m3", "fp8_e5m2"]
MACHINE = platform.machine().lower()
IS_X86_64 = MACHINE in ("x86_64", "amd64")
IS_AARCH64 = MACHINE in ("aarch64", "arm64")

# MXCSR: DAZ (bit 6), rounding control (bits 13-14; 0b10 = toward +inf), FTZ (bit 15).
MXCSR_DAZ, MXCSR_ROUND_UP, MXCSR_FTZ, MXCSR_ROUNDING = 1 << 6, 2 << 13, 1 << 15, 3 << 13
# FPCR: FZ16 (bit 19), RMode (bits 22-23; 0b01 = toward +inf), FZ (bit 24).
FPCR_FZ16, FPCR_ROUND_UP, FPCR_FZ, FPCR_RMODE = 1 << 19, 1 << 22, 1 << 24, 3 << 22


class _FenvAccess:
    """Reads and writes the SIMD control register through fegetenv/fesetenv (POSIX C libraries)."""

    def __init__(self):
        libm = ctypes.CDLL(None)  # the interpreter links libm (glibc) or holds it in libc (musl, macOS)
        if not hasattr(libm, "fegetenv"):
            libm = ctypes.CDLL(ctypes.util.find_library("m"))
        self._get, self._set = libm.fegetenv, libm.fesetenv
        # Where the register sits in fenv_t, and how wide it is.
        if IS_X86_64 and sys.platform == "darwin":
            self._offset, self._type = 4, ctypes.c_uint32     # {u16 control, u16 status, u32 mxcsr, ...}
        elif IS_X86_64:
            self._offset, self._type = 28, ctypes.c_uint32    # glibc/musl: the x87 env, then u32 mxcsr
        elif IS_AARCH64 and sys.platform == "darwin":
            self._offset, self._type = 8, ctypes.c_uint64     # {u64 fpsr, u64 fpcr}
        else:
            self._offset, self._type = 0, ctypes.c_uint32     # glibc/musl: {u32 fpcr, u32 fpsr}
        self._env = ctypes.create_string_buffer(64)          # larger than any fenv_t

    def read(self) -> int:
        """The control bits (x86-64: MXCSR less its sticky exception flags, bits 0-5, which any
        floating-point operation in between may raise; aarch64 keeps those in FPSR instead)."""
        assert self._get(self._env) == 0
        value = self._type.from_buffer(self._env, self._offset).value
        return value & ~0x3F if IS_X86_64 else value

    def write(self, value: int) -> None:
        assert self._get(self._env) == 0
        self._type.from_buffer(self._env, self._offset).value = value
        assert self._set(self._env) == 0


class _WindowsControlfp:
    """MSVC's _controlfp: the CRT's portable view of MXCSR (x64) or FPCR (arm64)."""

    DN_FLUSH, MCW_DN, RC_UP, MCW_RC = 0x01000000, 0x03000000, 0x00000200, 0x00000300

    def __init__(self):
        self._controlfp = ctypes.CDLL("ucrtbase")._controlfp
        self._controlfp.restype = ctypes.c_uint
        self._controlfp.argtypes = [ctypes.c_uint, ctypes.c_uint]

    def read(self) -> int:
        return self._controlfp(0, 0)

    def write(self, value: int) -> None:
        self._controlfp(value, self.MCW_DN | self.MCW_RC)


def _access():
    if not (IS_X86_64 or IS_AARCH64):
        pytest.skip(f"the FTZ/rounding register layout is only written for x86-64 and aarch64, not {MACHINE}")
    return _WindowsControlfp() if sys.platform == "win32" else _FenvAccess()


def _hostile_value(access) -> int:
    """The register value with flush-to-zero, denormals-are-zero and round-upward set."""
    current = access.read()
    if isinstance(access, _WindowsControlfp):
        return (current & ~(access.MCW_DN | access.MCW_RC)) | access.DN_FLUSH | access.RC_UP
    if IS_X86_64:
        return (current & ~MXCSR_ROUNDING) | MXCSR_DAZ | MXCSR_FTZ | MXCSR_ROUND_UP
    return (current & ~FPCR_RMODE) | FPCR_FZ | FPCR_FZ16 | FPCR_ROUND_UP


@contextmanager
def _environment(access, value: int):
    caller = access.read()
    access.write(value)
    try:
        yield
    finally:
        access.write(caller)
    assert access.read() == caller


def _inputs():
    """Values whose conversion depends on rounding and flushing: subnormals of each format, ties,
    values between two representable neighbours, values just past each narrow format's range."""
    f32_subnormals = np.array([1e-45, -1e-45, 1e-40, -5.9e-39, 1.1754942e-38], dtype=np.float32)
    near = np.array([1 / 3, -1 / 3, 2 / 3, 3.0000001, 1.00048828125, 1.0009765625 + 2 ** -24, 0.1, -0.7,
                     65519.0, 65520.0, 464.0, 57344.0, 61440.0, 6e-8, 5.96e-8, 2.98e-8, 1e-5, -6.1e-5,
                     0.015625 * 0.1, 2 ** -10 + 2 ** -25, 1e-300, -1e-310, 3.4028235677973366e38, 1e39],
                    dtype=np.float64)
    rng = np.random.default_rng(7)
    noise = rng.standard_normal(300) * 10.0 ** rng.integers(-44, 5, 300)
    with np.errstate(over="ignore", under="ignore"):
        return {
            "float32": np.concatenate([f32_subnormals, near.astype(np.float32), noise.astype(np.float32)]),
            "float64": np.concatenate([near, noise, f32_subnormals.astype(np.float64) * 1.0000001]),
            "float16": np.concatenate([np.array([6e-8, -6e-8, 3e-5, 6.1e-5], dtype=np.float16),
                                       near.astype(np.float16), noise.astype(np.float16)]),
        }


def _encodings(arrays) -> list:
    out = []
    for _source, values in arrays.items():
        rows = np.resize(values, (3, len(values) - 1))  # odd lengths: the kernels' tails too
        for dtype in OUTPUT_DTYPES:
            for byteorder in ("little", "big"):
                out.append(tensorb64.encode(values, dtype=dtype, byteorder=byteorder))
                out.append(tensorb64.encode_rows(rows, dtype=dtype, byteorder=byteorder))
                out.append(tensorb64.encode_binary_body(rows, dtype=dtype, byteorder=byteorder))
    return out


def test_the_environment_is_really_set():
    """The helper itself: the register reads back with the bits set, and is restored."""
    access = _access()
    hostile = _hostile_value(access)
    caller = access.read()
    with _environment(access, hostile):
        assert access.read() == hostile
    assert access.read() == caller


def test_same_bytes_under_ftz_daz_and_round_upward(each_simd_level):
    access = _access()
    arrays = _inputs()
    expected = _encodings(arrays)
    hostile = _hostile_value(access)
    with _environment(access, hostile):
        got = _encodings(arrays)
        # The kernel pins IEEE defaults for the call only: the caller's setting is still in force.
        assert access.read() == hostile
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert g == e, f"encoding {i} differs under FTZ/DAZ/round-upward at level {each_simd_level}"

