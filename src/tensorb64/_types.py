"""The names the public functions take, as types (for a type checker: a misspelt name is an error
before it runs), and the shapes of what they return."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral
from typing import Any, Literal, TypedDict

# Output element types, as vLLM's embed_dtype names them.
DType = Literal["float32", "float16", "bfloat16", "fp8_e4m3", "fp8_e5m2"]
# "native": this host's order.
ByteOrder = Literal["little", "big", "native"]
# Float text: "repr" is json.dumps(t.tolist())'s; "shortest" the fewest digits that read back;
# "orjson" orjson's text of float32 arrays (vLLM's float route).
FloatFormat = Literal["repr", "shortest", "orjson"]
# What an OpenAI client asks for; "float" is OpenAI's default.
EncodingFormat = Literal["float", "base64"]
# A server's body layout (the core's table of them): the order of the envelope's fields and of
# each data entry's keys. "openai": ``object, data, model, usage``, entries ``object, index,
# embedding`` (OpenAI's own); "vllm": ``id, object, created, model, data, usage``, entries ``index,
# object, embedding`` (vLLM's, for bodies byte-identical to vLLM's); "sglang": ``data, model, object,
# usage``, entries ``embedding, index, object`` (SGLang's); "infinity": ``object, data, model, usage,
# id, created``, entries ``object, embedding, index`` (Infinity's).
Layout = Literal["openai", "vllm", "sglang", "infinity"]
# What decode_response_body reads: a body's bytes, or its text.
ResponseBody = bytes | bytearray | memoryview | str
# What the openai client's ``embeddings.create`` takes as ``input`` (embed, aembed): texts or token ids.
EmbeddingInput = str | Sequence[str] | Sequence[int] | Sequence[Sequence[int]]


def is_count(value: Any) -> bool:
    """Whether an argument is a count or an index: an int (or a numpy integer), not a bool
    (``dimensions=True`` is a bug, not 1). The one test of such an argument, everywhere."""
    return isinstance(value, Integral) and not isinstance(value, bool)


class EmbeddingEntry(TypedDict):
    """One entry of a response's ``data``: the embedding is a base64 str or a list of floats."""

    object: Literal["embedding"]
    index: int
    embedding: str | list[float]


class BodyMetadata(TypedDict):
    """vLLM's metadata of one row of a binary body: ``body[start:end]`` is the row."""

    index: int
    embed_dtype: str
    endianness: Literal["little", "big"]
    start: int
    end: int
    shape: list[int]
