"""Strict decoding, the same on every Python version: what CPython 3.13's strict binascii refuses is
refused (and non-canonical trailing bits), errors name the offset; the rest is bit-exact, and
decode allocates nothing but its result."""

from __future__ import annotations

import base64
import binascii
import re
import sys
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorb64
from tensorb64 import _native

pytestmark = pytest.mark.usefixtures("each_simd_level")


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.uint32, st.integers(0, 100), elements=st.integers(0, 2**32 - 1)))
def test_decode_encode_is_bit_exact(bits):
    values = bits.view(np.float32)
    text = tensorb64.encode(values)
    decoded = tensorb64.decode(text)
    assert decoded.dtype == np.float32
    np.testing.assert_array_equal(decoded.view(np.uint32), bits)
    np.testing.assert_array_equal(decoded.view(np.uint32), np.frombuffer(base64.b64decode(text), "<u4"))
    assert tensorb64.decode(text.encode()).tobytes() == decoded.tobytes()


def test_decode_rows_round_trip():
    batch = np.random.default_rng(0).standard_normal((7, 33)).astype(np.float32)
    np.testing.assert_array_equal(tensorb64.decode_rows(tensorb64.encode_rows(batch)), batch)
    assert tensorb64.decode_rows([]).shape == (0, 0)
    assert tensorb64.decode_rows(["", ""]).shape == (2, 0)


# ---- strictness: one table, the same on every Python version ------------------------------
#
# Each case: the text, what decode says (a fragment of the message, with the offset), and what
# CPython 3.13.0's binascii.a2b_base64(text, strict_mode=True) gives (bytes, or None: refused).
# decode refuses everything 3.13 refuses; it also refuses non-zero bits past the data ("AB=="),
# which 3.13 accepts, so that whatever it accepts is the one canonical encoding of its bytes.
STRICTNESS = [
    ("abcd=", "bad padding at offset 4", None),  # excess padding: 3.11 and 3.12 accept it
    ("abcd==", "bad padding at offset 4", None),
    ("AAAA====", "bad padding at offset 4", None),
    ("AAAA=AAAA", "bad padding at offset 4", None),
    ("ab==AAAA", "bad padding at offset 2", None),  # padding mid-string, data after it
    ("ab=a", "bad padding at offset 2", None),  # discontinuous padding
    ("AA=A", "bad padding at offset 2", None),
    ("=AAA", "bad padding at offset 0", None),  # leading padding
    ("a===", "bad padding at offset 1", None),
    ("abc==", "bad padding at offset 3", None),
    ("ab===", "bad padding at offset 2", None),
    ("AAAA AAAA", "bad character 0x20 at offset 4", None),  # whitespace
    ("AAA\n", "bad character 0x0a at offset 3", None),  # newline
    ("ab==\n", "bad character 0x0a at offset 4", None),
    ("AA!A", "bad character '!' (0x21) at offset 2", None),  # outside the alphabet
    ("AAAA-_AA", "bad character '-' (0x2d) at offset 4", None),  # url-safe alphabet
    ("AA!A=", "bad character '!' (0x21) at offset 2", None),  # a bad character wins over the length
    ("AACAPw==é", "non-ASCII character 'é' (U+00E9) at offset 8", None),  # non-ASCII str
    ("AA€A", "non-ASCII character '€' (U+20AC) at offset 2", None),
    ("A!€A", "bad character '!' (0x21) at offset 1", None),  # the first bad character, ASCII or not
    ("AAAAA", "length 5 is not a multiple of 4", None),  # truncated group
    ("ab=", "length 3 is not a multiple of 4", None),
    ("Zg", "length 2 is not a multiple of 4", None),
    ("AB==", "non-zero bits past the data in the character at offset 1", b"\x00"),  # 3.13 accepts
    ("ab==", "non-zero bits past the data in the character at offset 1", b"i"),
    ("AAB=", "non-zero bits past the data in the character at offset 2", b"\x00\x00"),
]
CANONICAL = [("", b""), ("AA==", b"\x00"), ("AAA=", b"\x00\x00"), ("aQ==", b"i"), ("Zm9vYmFy", b"foobar")]
MALFORMED = [text for text, _, _ in STRICTNESS]


@pytest.mark.parametrize(("text", "message", "py313"), STRICTNESS)
def test_strictness_table(text, message, py313):
    for form in (text, text.encode(), bytearray(text.encode()), memoryview(text.encode())):
        with pytest.raises(ValueError, match="invalid base64") as refused:
            tensorb64.decode(form, dtype="fp8_e4m3")
        if isinstance(form, str) or text.isascii():
            assert message in str(refused.value)
    with pytest.raises(ValueError, match=r"^row 1: invalid base64: .*" + re.escape(message)):
        tensorb64.decode_rows(["AACAPw==", text])


@pytest.mark.skipif(sys.version_info[:2] != (3, 13), reason="the table records CPython 3.13's strict mode")
def test_strictness_table_records_what_python_3_13_does():
    for text, _, py313 in STRICTNESS:
        try:
            got = binascii.a2b_base64(text, strict_mode=True)
        except (binascii.Error, ValueError):
            got = None
        assert got == py313, text


def decoded_bytes(text) -> bytes:
    """The bytes decode finds in a text (as one-byte elements, not widened)."""
    out = np.empty(_native._decoded_length(text, "fp8_e4m3"), np.uint8)
    _native._decode_into(text, out, "fp8_e4m3", "little", False)
    return out.tobytes()


@pytest.mark.parametrize(("text", "expected"), CANONICAL)
def test_canonical_texts_decode(text, expected):
    assert decoded_bytes(text) == decoded_bytes(text.encode()) == expected
    assert tensorb64.decode(text, dtype="fp8_e5m2").size == len(expected)


def reference_strict_decode(text) -> bytes | None:
    """The canonical-base64 rule, written independently of the package and of binascii: the
    standard alphabet, length a multiple of 4, '=' only to fill the last group, zero bits past
    the data. Returns the bytes, or None for a text that is refused."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("latin-1")
    if len(text) % 4:
        return None
    body = text.rstrip("=")
    pads = len(text) - len(body)
    if pads > 2 or (pads and len(body) % 4 == 1) or any(c not in alphabet for c in body):
        return None
    bits = "".join(format(alphabet.index(c), "06b") for c in body)
    whole = len(bits) // 8 * 8
    if "1" in bits[whole:]:
        return None  # non-zero bits past the data
    return bytes(int(bits[i : i + 8], 2) for i in range(0, whole, 8))


@settings(max_examples=1500, deadline=None)
@given(
    st.one_of(
        st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", max_size=40),
        st.text(alphabet="AQgw+/=", max_size=12),
        st.text(max_size=40),
        st.binary(max_size=24).map(lambda b: base64.b64encode(b).decode()),
    )
)
def test_decode_equals_the_reference_strict_decoder(text):
    expected = reference_strict_decode(text)
    strict = None
    if sys.version_info >= (3, 11):
        try:
            strict = binascii.a2b_base64(text, strict_mode=True)
        except (binascii.Error, ValueError):
            strict = None
    for form in (text, text.encode()):
        if expected is None:
            with pytest.raises(ValueError, match="invalid base64"):
                tensorb64.decode(form, dtype="fp8_e4m3")
        else:
            assert decoded_bytes(form) == expected
            assert tensorb64.decode(form, dtype="fp8_e4m3").size == len(expected)
            # whatever decode accepts, every strict binascii accepts too, with the same bytes
            if sys.version_info >= (3, 11):
                assert strict == expected


def test_decode_refuses_whatever_strict_binascii_refuses():
    # Every Python from 3.11 has strict mode; what it refuses there, decode refuses everywhere.
    if sys.version_info < (3, 11):
        pytest.skip("binascii's strict_mode is new in Python 3.11")
    for text, _, _ in STRICTNESS:
        try:
            binascii.a2b_base64(text, strict_mode=True)
        except (binascii.Error, ValueError):
            with pytest.raises(ValueError):
                tensorb64.decode(text, dtype="fp8_e4m3")


def test_bad_character_past_the_first_block_is_named():
    text = "A" * 10000
    for at, char, message in [(5001, "*", "bad character '*' (0x2a) at offset 5001"), (6000, "=", "bad padding at offset 6000")]:
        bad = text[:at] + char + text[at + 1 :]
        with pytest.raises(ValueError, match=re.escape(message)):
            tensorb64.decode(bad, dtype="fp8_e4m3")


def test_length_not_whole_values():
    with pytest.raises(ValueError, match=re.escape("decoded length 6 bytes is not a whole number of float32 values (4 bytes each)")):
        tensorb64.decode(base64.b64encode(b"\x00" * 6).decode())
    with pytest.raises(ValueError, match="not a whole number of float16 values"):
        tensorb64.decode(base64.b64encode(b"\x00" * 3).decode(), dtype="float16")
    with pytest.raises(ValueError, match="^row 2: decoded length 3 bytes is not a whole number of float16 values"):
        tensorb64.decode_rows(["AAAAAA==", "AAAAAA==", "AAAA"], dtype="float16")


def test_unequal_rows():
    with pytest.raises(ValueError, match="unequal length cannot form a 2-D array: row 0 has 1 values, row 1 has 2"):
        tensorb64.decode_rows([tensorb64.encode([1.0]), tensorb64.encode([1.0, 2.0])])


def test_rows_are_checked_before_anything_is_decoded():
    # A bad character in the first row and unequal lengths later: the lengths are checked first
    # (cheaply), then each row as it is decoded, named by its position.
    with pytest.raises(ValueError, match="unequal length"):
        tensorb64.decode_rows(["AA!A", "AAAAAAAA"], dtype="fp8_e4m3")
    with pytest.raises(ValueError, match=re.escape("row 1: invalid base64: bad character '!' (0x21) at offset 6")):
        tensorb64.decode_rows(["AAAAAAAA", "AAAAAA!A"], dtype="fp8_e4m3")
    with pytest.raises(TypeError, match="row 1: expected a base64 str or bytes, got int"):
        tensorb64.decode_rows(["AAAA", 5], dtype="fp8_e4m3")


def test_decode_rows_takes_any_iterable_and_bytes():
    rows = np.arange(12, dtype=np.float32).reshape(3, 4)
    texts = tensorb64.encode_rows(rows)
    np.testing.assert_array_equal(tensorb64.decode_rows(iter(texts)), rows)
    np.testing.assert_array_equal(tensorb64.decode_rows(tuple(t.encode() for t in texts)), rows)
    result = tensorb64.decode_rows(texts, dtype="float32", widen=False)
    assert result.dtype == np.float32 and result.flags.c_contiguous


@pytest.mark.parametrize("byteorder", ["little", "big", "native"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_byte_orders(dtype, byteorder):
    values = np.random.default_rng(3).standard_normal(1500).astype(np.float32)  # past one block
    text = tensorb64.encode(values, dtype=dtype, byteorder=byteorder)
    stored = base64.b64decode(text)
    resolved = sys.byteorder if byteorder == "native" else byteorder
    numpy_order = "<" if resolved == "little" else ">"
    if dtype in ("float32", "float16"):
        expected = np.frombuffer(stored, numpy_order + {"float32": "f4", "float16": "f2"}[dtype])
        got = tensorb64.decode(text, dtype=dtype, byteorder=byteorder, widen=False)
        assert got.dtype == np.dtype(dtype) and got.dtype.isnative
        np.testing.assert_array_equal(got, expected)
    else:
        bits = np.frombuffer(stored, numpy_order + "u2").astype(np.uint32) << 16
        expected = bits.view(np.float32)
        with pytest.raises(ValueError, match="numpy has no bfloat16 dtype; decode with widen=True"):
            tensorb64.decode(text, dtype=dtype, byteorder=byteorder, widen=False)
    np.testing.assert_array_equal(tensorb64.decode(text, dtype=dtype, byteorder=byteorder).view(np.uint32), np.asarray(expected, np.float32).view(np.uint32))


@pytest.mark.parametrize("dtype", ["fp8_e4m3", "fp8_e5m2", "float16", "bfloat16"])
def test_widening_is_torchs_on_every_code(dtype):
    torch = pytest.importorskip("torch")
    torch_dtype = {"fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2, "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    width = 1 if dtype.startswith("fp8") else 2
    codes = np.arange(256 ** width, dtype=np.uint8 if width == 1 else np.uint16)
    for byteorder in ("little", "big"):
        text = base64.b64encode(codes.astype(codes.dtype.newbyteorder("<" if byteorder == "little" else ">")).tobytes()).decode()
        got = tensorb64.decode(text, dtype=dtype, byteorder=byteorder)
        raw = torch.from_numpy(codes.view(np.int8 if width == 1 else np.int16).copy()).view(torch_dtype)
        expected = raw.to(torch.float32).view(torch.int32).numpy().view(np.uint32)
        np.testing.assert_array_equal(got.view(np.uint32), expected)


def test_float8_widening_matches_the_packages_documented_rules():
    from tests.support.oracles import fp8_to_f32_bits

    text = base64.b64encode(bytes(range(256))).decode()
    np.testing.assert_array_equal(tensorb64.decode(text, dtype="fp8_e4m3").view(np.uint32), fp8_to_f32_bits(4, 3, 0x7FF00000, False))
    np.testing.assert_array_equal(tensorb64.decode(text, dtype="fp8_e5m2").view(np.uint32), fp8_to_f32_bits(5, 2, 0, True))


def traced_peak(call):
    """The result of call() and the peak of memory traced while it ran (numpy reports its data
    allocations to tracemalloc)."""
    tracemalloc.start()
    try:
        result = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


@pytest.mark.parametrize(("dtype", "widen"), [("float32", True), ("float16", True), ("fp8_e4m3", True), ("float16", False)])
def test_decode_peaks_at_its_result(dtype, widen):
    values = np.random.default_rng(5).standard_normal(2_000_000).astype(np.float32)  # an 8 MB text as float32
    text = tensorb64.encode(values, dtype=dtype)
    result, peak = traced_peak(lambda: tensorb64.decode(text, dtype=dtype, widen=widen))
    assert result.size == values.size
    assert peak <= 1.1 * result.nbytes, (peak, result.nbytes)
    rows = tensorb64.encode_rows(values.reshape(500, -1), dtype=dtype)
    result, peak = traced_peak(lambda: tensorb64.decode_rows(rows, dtype=dtype, widen=widen))
    assert result.shape == (500, 4000)
    assert peak <= 1.1 * result.nbytes, (peak, result.nbytes)


@pytest.mark.parametrize("bad", [None, 1.5, ["AAAA"], np.zeros(4, np.uint8)])
def test_decode_type_errors(bad):
    with pytest.raises(TypeError, match="expected a base64 str or bytes"):
        tensorb64.decode(bad)


def test_decode_rows_refuses_a_single_string():
    with pytest.raises(TypeError, match="list of base64 strings"):
        tensorb64.decode_rows("AACAPw==")


def test_decode_options_are_validated():
    with pytest.raises(ValueError, match="unknown dtype 'int8'"):
        tensorb64.decode("", dtype="int8")
    with pytest.raises(ValueError, match="unknown byteorder 'middle'"):
        tensorb64.decode("", byteorder="middle")
