"""The ``data`` entries of an OpenAI embeddings response, built from a batch of embeddings.

    >>> from tensorb64.openai import embedding_data
    >>> data = embedding_data(pooled, encoding_format=request.encoding_format, dimensions=request.dimensions)
    >>> {"object": "list", "data": data, "model": name, "usage": usage}

One name, because this is the whole of what a worker does between its pooling output and its
response body: cut each row to ``dimensions`` (a view, never a copy), turn the rows into either
base64 strings (one ``encode_rows`` call for the batch) or lists of floats (one core call,
which writes the floats of the float text ``response_body`` writes), and number them.

``response_body`` goes one step further: the whole response body, as the bytes Starlette's
``JSONResponse`` would send for ``{"object": "list", "data": ..., "model": ..., "usage": ...}``,
written by the core in one pass into one ``bytes`` object (``iter_response_body``: the same bytes
in bounded chunks, for ``StreamingResponse``).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from . import _native
from ._codec.body import Body, batch_rows, cut_rows
from ._codec.body_reader import EmbeddingsResponse, decode_response, decode_response_body
from ._codec.encode import encode_rows
from ._hosts import litellm, openai_client
from ._hosts.patching import install, is_installed, uninstall
from ._types import ByteOrder, DType, EmbeddingEntry, EmbeddingInput, EncodingFormat, FloatFormat, Layout, is_count

__all__ = ["embedding_data", "response_body", "iter_response_body", "EmbeddingEntry"]
__all__ += ["decode_response_body", "decode_response", "EmbeddingsResponse", "embed", "aembed"]  # the client side
__all__ += ["patch", "unpatch", "is_patched"]  # the openai client's own create() read by the core


# Each layout's data-entry keys, in its order.
_ENTRY_KEYS = {name: entry_keys for name, (entry_keys, _) in _native._response_layouts().items()}


def embedding_data(embeddings: Any, /, *, encoding_format: EncodingFormat = "float", dimensions: int | None = None,
                   start_index: int = 0, dtype: DType = "float32", byteorder: ByteOrder = "little",
                   float_format: FloatFormat = "repr", threads: int = 1,
                   layout: Layout = "openai") -> list[EmbeddingEntry]:
    """The ``data`` list of an OpenAI ``/v1/embeddings`` response: one entry per row.

    Each entry is ``{"object": "embedding", "index": start_index + i, "embedding": ...}`` (with
    ``layout="vllm"``: ``{"index": ..., "object": "embedding", "embedding": ...}``, the order
    vLLM's entries have) where the embedding is, for row ``i``:

    * ``encoding_format="base64"``: the base64 of the row's little-endian float32 bytes, the
      format OpenAI clients decode (``numpy.frombuffer(base64.b64decode(s), "float32")``), or
      with ``dtype``/``byteorder`` vLLM's embed_dtype/endianness bytes. All rows are encoded in
      one ``tensorb64.encode_rows`` call (``threads`` as there), reading the caller's memory in
      place: bf16/fp16 rows are widened inside the encoder, no float32 copy is made.
    * ``encoding_format="float"`` (OpenAI's default): a list of plain Python floats, read from
      the float text the core writes for the row (bf16/fp16/float64 input is first converted as
      ``tensor.to(torch.float32)`` would). With ``float_format="repr"`` (the default) each is
      exactly the row's float32 value, as ``.tolist()`` gives it: both formats carry the same
      numbers, and JSON writes each as the shortest repr of the double
      (``0.10000000149011612`` for float32 0.1). With ``float_format="shortest"`` each is the
      float whose repr is the shortest text that reads back to the same float32 (``0.1``), so
      that ``json.dumps`` of the entries writes exactly ``response_body(...,
      float_format="shortest")``'s text. Non-finite values (NaN, inf) cannot be written as
      standard JSON: a ValueError naming the row and the column, in every ``float_format``, as
      Starlette's ``JSONResponse`` (``json.dumps(allow_nan=False)``) and ``response_body`` refuse
      them (a server that may produce them should use base64). The check is on the float32
      values: a float64 value beyond float32's range, infinite once converted, is refused too,
      where ``response_body`` and ``json_rows``, which write float64 rows as the doubles
      themselves, write it.

    embeddings: a ``[batch, dim]`` torch.Tensor (any device and float dtype), numpy array, or
        nested list of numbers; a 1-D input is one row. A batch of 0 rows gives ``[]``.
    encoding_format: ``"float"`` or ``"base64"``, as the request asked.
    dimensions: ``None`` for whole rows, or an int from 1 to ``dim``: keep the first
        ``dimensions`` values of each row (Matryoshka truncation). The cut is a view of the
        input, never a copy. The values are not re-normalised: a server that wants unit-norm
        truncated embeddings normalises after truncating, in its pooler (as vLLM does).
    start_index: the ``index`` of the first row, for a worker that answers one slice of a
        larger request (an int or a numpy integer; the entries hold a plain int).
    dtype, byteorder: as ``encode_rows`` takes them, for base64; checked, and not applied, for
        float (as ``response_body`` takes them).
    float_format: for float, as ``response_body`` takes it; checked, and not applied, for base64.
    threads: split the rows across this many threads inside the one call (default 1).
    layout: the server whose order each entry's keys are in, as ``response_body`` takes it.

    Raises ValueError for an unknown ``encoding_format``, ``float_format`` or ``layout``, a ``dimensions`` outside 1..dim (or
    not an int), a negative or non-int ``start_index``, an input that is not 1-D or 2-D, or (float) a NaN or infinity;
    TypeError for an input that is not an array of real numbers.
    """
    _native._check_names(encoding_format=encoding_format, float_format=float_format, dtype=dtype, byteorder=byteorder,
                         layout=layout)  # naming the accepted ones
    _native._check_threads(threads)
    if not is_count(start_index) or start_index < 0:
        raise ValueError(f"start_index must be an int >= 0, got {start_index!r}")
    first = operator.index(start_index)  # a plain int (json cannot write a numpy integer)
    rows, route = batch_rows(embeddings)  # (a tensor's route decided there, once)
    rows = cut_rows(rows, dimensions)
    values: list[Any]
    if encoding_format == "float":
        # floats read back from the core's text (in "repr" mode the float32 values themselves),
        # NaN and infinity refused in every mode (json.dumps(allow_nan=False) refuses them)
        host = rows if route is None else route.host_copy(rows)
        values = _native._finite_float_lists(host, float_format=float_format, threads=threads)
    elif route is not None:
        values = route.encode_rows(rows, dtype=dtype, byteorder=byteorder, threads=threads)
    else:
        values = encode_rows(rows, dtype=dtype, byteorder=byteorder, threads=threads)
    # Each entry's keys in the layout's order, from the core's table (json writes a dict's keys in
    # the order they were inserted).
    columns = {"object": itertools.repeat("embedding"), "index": itertools.count(first), "embedding": values}
    keys = _ENTRY_KEYS[layout]
    return [dict(zip(keys, entry, strict=True)) for entry in zip(*(columns[key] for key in keys), strict=False)]


# The chunk size of iter_response_body when none is given.
DEFAULT_CHUNK_SIZE = 1 << 20


def response_body(
    embeddings: Any,
    /,
    *,
    model: str,
    encoding_format: EncodingFormat = "float",
    dimensions: int | None = None,
    usage: dict[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
    dtype: DType = "float32",
    byteorder: ByteOrder = "little",
    float_format: FloatFormat = "repr",
    threads: int = 1,
    layout: Layout = "openai",
) -> bytes:
    """The whole body of an OpenAI ``/v1/embeddings`` response, as one ``bytes`` object.

    The bytes are exactly what Starlette's ``JSONResponse(body)`` sends (``json.dumps(body,
    ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")``) for ::

        body = {"object": "list",
                "data": [{"object": "embedding", "index": i, "embedding": row_i}, ...],
                "model": model, "usage": usage, **extra}

    so a FastAPI or Starlette server answers ``Response(response_body(...),
    media_type="application/json")`` instead of building that dict (with ``layout="vllm"``: the
    dict vLLM builds, its fields and each entry's keys in vLLM's order). ``row_i`` is, for row i:

    * ``encoding_format="float"`` (OpenAI's default, as ``embedding_data``'s): the row's float32
      values as a JSON list, each written as ``repr(float(v))`` (``float_format="repr"``: what
      ``json.dumps(t.tolist())`` writes). ``dtype`` and ``byteorder`` do not apply (they are still
      checked). NaN and ±inf are a ValueError naming the row and column, as ``allow_nan=False``
      refuses them.
    * ``encoding_format="base64"``: the base64 of the row's bytes as ``encode_rows`` writes it,
      with ``dtype``/``byteorder`` (vLLM's ``embed_dtype``/``endianness``; default little-endian
      float32, what OpenAI clients decode). The core writes the whole body in one pass into one
      bytes object of exactly computed size, with the GIL released; no per-row Python objects.

    embeddings, dimensions: as ``embedding_data`` takes them (the same checks; the cut is a view).
    model: the model name, a str; escaped exactly as json.dumps(ensure_ascii=False) escapes it.
    usage: a dict, default ``{"prompt_tokens": 0, "total_tokens": 0}``; extra: a dict of further
        top-level fields, added after the layout's last field (one that names a field of the
        layout, "object", "model", "usage" or vLLM's "id" and "created", gives that field its
        value in its place, as ``{**extra}`` does; "data" is refused). Both are serialised by the
        standard library's json.
    threads: split the rows across this many threads inside the one call (default 1).
    layout: the server whose body this is, one of the core's table of layouts (its key orders
        are that table's, ``cpp/src/json/body_writer.cpp``): ``"openai"`` (the default: the
        envelope ``object, data, model, usage``, each entry ``object, index, embedding``, as above
        and as OpenAI's API writes them), ``"vllm"`` (vLLM's envelope ``id, object, created,
        model, data, usage``, each entry ``index, object, embedding``: a body byte-identical to
        the one vLLM itself sends), ``"sglang"`` (SGLang's: ``data, model, object, usage``; each
        entry ``embedding, index, object``) or ``"infinity"`` (Infinity's: ``object, data, model,
        usage, id, created``; each entry ``object, embedding, index``). A field the layout names
        that is not given ("id" and "created" come only in ``extra``) is left out. The same JSON
        object in every layout.

    Raises, before anything is built: ValueError for an unknown encoding_format, float_format,
    dtype, byteorder or layout, a bad ``dimensions``, ``extra`` setting "data", or a ``model``/``usage``/
    ``extra`` that json or UTF-8 cannot encode (NaN, a lone surrogate: the message names which);
    TypeError for a model that is not a str or an input that is not an array of real numbers.
    """
    return Body(embeddings, model=model, encoding_format=encoding_format, dimensions=dimensions, usage=usage,
                 extra=extra, dtype=dtype, byteorder=byteorder, float_format=float_format, threads=threads,
                 layout=layout).whole()


def iter_response_body(
    embeddings: Any,
    /,
    *,
    model: str,
    encoding_format: EncodingFormat = "float",
    dimensions: int | None = None,
    usage: dict[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
    dtype: DType = "float32",
    byteorder: ByteOrder = "little",
    float_format: FloatFormat = "repr",
    threads: int = 1,
    layout: Layout = "openai",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> Iterator[bytes]:
    """``response_body``'s bytes in chunks, for ``StreamingResponse``: the same arguments, plus
    ``chunk_size`` (bytes, default 1 MiB). The chunks concatenate to exactly
    ``response_body(...)``; only about one chunk is held at a time, so a 100,000-row float
    response never holds its whole body.

    The chunking rule: each chunk holds whole rows' entries (never part of one), as many as fit
    in ``chunk_size``, the envelope's head joined to the first chunk and its tail to the last
    where they fit. So every chunk is at most ``chunk_size`` bytes, except one holding a single
    row whose entry alone is larger (then that chunk is that row, plus its separating comma);
    an envelope larger than ``chunk_size`` (a huge ``extra``) comes in chunk_size pieces of its
    own. Float chunks are planned from a bound on a row's text as doubles (24 chars a value,
    whatever the rows' type), so they run about 80% full. The core plans the chunks.

    Every argument is checked when this is called, not when the first chunk is asked for; for
    floats the rows are also scanned for NaN and infinity first (one read of the input), so the
    ValueError comes before any byte is sent.
    """
    if not is_count(chunk_size) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int (bytes), got {chunk_size!r}")
    body = Body(embeddings, model=model, encoding_format=encoding_format, dimensions=dimensions, usage=usage,
                 extra=extra, dtype=dtype, byteorder=byteorder, float_format=float_format, threads=threads,
                 layout=layout)
    return body.chunks(chunk_size)


# ---- the client side ------------------------------------------------------------------------------


def _raw_create(embeddings: Any, input: EmbeddingInput, model: str, kwargs: dict[str, Any]) -> Any:
    if "encoding_format" in kwargs and kwargs["encoding_format"] != "base64":
        raise ValueError(f"embed() asks for base64 rows; encoding_format={kwargs['encoding_format']!r} is not supported")
    kwargs = {**kwargs, "encoding_format": "base64"}
    return embeddings.with_raw_response.create(input=input, model=model, **kwargs)


def embed(client: Any, /, *, input: EmbeddingInput, model: str, threads: int = 1, **kwargs: Any) -> np.ndarray:
    """The ``[B, D]`` float32 embeddings of ``input``, asked of an ``openai.OpenAI`` client.

    The request is the client's own (``client.embeddings.with_raw_response.create(...,
    encoding_format="base64")``: its base URL, authentication, retries and errors unchanged);
    the raw body is read by ``decode_response_body`` and the client's own parsing never runs.
    Further keyword arguments (``dimensions``, ``user``, ``extra_headers``, ``timeout``...) go to
    ``create``.
    """
    raw = _raw_create(client.embeddings, input, model, kwargs)
    return decode_response_body(raw.http_response.content, threads=threads)


async def aembed(client: Any, /, *, input: EmbeddingInput, model: str, threads: int = 1, **kwargs: Any) -> np.ndarray:
    """``embed`` for an ``openai.AsyncOpenAI`` client."""
    raw = await _raw_create(client.embeddings, input, model, kwargs)
    return decode_response_body(raw.http_response.content, threads=threads)


# ---- the openai client's own create() read by the core ------------------------------------------


def patch() -> None:
    """Makes every openai client (``OpenAI``, ``AsyncOpenAI``, made before or after this call)
    read ``/v1/embeddings`` responses with the core: the same ``CreateEmbeddingResponse``, the
    same Python floats, without the per-row ``b64decode`` or the per-float validation; and
    LiteLLM's ``hosted_vllm`` embeddings likewise. Each is patched at once where imported, else
    right after its import. Calling it again does nothing; ``unpatch()`` restores the client's
    own parsing."""
    install(openai_client.OPENAI)
    install(litellm.LITELLM)


def unpatch() -> None:
    """Undoes ``patch()``: each attribute it replaced is the original object again, and modules
    imported later are left alone. Does nothing when not patched."""
    uninstall(openai_client.OPENAI)
    uninstall(litellm.LITELLM)


def is_patched() -> bool:
    """Whether the imported openai client reads embeddings through the core (False before openai
    is imported, and for a release the patch does not recognise)."""
    return is_installed(openai_client.OPENAI)
