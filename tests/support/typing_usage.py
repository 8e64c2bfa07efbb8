"""The public API as a type checker sees it: mypy checks this file (`.ci/run`, after lint), not
pytest. Correct calls must check clean with their precise result types; each wrong call is marked
with the error mypy must find (`--warn-unused-ignores` makes a mark that no longer matches an
error fail the check)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

import tensorb64
from tensorb64 import openai

x = np.ones((2, 4), np.float32)

rows: list[str] = tensorb64.encode_rows(x, dtype="float16", byteorder="big", threads=2)
one: str = tensorb64.encode(x, dtype="bfloat16", byteorder="native", threads=2)
text_rows: list[bytes] = tensorb64.json_rows(x, float_format="shortest", threads=2)
body, metadata = tensorb64.encode_binary_body(x, dtype="fp8_e4m3", threads=2)
raw: bytes = body
first_end: int = metadata[0]["end"]
order: str = metadata[0]["endianness"]
values: np.ndarray = tensorb64.decode(one, dtype="bfloat16", widen=True, threads=2)
matrix: np.ndarray = tensorb64.decode_rows(rows, dtype="float16", threads=2)
decoded: list[np.ndarray] = tensorb64.decode_binary_body(body, metadata, threads=2)
data: list[openai.EmbeddingEntry] = openai.embedding_data(x, encoding_format="base64", dimensions=2, start_index=3)
index: int = data[0]["index"]
whole: bytes = openai.response_body(x, model="m", encoding_format="float", float_format="shortest", threads=2)
as_vllm: bytes = openai.response_body(x, model="m", encoding_format="base64", layout="vllm")
vllm_data: list[openai.EmbeddingEntry] = openai.embedding_data(x, layout="vllm", float_format="shortest", threads=2)
chunks: Iterator[bytes] = openai.iter_response_body(x, model="m", chunk_size=1 << 16)
array: np.ndarray = openai.decode_response_body(whole, dtype="float16", byteorder="big", widen=False, threads=2)
read: openai.EmbeddingsResponse = openai.decode_response(bytearray(whole), out=np.empty((2, 4), np.float32))
read_array: np.ndarray = read.embeddings
from_text: np.ndarray = openai.decode_response_body(whole.decode(), dtype="bfloat16")
try:
    openai.decode_response_body(b"{")
except tensorb64.DecodeError as error:
    reason: str = error.reason
    offset: int | None = error.pos
    at_row: int | None = error.row
    caught: ValueError = error


def client_calls(client: Any) -> np.ndarray:  # (not run: a client is needed)
    return openai.embed(client, input=["a", "b"], model="m", threads=2, dimensions=2)


async def async_client_calls(client: Any) -> np.ndarray:
    return await openai.aembed(client, input=[[1, 2], [3]], model="m")


level: str = tensorb64.simd_level()
levels: list[str] = tensorb64.available_simd_levels()

# A misspelt name is an error before it runs.
tensorb64.encode_rows(x, dtype="float64")  # type: ignore[arg-type]
tensorb64.encode(x, byteorder="network")  # type: ignore[arg-type]
tensorb64.json_rows(x, float_format="fast")  # type: ignore[arg-type]
openai.embedding_data(x, encoding_format="float16")  # type: ignore[arg-type]
openai.embedding_data(x, float_format="short")  # type: ignore[arg-type]
tensorb64.decode_rows(rows, threads="2")  # type: ignore[arg-type]
openai.response_body(x, model="m", dtype="int8")  # type: ignore[arg-type]
openai.iter_response_body(x, model="m", layout="index_first")  # type: ignore[arg-type]
tensorb64.decode(one, dtype="fp8")  # type: ignore[arg-type]
openai.decode_response_body(whole, dtype="float64")  # type: ignore[arg-type]
openai.decode_response(whole, byteorder="network")  # type: ignore[arg-type]
openai.decode_response_body(whole, out=[0.0])  # type: ignore[arg-type]
# Results are what they are.
count: int = tensorb64.encode(x)  # type: ignore[assignment]
entries: bytes = openai.embedding_data(x)  # type: ignore[assignment]
listed: list[float] = openai.decode_response_body(whole)  # type: ignore[assignment]
# The input comes first, by position.
tensorb64.encode_binary_body(embeddings=x)  # type: ignore[call-arg]
# The old names are gone.
tensorb64.encode_body(x)  # type: ignore[attr-defined]
openai.decode_response_body(body=whole)  # type: ignore[call-arg]
