"""tensorb64.openai.response_body / iter_response_body: the whole /v1/embeddings body.

The reference for every byte is Starlette's own `JSONResponse(body).body` of the dict a server
builds today, with each row's base64 made here from torch's `.to(dtype)` bytes (not by
tensorb64) and each float row from `.to(torch.float32).tolist()`.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pytest

from tensorb64.openai import embedding_data, iter_response_body, response_body
from tests.support.platforms import PEAK_RSS, PEAK_RSS_ABSENT, PEAK_RSS_SOURCE, linux_only

torch = pytest.importorskip("torch", reason="torch (the test extra) is not installed")
starlette_responses = pytest.importorskip("starlette.responses", reason="starlette (the test extra) is not installed")
ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")

MODEL = "all-MiniLM-L6-v2"
TORCH_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "fp8_e4m3": torch.float8_e4m3fn,
    "fp8_e5m2": torch.float8_e5m2,
}
DEFAULT_USAGE = {"prompt_tokens": 0, "total_tokens": 0}


def starlette_body(body: dict) -> bytes:
    return starlette_responses.JSONResponse(body).body


def reference_b64_rows(rows: torch.Tensor, dtype: str = "float32", byteorder: str = "little") -> list:
    """Each row's base64, from torch's own `.to(dtype)` bytes in the asked byte order."""
    order = sys.byteorder if byteorder == "native" else byteorder
    converted = torch.empty(tuple(rows.shape), dtype=TORCH_DTYPES[dtype])  # standard strides, whatever the shape
    converted.copy_(rows.to(torch.float32).to(TORCH_DTYPES[dtype]))
    size = converted.element_size()
    raw = converted.view(torch.uint8).numpy().reshape(rows.shape[0], rows.shape[1], size)
    if order != sys.byteorder:
        raw = raw[:, :, ::-1]
    return [base64.b64encode(np.ascontiguousarray(r).tobytes()).decode() for r in raw]


# The keys of a data entry in each layout, as the dict a server builds writes them.
ENTRY_KEYS = {"openai": ("object", "index", "embedding"), "vllm": ("index", "object", "embedding")}
# vLLM's EmbeddingResponse's fields, in the order its model_dump writes them.
VLLM_FIELDS = ("id", "object", "created", "model", "data", "usage")


def entries(values, layout="openai") -> list:
    """The data entries of `values` (one per row), as dicts with their keys in layout's order."""
    fields = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(values)]
    return [{key: entry[key] for key in ENTRY_KEYS[layout]} for entry in fields]


def envelope(data, model=MODEL, usage=None, extra=None, layout="openai") -> dict:
    """The dict a server builds: OpenAI's order, or vLLM's fields in vLLM's order (those not given
    left out) and any others after them."""
    body = {"object": "list", "data": data, "model": model, "usage": DEFAULT_USAGE if usage is None else usage, **(extra or {})}
    if layout == "vllm":
        return {**{key: body[key] for key in VLLM_FIELDS if key in body}, **{k: v for k, v in body.items() if k not in VLLM_FIELDS}}
    return body


def reference_body(rows: torch.Tensor, encoding_format: str, *, model=MODEL, usage=None, extra=None, dtype="float32", byteorder="little",
                   layout="openai") -> bytes:
    """Starlette's bytes for the dict a server builds today."""
    if encoding_format == "base64":
        values = reference_b64_rows(rows, dtype, byteorder)
    else:
        values = rows.to(torch.float32).tolist()
    return starlette_body(envelope(entries(values, layout), model, usage, extra, layout))


def as_torch(x) -> torch.Tensor:
    """A torch tensor of the same values as a source (for the references)."""
    if isinstance(x, torch.Tensor):
        return x
    if x.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(x, dtype=x.dtype.newbyteorder("=")))


@pytest.fixture(scope="module")
def batch():
    return torch.randn(5, 48, generator=torch.Generator().manual_seed(12)) * 0.05


def sources(batch):
    """The batch as each accepted source type: torch float32/bfloat16/float16/float64, numpy
    float32/float16/float64/bfloat16 (ml_dtypes), a big-endian array, a strided view."""
    a = batch.numpy()
    return {
        "torch float32": batch,
        "torch bfloat16": batch.to(torch.bfloat16),
        "torch float16": batch.to(torch.float16),
        "torch float64": batch.to(torch.float64),
        "numpy float32": a,
        "numpy float16": a.astype(np.float16),
        "numpy float64": a.astype(np.float64),
        "numpy bfloat16": a.astype(ml_dtypes.bfloat16),
        "numpy big-endian float32": a.astype(">f4"),
        "torch column-major": batch.t().contiguous().t(),
    }


SOURCE_NAMES = list(sources(torch.zeros(1, 1)))


# ---- byte-identical to Starlette ----------------------------------------------------------------


@pytest.mark.parametrize("source", SOURCE_NAMES)
@pytest.mark.parametrize("dimensions", [None, 1, 17, 48])
@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
@pytest.mark.parametrize("byteorder", ["little", "big", "native"])
def test_base64_body_equals_starlettes(batch, source, dimensions, dtype, byteorder):
    x = sources(batch)[source]
    cut = as_torch(x) if dimensions is None else as_torch(x)[:, :dimensions]
    got = response_body(x, model=MODEL, encoding_format="base64", dimensions=dimensions, dtype=dtype, byteorder=byteorder)
    assert got == reference_body(cut, "base64", dtype=dtype, byteorder=byteorder)


@pytest.mark.parametrize("source", SOURCE_NAMES)
@pytest.mark.parametrize("dimensions", [None, 1, 17, 48])
def test_float_body_equals_starlettes(batch, source, dimensions):
    x = sources(batch)[source]
    cut = as_torch(x) if dimensions is None else as_torch(x)[:, :dimensions]
    expected = reference_body(cut, "float")
    assert response_body(x, model=MODEL, encoding_format="float", dimensions=dimensions) == expected
    # dtype and byteorder are base64's: checked, but they do not change float rows.
    assert response_body(x, model=MODEL, encoding_format="float", dimensions=dimensions, dtype="float16", byteorder="big") == expected


@pytest.mark.parametrize("layout", list(ENTRY_KEYS))
def test_equals_the_body_of_embedding_data(batch, layout):
    """response_body is what a server answering JSONResponse with embedding_data sends."""
    for encoding_format in ("float", "base64"):
        data = embedding_data(batch, encoding_format=encoding_format, dimensions=20, layout=layout)
        got = response_body(batch, model=MODEL, encoding_format=encoding_format, dimensions=20, layout=layout)
        assert got == starlette_body(envelope(data, layout=layout))


# ---- layout="vllm": vLLM's envelope, each entry's keys in vLLM's order -------------------------------

VLLM_EXTRA = {"id": "embd-7f3a", "created": 1764547200}


@pytest.mark.parametrize("source", ["torch float32", "torch bfloat16", "numpy big-endian float32", "torch column-major"])
@pytest.mark.parametrize("dimensions", [None, 17])
@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
@pytest.mark.parametrize("byteorder", ["little", "big", "native"])
def test_vllm_layout_base64_body_equals_starlettes(batch, source, dimensions, dtype, byteorder):
    x = sources(batch)[source]
    cut = as_torch(x) if dimensions is None else as_torch(x)[:, :dimensions]
    got = response_body(x, model=MODEL, encoding_format="base64", dimensions=dimensions, dtype=dtype, byteorder=byteorder, layout="vllm",
                        extra=VLLM_EXTRA)
    assert got == reference_body(cut, "base64", dtype=dtype, byteorder=byteorder, layout="vllm", extra=VLLM_EXTRA)
    assert got.startswith(b'{"id":"embd-7f3a","object":"list","created":1764547200,"model":')
    assert b',"data":[{"index":0,"object":"embedding","embedding":"' in got


@pytest.mark.parametrize("source", SOURCE_NAMES)
@pytest.mark.parametrize("dimensions", [None, 17])
def test_vllm_layout_float_body_equals_starlettes(batch, source, dimensions):
    x = sources(batch)[source]
    cut = as_torch(x) if dimensions is None else as_torch(x)[:, :dimensions]
    got = response_body(x, model=MODEL, encoding_format="float", dimensions=dimensions, layout="vllm")
    assert got == reference_body(cut, "float", layout="vllm")  # (no id, no created: left out)
    assert len(got) == len(response_body(x, model=MODEL, encoding_format="float", dimensions=dimensions))


@pytest.mark.parametrize("layout", list(ENTRY_KEYS))
def test_bodies_equal_orjsons(layout):
    """Every format in both key orders, byte for byte as orjson writes the same dict: float32 rows
    as numpy arrays (OPT_SERIALIZE_NUMPY, vLLM's float route) for float_format="orjson", base64
    rows as their strings."""
    orjson = pytest.importorskip("orjson", reason="orjson has no wheel for this CPython (free-threaded builds)")
    x = torch.randn(7, 33, generator=torch.Generator().manual_seed(21)) * torch.logspace(-30, 30, 33)
    x[0, :4] = torch.tensor([0.0, -0.0, 1e-45, 3.4028235e38])
    cases = {"float orjson": ({"encoding_format": "float", "float_format": "orjson"}, list(x.numpy()))}
    for dtype in TORCH_DTYPES:
        for byteorder in ("little", "big"):
            cases[f"base64 {dtype} {byteorder}"] = ({"encoding_format": "base64", "dtype": dtype, "byteorder": byteorder},
                                                    reference_b64_rows(x, dtype, byteorder))
    for name, (options, values) in cases.items():
        got = response_body(x, model=MODEL, layout=layout, **options)
        assert got == orjson.dumps(envelope(entries(values, layout), layout=layout), option=orjson.OPT_SERIALIZE_NUMPY), name


@pytest.mark.usefixtures("each_simd_level")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_every_simd_level(dtype):
    x = (torch.randn(9, 1000, generator=torch.Generator().manual_seed(3))).to(TORCH_DTYPES[dtype])
    assert response_body(x, model=MODEL, encoding_format="base64") == reference_body(x, "base64")
    assert response_body(x[:, 1::3], model=MODEL, encoding_format="base64", dtype="float16", byteorder="big") == reference_body(x[:, 1::3], "base64", dtype="float16", byteorder="big")


def test_default_format_is_base64(batch):
    assert response_body(batch, model=MODEL, encoding_format="base64") == response_body(batch, model=MODEL, encoding_format="base64")


NASTY_TEXT = ['', 'a"b', "back\\slash", "\\\"", "".join(map(chr, range(32))) + "\x7f", "naïve café 中文", "emoji 🚀🧠👩‍👩‍👧",
              "\u2028\u2029", "\ufeffBOM", "</script>", "\U0010ffff"]


@pytest.mark.parametrize("model", NASTY_TEXT)
@pytest.mark.parametrize("encoding_format", ["float", "base64"])
def test_model_names_are_escaped_as_json_dumps_escapes_them(batch, model, encoding_format):
    assert response_body(batch, model=model, encoding_format=encoding_format) == reference_body(batch, encoding_format, model=model)


@pytest.mark.parametrize("encoding_format", ["float", "base64"])
def test_nested_usage_and_extra(batch, encoding_format):
    usage = {"prompt_tokens": 12, "total_tokens": 12, "details": {"cached": [1, 2.5, None, True, False], "name": NASTY_TEXT}}
    extra = {"id": "embd-" + "é" * 3, "created": 1_700_000_000, "nested": {"a": [{"b": {}}, []], "x": -0.0, "y": 1e300},
             1: "int key", None: "null key", 2.5: "float key", False: "bool key", "emoji 🚀": NASTY_TEXT}
    got = response_body(batch, model=MODEL, encoding_format=encoding_format, usage=usage, extra=extra)
    assert got == reference_body(batch, encoding_format, usage=usage, extra=extra)


@pytest.mark.parametrize("key", ["object", "model", "usage"])
def test_extra_overriding_a_field_keeps_its_place(batch, key):
    extra = {"id": "x", key: {"replaced": key}}
    got = response_body(batch, model=MODEL, encoding_format="base64", extra=extra)
    assert got == reference_body(batch, "base64", extra=extra)
    assert list(json.loads(got))[:4] == ["object", "data", "model", "usage"]


@pytest.mark.parametrize("encoding_format", ["float", "base64"])
def test_empty_batch_and_empty_rows(encoding_format):
    for x in (torch.empty(0, 384), np.empty((0, 7), np.float32), torch.empty(0, 0)):
        got = response_body(x, model=MODEL, encoding_format=encoding_format)
        assert got == reference_body(as_torch(x), encoding_format)
        assert b'"data":[]' in got
    for x in (torch.empty(3, 0), np.empty((2, 0), np.float16)):
        got = response_body(x, model=MODEL, encoding_format=encoding_format)
        assert got == reference_body(as_torch(x).to(torch.float32), encoding_format)
        assert json.loads(got)["data"][1]["embedding"] in ("", [])


def test_one_row_and_lists():
    row = np.arange(5, dtype=np.float32) / 7
    for encoding_format in ("float", "base64"):
        expected = reference_body(torch.from_numpy(row[None]), encoding_format)
        assert response_body(row, model=MODEL, encoding_format=encoding_format) == expected
        assert response_body(row.tolist(), model=MODEL, encoding_format=encoding_format) == expected
        assert response_body([row.tolist()], model=MODEL, encoding_format=encoding_format) == expected


def test_indices_of_many_digits():
    x = torch.randn(1203, 3, generator=torch.Generator().manual_seed(1))
    for encoding_format in ("float", "base64"):
        assert response_body(x, model=MODEL, encoding_format=encoding_format) == reference_body(x, encoding_format)


def test_threads_give_the_same_bytes():
    x = torch.randn(64, 3072, generator=torch.Generator().manual_seed(2))
    one = response_body(x, model=MODEL, encoding_format="base64")
    assert one == reference_body(x, "base64")
    for threads in (2, 3, 8):
        assert response_body(x, model=MODEL, encoding_format="base64", threads=threads) == one
    small = x[:5, :40]
    assert response_body(small, model=MODEL, encoding_format="float", threads=2) == reference_body(small, "float")


def test_a_client_reads_the_values_back(batch):
    """What a client decodes from either body is the batch's float32 values, bit for bit."""
    b64 = json.loads(response_body(batch, model=MODEL, encoding_format="base64"))
    decoded = np.stack([np.frombuffer(base64.b64decode(e["embedding"]), "<f4") for e in b64["data"]])
    assert np.array_equal(decoded.view(np.uint32), batch.numpy().view(np.uint32))
    floats = json.loads(response_body(batch, model=MODEL, encoding_format="float"))
    assert np.array_equal(np.array([e["embedding"] for e in floats["data"]], np.float32).view(np.uint32), batch.numpy().view(np.uint32))


# ---- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_float_rows_name_row_and_column(batch, bad):
    x = batch.clone()
    x[3, 17] = bad
    with pytest.raises(ValueError, match=r"row 3, column 17 .*NaN and infinity have no JSON text"):
        response_body(x, model=MODEL, encoding_format="float")
    with pytest.raises(ValueError, match=r"row 3, column 17"):
        iter_response_body(x, model=MODEL, encoding_format="float", chunk_size=100)  # before the first chunk
    # The cut decides: a NaN outside the kept dimensions is no NaN of the response.
    assert response_body(x, model=MODEL, encoding_format="float", dimensions=17) == reference_body(batch[:, :17], "float")
    assert json.loads(response_body(x, model=MODEL, encoding_format="base64"))["data"][3]["embedding"]  # base64 carries it


def test_float64_rows_are_written_as_the_doubles_themselves():
    # As json_rows writes them: a float64 source is not narrowed (its doubles are written), so 1e300 is 1e+300;
    # only NaN and infinity are refused.
    x = np.zeros((2, 3))
    x[1, 2] = 1e300
    body = json.loads(response_body(x, model=MODEL, encoding_format="float"))
    assert body["data"][1]["embedding"] == [0.0, 0.0, 1e300]
    x[1, 2] = np.inf
    with pytest.raises(ValueError, match=r"row 1, column 2 is NaN or infinite"):
        response_body(x, model=MODEL, encoding_format="float")


@pytest.mark.parametrize(
    "kwargs, where",
    [
        ({"model": "bad \ud800 surrogate"}, "model"),
        ({"model": "m", "usage": {"prompt_tokens": "\udfff"}}, "usage"),
        ({"model": "m", "usage": {"x": float("nan")}}, "usage"),
        ({"model": "m", "extra": {"id": "\ud83d"}}, r"extra\['id'\]"),
        ({"model": "m", "extra": {"\ud83d": 1}}, r"extra\['\\ud83d'\]"),
        ({"model": "m", "extra": {"created": float("inf")}}, r"extra\['created'\]"),
        ({"model": "m", "extra": {"model": "\ud800"}}, r"extra\['model'\]"),
        ({"model": "m", "extra": {"obj": object()}}, r"extra\['obj'\]"),
        ({"model": "m", "extra": {(1, 2): 3}}, r"extra\[\(1, 2\)\]"),
    ],
)
def test_envelope_that_json_or_utf8_cannot_encode_is_a_value_error_naming_it(batch, kwargs, where):
    for encoding_format in ("float", "base64"):
        with pytest.raises(ValueError, match=rf"^{where} cannot be written into the response body"):
            response_body(batch, encoding_format=encoding_format, **kwargs)


def test_circular_extra_is_a_value_error():
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match=r"extra\['loop'\]"):
        response_body(np.zeros((1, 2), np.float32), model="m", encoding_format="base64", extra={"loop": loop})


@pytest.mark.parametrize("dimensions", [0, -1, 49, 10**30, True, 1.0, "8"])
def test_bad_dimensions_are_refused_as_embedding_data_refuses_them(batch, dimensions):
    with pytest.raises(ValueError) as theirs:
        embedding_data(batch, dimensions=dimensions)
    for encoding_format in ("float", "base64"):
        with pytest.raises(ValueError) as ours:
            response_body(batch, model=MODEL, encoding_format=encoding_format, dimensions=dimensions)
        assert str(ours.value) == str(theirs.value) and "from 1 to 48" in str(ours.value)
        with pytest.raises(ValueError):
            iter_response_body(batch, model=MODEL, encoding_format=encoding_format, dimensions=dimensions)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"extra": {"data": []}}, ValueError, 'extra cannot set "data"'),
        ({"model": None}, TypeError, "model must be a str"),
        ({"model": b"bytes"}, TypeError, "model must be a str"),
        ({"usage": [1]}, TypeError, "usage must be a dict"),
        ({"extra": [("a", 1)]}, TypeError, "extra must be a dict"),
        ({"encoding_format": "float16"}, ValueError, "unknown encoding_format"),
        ({"float_format": "fast"}, ValueError, "unknown float_format"),
        ({"dtype": "float64"}, ValueError, "unknown dtype"),
        ({"byteorder": "middle"}, ValueError, "unknown byteorder"),
        ({"threads": 0}, ValueError, "threads must be an int from 1 to 256"),
    ],
)
def test_refusals(batch, kwargs, error, match):
    kwargs = {"model": MODEL, "encoding_format": "base64", **kwargs}
    with pytest.raises(error, match=match):
        response_body(batch, **kwargs)
    with pytest.raises(error, match=match):
        iter_response_body(batch, **kwargs)


def test_bad_inputs_are_refused_as_encode_rows_refuses_them():
    for bad in ("text", None, {"a": 1}, np.zeros((2, 2), complex), np.zeros((2, 2, 2), np.float32)):
        with pytest.raises((TypeError, ValueError)):
            response_body(bad, model=MODEL, encoding_format="base64")
    with pytest.raises(ValueError, match="chunk_size"):
        iter_response_body(np.zeros((1, 1), np.float32), model=MODEL, encoding_format="base64", chunk_size=0)


@linux_only("the subprocess caps its address space (RLIMIT_AS) above VmSize from /proc/self/status, so that a refusal that did not fire fails instead of swapping the machine")
def test_a_body_that_cannot_exist_is_refused_before_any_allocation():
    """In a subprocess whose address space is capped: a size past size_t, past the largest bytes
    object, or past this machine's memory is a MemoryError naming the size, before anything is
    allocated."""
    script = textwrap.dedent(
        """
        import resource
        import numpy as np
        from numpy.lib.stride_tricks import as_strided
        from tensorb64.openai import response_body
        import re
        # 3 GiB above what the interpreter holds now (under ASan that includes its shadow memory's
        # reservation, so a fixed cap would leave ASan itself unable to map anything).
        vm = int(re.search(r"VmSize:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1)) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + (3 << 30), resource.RLIM_INFINITY))
        one = np.zeros(1, np.float32)
        # Past size_t (2**61 empty rows), then past the largest bytes object (2**57 rows of one value).
        one = np.zeros(1, np.float16)
        for rows, columns in ((2**61, 0), (2**57, 1), (2**20, 2**20)):
            for encoding_format in ("base64", "float"):
                try:
                    response_body(as_strided(one, shape=(rows, columns), strides=(0, 0)), model="m",
                                  encoding_format=encoding_format)
                except MemoryError as e:
                    assert "the response body would take" in str(e) and "GiB" in str(e), e
                else:
                    raise SystemExit(f"no error for {rows}x{columns}")
        print("ok")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


# ---- iter_response_body ---------------------------------------------------------------------------


@pytest.mark.parametrize("layout", list(ENTRY_KEYS))
@pytest.mark.parametrize("encoding_format", ["float", "base64"])
@pytest.mark.parametrize("chunk_size", [1, 7, 100, 350, 1000, 4096, 1 << 20])
def test_chunks_concatenate_to_the_body(encoding_format, chunk_size, layout):
    x = torch.randn(37, 24, generator=torch.Generator().manual_seed(4)).to(torch.bfloat16)
    extra = {"id": "embd-1", "pad": "z" * 150}
    whole = response_body(x, model=MODEL, encoding_format=encoding_format, extra=extra, dimensions=20, layout=layout)
    chunks = list(iter_response_body(x, model=MODEL, encoding_format=encoding_format, extra=extra, dimensions=20, chunk_size=chunk_size,
                                     layout=layout))
    assert all(isinstance(c, bytes) and c for c in chunks)
    assert b"".join(chunks) == whole
    # Each chunk fits, except one that holds a single row's entry larger than chunk_size alone.
    entries = [json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode() for e in json.loads(whole)["data"]]
    largest_entry = max(len(e) for e in entries) + 1  # and its comma
    for c in chunks:
        assert len(c) <= max(chunk_size, largest_entry), (len(c), chunk_size)
    if chunk_size >= 1000:  # room for the envelope and several rows: every chunk fits
        assert max(len(c) for c in chunks) <= chunk_size


@pytest.mark.parametrize("encoding_format", ["float", "base64"])
def test_chunks_of_empty_batches_and_rows(encoding_format):
    for x in (torch.empty(0, 5), torch.empty(4, 0)):
        for chunk_size in (1, 10, 1000):
            chunks = list(iter_response_body(x, model=MODEL, encoding_format=encoding_format, chunk_size=chunk_size))
            assert b"".join(chunks) == response_body(x, model=MODEL, encoding_format=encoding_format)
            assert max(len(c) for c in chunks) <= max(chunk_size, 48)


def test_chunks_with_threads_and_dtype():
    x = torch.randn(300, 3072, generator=torch.Generator().manual_seed(5))
    whole = response_body(x, model=MODEL, encoding_format="base64", dtype="float16", byteorder="big")
    assert b"".join(iter_response_body(x, model=MODEL, encoding_format="base64", dtype="float16", byteorder="big", threads=2, chunk_size=300_000)) == whole


# ---- memory ----------------------------------------------------------------------------------------


def _peak_above_current(call):
    """(result, peak bytes traced above what was traced before the call)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = call()
        return result, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_one_shot_base64_body_peaks_at_its_own_size():
    x = torch.randn(1024, 3072, generator=torch.Generator().manual_seed(6))
    body, peak = _peak_above_current(lambda: response_body(x, model=MODEL, encoding_format="base64", dimensions=3000))
    assert len(body) > 16_000_000
    assert peak <= 1.1 * len(body), (peak, len(body))
    body, peak = _peak_above_current(lambda: response_body(x.to(torch.bfloat16), model=MODEL, encoding_format="base64", threads=2))
    # (the bf16 copy made here is traced by neither: torch's allocator is not Python's)
    assert peak <= 1.1 * len(body), (peak, len(body))


@pytest.mark.skipif(not PEAK_RSS, reason=PEAK_RSS_ABSENT)
def test_one_shot_float_body_peak():
    """The core writes the float body into one allocation at its bound (about 1.5x the text in
    repr mode), then trims it: the pages past the text are never touched, so the memory the
    process actually uses (its peak resident set, in a fresh subprocess) grows by the body's size."""
    script = PEAK_RSS_SOURCE + textwrap.dedent(
        """
        import torch
        from tensorb64.openai import response_body
        x = torch.randn(4096, 384, generator=torch.Generator().manual_seed(7))
        response_body(x[:2], model="m", encoding_format="float")  # everything imported and warm
        before = peak_rss_bytes()
        body = response_body(x, model="m", encoding_format="float")
        after = peak_rss_bytes()
        print(len(body), after - before)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    size, grown = map(int, result.stdout.split())
    assert grown <= 1.1 * size, (grown, size)


@pytest.mark.parametrize("encoding_format", ["float", "base64"])
def test_streaming_holds_about_one_chunk(encoding_format):
    x = torch.randn(2048, 384, generator=torch.Generator().manual_seed(8))
    chunk_size = 256 * 1024

    def consume():
        total = 0
        for chunk in iter_response_body(x, model=MODEL, encoding_format=encoding_format, chunk_size=chunk_size):
            total += len(chunk)
            del chunk  # as a server that has sent it
        return total

    total, peak = _peak_above_current(consume)
    assert total > 8 * chunk_size
    # base64: one chunk exactly; float (the Python reference): its BytesIO's growth and one row's floats.
    allowed = chunk_size + 64 * 1024 if encoding_format == "base64" else 1.2 * chunk_size + 64 * 1024
    assert peak <= allowed, (peak, chunk_size)


@pytest.mark.parametrize(
    "usage",
    [{}, {"prompt_tokens": 5, "total_tokens": 5}, {"prompt_tokens": -3, "a\u2028\"b": 10**40}, {"flag": True, "n": 1},
     {"n": 1.0}, {1: 2}, {"nested": {"n": 1}}, {"n": None}],
)
def test_usage_of_every_shape(batch, usage):
    for extra in (None, {"id": "x"}):
        assert response_body(batch, model=MODEL, encoding_format="base64", usage=usage, extra=extra) == reference_body(batch, "base64", usage=usage, extra=extra)


def test_concurrent_calls_give_the_same_bytes():
    """The GIL is released while the core writes: calls from several threads at once, each with
    threads=2 inside, all give the one-thread bytes."""
    import concurrent.futures

    x = torch.randn(64, 3072, generator=torch.Generator().manual_seed(9)).to(torch.bfloat16)
    want = response_body(x, model=MODEL, encoding_format="base64", dimensions=3000)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda _: response_body(x, model=MODEL, encoding_format="base64", dimensions=3000, threads=2), range(16)))
    assert all(g == want for g in got)
