"""The body's layout is the core's: its table of layouts, each row against the bytes its server
sends; the envelope from serialised values; the chunks of a streamed body planned by the core, as
the Python planner planned them before (a copy of it is the oracle here); entries written after
a leading comma concatenating to the whole body."""

import base64
import json
import random
import types

import numpy as np
import pytest

from tensorb64 import _native
from tensorb64._hosts import vllm as vllm_host
from tensorb64.openai import iter_response_body, response_body

torch = pytest.importorskip("torch", reason="torch is not installed")

MODEL = "text-embedding-3-small"


def test_the_table_of_layouts():
    assert _native._response_layouts() == {
        "openai": (("object", "index", "embedding"), ("object", "data", "model", "usage")),
        "vllm": (("index", "object", "embedding"), ("id", "object", "created", "model", "data", "usage")),
        "sglang": (("embedding", "index", "object"), ("data", "model", "object", "usage")),
        "infinity": (("object", "embedding", "index"), ("object", "data", "model", "usage", "id", "created")),
    }


def test_openai_layout_is_starlettes_json_response():
    """The openai row: the bytes Starlette's JSONResponse sends for the dict a FastAPI server
    builds, extras after usage, an extra naming a field in that field's place."""
    starlette_responses = pytest.importorskip("starlette.responses")
    x = torch.randn(3, 5, generator=torch.Generator().manual_seed(1))
    rows = x.tolist()
    usage = {"prompt_tokens": 4, "total_tokens": 4}
    for extra in ({}, {"id": "embd-1", "created": 2}, {"model": "other", "pad": ["é", None, 1.5]}, {3: "int key", True: 0}):
        data = [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(rows)]
        expected = starlette_responses.JSONResponse({"object": "list", "data": data, "model": MODEL, "usage": usage, **extra}).body
        assert response_body(x, model=MODEL, usage=usage, extra=extra) == expected, extra


def test_the_envelope_is_laid_out_by_the_core():
    head, tail = _native._body_envelope("vllm", [('"model"', '"m"'), (b'"x"', b"1"), ('"id"', '"a"')])
    assert (head, tail) == (b'{"id":"a","model":"m","data":[', b'],"x":1}')
    with pytest.raises(ValueError, match='"data"'):
        _native._body_envelope("openai", [('"data"', "[]")])
    with pytest.raises(ValueError, match="unknown layout 'tei'; expected 'openai', 'vllm', 'sglang' or 'infinity'"):
        _native._body_envelope("tei", [])
    with pytest.raises(TypeError, match="JSON text"):
        _native._body_envelope("openai", [('"model"', 3)])
    with pytest.raises(TypeError, match="tuple"):
        _native._body_envelope("openai", [['"model"', '"m"']])


# ---- the vllm row against vLLM's own response -----------------------------------------------------


def vllm_protocol():
    """A stand-in for vLLM's protocol module: EmbeddingResponse and its data entries declared as
    vLLM 0.32/0.33 declare them (pydantic models; their fields in vLLM's order)."""
    pydantic = pytest.importorskip("pydantic")

    class UsageInfo(pydantic.BaseModel):
        prompt_tokens: int = 0
        total_tokens: int = 0
        completion_tokens: int | None = 0
        prompt_tokens_details: dict | None = None

    class EmbeddingResponseData(pydantic.BaseModel):
        index: int
        object: str = "embedding"
        embedding: list[float] | str

    class EmbeddingResponse(pydantic.BaseModel):
        id: str
        object: str = "list"
        created: int
        model: str
        data: list[EmbeddingResponseData]
        usage: UsageInfo

    def get_pooling_usage(batch):
        tokens = sum(len(output.prompt_token_ids) for output in batch)
        return UsageInfo(prompt_tokens=tokens, total_tokens=tokens)

    return types.SimpleNamespace(EmbeddingResponse=EmbeddingResponse, EmbeddingResponseData=EmbeddingResponseData,
                                 get_pooling_usage=get_pooling_usage)


def vllms_body(module, batch, rows, encoding_format, with_orjson, *arguments):
    """What vLLM's _openai_json_response sends: its EmbeddingResponse's dump, float rows as numpy
    float32 arrays for orjson (Python floats for json.dumps), base64 rows as str."""
    request_id, created, model = arguments
    data = []
    for i, row in enumerate(rows):
        if encoding_format == "base64":
            embedding = base64.b64encode(row.numpy().astype("<f4").tobytes()).decode()
        else:
            embedding = row.numpy() if with_orjson else row.tolist()
        data.append({"index": i, "object": "embedding", "embedding": embedding})
    envelope = module.EmbeddingResponse(id=request_id, created=created, model=model, data=[],
                                        usage=module.get_pooling_usage(batch)).model_dump()
    envelope["data"] = data
    if with_orjson:
        orjson = pytest.importorskip("orjson")
        return orjson.dumps(envelope, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
    return json.dumps(envelope, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


@pytest.mark.parametrize("encoding_format", ["float", "base64"])
@pytest.mark.parametrize("with_orjson", [True, False])
@pytest.mark.parametrize("model", ["all-MiniLM-L6-v2", 'quo"te é \u2028'])
def test_vllm_layout_is_vllms_response(encoding_format, with_orjson, model):
    module = vllm_protocol()
    rows = torch.randn(4, 9, generator=torch.Generator().manual_seed(2)) * 1e-3
    batch = [types.SimpleNamespace(outputs=types.SimpleNamespace(data=row.clone()), prompt_token_ids=list(range(3 + i)))
             for i, row in enumerate(rows)]
    arguments = ("embd-0123456789abcdef", 1764500000, model)
    got = vllm_host.openai_json_body(module, batch, *arguments, encoding_format, "float32", "little", with_orjson)
    assert got == vllms_body(module, batch, rows, encoding_format, with_orjson, *arguments)


def test_vllm_plugin_leaves_another_envelope_to_vllm():
    """A release whose response has other fields than the layout's: vLLM's own answers (None)."""
    module = vllm_protocol()
    pydantic = pytest.importorskip("pydantic")

    class EmbeddingResponse(module.EmbeddingResponse):
        system_fingerprint: str = "fp"

    module.EmbeddingResponse = EmbeddingResponse
    batch = [types.SimpleNamespace(outputs=types.SimpleNamespace(data=torch.ones(3)), prompt_token_ids=[1])]
    assert pydantic and vllm_host.openai_json_body(module, batch, "id", 1, "m", "base64", "float32", "little") is None


# ---- chunks ------------------------------------------------------------------------------------


def _pieces(data: bytes, size: int):
    for at in range(0, len(data), size):
        yield data[at : at + size]


def python_chunks(head: bytes, tail: bytes, count: int, entry: int, write, chunk_size: int):
    """iter_response_body's chunks as the Python planner wrote them before the core planned them
    (a verbatim copy, the oracle): ``write(start, stop, prefix, suffix)`` gives prefix + the
    entries of rows [start, stop) + suffix; ``entry`` bounds one row's entry and its comma."""
    if count == 0:
        yield from _pieces(head + tail, chunk_size)
        return
    prefix = head
    if len(head) + entry > chunk_size:  # not even one row fits beside the head
        yield from _pieces(head, chunk_size)
        prefix = b""
    start = 0
    while start < count:
        stop = min(count, start + max(1, (chunk_size - len(prefix)) // entry))
        last = stop == count
        with_tail = last and len(prefix) + (stop - start) * entry + len(tail) <= chunk_size
        yield write(start, stop, prefix, tail if with_tail else b"")
        prefix = b","
        start = stop
    if not with_tail:
        yield from _pieces(tail, chunk_size)


def core_plan(head: bytes, tail: bytes, count: int, entry: int, chunk_size: int) -> list:
    chunks, chunk = [], None
    while (chunk := _native._next_body_chunk(len(head), len(tail), count, entry, chunk_size, chunk)) is not None:
        chunks.append(chunk)
    return chunks


def as_described(head: bytes, tail: bytes, chunk: tuple):
    head_begin, head_end, start, stop, comma, tail_begin, tail_end = chunk
    if start == stop:
        return head[head_begin:head_end] + tail[tail_begin:tail_end]
    return (head[head_begin:head_end], comma, start, stop, tail[tail_begin:tail_end])


def described_python_chunks(head, tail, count, entry, chunk_size) -> list:
    def write(start, stop, prefix, suffix):
        return (b"" if prefix == b"," else prefix, prefix == b",", start, stop, suffix)

    return list(python_chunks(head, tail, count, entry, write, chunk_size))


def test_chunk_plans_equal_the_python_planners():
    """Over many envelope sizes, row counts, entry bounds and chunk sizes (every boundary where a
    head, a row or a tail just fits or just does not), the core's chunks are the Python
    planner's."""
    rng = random.Random(28)
    cases = set()
    for head_size in (0, 1, 25, 26, 99, 100, 101, 250):
        for tail_size in (0, 1, 2, 40, 99, 100, 101, 250):
            for count in (0, 1, 2, 3, 7, 40):
                for entry in (1, 2, 47, 48, 99, 100, 101, 1000):
                    for chunk_size in (1, 2, 3, 47, 48, 100, 101, 150, 1000, 1 << 20):
                        if rng.random() < 0.25:
                            cases.add((head_size, tail_size, count, entry, chunk_size))
    for _ in range(3000):
        cases.add((rng.randrange(0, 300), rng.randrange(0, 300), rng.randrange(0, 60), rng.randrange(1, 400),
                   rng.randrange(1, 3000)))
    for head_size, tail_size, count, entry, chunk_size in sorted(cases):
        head = bytes(rng.randrange(97, 123) for _ in range(head_size))
        tail = bytes(rng.randrange(65, 91) for _ in range(tail_size))
        got = [as_described(head, tail, c) for c in core_plan(head, tail, count, entry, chunk_size)]
        assert got == described_python_chunks(head, tail, count, entry, chunk_size), (head_size, tail_size, count, entry, chunk_size)


def test_chunk_plan_sizes_near_the_limits():
    big = (1 << 63) - 1
    plan = core_plan(b"{", b"}", 3, big, 10)  # an entry larger than any chunk: a row a chunk
    assert [c[2:4] for c in plan] == [(0, 0), (0, 1), (1, 2), (2, 3), (3, 3)]
    assert core_plan(b"{", b"}", big, 1, big)[0] == (0, 1, 0, big - 1, False, 0, 0)
    with pytest.raises((OverflowError, ValueError)):
        _native._next_body_chunk(-1, 0, 0, 1, 1, None)
    with pytest.raises(ValueError, match="previous must be a chunk"):
        _native._next_body_chunk(1, 1, 1, 1, 1, (0, 1, 0, -1, False, 0, 0))


def entries_text(body: bytes, start: int, stop: int) -> bytes:
    """The data entries of rows [start, stop) of a body, as json.dumps writes each (float text
    reads back to the same double and is written again the same)."""
    data = json.loads(body)["data"][start:stop]
    return b",".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode() for e in data)


@pytest.mark.parametrize("encoding_format", ["float", "base64"])
@pytest.mark.parametrize("layout", ["openai", "vllm"])
def test_streamed_chunks_equal_the_python_planners(encoding_format, layout):
    """iter_response_body's chunks, each one, are what the Python planner gave: its chunk bounds
    over the same envelope, each chunk's rows' entries after a comma but the first."""
    x = torch.randn(23, 11, generator=torch.Generator().manual_seed(3))
    extra = {"id": "embd-1", "created": 7, "pad": "p" * 60}
    whole = response_body(x, model=MODEL, encoding_format=encoding_format, extra=extra, layout=layout)
    data_at = whole.index(b'"data":[') + len(b'"data":[')
    data_end = whole.rindex(b"]")  # (the envelope after "data" holds no "]")
    head, tail = whole[:data_at], whole[data_end:]
    entry = _native._entry_bound(11, 22, "float32" if encoding_format == "base64" else None, "repr")

    def write(start, stop, prefix, suffix):
        return prefix + entries_text(whole, start, stop) + suffix

    for chunk_size in (1, 50, 100, head.__len__() + entry, 333, 1000, 5000):
        got = list(iter_response_body(x, model=MODEL, encoding_format=encoding_format, extra=extra, layout=layout,
                                      chunk_size=chunk_size))
        assert got == list(python_chunks(head, tail, 23, entry, write, chunk_size)), chunk_size
        assert b"".join(got) == whole


@pytest.mark.parametrize("encoding_format", ["float", "base64"])
def test_entries_after_a_leading_comma_concatenate_to_the_body(encoding_format):
    x = torch.randn(10, 6, generator=torch.Generator().manual_seed(4)).numpy()
    whole = response_body(x, model=MODEL, encoding_format=encoding_format, layout="vllm")
    head, tail = _native._body_envelope("vllm", [('"object"', '"list"'), ('"model"', json.dumps(MODEL)),
                                                ('"usage"', '{"prompt_tokens":0,"total_tokens":0}')])
    write = (lambda rows, h, t, first, comma: _native._response_body_base64(rows, "float32", "little", h, t, first, 1, "vllm", comma)) \
        if encoding_format == "base64" else \
        (lambda rows, h, t, first, comma: _native._response_body_float(rows, "repr", h, t, first, 1, "vllm", comma))
    for cuts in ([0, 10], [0, 1, 10], [0, 3, 4, 9, 10], list(range(11))):
        parts = [write(x[a:b], head if a == 0 else b"", tail if b == 10 else b"", a, a != 0) for a, b in zip(cuts, cuts[1:], strict=False)]
        assert b"".join(parts) == whole, cuts
    # No rows: no comma either.
    assert write(x[:0], b"", b"", 4, True) == b""
    assert write(np.ones((1, 2), np.float32), b"[", b"]", 0, True).startswith(b"[,{")
