"""tensorb64.openai.patch(): the openai client's own responses read by the core, judged against
the same client unpatched, call by call, through a mock transport: the same response object
types, the same fields, the same Python floats bit for bit, the same errors.

Also the reader's float64 mode it rests on (float rows as the doubles json.loads gives), against
json.loads on every layout a server writes.

Needs openai (the `examples` extra); skipped without it. ci/client_check.sh runs it with openai
2.x and 3.x.
"""

from __future__ import annotations

import asyncio
import json
import math
import struct

import numpy as np
import pytest

from tensorb64 import _openai_patch
from tensorb64._client import _read_rows_and_offsets
from tensorb64.openai import is_patched, patch, unpatch

# ---- the float64 read of float rows, against json.loads ----

RNG = np.random.default_rng(27)


def bits(value: float) -> bytes:
    return struct.pack("<d", value)


def float_rows_body(rows_text: list[str], indexes: list[int] | None = None) -> bytes:
    indexes = list(range(len(rows_text))) if indexes is None else indexes
    entries = ",".join(f'{{"object":"embedding","index":{i},"embedding":{t}}}' for i, t in zip(indexes, rows_text, strict=True))
    return f'{{"object":"list","data":[{entries}],"model":"m"}}'.encode()


def assert_reads_as_json_loads(body: bytes) -> None:
    rows, offsets = _read_rows_and_offsets(body)
    assert rows.dtype == np.float64
    entries = json.loads(body)["data"]
    assert rows.shape[0] == len(entries)
    for entry in entries:
        expected = [float(v) for v in entry["embedding"]]
        got = rows[entry["index"]].tolist()
        assert [bits(v) for v in got] == [bits(v) for v in expected], entry["index"]
        start, end = offsets[entry["index"]]
        assert json.loads(body[start:end]) == entry["embedding"] or any(math.isnan(v) for v in expected)


def layouts_of(values: np.ndarray) -> list[list[str]]:
    """The same rows as json.dumps, repr of float32 widened, numpy's shortest float32 and
    scientific text write them."""
    out = [[json.dumps(row.tolist()) for row in values]]
    out.append([json.dumps(row.astype(np.float32).tolist()) for row in values])
    out.append(["[" + ", ".join(np.format_float_positional(v, unique=True, trim="-") for v in row.astype(np.float32)) + "]"
                for row in values])
    out.append(["[" + ",".join(np.format_float_scientific(v, unique=True, trim="-") for v in row.astype(np.float32)) + "]"
                for row in values])
    out.append(["[" + ",".join(f"{v:.17e}".replace("e+0", "E+").replace("e-0", "e-") for v in row) + "]"
                for row in values])
    return out


def test_float64_rows_equal_json_loads_on_every_layout():
    # magnitudes below 1e13: a positional text of an integer of more than 15 digits is refused
    values = RNG.normal(0, 0.05, (5, 64)) * np.exp(RNG.uniform(-40, 30, (5, 64)))
    for layout in layouts_of(values):
        assert_reads_as_json_loads(float_rows_body(layout))


def test_float64_rows_equal_orjson_text():
    orjson = pytest.importorskip("orjson")
    values = RNG.normal(0, 0.05, (3, 128)).astype(np.float32)
    body = orjson.dumps({"object": "list", "data": [{"object": "embedding", "index": i, "embedding": r}
                                                     for i, r in enumerate(values)], "model": "m"},
                        option=orjson.OPT_SERIALIZE_NUMPY)
    assert_reads_as_json_loads(body)


def test_float64_rows_edge_texts():
    texts = [
        "0", "-0", "0.0", "-0.0", "1", "-1", "3", "999999999999999", "-999999999999999",
        "1e0", "1E+2", "1e-2", "2.5e-324", "5e-324", "4.9406564584124654e-324", "2.2250738585072011e-308",
        "2.2250738585072014e-308", "1.7976931348623157e308", "1.7976931348623159e308", "1e400", "-1e400",
        "1e-400", "0.1", "0.30000000000000004", "9007199254740993.0", "9007199254740992.5",
        # halfway between two doubles, and one digit either side of halfway
        "1.00000000000000011102230246251565404236316680908203125",
        "1.00000000000000011102230246251565404236316680908203124",
        "1.00000000000000011102230246251565404236316680908203126",
        "0." + "0" * 30 + "1234567890123456789012345678901234567890",
        "123456789012345678901234567890.0", "NaN", "Infinity", "-Infinity", "1.5e-45", "3.4028235e38",
    ]
    assert_reads_as_json_loads(float_rows_body(["[" + ", ".join(texts) + "]", "[" + ",".join(reversed(texts)) + "]"]))


def test_float64_rows_refuse_integers_a_client_may_keep_as_int():
    for text in ["1000000000000000", "12345678901234567890", "9007199254740993", "10000000000000000000000"]:
        with pytest.raises(ValueError, match="at most 15 digits"):
            _read_rows_and_offsets(float_rows_body([f"[0.5, {text}]"]))


def test_float64_rows_offsets_in_any_order_and_escaped_keys():
    body = (b'{"data":[{"embedding":[1.5,2],"index":1,"x":"]"},{"ind\\u0065x":0,"object":"embedding",'
            b'"embedding":  [ 3 , 4.25 ] }],"model":"m","usage":{"a":[1,2]}}')
    rows, offsets = _read_rows_and_offsets(body)
    assert rows.tolist() == [[3.0, 4.25], [1.5, 2.0]]
    assert [body[s:e] for s, e in offsets] == [b"[ 3 , 4.25 ]", b"[1.5,2]"]


# ---- the patch, against the same openai client unpatched ----

openai = pytest.importorskip("openai", reason="openai is not installed (pip install 'tensorb64[examples]')")


from openai_mock import JSON, async_client, httpx, same, sync_client  # noqa: E402
from openai_mock import server as mock_server  # noqa: E402

X = RNG.normal(0, 0.05, (6, 48)).astype(np.float32)


def server(answer=None, **kwargs):
    return mock_server(X, answer, **kwargs)


@pytest.fixture
def native_reads(monkeypatch):
    """The number of responses the patch read with the core (not handed back to the client)."""
    count = [0]
    original = _openai_patch._read_embeddings

    def counting(*args):
        parsed = original(*args)
        count[0] += parsed is not None
        return parsed

    monkeypatch.setattr(_openai_patch, "_read_embeddings", counting)
    yield count
    unpatch()


def outcome(call):
    """What a call returns, or the type and message of what it raises."""
    try:
        return call()
    except Exception as e:  # compared between the patched and unpatched client
        return (type(e), str(e))


def patched_and_not(call, client):
    """call(client) unpatched, then patched: both outcomes."""
    unpatch()
    theirs = outcome(lambda: call(client))
    patch()
    ours = outcome(lambda: call(client))
    return theirs, ours


def create(**kwargs):
    return lambda client: client.embeddings.create(input=["a", "b", "c"], model="m", **kwargs)


@pytest.mark.parametrize("kwargs", [{}, {"encoding_format": "float"}, {"dimensions": 48}])
def test_create_gives_the_same_response(native_reads, kwargs):
    with sync_client(server()) as client:
        theirs, ours = patched_and_not(create(**kwargs), client)
    assert isinstance(ours, openai.types.CreateEmbeddingResponse)
    assert same(theirs, ours)
    assert [d.embedding for d in ours.data] == X[:3].tolist()
    assert native_reads[0] == 1


def test_callers_base64_strings_untouched(native_reads):
    with sync_client(server()) as client:
        theirs, ours = patched_and_not(create(encoding_format="base64"), client)
    assert same(theirs, ours) and all(isinstance(d.embedding, str) for d in ours.data)
    assert native_reads[0] == 0


def test_raw_and_streaming_responses_even_when_cached_before_the_patch(native_reads):
    with sync_client(server()) as client:
        raw = client.embeddings.with_raw_response  # cached before patch()
        theirs, ours = patched_and_not(lambda c: raw.create(input=["a"], model="m").parse(), client)
        assert same(theirs, ours)

        def streamed(c):
            with c.embeddings.with_streaming_response.create(input=["a", "b"], model="m",
                                                              encoding_format="float") as r:
                return r.parse()

        theirs, ours = patched_and_not(streamed, client)
        assert same(theirs, ours)
    assert native_reads[0] == 2


def test_async_create(native_reads):
    async def both():
        async with async_client(server()) as client:
            unpatch()
            theirs = [await client.embeddings.create(input=["a", "b"], model="m", **kw)
                      for kw in ({}, {"encoding_format": "float"})]
            raw = await client.embeddings.with_raw_response.create(input=["a"], model="m")
            theirs.append(raw.parse())
            patch()
            ours = [await client.embeddings.create(input=["a", "b"], model="m", **kw)
                    for kw in ({}, {"encoding_format": "float"})]
            raw = await client.embeddings.with_raw_response.create(input=["a"], model="m")
            ours.append(raw.parse())
            return theirs, ours

    theirs, ours = asyncio.run(both())
    assert same(theirs, ours)
    assert native_reads[0] == 3


def body_of(entries, **envelope):
    return httpx.Response(200, headers=JSON, content=json.dumps(
        {"id": "embd-1", "object": "list", "created": 123, "data": entries, "model": "m",
         "usage": {"prompt_tokens": 1, "total_tokens": 1}, **envelope}).encode())


def b64(row):
    import base64
    return base64.b64encode(np.asarray(row, "<f4").tobytes()).decode()


@pytest.mark.parametrize("kwargs", [{}, {"encoding_format": "float"}])
@pytest.mark.parametrize("rows_as", ["floats", "base64"])
def test_order_as_sent_and_extra_fields(native_reads, kwargs, rows_as):
    """Entries in the order the server sent them (not by index), vLLM's envelope fields, extra
    fields in an entry: all as the client keeps them; a float body to a default request too."""
    order = [2, 0, 1]
    entries = [{"index": i, "object": "embedding", "extra": {"k": [1, 2]},
                "embedding": X[i].tolist() if rows_as == "floats" else b64(X[i])} for i in order]
    with sync_client(server(lambda asked: body_of(entries, kv={"x": 1.5}))) as client:
        theirs, ours = patched_and_not(create(**kwargs), client)
    assert same(theirs, ours)
    assert [d.index for d in ours.data] == order and ours.kv == {"x": 1.5}
    native = rows_as == "floats" or not kwargs  # a caller's base64... here "float" asked, base64 sent
    assert native_reads[0] == int(native)


@pytest.mark.parametrize("text", ["[0, -0, 1, 2.5e-324, NaN, Infinity, -Infinity, 1e400, 123456789012345]",
                                  "[1, 12345678901234567890]", "[1, 1e999999999999]"])
def test_float_texts_json_loads_gives(native_reads, text):
    """Integers (the client's float(int)), NaN and infinities, out-of-range exponents; an integer
    too long to be sure of goes to the client's own path."""
    with sync_client(server(lambda asked: httpx.Response(
            200, headers=JSON, content=float_rows_body([text]).replace(b'"model":"m"', b'"model":"m","usage":{}')))) as c:
        theirs, ours = patched_and_not(create(encoding_format="float"), c)
    assert same(theirs, ours)
    assert native_reads[0] == (0 if "12345678901234567890" in text else 1)


@pytest.mark.parametrize("answer", [
    lambda asked: httpx.Response(400, json={"error": {"message": "bad model", "type": "invalid_request_error"}}),
    lambda asked: httpx.Response(200, headers=JSON, content=b'{"object":"list","data":[],"model":"m"}'),
    lambda asked: httpx.Response(200, headers=JSON, content=b'{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1]}]}'),
    lambda asked: httpx.Response(200, headers=JSON, content=b'{"data":[{"index":0,"embedding":"AAAAAA=="}]}'),
    lambda asked: httpx.Response(200, headers=JSON, content=b'{"data":[{"index":0,"embedding":"AAAA AAA="}]}'),
    lambda asked: httpx.Response(200, headers=JSON, content=b'{"data":[{"index":0,"embedding":[1,2]}'),
    lambda asked: httpx.Response(200, headers=JSON, content=b'{"data":[{"index":0,"embedding":[1,"x"]}]}'),
    lambda asked: httpx.Response(200, headers={"content-type": "text/plain"}, content=b'{"data":[{"index":0,"embedding":[1,2]}]}'),
    lambda asked: httpx.Response(200, headers=JSON, content=b'{"data":[{"index":0,"embedding":[1,2]},{"index":0,"embedding":[3,4]}]}'),
    lambda asked: httpx.Response(200, headers=JSON, content=b'{"data":[{"embedding":"AACAPw==","index":0,"embedding":[1.5]}],"data":[{"index":0,"embedding":[2.5],"embedding":[7]}]}'),
], ids=["http-error", "empty-data", "unequal-rows", "not-whole-floats", "lenient-base64", "truncated",
        "string-in-row", "text-plain", "repeated-index", "repeated-keys"])
@pytest.mark.parametrize("kwargs", [{}, {"encoding_format": "float"}])
def test_what_the_core_does_not_read_is_the_clients(native_reads, answer, kwargs):
    with sync_client(server(answer)) as client:
        theirs, ours = patched_and_not(create(**kwargs), client)
    assert same(theirs, ours), (theirs, ours)


def test_retries_and_other_resources_unchanged(native_reads):
    calls = []
    with sync_client(server(calls=calls, fail_first=1), max_retries=2) as client:
        unpatch()
        theirs = client.embeddings.create(input=["a"], model="m")
        patch()
        calls.clear()
        ours = client.embeddings.create(input=["a"], model="m")
        assert len(calls) == 2 and same(theirs, ours)
        theirs, ours = patched_and_not(lambda c: c.models.retrieve("m"), client)
        assert same(theirs, ours) and ours.id == "m"


@pytest.mark.parametrize("kwargs", [{}, {"encoding_format": "float"}])
def test_strict_validation_client(native_reads, kwargs):
    """Strict validation refuses a default request's base64 strings (List[float]): so does the
    patched client; float rows read natively and validated the same."""
    with sync_client(server(), _strict_response_validation=True) as client:
        theirs, ours = patched_and_not(create(**kwargs), client)
    assert same(theirs, ours) and native_reads[0] == (1 if kwargs else 0)


def test_clients_made_before_and_after_and_the_undo():
    from openai import _legacy_response, _response

    originals = [_response.BaseAPIResponse.__dict__["_parse"], _legacy_response.LegacyAPIResponse.__dict__["_parse"]]
    before = sync_client(server())
    try:
        expected = before.embeddings.create(input=["a", "b"], model="m")
        patch()
        patch()  # a second call changes nothing
        assert is_patched()
        after = sync_client(server())
        with after:
            assert same(before.embeddings.create(input=["a", "b"], model="m"), expected)
            assert same(after.embeddings.create(input=["a", "b"], model="m"), expected)
        assert _response.BaseAPIResponse.__dict__["_parse"] is not originals[0]
    finally:
        unpatch()
        before.close()
    assert not is_patched()
    assert [_response.BaseAPIResponse.__dict__["_parse"], _legacy_response.LegacyAPIResponse.__dict__["_parse"]] == originals
    unpatch()  # not patched: nothing to do
