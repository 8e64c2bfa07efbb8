"""tensorb64.openai.patch(): the openai client's own responses read by the core, judged against
the same client unpatched, call by call, through a mock transport: the same response object
types, the same fields, the same Python floats bit for bit, the same errors.

The reader's float64 mode it rests on is tested in tests/test_float64_rows.py.

Needs openai (the `examples` extra); skipped without it. ci/client_check.sh runs it with openai
2.x and 3.x.
"""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from tensorb64.openai import is_patched, patch, unpatch

openai = pytest.importorskip("openai", reason="openai is not installed (pip install 'tensorb64[examples]')")

from tests.support.openai_mock import JSON, async_client, httpx, same, sync_client  # noqa: E402
from tests.support.openai_mock import server as mock_server  # noqa: E402

X = np.random.default_rng(27).normal(0, 0.05, (6, 48)).astype(np.float32)


def float_rows_body(rows_text: list[str]) -> bytes:
    entries = ",".join(f'{{"object":"embedding","index":{i},"embedding":{t}}}' for i, t in enumerate(rows_text))
    return f'{{"object":"list","data":[{entries}],"model":"m"}}'.encode()


def server(answer=None, **kwargs):
    return mock_server(X, answer, **kwargs)


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


# ---- faults: whatever goes wrong in tensorb64's path, the client's own answer -------------------


def test_callers_base64_request_reads_nothing(monkeypatch):
    """encoding_format="base64": the caller keeps the strings, so the core reads nothing at all."""
    from tensorb64._hosts import openai_client

    reads = []
    monkeypatch.setattr(openai_client, "rows_and_offsets", lambda body: reads.append(body) or 1 / 0)
    with sync_client(server()) as client:
        theirs, ours = patched_and_not(create(encoding_format="base64"), client)
    unpatch()
    assert same(theirs, ours) and reads == []


def test_a_failure_of_ours_mid_call_gives_the_clients_answer(native_reads, monkeypatch, caplog):
    from tensorb64._hosts import openai_client, patching

    monkeypatch.setattr(patching, "_logged", set())
    monkeypatch.setattr(openai_client, "without_embeddings", lambda body, offsets: 1 / 0)
    with sync_client(server()) as client:
        for kwargs in ({}, {"encoding_format": "float"}):
            theirs, ours = patched_and_not(create(**kwargs), client)
            assert isinstance(ours, openai.types.CreateEmbeddingResponse) and same(theirs, ours)
    lines = [r.getMessage() for r in caplog.records if r.name == "tensorb64.openai"]
    assert lines == ["tensorb64: reading an embeddings body failed; openai's own answered (logged once)"]


@pytest.mark.parametrize("when", ["before patch()", "after patch()"])
def test_frozen_response_models(native_reads, monkeypatch, caplog, when):
    """Response models made frozen (as a later release may make them): before patch(), openai is
    not patched (one line); after it, each call falls back to openai's own parse; either way the
    float request answers as unpatched."""
    from openai.types import CreateEmbeddingResponse, Embedding

    from tensorb64._hosts import patching

    monkeypatch.setattr(patching, "_logged", set())
    unpatch()
    with sync_client(server()) as client:
        theirs = client.embeddings.create(input=["a", "b"], model="m", encoding_format="float")
        if when == "after patch()":
            patch()
        for model in (CreateEmbeddingResponse, Embedding):
            monkeypatch.setitem(model.model_config, "frozen", True)
            if hasattr(model, "__pydantic_setattr_handlers__"):  # (pydantic 2.11+ memoizes the frozen check)
                monkeypatch.setattr(model, "__pydantic_setattr_handlers__", {})
        if when == "before patch()":
            patch()
            assert not is_patched()
        ours = client.embeddings.create(input=["a", "b"], model="m", encoding_format="float")
    assert same(theirs, ours) and native_reads[0] == 0
    assert len([r for r in caplog.records if r.name == "tensorb64.openai"]) == 1


def test_strict_validation_error_is_the_clients_own_whole():
    """A float body a strict client refuses: the same APIResponseValidationError, its body the
    whole body the client parsed (every embedding in it), its response the same."""
    def bad(asked):
        body = float_rows_body(["[0.5, 1.5]", "[2.5, 3.5]"]).replace(b'"model":"m"', b'"model":5')
        return httpx.Response(200, headers=JSON, content=body)

    errors = []
    with sync_client(server(bad), _strict_response_validation=True) as client:
        for state in (unpatch, patch):
            state()
            with pytest.raises(openai.APIResponseValidationError) as raised:
                client.embeddings.create(input=["a", "b"], model="m", encoding_format="float")
            errors.append(raised.value)
    unpatch()
    theirs, ours = errors
    assert ours.body == theirs.body and ours.body["data"][0]["embedding"] == [0.5, 1.5]
    assert str(ours) == str(theirs) and ours.response.status_code == theirs.response.status_code
    assert type(ours.__context__) is type(theirs.__context__) and str(ours.__context__) == str(theirs.__context__)


def test_patch_and_unpatch_race_calls_from_other_threads():
    """4 threads call create() while another patches and unpatches 100 times: every answer is the
    unpatched client's, and no call fails."""
    import threading

    unpatch()
    with sync_client(server()) as client:
        expected = client.embeddings.create(input=["a", "b"], model="m", encoding_format="float")
        stop = threading.Event()
        results, errors = [], []

        def call():
            while not stop.is_set():
                try:
                    results.append(client.embeddings.create(input=["a", "b"], model="m", encoding_format="float"))
                except BaseException as e:  # noqa: BLE001 (reported below)
                    errors.append(e)

        threads = [threading.Thread(target=call) for _ in range(4)]
        for thread in threads:
            thread.start()
        try:
            for _ in range(100):
                patch()
                unpatch()
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
    assert errors == [] and results and all(same(expected, r) for r in results)
    assert not is_patched()


def test_a_release_outside_the_accepted_is_left_alone(monkeypatch, caplog):
    from tensorb64._hosts import openai_client, patching

    monkeypatch.setattr(patching, "_logged", set())
    unpatch()
    monkeypatch.setattr(openai, "__version__", "4.0.0")
    patch()
    assert not is_patched()
    lines = [r.getMessage() for r in caplog.records if r.name == "tensorb64.openai"]
    assert lines == ["tensorb64: openai 4.0.0: openai is not one tensorb64 knows (release 4.0.0 is outside the "
                     "accepted 1.17 to before 4); openai's own is kept"]
    unpatch()
    assert openai_client.OPENAI.tested == ("2.54.0", "3.57.0")
