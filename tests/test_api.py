"""The public API's shape: the same keyword names and defaults wherever they apply, the input first
and by position; a numpy start_index taken, and a huge broadcast tensor refused before anything is
allocated."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorb64
from tensorb64 import openai

X = np.arange(12, dtype=np.float32).reshape(3, 4) / 7

ARRAY_TAKERS = [tensorb64.encode, tensorb64.encode_rows, tensorb64.json_rows, tensorb64.encode_binary_body,
                openai.embedding_data, openai.response_body, openai.iter_response_body]


BODY_READERS = [openai.decode_response_body, openai.decode_response]
CLIENT_CALLS = [openai.embed, openai.aembed]


@pytest.mark.parametrize("function", ARRAY_TAKERS + [tensorb64.decode, tensorb64.decode_rows, tensorb64.decode_binary_body]
                         + BODY_READERS, ids=lambda f: f.__name__)
def test_inputs_come_first_by_position_and_options_by_keyword(function):
    parameters = list(inspect.signature(function).parameters.values())
    inputs = [p for p in parameters if p.kind is inspect.Parameter.POSITIONAL_ONLY]
    assert inputs and inputs == parameters[: len(inputs)]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters[len(inputs):])
    if function in ARRAY_TAKERS:
        assert [p.name for p in inputs] == ["embeddings"]
    if function in BODY_READERS:
        assert [p.name for p in inputs] == ["body"]


@pytest.mark.parametrize("function", CLIENT_CALLS, ids=lambda f: f.__name__)
def test_the_client_calls_take_the_client_by_position_and_the_request_by_keyword(function):
    parameters = list(inspect.signature(function).parameters.values())
    assert [p.name for p in parameters if p.kind is inspect.Parameter.POSITIONAL_ONLY] == ["client"]
    assert {"input", "model", "threads"} <= {p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}


def test_shared_keywords_have_one_name_and_one_default():
    defaults: dict = {}
    for function in ARRAY_TAKERS + [tensorb64.decode, tensorb64.decode_rows] + BODY_READERS + CLIENT_CALLS:
        for p in inspect.signature(function).parameters.values():
            if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name != "model":
                defaults.setdefault(p.name, set()).add(repr(p.default))
    assert {name: len(values) for name, values in defaults.items()} == dict.fromkeys(defaults, 1)
    assert defaults["encoding_format"] == {"'float'"}  # OpenAI's default, everywhere
    for name in ("dtype", "byteorder", "threads"):
        assert name in inspect.signature(openai.embedding_data).parameters


def test_embedding_data_takes_dtype_byteorder_and_threads():
    assert openai.embedding_data(X, encoding_format="base64", dtype="float16", byteorder="big", threads=2) == [
        {"object": "embedding", "index": i, "embedding": row}
        for i, row in enumerate(tensorb64.encode_rows(X, dtype="float16", byteorder="big"))
    ]
    assert openai.embedding_data(X, dtype="float16") == openai.embedding_data(X)  # float: checked, not applied
    with pytest.raises(ValueError, match="unknown dtype 'int8'"):
        openai.embedding_data(X, dtype="int8")
    with pytest.raises(ValueError, match="threads must be an int from 1 to 256"):
        openai.embedding_data(X, encoding_format="base64", threads=0)


def test_a_numpy_start_index_gives_plain_int_indices():
    data = openai.embedding_data(X, start_index=np.int64(4))
    assert [type(entry["index"]) for entry in data] == [int] * 3 and data[0]["index"] == 4
    json.dumps(data)


def test_a_broadcast_tensor_of_2_61_rows_is_a_memory_error_not_a_bounds_error():
    torch = pytest.importorskip("torch")
    rows = torch.zeros(1, 2).expand(2**61, 2)
    for call in (lambda: tensorb64.encode_rows(rows), lambda: tensorb64.encode_binary_body(rows),
                 lambda: openai.response_body(rows, model="m", encoding_format="base64")):
        with pytest.raises(MemoryError, match=r"\(2305843009213693952 rows\), more than this machine's memory"):
            call()
    # Rows that multiply past 2**64 (torch and numpy refuse to make them; a tensor-like object
    # can say so): in a subprocess, as install() replaces torch's registration.
    code = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
import numpy as np
import tensorb64
from tests.support.tensor_like import TensorLike, install
install()
a = np.zeros(2, np.float32)
p = a.ctypes.data
try:
    tensorb64.encode_rows(TensorLike(p, (2**40, 2**40, 2), (0, 0, 1), p, 8))
except MemoryError as e:
    print(e)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "more rows than a size_t counts" in result.stdout, result.stderr[-2000:]


def test_torch_imported_after_tensorb64_is_read_in_place_from_the_first_call():
    # torch is registered with the reader when it is loaded, not on the first tensor seen: the
    # first call reads the tensor in place, without the fallback hook.
    code = """
import tensorb64
from tensorb64 import _native
import torch
calls = []
_native._set_fallback(lambda entry, *a, **k: calls.append(entry))
rows = tensorb64.encode_rows(torch.ones(2, 3, dtype=torch.bfloat16))
assert calls == [] and rows == tensorb64.encode_rows(torch.ones(2, 3).numpy()), (calls, rows)
print("ok")
"""
    pytest.importorskip("torch")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "ok"


SPLITTING = [tensorb64.encode, tensorb64.encode_rows, tensorb64.json_rows, tensorb64.encode_binary_body,
             tensorb64.decode, tensorb64.decode_rows, tensorb64.decode_binary_body, openai.embedding_data,
             openai.response_body, openai.iter_response_body] + BODY_READERS + CLIENT_CALLS


@pytest.mark.parametrize("function", SPLITTING, ids=lambda f: f.__name__)
def test_every_entry_point_whose_work_splits_takes_threads(function):
    parameter = inspect.signature(function).parameters["threads"]
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY and parameter.default == 1


@pytest.mark.parametrize("threads", [2, 3, 7])
def test_threads_give_the_one_thread_results(threads):
    g = np.random.default_rng(3)
    a = g.standard_normal((37, 301)).astype(np.float32)  # 301 values: parts that end mid-row
    for dtype in ("float32", "float16", "bfloat16"):
        text = tensorb64.encode(a, dtype=dtype)
        assert tensorb64.encode(a, dtype=dtype, threads=threads) == text
        assert tensorb64.encode(a[:, ::2], dtype=dtype, threads=threads) == tensorb64.encode(a[:, ::2], dtype=dtype)
        for widen in (True, False) if dtype != "bfloat16" else (True,):
            one = tensorb64.decode(text, dtype=dtype, widen=widen)
            assert np.array_equal(tensorb64.decode(text, dtype=dtype, widen=widen, threads=threads), one)
            rows = tensorb64.encode_rows(a, dtype=dtype)
            assert np.array_equal(tensorb64.decode_rows(rows, dtype=dtype, widen=widen, threads=threads),
                                  tensorb64.decode_rows(rows, dtype=dtype, widen=widen))
        body, metadata = tensorb64.encode_binary_body(a, dtype=dtype, byteorder="big", threads=threads)
        assert (body, metadata) == tensorb64.encode_binary_body(a, dtype=dtype, byteorder="big")
        for got, expected in zip(tensorb64.decode_binary_body(body, metadata, threads=threads),
                                 tensorb64.decode_binary_body(body, metadata), strict=True):
            assert np.array_equal(got, expected)
    assert np.array_equal(tensorb64.decode(tensorb64.encode(a), threads=threads).reshape(a.shape), a)


@pytest.mark.parametrize("threads", [1, 4])
def test_threads_name_the_same_error(threads):
    a = np.arange(3000, dtype=np.float32)
    text = tensorb64.encode(a)
    for bad in (text[:2100] + "!" + text[2101:], text[:-1] + "=", text[:-4] + "A==="):
        with pytest.raises(ValueError) as one:
            tensorb64.decode(bad)
        with pytest.raises(ValueError) as split:
            tensorb64.decode(bad, threads=threads)
        assert str(split.value) == str(one.value)
    rows = tensorb64.encode_rows(a.reshape(30, 100))
    rows[17] = rows[17][:50] + "*" + rows[17][51:]
    rows[23] = rows[23][:50] + "*" + rows[23][51:]
    with pytest.raises(ValueError, match=r"^row 17: invalid base64: bad character '\*'"):
        tensorb64.decode_rows(rows, threads=threads)
    with pytest.raises(ValueError, match="threads must be an int from 1 to 256"):
        tensorb64.decode_rows(rows, threads=0)
