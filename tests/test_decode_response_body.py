"""decode_response_body: a whole /v1/embeddings body into one array, against json.loads + numpy.

Parity over bodies written by this package's response_body (every encoding_format, dtype,
byteorder, float_format), by json.dumps and orjson, with keys reordered, whitespace, escapes,
unknown fields of every shape, repeated keys and shuffled indexes; the round trip; every kind of
error with its byte offset; hypothesis-made truncations and byte changes, which give ValueError
only, or, where json.loads still reads a response, exactly its values. Every test runs at every
SIMD level (the base64 decoder and the number parser have several).
"""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorb64
from tensorb64.openai import EmbeddingsResponse, decode_response, decode_response_body, response_body
from tests.support.threads import failures_in_threads

pytestmark = pytest.mark.usefixtures("each_simd_level")

DTYPES = ["float32", "float16", "bfloat16", "fp8_e4m3", "fp8_e5m2"]
BYTEORDERS = ["little", "big"]
FLOAT_FORMATS = ["repr", "shortest"]


def sample(rows: int = 5, dim: int = 37, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 0.05, (rows, dim)).astype(np.float32)


def representable(x: np.ndarray, dtype: str) -> np.ndarray:
    """x rounded to `dtype` and back to float32 (the values a `dtype` body carries exactly)."""
    return tensorb64.decode_rows(tensorb64.encode_rows(x, dtype=dtype), dtype=dtype)


def reference(body, dtype: str = "float32", byteorder: str = "little") -> np.ndarray:
    """What a client gets today: json.loads, then each row by its index as numpy float32 (base64
    rows through the package's strict decoder, float rows through numpy.asarray)."""
    data = json.loads(body)["data"]
    rows = [None] * len(data)
    for entry in data:
        e = entry["embedding"]
        if isinstance(e, str):
            rows[entry["index"]] = tensorb64.decode(e, dtype=dtype, byteorder=byteorder)
        else:
            rows[entry["index"]] = np.asarray(e, dtype=np.float32)
    return np.array(rows, dtype=np.float32).reshape(len(rows), -1)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.view(np.uint32), b.view(np.uint32))


# ---- what this package writes ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("byteorder", BYTEORDERS)
def test_base64_round_trip(dtype, byteorder):
    x = representable(sample(), dtype)
    body = response_body(x, model="m", encoding_format="base64", dtype=dtype, byteorder=byteorder)
    got = decode_response_body(body, dtype=dtype, byteorder=byteorder)
    assert same_bits(got, x)
    assert same_bits(got, reference(body, dtype, byteorder))


@pytest.mark.parametrize("float_format", FLOAT_FORMATS)
def test_float_round_trip(float_format):
    x = sample(7, 64, seed=1)
    body = response_body(x, model="m", encoding_format="float", float_format=float_format)
    assert same_bits(decode_response_body(body), x)
    assert same_bits(decode_response_body(body), reference(body))


@pytest.mark.parametrize("byteorder", BYTEORDERS)
def test_widen_false_keeps_float16(byteorder):
    x = representable(sample(), "float16")
    body = response_body(x, model="m", encoding_format="base64", dtype="float16", byteorder=byteorder)
    got = decode_response_body(body, dtype="float16", byteorder=byteorder, widen=False)
    assert got.dtype == np.float16 and np.array_equal(got, x.astype(np.float16))
    with pytest.raises(ValueError, match="numpy has no bfloat16"):
        decode_response_body(body, dtype="bfloat16", widen=False)


def test_every_input_type_and_out():
    x = sample()
    body = response_body(x, model="m", encoding_format="base64")
    for given_body in (body, bytearray(body), memoryview(body), body.decode()):
        assert same_bits(decode_response_body(given_body), x)
    out = np.empty_like(x)
    assert decode_response_body(body, out=out) is out and same_bits(out, x)
    with pytest.raises(ValueError, match=r"shape \(5, 37\)"):
        decode_response_body(body, out=np.empty((5, 36), np.float32))
    with pytest.raises(ValueError, match="float32 array"):
        decode_response_body(body, out=np.empty((5, 37), np.float64))
    with pytest.raises(ValueError, match="C-contiguous"):
        decode_response_body(body, out=np.empty((37, 5), np.float32).T)
    with pytest.raises(ValueError, match="C-contiguous"):
        decode_response_body(memoryview(body + body)[::2])
    with pytest.raises(TypeError, match="body must be"):
        decode_response_body(12)
    with pytest.raises(TypeError, match="body must be a buffer of bytes"):
        decode_response_body(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="threads"):
        decode_response_body(body, threads=0)
    with pytest.raises(ValueError, match="unknown dtype"):
        decode_response_body(body, dtype="int4")


def test_model_and_usage_from_the_same_read():
    x = sample()
    body = response_body(x, model="naïve \"m\"", encoding_format="base64", usage={"prompt_tokens": 7, "total_tokens": 9}, extra={"id": "x"})
    r = decode_response(body)
    assert isinstance(r, EmbeddingsResponse)
    assert same_bits(r.embeddings, x)
    assert r.model == "naïve \"m\"" and r.usage == {"prompt_tokens": 7, "total_tokens": 9}
    r = decode_response(b'{"data":[],"usage":{"a":[1,{"b":null}]},"usage":{"prompt_tokens":1}}')
    assert r.embeddings.shape == (0, 0) and r.model is None and r.usage == {"prompt_tokens": 1}


def test_threads_give_the_same_array():
    x = sample(600, 384, seed=2)
    for encoding_format in ("base64", "float"):
        body = response_body(x, model="m", encoding_format=encoding_format)
        for threads in (2, 3, 7):
            assert same_bits(decode_response_body(body, threads=threads), x)


def test_threads_reading_at_once():
    """8 Python threads read different large bodies at once (the GIL released, taken back for
    each allocation), some into their own `out`, some with threads=2: each gets its exact rows."""
    xs = [sample(64, 1024, seed=10 + i) for i in range(8)]
    bodies = [response_body(x, model="m", encoding_format="base64" if i % 2 else "float") for i, x in enumerate(xs)]

    def check(i):
        out = np.empty_like(xs[i]) if i % 3 == 0 else None
        got = decode_response_body(bodies[i], out=out, threads=1 + i % 2)
        return same_bits(got, xs[i]) and (out is None or got is out)

    assert failures_in_threads(check, count=8, repeats=5) == []


# ---- what other writers write ---------------------------------------------------------------


def entries(x: np.ndarray, encoding_format: str, order=None) -> list:
    order = range(len(x)) if order is None else order
    return [
        {
            "object": "embedding",
            "index": int(i),
            "embedding": base64.b64encode(x[i].astype("<f4").tobytes()).decode() if encoding_format == "base64" else x[i].tolist(),
        }
        for i in order
    ]


def writers_doc(encoding_format):
    """A body's rows (shuffled indexes) and the dict json.dumps / orjson write for them."""
    x = sample(6, 40, seed=3)
    rng = np.random.default_rng(4)
    data = entries(x, encoding_format, order=rng.permutation(len(x)))
    doc = {"object": "list", "data": data, "model": "m/1", "usage": {"prompt_tokens": 1, "total_tokens": 1}}
    return x, doc


def check_bodies(bodies, x):
    for body in bodies:
        assert same_bits(decode_response_body(body), x), body[:200]
        assert same_bits(decode_response_body(body), reference(body))


@pytest.mark.parametrize("encoding_format", ["base64", "float"])
def test_json_dumps_and_friends(encoding_format):
    x, doc = writers_doc(encoding_format)
    check_bodies(
        [
            json.dumps(doc),
            json.dumps(doc, indent=3, sort_keys=True),
            json.dumps(doc, ensure_ascii=True, separators=(" ,\n", "\t:\r ")),
            json.dumps(doc).replace("/", "\\/"),  # PHP's json_encode escapes every '/'
            json.dumps(doc).replace('"data"', '"\\u0064ata"').replace('"index"', '"in\\u0064ex"'),
        ],
        x,
    )


@pytest.mark.parametrize("encoding_format", ["base64", "float"])
def test_orjson_bodies(encoding_format):
    orjson = pytest.importorskip("orjson", reason="orjson has no wheel for this CPython (free-threaded builds)")
    x, doc = writers_doc(encoding_format)
    extra = {"deep": [[[]], {}], "s": "]\"}"}
    check_bodies(
        [
            orjson.dumps(doc),
            orjson.dumps({"data": [{"embedding": e["embedding"], "extra": extra, "index": e["index"]} for e in doc["data"]]}),
        ],
        x,
    )


def test_numbers_as_any_writer_writes_them():
    texts = ["0", "-0", "-0.0", "1e400", "-1e400", "1e-400", "NaN", "Infinity", "-Infinity", "123456789012345678901234567890",
             "0.1", "1.00000001788139343261718750000000001", "3.4028235677973366e38", "1.401298464324817e-45",
             "7.006492321624085e-46", "7.006492321624086e-46", "2.5E-3", "12345678901234567890e-10"]
    body = '{"data":[{"index":0,"embedding":[' + ",".join(texts) + "]}]}"
    with np.errstate(over="ignore"):
        assert same_bits(decode_response_body(body), reference(body))


def long_first_row_body(order: list[int], padding: int = 200) -> str:
    """A float body whose first row's text is long (padded before its ']'), every later row short:
    entry k holds [k, k + 1, k + 2] (the first [1.5, -2e3, 0.25]) with index order[k], after its
    embedding. The reader's first pass looks for a later row's ']' only from three quarters of the
    first row's length on, and pass 2 holds each row to that length."""
    entries = []
    for k, index in enumerate(order):
        row = "[1.5,-2e3,0.25" + " " * padding + "]" if k == 0 else f"[{k},{k + 1},{k + 2}]"
        entries.append(f'{{"embedding":{row},"index":{index}}}')
    return '{"data":[' + ",".join(entries) + '],"model":"m"}'


def test_rows_shorter_than_the_first_read_as_json_loads_reads_them():
    """Rows near the body's end, glanced at in full, shorter than the first: read (a DecodeError,
    "a row as long as guessed", before the reader sent such a body to its careful reading)."""
    from tensorb64._codec.body_reader import rows_and_offsets

    body = long_first_row_body([0, 1, 2, 3])
    assert same_bits(decode_response_body(body), reference(body))
    out = np.empty((4, 3), np.float32)
    assert decode_response_body(body, out=out) is out and same_bits(out, reference(body))
    rows, _ = rows_and_offsets(body.encode())  # the float64 read (tensorb64.openai.patch)
    assert rows.dtype == np.float64 and rows.tolist() == [e["embedding"] for e in json.loads(body)["data"]]


def test_a_wrong_row_guess_reads_again_and_fills_out_of_the_true_shape():
    """A later row's end guessed wrong (its ']' searched for past its own, found five rows on):
    the first pass offers 7 rows, the careful reading 12, and the result is json.loads's. An out of
    the true shape is filled (before, the first offer's shape refused it: ValueError on a body
    json.loads reads); an out of another shape is refused after the read, naming the true one."""
    n, j = 12, 6  # entries 1..j-1 swallowed by entry 1's guessed end; their indexes the last ones
    order = [0, *range(n - j + 1, n), 1, *range(2, n - j + 1)]
    body = long_first_row_body(order)
    assert sorted(order) == list(range(n))
    offers = []

    def allocate(rows, row_length, float_rows):
        offers.append((rows, row_length))
        return np.empty((rows, row_length), np.float32)

    from tensorb64 import _native

    got = _native._decode_response_body(body.encode(), "float32", "little", True, 1, allocate)[0]
    assert offers == [(n - j + 1, 3), (n, 3)] and same_bits(got, reference(body))
    out = np.empty((n, 3), np.float32)
    assert decode_response_body(body, out=out) is out and same_bits(out, reference(body))
    with pytest.raises(ValueError, match=r"out must be a float32 array of shape \(12, 3\) for this body, got float32 \(7, 3\)"):
        decode_response_body(body, out=np.empty((n - j + 1, 3), np.float32))


ROW4 = "[1.5,2.5,3.5,4.5]"


@pytest.mark.parametrize(
    "body",
    [
        f'{{"data":[{{"index":0,"embedding":{ROW4}}},{{"embedding":[x],"embedding":{ROW4},"index":1}}]}}',
        # (the first entry repeats its key too: the list is known to have repeated keys)
        f'{{"data":[{{"embedding":[9],"embedding":{ROW4},"index":0}},{{"embedding":[1] "embedding":{ROW4},"index":1}}]}}',
    ],
    ids=["invalid", "no_comma"],
)
def test_an_embedding_replaced_where_its_end_was_guessed_is_read(body):
    """An entry's embedding given twice, the first shorter than the first row's three quarters:
    the reader's first pass takes it to end at the second's ']' (the second key unseen), and its
    text was read by nobody: before, these bodies, which json.loads refuses, read (found by
    fuzz_body's comparison with the careful reading). Now a DecodeError at json.loads's byte, and
    their valid twins read as json.loads reads them."""
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(body)
    with pytest.raises(tensorb64.DecodeError, match="malformed JSON") as got:
        decode_response_body(body)
    assert got.value.pos == expected.value.pos
    valid = body.replace("[x]", "[9]").replace("[1] ", "[1],")
    assert same_bits(decode_response_body(valid), reference(valid))


@pytest.mark.needs_source_tree  # the fuzz corpus
@pytest.mark.parametrize("out_rows", [None, 3, 4])
def test_a_malformed_body_read_twice_is_a_decode_error(out_rows):
    """Bodies the fuzzer found (cpp/hardening/corpus/fuzz_body/second_allocation_*): a guessed row
    end, then a careful reading of another shape, then bad bytes in a row: a DecodeError naming
    the byte, whatever out is."""
    import pathlib

    corpus = pathlib.Path(__file__).resolve().parents[1] / "cpp/hardening/corpus/fuzz_body"
    paths = sorted(corpus.glob("second_allocation_*"))
    assert len(paths) == 2
    for path in paths:
        body = path.read_bytes()[1:]  # (the first byte is the fuzz target's options)
        out = None if out_rows is None else np.empty((out_rows, 3), np.float32)
        with pytest.raises(tensorb64.DecodeError, match="bad number row at byte"):
            decode_response_body(body, out=out)


def test_repeated_keys_the_last_counts():
    a, b = (base64.b64encode(r.astype("<f4").tobytes()).decode() for r in sample(2, 3, seed=5))
    body = (
        '{"data":[{"index":1,"embedding":[1,2,3],"embedding":"A","index":0},'
        '{"embedding":{"x":1},"index":1,"embedding":"B"}],"data":[{"index":0,"embedding":"B"},{"embedding":"A","index":1}]}'
    ).replace('"A"', f'"{a}"').replace('"B"', f'"{b}"')
    assert same_bits(decode_response_body(body), reference(body))


def test_a_bom_as_json_loads_takes_it():
    body = response_body(sample(), model="m", encoding_format="base64")
    assert same_bits(decode_response_body(b"\xef\xbb\xbf" + body), sample())
    with pytest.raises(ValueError, match="at byte 0"):
        decode_response_body("\ufeff" + body.decode())  # json.loads refuses a BOM in a str


def test_a_str_with_a_lone_surrogate():
    body = '{"model":"\ud800","data":[{"index":0,"embedding":[1.5]}]}'
    assert json.loads(body)["model"] == "\ud800"
    r = decode_response(body)
    assert r.model == "\ud800" and r.embeddings.tolist() == [[1.5]]


# ---- errors ---------------------------------------------------------------------------------

ROW = base64.b64encode(np.array([1, 2], "<f4").tobytes()).decode()


def error_offset(body) -> int:
    with pytest.raises(ValueError) as info:
        decode_response_body(body)
    match = re.search(r"at byte (\d+)", str(info.value))
    assert match, str(info.value)
    return int(match.group(1))


@pytest.mark.parametrize(
    "body, offset, words",
    [
        ("", 0, "malformed JSON"),
        ('{"data":[]', 10, "expected ',' or '}'"),
        ('{"data":[1,]}', 11, "malformed JSON"),
        ('{"data":[{"index":0,"embedding":"AAAA', 32, "closing"),
        ('{"data":[]} []', 12, "extra data"),
        ('{"data":[{"index":0,"embedding":[1,"a"]}]}', 32, "base64 string or a list of numbers"),
        ("[]", 0, "an object"),
        ('{"object":"list"}', 16, '"data"'),
        ('{"data":{}}', 8, 'a list as "data"'),
        ('{"data":[{"embedding":"' + ROW + '"}]}', 9, '"index"'),
        ('{"data":[{"index":0}]}', 9, '"embedding"'),
        ('{"data":[{"index":0.0,"embedding":""}]}', 18, "integer index"),
        ('{"data":[{"index":true,"embedding":""}]}', 18, "integer index"),
        ('{"data":[{"index":2,"embedding":""}]}', 18, "index 2"),
        ('{"data":[{"index":0,"embedding":""},{"index":0,"embedding":""}]}', 45, "given twice"),
        ('{"data":[{"index":0,"embedding":"' + ROW + '"},{"index":1,"embedding":"AAAAAA=="}]}', 71, "different lengths"),
        ('{"data":[{"index":0,"embedding":"' + ROW + '"},{"index":1,"embedding":[1,2]}]}', 71, "mix of row formats"),
        ('{"data":[{"index":0,"embedding":"AAA*AAAA"}]}', 36, "bad character '*'"),
        ('{"data":[{"index":0,"embedding":"AB=="}]}', 34, "non-zero bits"),
        ('{"data":[{"index":0,"embedding":"AAAAAA="}]}', 33, "not a multiple of 4"),
        ('{"data":[{"index":0,"embedding":"AAAAAA=="}], "x": 1}', 8, None),  # valid: 4 bytes, one float32
        ('{"data":[{"index":0,"embedding":[1,,2]}]}', 35, "bad number row"),
        ('{"data":[{"index":0,"embedding":[1e999999999999999999999x]}]}', 56, "expected ',' or ']'"),
    ],
)
def test_every_error_names_its_byte(body, offset, words):
    try:
        json.loads(body)
        loads = True
    except ValueError:
        loads = False
    if words is None and loads:  # a valid body: reads as json.loads + numpy reads it
        assert same_bits(decode_response_body(body), reference(body))
        return
    with pytest.raises(ValueError) as info:
        decode_response_body(body)
    assert f"at byte {offset}" in str(info.value), str(info.value)
    if words is not None:
        assert words in str(info.value)


def test_bad_base64_in_a_shuffled_body_names_the_row_byte():
    x = sample(8, 16)
    body = bytearray(response_body(x, model="m", encoding_format="base64"))
    at = body.index(b'"index":5')
    at = body.index(b'"embedding":"', at) + 13 + 7
    body[at] = ord("!")
    assert error_offset(bytes(body)) == at


@pytest.mark.parametrize("change", ["bad character", "short row", "looks like a row", "cut"])
def test_threads_give_the_same_error(change):
    """A body large enough to be split over threads, spoiled in a late row: every thread count
    gives one thread's message, byte for byte. "looks like a row": a shorter row, then another
    string, whose '"' stands where a row's text would end (the reader guesses row ends by the
    first row's length, and must then report what json.loads + the rules say)."""
    x = sample(300, 1024, seed=3)
    body = bytearray(response_body(x, model="m", encoding_format="base64"))
    at = body.index(b'"embedding":"', body.index(b'"index":250')) + 13
    length = body.index(b'"', at) - at
    if change == "bad character":
        body[at + 20] = ord("!")
    elif change == "short row":
        body[at : at + length] = b"AACAPw=="
    elif change == "looks like a row":
        body[at : at + length] = (b'AACAPw==","z":"' + b"A" * length)[:length]
        assert json.loads(body)["data"][250]["z"]  # still JSON: a row of one value
    else:
        body = body[: at + 100]
    messages = set()
    for threads in (1, 2, 4):
        with pytest.raises(ValueError) as info:
            decode_response_body(bytes(body), threads=threads)
        messages.add(str(info.value))
    assert len(messages) == 1, messages
    offset = int(re.search(r"at byte (\d+)", messages.pop()).group(1))
    assert offset == {"bad character": at + 20, "cut": at - 1}.get(change, at - 1)


# ---- hostile bytes: hypothesis --------------------------------------------------------------


def oracle(body):
    """json.loads + numpy, as a client would, with this package's rules on top (integer indexes,
    each 0..B-1 once; rows all base64 or all numbers, of one length; base64 strict); None where
    it refuses the body (any exception)."""
    try:
        doc = json.loads(body)
        data = doc["data"]
        assert isinstance(doc, dict) and isinstance(data, list)
        rows = [None] * len(data)
        kinds = set()
        for entry in data:
            index, e = entry["index"], entry["embedding"]
            assert type(index) is int and 0 <= index < len(data) and rows[index] is None
            if isinstance(e, str):
                kinds.add("base64")
                rows[index] = tensorb64.decode(e)
            else:
                assert isinstance(e, list) and all(type(v) in (int, float) for v in e)
                kinds.add("float")
                with np.errstate(over="ignore"):  # past float32: inf, as numpy casts it
                    rows[index] = np.asarray(e, dtype=np.float32)
        assert len(kinds) <= 1 and len({len(r) for r in rows}) <= 1
        return np.array(rows, dtype=np.float32).reshape(len(rows), -1)
    except Exception:
        return None


def check_against_oracle(body):
    expected = oracle(body)
    if expected is None:
        with pytest.raises(ValueError):
            decode_response_body(body)
    else:
        assert same_bits(decode_response_body(body), expected)


VALID = [
    response_body(sample(3, 5), model="m", encoding_format="base64"),
    response_body(sample(3, 5), model="m", encoding_format="float"),
    response_body(sample(2, 3), model="m", encoding_format="float", float_format="shortest", dtype="float16"),
    json.dumps({"data": entries(sample(2, 4), "base64", order=[1, 0]), "x": [None, True, {"y": -1.5e-3}]}, indent=1).encode(),
]


@pytest.mark.parametrize("body", VALID)
def test_every_truncation_is_an_error(body):
    assert oracle(body) is not None
    for n in range(len(body)):
        with pytest.raises(ValueError):
            decode_response_body(body[:n])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.sampled_from(VALID),
    changes=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_changed_bytes_give_an_error_or_json_loads_values(body, changes):
    body = bytearray(body)
    for where, byte in changes:
        body[int(where * len(body))] = byte
    check_against_oracle(bytes(body))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.sampled_from(VALID),
    cut=st.floats(0, 1, exclude_max=True),
    insert=st.sampled_from([b" ", b",", b"]", b"}", b'"', b"\\", b"[", b"{", b"0", b"-", b"e", b"=", b"NaN", b"\\u0041", b"\xc3"]),
)
def test_inserted_bytes_give_an_error_or_json_loads_values(body, cut, insert):
    at = int(cut * len(body))
    check_against_oracle(body[:at] + insert + body[at:])
