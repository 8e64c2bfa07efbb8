"""The public API's shape: the same keyword names and defaults wherever they apply, the input first
and by position, and the fixes of issue 18 (a numpy start_index, a huge broadcast tensor)."""

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

ARRAY_TAKERS = [tensorb64.encode, tensorb64.encode_rows, tensorb64.json_rows, tensorb64.encode_body,
                openai.embedding_data, openai.response_body, openai.iter_response_body]


BODY_READERS = [openai.decode_response_body, openai.decode_response]
CLIENT_CALLS = [openai.embed, openai.aembed]


@pytest.mark.parametrize("function", ARRAY_TAKERS + [tensorb64.decode, tensorb64.decode_rows, tensorb64.decode_body]
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
    for call in (lambda: tensorb64.encode_rows(rows), lambda: tensorb64.encode_body(rows),
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
