"""Errors at the binding's boundary: malformed input is tensorb64.DecodeError (a ValueError) with
its reason, position and row, on every reader; C++ failures map to one Python type each; the
binding's own contracts (the result buffer, its integer arguments) hold."""

from __future__ import annotations

import base64
import json
import pickle
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorb64
from tensorb64 import DecodeError, _native
from tensorb64.openai import decode_response, decode_response_body


def b64(values) -> str:
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


def body_of(rows, **top) -> bytes:
    data = [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(rows)]
    return json.dumps({"object": "list", "data": data, "model": "m", **top}).encode()


# ---- the type ----------------------------------------------------------------------------------


def test_decode_error_is_one_exported_value_error():
    assert tensorb64.DecodeError is _native.DecodeError
    assert "DecodeError" in tensorb64.__all__
    assert issubclass(DecodeError, ValueError)
    assert DecodeError.__module__ == "tensorb64"
    error = DecodeError("bad thing at byte 3", "bad thing", 3, 1)
    assert (str(error), error.reason, error.pos, error.row) == ("bad thing at byte 3", "bad thing", 3, 1)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is DecodeError
    assert (str(copy), copy.reason, copy.pos, copy.row) == ("bad thing at byte 3", "bad thing", 3, 1)
    plain = DecodeError("only a message")
    assert (plain.reason, plain.pos, plain.row) == ("only a message", None, None)


@pytest.mark.parametrize(
    "read",
    [
        lambda: tensorb64.decode("AA!A"),
        lambda: tensorb64.decode_rows(["AACAPw==", "AA!A"]),
        lambda: decode_response_body(b'{"data":[}'),
        lambda: decode_response(b'{"data":[}'),
        lambda: tensorb64.decode_binary_body(b"\0\0\0", [dict(index=0, embed_dtype="float32", endianness="little", start=0, end=3, shape=[1])]),
    ],
    ids=["decode", "decode_rows", "decode_response_body", "decode_response", "decode_binary_body"],
)
def test_every_reader_raises_it_and_except_value_error_still_catches_it(read):
    with pytest.raises(DecodeError):
        read()
    try:
        read()
    except ValueError as e:
        assert isinstance(e, DecodeError)
    else:
        pytest.fail("no error")


# ---- decode and decode_rows: the offset in the string, and the row ---------------------------


@pytest.mark.parametrize(
    ("text", "pos", "reason", "message"),
    [
        ("AA!A", 2, "invalid base64: a character not in the alphabet", "bad character '!' (0x21) at offset 2"),
        ("AACAPw=A", 6, "invalid base64: bad padding", "bad padding at offset 6"),
        ("AACAPx==", 5, "invalid base64: non-zero bits past the data", "at offset 5"),
        ("AACAPw=", 7, "invalid base64: a length not a multiple of 4", "length 7 is not a multiple of 4"),
        ("AACA", None, "not a whole number of values", "decoded length 3 bytes"),
        ("AAé=", 2, "invalid base64: a character not in the alphabet", "non-ASCII character 'é' (U+00E9) at offset 2"),
    ],
)
def test_decode_errors_carry_the_offset_in_the_string(text, pos, reason, message):
    for data in (text, text.encode()) if text.isascii() else (text,):
        with pytest.raises(DecodeError) as caught:
            tensorb64.decode(data)
        assert (caught.value.pos, caught.value.reason, caught.value.row) == (pos, reason, None)
        assert message in str(caught.value)


def test_decode_rows_names_the_row_and_the_offset_in_its_string():
    good = b64([1.0, 2.0])
    with pytest.raises(DecodeError) as caught:
        tensorb64.decode_rows([good, good, good[:3] + "!" + good[4:]])
    assert (caught.value.row, caught.value.pos) == (2, 3)
    assert str(caught.value).startswith("row 2: invalid base64: bad character '!' (0x21) at offset 3")
    with pytest.raises(DecodeError) as caught:
        tensorb64.decode_rows([good, "AACA"])  # found when sizing the rows
    assert (caught.value.row, caught.value.pos, caught.value.reason) == (1, None, "not a whole number of values")
    with pytest.raises(DecodeError) as caught:
        tensorb64.decode_rows([good, good[:5] + "é" + good[6:]])  # a str that is not ASCII
    assert (caught.value.row, caught.value.pos) == (1, 5)
    assert str(caught.value).startswith("row 1: invalid base64: non-ASCII character 'é' (U+00E9) at offset 5")
    with pytest.raises(DecodeError) as caught:  # every row sized before any is decoded
        tensorb64.decode_rows([good[:3] + "!" + good[4:], good[:-1]])
    assert (caught.value.row, caught.value.pos) == (1, len(good) - 1)
    with pytest.raises(DecodeError) as caught:  # the first row at fault, wherever it is
        tensorb64.decode_rows([good, bytearray(good[:3] + "!" + good[4:], "ascii"), good[:3] + "!" + good[4:]])
    assert (caught.value.row, caught.value.pos) == (1, 3)


def test_decode_body_names_the_row_by_its_index():
    items = [
        dict(index=1, embed_dtype="float32", endianness="little", start=0, end=4, shape=[1]),
        dict(index=0, embed_dtype="float32", endianness="little", start=4, end=7, shape=[1]),
    ]
    with pytest.raises(DecodeError, match=r"^row 0 \(metadata item 1\): decoded length 3 bytes") as caught:
        tensorb64.decode_binary_body(bytes(7), items)
    assert (caught.value.row, caught.value.pos) == (0, None)


def test_a_wrong_output_size_is_not_a_decode_error():
    # The caller's buffer, not the text, is wrong: a plain ValueError, and nothing written past it.
    for size in (1, 3):
        out = np.zeros(size + 1, np.float32)
        with pytest.raises(ValueError, match="does not hold exactly the 8 bytes") as caught:
            _native._decode_into(b64([1.0, 2.0]), out[:size], "float32", "little", True)
        assert not isinstance(caught.value, DecodeError)
        assert out[size] == 0


# ---- bodies: the byte offset, and the data entry ----------------------------------------------


@pytest.mark.parametrize("as_str", [False, True])
def test_malformed_json_carries_the_offset_json_loads_gives(as_str):
    for body in ('{"data":[],}', '{"data" [1]}', '{"data":[01]}', '{"data":[]} x'):
        with pytest.raises(json.JSONDecodeError) as expected:
            json.loads(body)
        with pytest.raises(DecodeError) as caught:
            decode_response_body(body if as_str else body.encode())
        json_pos = expected.value.pos
        if body == '{"data":[],}' and sys.version_info >= (3, 13):
            # CPython 3.13 names a trailing comma itself ("Illegal trailing comma", at the comma);
            # earlier versions, and the reader, the byte after it, where a name was expected.
            assert json_pos == body.index(",}")
            json_pos += 1
        assert caught.value.pos == json_pos, body
        assert caught.value.row is None
        assert caught.value.reason.startswith("malformed JSON: expected ")
        assert f"at byte {caught.value.pos}" in str(caught.value)


def test_body_errors_name_the_data_entry():
    good = b64([1.0, 2.0])
    bad = good[:5] + "!" + good[6:]
    body = body_of([good, good, bad])
    with pytest.raises(DecodeError) as caught:
        decode_response_body(body)
    assert caught.value.row == 2
    assert caught.value.pos == body.index(bad.encode()) + 5
    assert caught.value.reason == "bad base64 embedding"
    assert "bad character '!'" in str(caught.value)

    unequal = body_of([[1.0, 2.0], [1.0, 2.0], [1.0]])
    with pytest.raises(DecodeError) as caught:
        decode_response(unequal)
    assert (caught.value.row, caught.value.reason) == (2, "rows of different lengths")

    numbers = body_of([[1.0, 2.0], [1.0, 2.0]]).replace(b"[1.0, 2.0]}]", b"[1.0, x]}]")
    with pytest.raises(DecodeError) as caught:
        decode_response_body(numbers)
    assert caught.value.row == 1
    assert caught.value.pos == numbers.index(b"x]")
    assert caught.value.reason == "bad number row: expected a number"

    outside_data = b'{"data":[{"index":0,"embedding":"AAAA"}],"model":'
    with pytest.raises(DecodeError) as caught:
        decode_response_body(outside_data + b"}")
    assert (caught.value.row, caught.value.pos) == (None, len(outside_data))


def test_rows_split_over_threads_name_the_entry_from_the_start():
    row = b64([0.5] * 256)
    rows = [row] * 2000
    rows[1501] = "!" + row[1:]
    with pytest.raises(DecodeError) as caught:
        decode_response_body(body_of(rows), threads=4)
    assert caught.value.row == 1501


# ---- what json.loads refuses, refused alike ---------------------------------------------------


@pytest.mark.parametrize("place", range(4))
@pytest.mark.parametrize("bad", ["g", "G", " ", "x"])
def test_a_bad_hex_digit_in_any_place_of_a_unicode_escape(place, bad):
    digits = list("004e")
    digits[place] = bad
    escape = "\\u" + "".join(digits)
    for body in (
        f'{{"model":"{escape}","data":[]}}',
        f'{{"data":[],"other":["{escape}"]}}',
        f'{{"{escape}":1,"data":[]}}',
    ):
        with pytest.raises(json.JSONDecodeError):
            json.loads(body)
        with pytest.raises(DecodeError, match=r"four hexadecimal digits after '\\u'"):
            decode_response_body(body.encode())
    assert decode_response(b'{"model":"\\u004e\\u004E","data":[]}').model == "NN"


@pytest.fixture
def int_digit_limit():
    """Sets sys's int digit limit for a test, and puts it back."""
    before = sys.get_int_max_str_digits()
    yield sys.set_int_max_str_digits
    sys.set_int_max_str_digits(before)


def integer_bodies(digits: int) -> list[bytes]:
    """Bodies with an integer of `digits` digits in each place outside a row."""
    n = "9" * digits
    row = b64([1.0])
    return [
        f'{{"data":[],"usage":{{"prompt_tokens":{n}}}}}'.encode(),
        f'{{"data":[],"model":-{n}}}'.encode(),
        f'{{"x":[{n}],"data":[]}}'.encode(),
        f'{{"data":[{{"index":0,"embedding":"{row}","x":{n}}}]}}'.encode(),
        f'{{"data":[{{"index":{n},"embedding":"{row}"}}]}}'.encode(),
    ]


@pytest.mark.skipif(not hasattr(sys, "get_int_max_str_digits"), reason="a CPython without the int digit limit")
def test_the_int_digit_limit_is_read_at_call_time(int_digit_limit):
    def accepted(body: bytes) -> bool:
        try:
            json.loads(body)
        except ValueError:
            with pytest.raises(DecodeError) as caught:
                decode_response(body)
            assert caught.value.reason.endswith("sys.get_int_max_str_digits() allows")
            return False
        try:
            decode_response(body)
        except DecodeError as e:  # an index past the rows: json.loads reads it, the reader cannot
            assert e.reason.startswith("bad index")
        return True

    default = sys.get_int_max_str_digits()
    assert default == 4300
    for limit in (default, 640, 5000, 0):
        int_digit_limit(limit)
        for body in integer_bodies(limit or 6000):
            assert accepted(body), (limit, body[:40])
        if limit:
            for body in integer_bodies(limit + 1):
                assert not accepted(body), (limit, body[:40])
    int_digit_limit(640)
    with pytest.raises(DecodeError) as caught:
        decode_response_body(integer_bodies(641)[0])
    assert caught.value.pos == len('{"data":[],"usage":{"prompt_tokens":')


# ---- C++ failures, and the GIL released around them -------------------------------------------


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("failure", "python_type"),
    [("bad_alloc", "MemoryError"), ("length_error", "MemoryError"), ("system_error", "RuntimeError")],
)
def test_a_failure_thrown_where_the_gil_is_released_is_raised_with_the_gil(failure, python_type):
    # A body large enough that the read releases the GIL; a subprocess, since raising without
    # the GIL (the bug this guards against) crashes the interpreter.
    result = run_python(
        f"""
        import base64, json, struct
        from tensorb64 import _native
        from tensorb64.openai import decode_response_body
        row = base64.b64encode(struct.pack("<1024f", *range(1024))).decode()
        body = json.dumps({{"data": [{{"index": i, "embedding": row}} for i in range(64)]}}).encode()
        assert len(body) > 256 * 1024
        _native._inject_failure({failure!r})
        try:
            decode_response_body(body)
        except Exception as e:
            print(type(e).__name__)
        print(decode_response_body(body).shape)  # the hook fires once; the next call reads
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [python_type, "(64,", "1024)"]


def broadcast_row(length: int, dtype=np.uint8) -> np.ndarray:
    """One row of ``length`` values in one element of memory (stride 0)."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype), shape=(1, length), strides=(0, 0))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        # sizes.cpp, checked_total: an output past this machine's memory
        (lambda: tensorb64.encode(broadcast_row(2**62)), r"the input's bytes would take .* GiB .*more than this machine's memory"),
        (lambda: tensorb64.json_rows(broadcast_row(2**62)), r"the float text would take .* GiB"),
        # sizes.cpp, row_text_length: a row whose base64 length does not fit in a size_t
        (lambda: tensorb64.encode_rows(broadcast_row(2**62)), r"a row of 4611686018427387904 values is too long to encode"),
        # body_entry.cpp: a row's data entry whose bound does not fit in a size_t
        (lambda: _native._entry_bound(2**62, 0, None, "repr"), r"a row's entry is too long to write"),
        (lambda: _native._entry_bound(2**62, 0, "float32", "repr"), r"a row's entry is too long to write"),
    ],
    ids=["checked_total", "checked_total_text", "row_text_length", "entry_bound_float", "entry_bound_base64"],
)
def test_a_size_that_does_not_fit_is_a_memory_error_at_every_site(call, message):
    """One error type for an output that cannot be made (the project's TypeError/ValueError/
    MemoryError), at each place the binding finds one; the core's std::length_error (a size past
    size_t) is a MemoryError too (python_api.hpp's guard, reached by the injected failure above;
    it was OverflowError). The reader's count of broadcast rows: test_api's huge broadcast."""
    with pytest.raises(MemoryError, match=message):
        call()


def test_inject_failure_refuses_unknown_kinds():
    with pytest.raises(ValueError, match="expected 'bad_alloc', 'length_error' or 'system_error', got 'oops'"):
        _native._inject_failure("oops")


# ---- the binding's contracts ------------------------------------------------------------------


@pytest.mark.parametrize("delta", [-1, 1, -4])
def test_the_result_buffer_must_hold_exactly_the_rows(delta):
    rows = [b64([1.0, 2.0, 3.0])] * 4  # 4 x 3 float32: 48 bytes
    backing = np.full(12 + 8, 7.0, np.float32)
    given = backing[: 12 + delta] if delta < 0 else np.full(12 + delta, 7.0, np.float32)

    def allocate(n_rows, row_length, float_rows):
        assert (n_rows, row_length, float_rows) == (4, 3, False)
        return given

    with pytest.raises(ValueError, match=r"the result's buffer holds \d+ bytes, not the 48 of 4 rows of 3 values"):
        _native._decode_response_body(body_of(rows), "float32", "little", True, 1, allocate)
    assert (backing == 7.0).all()  # nothing written, within the buffer or past it


def test_the_result_buffer_of_the_right_size_is_filled():
    rows = [b64([1.0, 2.0, 3.0])] * 4
    given = np.empty((4, 3), np.float32)
    result, model, usage = _native._decode_response_body(body_of(rows), "float32", "little", True, 1, lambda *_: given)
    assert result is given
    assert (given == [1.0, 2.0, 3.0]).all()
    assert (model, usage) == (b'"m"', None)


def test_entry_bound_reports_its_first_bad_argument():
    # The first argument's error stands: no further C API call is made with it set.
    with pytest.raises(OverflowError):
        _native._entry_bound(-1, "x", None, "repr")
    with pytest.raises(TypeError):
        _native._entry_bound("x", -1, None, "repr")
    with pytest.raises(OverflowError):
        _native._entry_bound(1, -1, None, "repr")
    assert _native._entry_bound(3, 0, None, "repr") > 0
