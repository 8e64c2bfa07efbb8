"""One resolver for every name: each kind of bad name gives the same message at every entry point."""

from __future__ import annotations

import numpy as np
import pytest

import tensorb64
from tensorb64 import _native, openai

X = np.ones((2, 4), np.float32)
TEXT = tensorb64.encode(X)
BODY, METADATA = tensorb64.encode_binary_body(X)

# Each kind of name, and every entry point that takes one, as a function of the bad name.
TAKERS = {
    "dtype": {
        "encode": lambda v: tensorb64.encode(X, dtype=v),
        "encode_rows": lambda v: tensorb64.encode_rows(X, dtype=v),
        "encode_binary_body": lambda v: tensorb64.encode_binary_body(X, dtype=v),
        "decode": lambda v: tensorb64.decode(TEXT, dtype=v),
        "decode_rows": lambda v: tensorb64.decode_rows([TEXT], dtype=v),
        "response_body": lambda v: openai.response_body(X, model="m", encoding_format="base64", dtype=v),
        "iter_response_body": lambda v: openai.iter_response_body(X, model="m", encoding_format="base64", dtype=v),
    },
    "byteorder": {
        "encode": lambda v: tensorb64.encode(X, byteorder=v),
        "encode_rows": lambda v: tensorb64.encode_rows(X, byteorder=v),
        "encode_binary_body": lambda v: tensorb64.encode_binary_body(X, byteorder=v),
        "decode": lambda v: tensorb64.decode(TEXT, byteorder=v),
        "decode_rows": lambda v: tensorb64.decode_rows([TEXT], byteorder=v),
        "response_body": lambda v: openai.response_body(X, model="m", encoding_format="base64", byteorder=v),
        "iter_response_body": lambda v: openai.iter_response_body(X, model="m", encoding_format="base64", byteorder=v),
    },
    "float_format": {
        "json_rows": lambda v: tensorb64.json_rows(X, float_format=v),
        "response_body": lambda v: openai.response_body(X, model="m", encoding_format="float", float_format=v),
        "iter_response_body": lambda v: openai.iter_response_body(X, model="m", encoding_format="base64", float_format=v),
    },
    "encoding_format": {
        "embedding_data": lambda v: openai.embedding_data(X, encoding_format=v),
        "response_body": lambda v: openai.response_body(X, model="m", encoding_format=v),
        "iter_response_body": lambda v: openai.iter_response_body(X, model="m", encoding_format=v),
    },
    "layout": {
        "embedding_data": lambda v: openai.embedding_data(X, layout=v),
        "response_body": lambda v: openai.response_body(X, model="m", encoding_format="base64", layout=v),
        "response_body float": lambda v: openai.response_body(X, model="m", encoding_format="float", layout=v),
        "iter_response_body": lambda v: openai.iter_response_body(X, model="m", layout=v),
    },
}
ACCEPTED = {
    "dtype": "'float32', 'float16', 'bfloat16', 'fp8_e4m3' or 'fp8_e5m2'",
    "byteorder": "'little', 'big' or 'native'",
    "float_format": "'repr', 'shortest' or 'orjson'",
    "encoding_format": "'float' or 'base64'",
    "layout": "'openai', 'vllm', 'sglang' or 'infinity'",
}


@pytest.mark.parametrize("kind", list(TAKERS))
@pytest.mark.parametrize("bad", ["nope", "", None, 3, b"float32", ["little"]])
def test_a_bad_name_reads_the_same_everywhere(kind, bad):
    expected = f"unknown {kind} {bad!r}; expected {ACCEPTED[kind]}"
    for where, take in TAKERS[kind].items():
        with pytest.raises(ValueError) as error:
            take(bad)
        assert str(error.value).endswith(expected), (where, str(error.value))
    with pytest.raises(ValueError) as error:
        _native._resolve(kind, bad)
    assert str(error.value) == expected


def test_the_resolver_gives_each_name_its_code():
    types = {name: code for name, code, *_ in _native.ELEMENT_TYPES}
    assert _native._resolve("dtype", "fp8_e4m3") == types["float8_e4m3fn"]
    assert [_native._resolve("byteorder", b) for b in ("little", "big")] == [0, 1]
    assert _native._resolve("byteorder", "native") == ("little", "big").index(_native.HOST_BYTE_ORDER)
    assert _native._resolve("encoding_format", "base64") == 1
    assert [_native._resolve("layout", k) for k in ("openai", "vllm")] == [0, 1]
    assert _native._resolve("dtype", np.str_("float16")) == types["float16"]  # a str subclass


def test_the_element_type_table_matches_numpy_and_torch():
    torch = pytest.importorskip("torch")
    for name, code, itemsize, torch_name, output_name in _native.ELEMENT_TYPES:
        assert getattr(torch, torch_name).itemsize == itemsize, name
        assert _native.ELEMENT_TYPES[code][0] == name
        if output_name is not None:
            assert _native._resolve("dtype", output_name) == code
    metadata = tensorb64.encode_binary_body(X, byteorder="native")[1][0]
    assert metadata["endianness"] == _native.HOST_BYTE_ORDER
