"""Float text rows (json_rows, and the float response bodies that share its writer), checked
against the standard library and numpy, never against the package itself.

* repr mode: byte for byte ``json.dumps(row.to(torch.float32).tolist(), separators=(",", ":"))``
  (float64 sources: the doubles themselves), for every source dtype, layout and byte order.
* shortest mode: every token reads back (as a double, then rounded to float32) to the same
  float32 bits, is its own ``repr``, and has exactly numpy's shortest unique digits (Dragon4), the
  one documented exception being 0x15ae43fd / 0x95ae43fd (double rounding, see
  cpp/src/float_text/float_text.hpp write_shortest_f32).
* orjson mode: byte for byte what orjson writes for the row as a float32 numpy array
  (``OPT_SERIALIZE_NUMPY``: vLLM's float route), float64 sources for the doubles as Python floats.
* NaN and infinity: a ValueError naming the row and the column, from every entry point, before
  any chunk of a streamed body.
* threads and SIMD levels do not change a byte.
* the float body is Starlette's JSONResponse body, and its rows are json_rows's rows spliced in.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

# torch is the oracle (and a source type) throughout; where it is absent (the CPythons other than
# 3.11 in CI) the module skips with this reason.
torch = pytest.importorskip("torch", reason="torch is the oracle for the float text")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402

from tensorb64 import json_rows  # noqa: E402
from tensorb64.openai import iter_response_body, response_body  # noqa: E402

try:
    import ml_dtypes
except ImportError:  # numpy bfloat16 sources are then only tested through torch
    ml_dtypes = None

SEPARATORS = (",", ":")
MODEL = "text-embedding-test"
DEFAULT_USAGE = {"prompt_tokens": 0, "total_tokens": 0}

# The one float32 whose shortest digits (7.038531e-26) a double-first reader misreads: read as a
# double, then rounded to float32, they give 0x15ae43fe. The core writes 8 digits for it.
DOUBLE_ROUNDING_BITS = {0x15AE43FD: "7.0385307e-26", 0x95AE43FD: "-7.0385307e-26"}


# ----------------------------------------------------------------------------- helpers


def f32_from_bits(bits) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def bits_of_f32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def as_2d(a: np.ndarray) -> np.ndarray:
    """Leading dims as rows (works for zero-sized shapes too)."""
    if a.ndim == 1:
        return a.reshape(1, a.shape[0])
    return a.reshape(math.prod(a.shape[:-1]), a.shape[-1])


def reference_values(x) -> np.ndarray:
    """The values json.dumps(t.tolist()) would see, as a native 2-D float32/float64 array:
    ``x.to(torch.float32)`` for every source but float64, whose doubles are taken as they are."""
    if isinstance(x, torch.Tensor):
        a = x.numpy() if x.dtype == torch.float64 else x.to(torch.float32).numpy()
    else:
        a = np.asarray(x)
        a = a.astype("=f8") if a.dtype.kind == "f" and a.dtype.itemsize == 8 else a.astype("=f4")
    return as_2d(a)


def reference_rows(x) -> list:
    return [json.dumps(row, separators=SEPARATORS).encode() for row in reference_values(x).tolist()]


def tokens_of(row: bytes) -> list:
    assert row[:1] == b"[" and row[-1:] == b"]", row[:40]
    inner = row[1:-1]
    return inner.split(b",") if inner else []


def significant_digits(text: str) -> str:
    """The significant digits of a decimal number's text: '-0.000123e+05' -> '123'."""
    mantissa = text.split("e")[0].lstrip("-").replace(".", "")
    return mantissa.lstrip("0").rstrip("0") or "0"


def check_shortest_tokens(values: np.ndarray, tokens: list) -> None:
    """Every property shortest mode promises, for float32 values and the tokens written for them."""
    values = np.asarray(values, dtype=np.float32).reshape(-1)
    assert len(tokens) == values.size
    texts = [t.decode("ascii") for t in tokens]
    # (a) read back as a double, then rounded to float32: the same bits (the sign of zero too).
    doubles = np.array([float(t) for t in texts], dtype=np.float64)
    readback = doubles.astype(np.float32).view(np.uint32)
    expected_bits = values.view(np.uint32)
    bad = np.flatnonzero(readback != expected_bits)
    assert bad.size == 0, [(hex(int(expected_bits[i])), texts[i], hex(int(readback[i]))) for i in bad[:10]]
    for bits, text in zip(expected_bits.tolist(), texts, strict=True):
        # (b) the token is Python's own text for that double.
        assert repr(float(text)) == text, (hex(bits), text)
        numpy_text = np.format_float_scientific(np.uint32(bits).view(np.float32), unique=True)
        if bits in DOUBLE_ROUNDING_BITS:
            # The documented exception: one digit more than numpy's float32-direct shortest,
            # because numpy's 7 digits do not survive the double-first read.
            assert text == DOUBLE_ROUNDING_BITS[bits]
            assert len(significant_digits(text)) == 8
            assert len(significant_digits(numpy_text)) == 7, numpy_text
            assert np.float32(float(text)).view(np.uint32) == bits
            assert np.float32(text).view(np.uint32) == bits
            continue
        # (c) as many significant digits as numpy's shortest unique float32 text, and the same
        # digits (the nearest of that length, as the issue asks).
        assert len(significant_digits(text)) == len(significant_digits(numpy_text)), (hex(bits), text, numpy_text)
        assert significant_digits(text) == significant_digits(numpy_text), (hex(bits), text, numpy_text)


def shortest_check(x_f32: np.ndarray, **kwargs) -> list:
    """json_rows(shortest) of a float32 array, each row's tokens checked; returns the rows."""
    rows = json_rows(x_f32, float_format="shortest", **kwargs)
    values = as_2d(np.asarray(x_f32, dtype=np.float32))
    assert len(rows) == values.shape[0]
    for row, vals in zip(rows, values, strict=True):
        check_shortest_tokens(vals, tokens_of(row))
    return rows


def splice_body(rows: list, model: str = MODEL, usage=None) -> bytes:
    """The response body built by hand around json_rows's rows."""
    usage = DEFAULT_USAGE if usage is None else usage
    data = b",".join(b'{"object":"embedding","index":%d,"embedding":%s}' % (i, row) for i, row in enumerate(rows))
    tail = json.dumps({"model": model, "usage": usage}, ensure_ascii=False, separators=SEPARATORS).encode()
    return b'{"object":"list","data":[' + data + b"]," + tail[1:]


def starlette_body(float_rows: list, model: str = MODEL, usage=None) -> bytes:
    body = {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(float_rows)],
        "model": model,
        "usage": DEFAULT_USAGE if usage is None else usage,
    }
    return JSONResponse(body).body


def all_float16_finite() -> np.ndarray:
    """Every finite float16 value (63,488 of them, ±0 included)."""
    v = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    return v[np.isfinite(v)]


def all_bfloat16_finite_bits() -> np.ndarray:
    """Every finite bfloat16 bit pattern (65,280 of them), as uint16."""
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    return bits[((bits >> 7) & 0xFF) != 0xFF]


def bfloat16_tensor(bits16: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(bits16.astype(np.uint16).view(np.int16).copy()).view(torch.bfloat16)


def special_float32_bits() -> list:
    """Zeros, subnormal bounds, FLT_MAX, powers of ten (each float32 exponent's decade) and their
    neighbours, the layout thresholds 1e-4 and 1e16 with neighbours, and a few well known values."""
    bits = {0x00000000, 0x00000001, 0x00000002, 0x007FFFFF, 0x007FFFFE, 0x00800000, 0x00800001,
            0x7F7FFFFF, 0x7F7FFFFE, 0x3F800000, 0x3F7FFFFF, 0x3F800001, 0x4B800000, 0x4B800001,
            0x4B7FFFFF, 0x5A0E1BCA}  # 1.0 and neighbours, 2**24 and neighbours, ~1e16
    centres = [np.float32(10.0**k) for k in range(-45, 39)]
    centres += [np.float32(x) for x in (1e-4, 1e16, 1e-5, 1.5e16, 0.1, 0.2, 0.3, 1 / 3, 2 / 3, 9.999999e15,
                                        1.0000001e16, 9.9999e-5, 1.00001e-4, 123456789.0, 0.5, 0.05, 3.0e38)]
    for c in centres:
        b = int(np.float32(c).view(np.uint32))
        if b == 0:
            continue
        bits.update(b + d for d in range(-3, 4) if 0 < b + d < 0x7F800000)
    bits |= set(DOUBLE_ROUNDING_BITS) & {0x15AE43FD}
    out = sorted(bits)
    return out + [b | 0x80000000 for b in out]


SPECIAL_F32 = f32_from_bits(special_float32_bits())

SPECIAL_F64 = np.array(
    [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 2.225073858507201e-308, 1.7976931348623157e308,
     -1.7976931348623157e308, 1e-4, np.nextafter(1e-4, 0), np.nextafter(1e-4, 1), 1e16, np.nextafter(1e16, 0),
     np.nextafter(1e16, 1e17), 1e-5, 1.5e16, 0.1, 0.2, 0.30000000000000004, 1 / 3, 2.0**53, 2.0**53 + 2,
     9007199254740993.0, 1e23, 5e-310, 1e300, 3.4028235677973366e38, 1e-50, 123456789012345680.0]
    + [10.0**k for k in range(-323, 309)]
    + [float(np.float32(10.0**k)) for k in range(-45, 39)],
    dtype=np.float64,
)


# ----------------------------------------------------------------------------- strategies

# Any finite float32 bit pattern: an all-ones exponent gets its top bit cleared.
finite_f32_bits = st.one_of(
    st.integers(0, 2**32 - 1).map(lambda b: b ^ (1 << 30) if (b >> 23) & 0xFF == 0xFF else b),
    st.floats(width=32, allow_nan=False, allow_infinity=False).map(lambda f: int(np.float32(f).view(np.uint32))),
    st.sampled_from(special_float32_bits()),
)

f32_bit_arrays = hnp.arrays(np.uint32, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=12),
                            elements=finite_f32_bits)

finite_doubles = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(SPECIAL_F64.tolist()))

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ----------------------------------------------------------------------------- 1. repr mode


def test_repr_known_texts():
    x = torch.tensor([[0.1, -0.0, 1e-5, 1.5e16, 3.4028234663852886e38, 0.0]])
    assert json_rows(x) == [b"[0.10000000149011612,-0.0,9.999999747378752e-06,1.5000000408846336e+16,3.4028234663852886e+38,0.0]"]
    assert json_rows(x) == reference_rows(x)
    d = torch.tensor([[0.1, 1e-5, 1.5e16, 1e-4, 1e16]], dtype=torch.float64)
    assert json_rows(d) == [b"[0.1,1e-05,1.5e+16,0.0001,1e+16]"]


@pytest.mark.parametrize("layout", ["row", "column"])
def test_repr_special_float32(layout):
    values = SPECIAL_F32 if layout == "row" else SPECIAL_F32.reshape(-1, 1)
    t = torch.from_numpy(values.copy())
    assert json_rows(t) == reference_rows(t)
    assert json_rows(values) == reference_rows(values)
    assert json_rows(values.astype(">f4")) == reference_rows(values)
    # Widened exactly: the same values through float64 sources give the doubles' own text.
    wide = values.astype(np.float64)
    assert json_rows(wide) == reference_rows(wide) == reference_rows(values)


def test_repr_special_float64():
    for x in (SPECIAL_F64, SPECIAL_F64.astype(">f8"), torch.from_numpy(SPECIAL_F64.copy()), SPECIAL_F64.reshape(-1, 1)):
        got = json_rows(x)
        assert got == reference_rows(x)
    assert json_rows(SPECIAL_F64)[0] == json.dumps(SPECIAL_F64.tolist(), separators=SEPARATORS).encode()
    # float64 doubles are written as they are, not narrowed to float32 first.
    assert json_rows(np.array([0.1, 1e300, 5e-324]))[0] == b"[0.1,1e+300,5e-324]"


def test_repr_every_float16_value():
    values = all_float16_finite()  # 63,488 = 8 rows of 7,936
    t = torch.from_numpy(values.copy()).reshape(8, -1)
    assert json_rows(t) == reference_rows(t)
    assert json_rows(values.reshape(8, -1)) == reference_rows(t)
    assert json_rows(values.reshape(8, -1).astype(">f2")) == reference_rows(t)
    assert json_rows(t.T) == reference_rows(t.T)


def test_repr_every_bfloat16_value():
    bits = all_bfloat16_finite_bits()  # 65,280 = 8 rows of 8,160
    t = bfloat16_tensor(bits).reshape(8, -1)
    expected = reference_rows(t)
    assert json_rows(t) == expected
    widened = (bits.astype(np.uint32) << 16).view(np.float32).reshape(8, -1)
    assert expected == reference_rows(widened)
    assert json_rows(t[1::2, 3::5]) == reference_rows(t[1::2, 3::5])
    if ml_dtypes is not None:
        assert json_rows(bits.view(ml_dtypes.bfloat16).reshape(8, -1)) == expected


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_every_float8_value(dtype):
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dtype)
    finite = codes[torch.isfinite(codes.to(torch.float32))].reshape(2, -1)
    assert json_rows(finite) == reference_rows(finite)
    widened = finite.to(torch.float32).numpy()
    assert json_rows(finite, float_format="shortest") == shortest_check(widened)


@SETTINGS
@given(f32_bit_arrays)
def test_repr_random_float32_bit_patterns(bits):
    a = bits.view(np.float32)
    expected = reference_rows(a)
    t = torch.from_numpy(a.copy())
    assert json_rows(t) == expected
    assert json_rows(a) == expected
    assert json_rows(a.astype(">f4")) == expected
    if a.ndim >= 2:
        assert json_rows(t.transpose(-1, -2)) == reference_rows(t.transpose(-1, -2))
        assert json_rows(a[..., ::-1, ::-1]) == reference_rows(a[..., ::-1, ::-1])
    assert json_rows(a[..., ::2]) == reference_rows(a[..., ::2])


@SETTINGS
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=16), elements=finite_doubles))
def test_repr_random_float64(a):
    expected = [json.dumps(r, separators=SEPARATORS).encode() for r in as_2d(a).tolist()]
    assert json_rows(a) == expected
    assert json_rows(torch.from_numpy(a.copy())) == expected
    assert json_rows(a.astype(">f8")) == expected
    # float64 sources in shortest mode: exactly repr mode.
    assert json_rows(a, float_format="shortest") == expected


def test_repr_large_random_sample():
    rng = np.random.default_rng(20261129)
    bits = rng.integers(0, 2**32, size=1 << 17, dtype=np.uint64).astype(np.uint32)
    bits = np.where(((bits >> 23) & 0xFF) == 0xFF, bits ^ (1 << 30), bits).reshape(64, -1)
    a = bits.view(np.float32)
    assert json_rows(a) == reference_rows(a)
    assert json_rows(a, threads=2) == reference_rows(a)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_repr_torch_views_and_nd(dtype):
    g = torch.Generator().manual_seed(7)
    base = (torch.randn(6, 5, 40, generator=g) * torch.logspace(-4, 4, 40)).to(dtype)
    views = {
        "contiguous 3-D": base,
        "2-D": base[2],
        "1-D": base[1, 3],
        "column slice": base[:, :, 5:29],
        "step": base[:, 1::2, ::3],
        "transposed": base.transpose(0, 2),
        "permuted": base.permute(1, 2, 0),
        "expanded (zero stride)": base[0, 0].expand(4, 40),
        "one column": base[:, :, 7:8],
        "4-D": base.reshape(2, 3, 5, 40),
    }
    for name, v in views.items():
        assert json_rows(v) == reference_rows(v), name


@pytest.mark.parametrize("dtype", ["<f4", ">f4", "<f2", ">f2", "<f8", ">f8"])
def test_repr_numpy_views_and_byte_orders(dtype):
    rng = np.random.default_rng(3)
    scale = np.logspace(-4, 4, 33) if np.dtype(dtype).itemsize == 2 else np.logspace(-7, 7, 33)
    base = (rng.standard_normal((5, 4, 33)) * scale).astype(dtype)
    views = {
        "contiguous": base,
        "negative strides": base[::-1, :, ::-1],
        "negative step 3": base[:, ::-2, ::-3],
        "transposed": base.T,
        "fortran order": np.asfortranarray(base[0]),
        "1-D": base[0, 0],
        "1-D negative": base[1, 2, ::-1],
        "broadcast": np.broadcast_to(base[0, 0], (3, 33)),
    }
    for name, v in views.items():
        assert json_rows(v) == reference_rows(v), name
        if np.dtype(dtype).itemsize != 8:
            # Non-float64 sources in shortest mode are the float32 values' shortest text.
            rows = json_rows(v, float_format="shortest")
            assert rows == json_rows(np.ascontiguousarray(v, dtype=np.float32), float_format="shortest"), name


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, ">i4", ">u8", np.bool_])
def test_repr_integer_and_bool_numpy(dtype):
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    if info is None:
        a = np.array([[True, False, True], [False, False, True]])
    else:
        edge = [info.min, info.max, 0, 1, info.max // 3, info.min // 7, info.max - 1]
        if np.dtype(dtype).itemsize == 8:
            # Exact ties and just-above-ties for float32 rounding (a double-first conversion
            # would round 2**62 + 2**38 + 1 to 2**62; torch rounds it up to 2**62 + 2**39).
            edge += [2**62 + 2**38 + 1, 2**62 + 2**38, 2**62 + 3 * 2**38, 2**53 + 1, 2**24 + 1]
            if info.min < 0:
                edge += [-(2**62 + 2**38 + 1), -(2**53 + 1)]
            else:
                edge += [2**63 + 2**39 + 1, 2**64 - 1]
        a = np.array([v for v in edge if info.min <= v <= info.max], dtype=dtype).reshape(1, -1)
    expected = reference_rows(torch.from_numpy(a.astype(a.dtype.newbyteorder("="))))
    assert json_rows(a) == expected
    assert json_rows(a[:, ::-1]) == reference_rows(torch.from_numpy(np.ascontiguousarray(a[:, ::-1]).astype(a.dtype.newbyteorder("="))))
    assert json_rows(a, float_format="shortest") == json_rows(reference_values(torch.from_numpy(a.astype(a.dtype.newbyteorder("=")))), float_format="shortest")


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool])
def test_repr_integer_and_bool_torch(dtype):
    g = torch.Generator().manual_seed(11)
    if dtype == torch.bool:
        t = torch.randint(0, 2, (4, 9), generator=g).bool()
    else:
        info = torch.iinfo(dtype)
        t = torch.randint(info.min, info.max, (4, 9), generator=g, dtype=dtype)
        t[0, :2] = torch.tensor([info.min, info.max], dtype=dtype)
        if dtype == torch.int64:
            t[1, :4] = torch.tensor([2**62 + 2**38 + 1, -(2**62 + 2**38 + 1), 2**53 + 1, 2**24 + 1])
    assert json_rows(t) == reference_rows(t)
    assert json_rows(t.T) == reference_rows(t.T)


def test_repr_empty_shapes():
    assert json_rows(torch.empty(0, 5)) == []
    assert json_rows(torch.empty(3, 0)) == [b"[]"] * 3
    assert json_rows(np.empty((2, 0, 4), np.float32)) == []
    assert json_rows(np.empty(0, np.float32)) == [b"[]"]


# ----------------------------------------------------------------------------- 2. shortest mode


def test_shortest_known_texts():
    x = np.array([[0.1, -0.0, 1e-5, 1.5e16, 3.4028235e38, 1e-4, 1e16, 1.4e-45, 1.0, 0.0]], dtype=np.float32)
    assert json_rows(x, float_format="shortest") == [b"[0.1,-0.0,1e-05,1.5e+16,3.4028235e+38,0.0001,1e+16,1e-45,1.0,0.0]"]


def test_shortest_double_rounding_exception():
    x = f32_from_bits([0x15AE43FD, 0x95AE43FD, 0x15AE43FE, 0x15AE43FC])
    rows = shortest_check(x.reshape(1, -1))
    toks = tokens_of(rows[0])
    assert toks[:2] == [b"7.0385307e-26", b"-7.0385307e-26"]
    # Why: numpy's 7 digits, read as a double then rounded to float32, land on the neighbour.
    assert np.format_float_scientific(x[0], unique=True) == "7.038531e-26"
    assert np.float32(float("7.038531e-26")).view(np.uint32) == 0x15AE43FE
    # The neighbours are ordinary: numpy's digits.
    for tok, v in zip(toks[2:], x[2:], strict=True):
        assert significant_digits(tok.decode()) == significant_digits(np.format_float_scientific(v, unique=True))


def test_shortest_special_float32():
    shortest_check(SPECIAL_F32.reshape(1, -1))
    shortest_check(SPECIAL_F32.reshape(-1, 1)[::-1])
    assert json_rows(SPECIAL_F32.astype(">f4"), float_format="shortest") == json_rows(SPECIAL_F32, float_format="shortest")


def test_shortest_every_float16_value():
    values = all_float16_finite()
    widened = values.astype(np.float32).reshape(8, -1)
    rows = shortest_check(widened)
    # A float16 source is its float32 widening, in shortest mode too.
    assert json_rows(torch.from_numpy(values.copy()).reshape(8, -1), float_format="shortest") == rows
    assert json_rows(values.reshape(8, -1), float_format="shortest") == rows


def test_shortest_every_bfloat16_value():
    bits = all_bfloat16_finite_bits()
    widened = (bits.astype(np.uint32) << 16).view(np.float32).reshape(8, -1)
    rows = shortest_check(widened)
    assert json_rows(bfloat16_tensor(bits).reshape(8, -1), float_format="shortest") == rows
    if ml_dtypes is not None:
        assert json_rows(bits.view(ml_dtypes.bfloat16).reshape(8, -1), float_format="shortest") == rows


@SETTINGS
@given(f32_bit_arrays)
def test_shortest_random_float32_bit_patterns(bits):
    a = bits.view(np.float32)
    rows = shortest_check(a)
    assert json_rows(torch.from_numpy(a.copy()), float_format="shortest") == rows
    assert json_rows(a.astype(">f4"), float_format="shortest") == rows
    if a.ndim >= 2:
        assert json_rows(a[..., ::-1], float_format="shortest") == [b"[" + b",".join(tokens_of(r)[::-1]) + b"]" for r in rows]


def test_shortest_large_random_sample():
    rng = np.random.default_rng(1129)
    bits = rng.integers(0, 2**32, size=1 << 18, dtype=np.uint64).astype(np.uint32)
    bits = np.where(((bits >> 23) & 0xFF) == 0xFF, bits ^ (1 << 30), bits).reshape(64, -1)
    shortest_check(bits.view(np.float32))


def test_shortest_float64_equals_repr():
    for x in (SPECIAL_F64, SPECIAL_F64.astype(">f8"), torch.from_numpy(SPECIAL_F64.copy()).reshape(-1, 1)):
        assert json_rows(x, float_format="shortest") == json_rows(x) == reference_rows(x)


# ---- orjson mode ----------------------------------------------------------------------------------


def orjson_rows(a: np.ndarray) -> list:
    """orjson's text of each row of a 2-D float32 array (as numpy arrays) or float64 one (as Python floats)."""
    orjson = pytest.importorskip("orjson", reason="orjson has no wheel for this CPython (free-threaded builds)")
    if a.dtype == np.float64:
        return [orjson.dumps(row.tolist()) for row in a]
    return [orjson.dumps(np.ascontiguousarray(row, dtype=np.float32), option=orjson.OPT_SERIALIZE_NUMPY) for row in a]


@pytest.mark.usefixtures("each_simd_level")
def test_orjson_random_float32_and_specials():
    rng = np.random.default_rng(2026)
    bits = rng.integers(0, 2**32, size=1 << 18, dtype=np.uint64).astype(np.uint32)
    bits = np.where(((bits >> 23) & 0xFF) == 0xFF, bits ^ (1 << 30), bits)
    powers = [m * 10.0**k for k in range(-45, 38) for m in (1.0, 1.5, 9.99)]  # each side of every threshold
    values = np.concatenate([bits.view(np.float32), SPECIAL_F32, np.float32(powers), -np.float32(powers)])
    a = values[np.isfinite(values)][: (values.size // 256) * 256].reshape(256, -1)
    expected = orjson_rows(a)
    assert json_rows(a, float_format="orjson") == expected
    assert json_rows(torch.from_numpy(a.copy()), float_format="orjson", threads=2) == expected
    assert json_rows(a.astype(">f4"), float_format="orjson") == expected
    assert json_rows(a[:, ::-1], float_format="orjson") == orjson_rows(a[:, ::-1])


def test_orjson_other_sources():
    """bfloat16 / float16 rows as their float32 values (orjson of the widened array); float64 rows
    as Python floats."""
    x = torch.randn(16, 300, generator=torch.Generator().manual_seed(8)) * torch.logspace(-9, 14, 300)
    for source in (x.to(torch.bfloat16), x.clamp(-65504, 65504).to(torch.float16)):
        assert json_rows(source, float_format="orjson") == orjson_rows(source.to(torch.float32).numpy())
    doubles = np.concatenate([x.numpy().astype(np.float64) * np.pi, SPECIAL_F64[np.isfinite(SPECIAL_F64)][None].repeat(16, 0)], axis=1)
    assert json_rows(doubles, float_format="orjson") == orjson_rows(doubles)


def test_float_format_and_threads_are_checked():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="float_format"):
        json_rows(x, float_format="bogus")
    with pytest.raises(ValueError, match="threads"):
        json_rows(x, threads=0)
    with pytest.raises(ValueError, match="float_format"):
        response_body(x, model=MODEL, encoding_format="float", float_format="Shortest")


# ----------------------------------------------------------------------------- 3. NaN and infinity


def _bad_message(row: int, column: int) -> str:
    return rf"\brow {row}, column {column}\b"


def _float_entry_points(x, row, column, *, bodies=True):
    """Every float-text entry point refuses x, naming (row, column); no chunk is yielded.
    (The response bodies take 2-D or 1-D embeddings only: bodies=False for N-D inputs.)"""
    pattern = _bad_message(row, column)
    for float_format in ("repr", "shortest"):
        for threads in (1, 3):
            with pytest.raises(ValueError, match=pattern):
                json_rows(x, float_format=float_format, threads=threads)
            if not bodies:
                continue
            with pytest.raises(ValueError, match=pattern):
                response_body(x, model=MODEL, encoding_format="float", float_format=float_format, threads=threads)
        if not bodies:
            continue
        chunks = []
        with pytest.raises(ValueError, match=pattern):
            for chunk in iter_response_body(x, model=MODEL, encoding_format="float", float_format=float_format, chunk_size=256):
                chunks.append(chunk)
        assert chunks == []
        # Documented: the scan happens when iter_response_body is called, not at the first chunk.
        with pytest.raises(ValueError, match=pattern):
            iter_response_body(x, model=MODEL, encoding_format="float", float_format=float_format)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("shape,row,column", [
    ((4, 7), 0, 0), ((4, 7), 2, 0), ((4, 7), 2, 3), ((4, 7), 2, 6), ((4, 7), 3, 6),
    ((1, 1), 0, 0), ((3, 3000), 1, 1500), ((3, 3000), 2, 2999), ((50, 17), 49, 16), ((50, 17), 33, 5),
])
@pytest.mark.parametrize("source", ["torch float32", "torch float16", "torch bfloat16", "torch float64", "numpy >f4", "numpy >f8"])
def test_non_finite_names_row_and_column(bad, shape, row, column, source):
    a = np.random.default_rng(5).standard_normal(shape).astype(np.float32) * 0.05
    a[row, column] = bad
    if source.startswith("torch"):
        x = torch.from_numpy(a).to(getattr(torch, source.split()[1]))
    else:
        x = a.astype(source.split()[1])
    _float_entry_points(x, row, column)


@pytest.mark.parametrize("width", [1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 129])
def test_non_finite_every_column_each_simd_level(each_simd_level, width):
    """A non-finite value in each column in turn (any SIMD block boundary), in row 2 of 3;
    NaN payloads, signaling NaNs and both infinities, in each source width."""
    patterns = {
        "float32": (np.uint32, [0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF, 0x7F800000, 0xFF800000]),
        "float16": (np.uint16, [0x7E00, 0xFC01, 0x7C01, 0x7C00, 0xFC00]),
        "float64": (np.uint64, [0x7FF8000000000000, 0x7FF0000000000001, 0xFFF0000000000000, 0x7FF0000000000000]),
    }
    for name, (storage, bad_bits) in patterns.items():
        for column in range(width):
            bits = np.zeros((3, width), storage)
            bits[2, column] = bad_bits[column % len(bad_bits)]
            x = bits.view(name)
            for float_format in ("repr", "shortest"):
                with pytest.raises(ValueError, match=_bad_message(2, column)):
                    json_rows(x, float_format=float_format)
            with pytest.raises(ValueError, match=_bad_message(2, column)):
                response_body(x, model=MODEL, encoding_format="float")
    # bfloat16: NaN, signaling NaN, ±inf.
    for column, b in enumerate([0x7FC0, 0x7F81, 0x7F80, 0xFF80][:width]):
        bits = np.zeros((3, width), np.uint16)
        bits[2, column] = b
        with pytest.raises(ValueError, match=_bad_message(2, column)):
            json_rows(bfloat16_tensor(bits), float_format="shortest")


def test_non_finite_positions_are_those_of_the_view():
    base = np.ones((4, 14), np.float32)
    base[2, 6] = np.nan
    _float_entry_points(base[:, ::2], 2, 3)  # strided view
    t = torch.ones(7, 9)
    t[5, 2] = float("inf")
    _float_entry_points(t.T, 2, 5)  # transposed
    nd = torch.ones(2, 3, 5)
    nd[1, 2, 4] = float("-inf")
    _float_entry_points(nd, 5, 4, bodies=False)  # leading dims are rows: (1, 2) is row 5
    rev = np.ones((4, 7), ">f4")
    rev[0, 0] = np.nan
    _float_entry_points(rev[::-1, ::-1], 3, 6)  # negative strides
    two = np.ones((6, 5), np.float32)
    two[4, 1] = np.nan
    two[1, 3] = np.inf
    with pytest.raises(ValueError, match=r"row (1, column 3|4, column 1)\b"):
        json_rows(two, threads=2)


def test_non_finite_outside_the_view_is_not_seen():
    base = np.full((3, 10), 0.5, np.float32)
    base[:, 9] = np.nan
    base[1, 1] = np.inf
    view = base[:, ::2][:, :4]  # columns 0, 2, 4, 6
    view_expected = [b"[0.5,0.5,0.5,0.5]"] * 3
    assert json_rows(view) == view_expected
    assert json_rows(view, float_format="shortest") == view_expected
    cut = base[[0, 2]]
    # `dimensions` is a view: the NaN in column 9 is cut away before the float text is written.
    body = response_body(cut, model=MODEL, encoding_format="float", dimensions=5)
    assert body == starlette_body([[0.5] * 5, [0.5] * 5])
    assert b"".join(iter_response_body(cut, model=MODEL, encoding_format="float", dimensions=5, chunk_size=64)) == body


# ----------------------------------------------------------------------------- 4. threads and SIMD levels


@pytest.mark.parametrize("batch", [0, 1, 2, 3, 4, 5, 7, 16, 31, 50])
def test_threads_change_nothing(batch):
    rng = np.random.default_rng(batch)
    a = (rng.standard_normal((batch, 45)) * rng.choice([1e-30, 1e-5, 0.05, 1.0, 1e20], size=(batch, 45))).astype(np.float32)
    for float_format in ("repr", "shortest"):
        single = json_rows(a, float_format=float_format)
        if float_format == "repr":
            assert single == reference_rows(a)
        body = response_body(a, model=MODEL, encoding_format="float", float_format=float_format)
        assert body == splice_body(single)
        for threads in (2, 3):
            assert json_rows(a, float_format=float_format, threads=threads) == single, threads
            assert json_rows(a[:, ::-3], float_format=float_format, threads=threads) == json_rows(a[:, ::-3], float_format=float_format)
            assert response_body(a, model=MODEL, encoding_format="float", float_format=float_format, threads=threads) == body
            chunks = list(iter_response_body(a, model=MODEL, encoding_format="float", float_format=float_format, threads=threads, chunk_size=700))
            assert b"".join(chunks) == body


def test_each_simd_level(each_simd_level):
    rng = np.random.default_rng(42)
    bits = rng.integers(0, 2**32, size=(9, 131), dtype=np.uint64).astype(np.uint32)
    bits = np.where(((bits >> 23) & 0xFF) == 0xFF, bits ^ (1 << 30), bits)
    a = bits.view(np.float32)
    f16 = all_float16_finite()[::8].reshape(4, -1)
    bf16 = bfloat16_tensor(all_bfloat16_finite_bits()[::5]).reshape(4, -1)
    sources = {
        "float32": a,
        "big-endian float32": a.astype(">f4"),
        "strided float32": a[::2, ::-3],
        "torch transposed": torch.from_numpy(a.copy()).T,
        "float16": f16,
        "big-endian float16": f16.astype(">f2"),
        "bfloat16": bf16,
        "float64": a.astype(np.float64) * 1.1,
        "special float32": SPECIAL_F32.reshape(2, -1),
        "int64": rng.integers(-(2**63), 2**63 - 1, size=(3, 50), dtype=np.int64),
    }
    for name, x in sources.items():
        expected = reference_rows(x)
        assert json_rows(x) == expected, (each_simd_level, name)
        assert json_rows(x, threads=2) == expected, (each_simd_level, name)
        values = reference_values(x)
        if values.dtype == np.float32:
            rows = shortest_check(values)
            assert json_rows(x, float_format="shortest") == rows, (each_simd_level, name)
            assert json_rows(x, float_format="shortest", threads=3) == rows, (each_simd_level, name)
        else:
            assert json_rows(x, float_format="shortest") == expected, (each_simd_level, name)
        assert response_body(x, model=MODEL, encoding_format="float") == starlette_body(values.tolist()), (each_simd_level, name)
    with pytest.raises(ValueError, match=_bad_message(8, 130)):
        bad = a.copy()
        bad[8, 130] = np.nan
        json_rows(bad)


# ----------------------------------------------------------------------------- 5. float bodies


@SETTINGS
@given(f32_bit_arrays.filter(lambda b: b.ndim <= 2))
def test_float_body_shortest_is_starlettes(bits):
    a = bits.view(np.float32)
    rows = json_rows(a, float_format="shortest")
    float_rows = [[float(t) for t in tokens_of(r)] for r in rows]
    body = response_body(a, model=MODEL, encoding_format="float", float_format="shortest")
    assert body == starlette_body(float_rows)
    assert body == splice_body(rows)
    parsed = json.loads(body)["data"]
    assert [d["index"] for d in parsed] == list(range(len(rows)))
    got = np.array([d["embedding"] for d in parsed], dtype=np.float64).astype(np.float32).reshape(as_2d(a).shape)
    assert np.array_equal(got.view(np.uint32), as_2d(a).view(np.uint32))
    # repr mode: Starlette's body for the tolist() rows.
    assert response_body(a, model=MODEL, encoding_format="float") == starlette_body(as_2d(a).tolist())


@pytest.mark.parametrize("float_format", ["repr", "shortest", "orjson"])
def test_float_body_sources_dimensions_and_stream(float_format):
    g = torch.Generator().manual_seed(3)
    base = torch.randn(12, 300, generator=g) * 0.05
    usage = {"prompt_tokens": 7, "total_tokens": 7, "nested": {"a": [1, 2.5, None]}}
    model = 'm "q" \\ \n ünï 🚀'
    for x in (base, base.to(torch.bfloat16), base.to(torch.float16), base.to(torch.float64), base.numpy().astype(">f4"), base.T[::3].T):
        for dimensions in (None, 1, 64, x.shape[1]):
            cut = x[:, :dimensions] if dimensions else x
            rows = json_rows(cut, float_format=float_format)
            if float_format == "repr":
                assert rows == reference_rows(cut)
            body = response_body(x, model=model, encoding_format="float", float_format=float_format, dimensions=dimensions, usage=usage)
            assert body == splice_body(rows, model, usage)
            if float_format != "orjson":  # (orjson's tokens are not all Python's repr)
                assert body == starlette_body([[float(t) for t in tokens_of(r)] for r in rows], model, usage)
            for chunk_size in (200, 4096, 1 << 20):
                chunks = list(iter_response_body(x, model=model, encoding_format="float", float_format=float_format,
                                                 dimensions=dimensions, usage=usage, chunk_size=chunk_size))
                assert b"".join(chunks) == body
    # The values read back: float32 sources parse to their own bits in either mode.
    body = json.loads(response_body(base, model=MODEL, encoding_format="float", float_format=float_format))
    got = np.array([d["embedding"] for d in body["data"]]).astype(np.float32)
    assert np.array_equal(got.view(np.uint32), base.numpy().view(np.uint32))


def test_float_body_empty():
    for float_format in ("repr", "shortest", "orjson"):
        assert response_body(torch.empty(0, 8), model=MODEL, encoding_format="float", float_format=float_format) == starlette_body([])
        assert response_body(torch.empty(2, 0), model=MODEL, encoding_format="float", float_format=float_format) == starlette_body([[], []])


def test_shortest_is_shorter_than_repr():
    a = (np.random.default_rng(0).standard_normal((8, 512)) * 0.05).astype(np.float32)
    assert sum(map(len, json_rows(a, float_format="shortest"))) < 0.7 * sum(map(len, json_rows(a)))
    assert re.fullmatch(rb"\[[-0-9.e+,]*\]", json_rows(a, float_format="shortest")[0])


# ----------------------------------------------------------------------------- alignment and size


@pytest.mark.parametrize("dtype", ["<f4", ">f4", "<f2", ">f2", "<f8", ">f8", "<i8", ">u2"])
def test_unaligned_and_read_only_buffers(dtype):
    rng = np.random.default_rng(17)
    values = (rng.standard_normal((5, 23)) * 100).astype(dtype)
    buffer = bytearray(b"\x00" + values.tobytes())
    unaligned = np.frombuffer(buffer, dtype=dtype, offset=1).reshape(5, 23)
    read_only = np.frombuffer(bytes(buffer), dtype=dtype, offset=1).reshape(5, 23)
    assert not unaligned.flags.aligned and not read_only.flags.writeable
    expected = reference_rows(values)
    for x in (unaligned, read_only, unaligned[::-2, 1::3]):
        assert json_rows(x) == reference_rows(x)
        assert json_rows(x, float_format="shortest") == json_rows(np.array(x), float_format="shortest")
    assert json_rows(unaligned) == expected


def test_embedding_sized_batch():
    a = (np.random.default_rng(64).standard_normal((64, 3072)) * 0.05).astype(np.float32)
    expected = reference_rows(a)
    assert json_rows(a) == expected
    assert json_rows(a, threads=3) == expected
    rows = shortest_check(a)
    assert json_rows(a, float_format="shortest", threads=2) == rows
    assert response_body(a, model=MODEL, encoding_format="float", float_format="shortest", threads=2) == splice_body(rows)
