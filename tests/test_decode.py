"""Strict decoding: what binascii's strict mode refuses is refused; the rest is bit-exact."""

from __future__ import annotations

import base64
import binascii
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorb64
from tensorb64 import _decode

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


MALFORMED = [
    "AA=A",  # padding in the middle
    "=AAA",  # leading padding
    "AAAA AAAA",  # whitespace
    "AAA\n",  # newline
    "AA!A",  # outside the alphabet
    "AAAAA",  # truncated group
    "AA==AAAA",  # data after padding
    "AAAA-_AA",  # url-safe alphabet
    "AACAPw==é",  # non-ASCII
]


needs_strict_mode = pytest.mark.skipif(sys.version_info < (3, 11), reason="binascii's strict_mode is new in Python 3.11")


@pytest.mark.parametrize("text", MALFORMED)
def test_malformed_base64_is_refused_like_strict_binascii(text):
    with pytest.raises(ValueError, match="invalid base64"):
        tensorb64.decode(text)
    with pytest.raises(ValueError, match="invalid base64"):
        tensorb64.decode_rows(["AACAPw==", text])
    if sys.version_info >= (3, 11):  # each case is one that strict binascii refuses too
        with pytest.raises((binascii.Error, ValueError)):
            binascii.a2b_base64(text, strict_mode=True)


@needs_strict_mode
@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="AB+/=\n -_aQ", max_size=16))
def test_fallback_strict_check_refuses_what_binascii_refuses(text):
    # Python < 3.11 has no strict mode; there a pattern check stands in for it. It may refuse
    # more (superfluous padding such as "AAAA="), never less.
    try:
        strict = binascii.a2b_base64(text, strict_mode=True)
    except binascii.Error:
        strict = None
    if _decode._STRICT.fullmatch(text.encode()):
        assert strict == binascii.a2b_base64(text)


def test_length_not_whole_values():
    with pytest.raises(ValueError, match="not a whole number of float32 values"):
        tensorb64.decode(base64.b64encode(b"\x00" * 6).decode())
    with pytest.raises(ValueError, match="not a whole number of float16 values"):
        tensorb64.decode(base64.b64encode(b"\x00" * 3).decode(), dtype="float16")


def test_unequal_rows():
    with pytest.raises(ValueError, match="unequal length"):
        tensorb64.decode_rows([tensorb64.encode([1.0]), tensorb64.encode([1.0, 2.0])])


@pytest.mark.parametrize("bad", [None, 1.5, ["AAAA"]])
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


@needs_strict_mode
@settings(max_examples=1000, deadline=None)
@given(st.one_of(st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", max_size=40), st.text(max_size=40)))
def test_decode_of_arbitrary_text_agrees_with_strict_binascii_or_refuses(text):
    # decode is built on binascii: this fuzzes that it adds nothing wrong on top (lengths, dtypes).
    try:
        raw = binascii.a2b_base64(text, strict_mode=True)
    except (binascii.Error, ValueError):
        raw = None
    if raw is None or len(raw) % 4:
        with pytest.raises(ValueError):
            tensorb64.decode(text)
    else:
        np.testing.assert_array_equal(tensorb64.decode(text).view(np.uint32), np.frombuffer(raw, "<u4"))
