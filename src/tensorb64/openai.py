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
import json
import operator
import sys
from collections.abc import Iterator, Mapping
from numbers import Integral
from typing import Any

import numpy as np

from . import _cuda, _native
from ._client import EmbeddingsResponse, aembed, decode_response, decode_response_body, embed
from ._encode import encode_rows
from ._inputs import readable
from ._openai_patch import is_patched, patch, unpatch
from ._types import ByteOrder, DType, EmbeddingEntry, EncodingFormat, FloatFormat, Layout

__all__ = ["embedding_data", "response_body", "iter_response_body", "EmbeddingEntry"]
__all__ += ["decode_response_body", "decode_response", "EmbeddingsResponse", "embed", "aembed"]  # the client side
__all__ += ["patch", "unpatch", "is_patched"]  # the openai client's own create() read by the core


def _is_index(value) -> bool:
    """True for ints (and numpy integers), False for bool: ``dimensions=True`` is a bug, not 1."""
    return isinstance(value, Integral) and not isinstance(value, bool)


def _rows(embeddings):
    """The input as a 2-D array or tensor (a view of the caller's memory where it can be), read
    and refused by the one reader, as every encoder reads and refuses it."""
    torch = sys.modules.get("torch")
    if isinstance(embeddings, np.ndarray) or (torch is not None and isinstance(embeddings, torch.Tensor)):
        x = embeddings
    else:
        x = readable(embeddings)  # a list's array (or stacked tensors), or a buffer
        if not (torch is not None and isinstance(x, torch.Tensor)):
            x = np.asarray(x)
    if x.ndim not in (1, 2):
        raise ValueError(f"embeddings must be a 2-D [batch, dim] array (or one 1-D row), got shape {tuple(x.shape)}")
    if _cuda.route(x) == "host":  # (a CUDA tensor's rows are read where they are encoded)
        _native._row_shape(x)  # refuses what every encoder refuses, in the same words
    return x if x.ndim == 2 else x[None]


def _cut(rows, dimensions):
    """The first ``dimensions`` values of each row (a view: strides do the truncation), or the
    rows themselves for None; ValueError naming the accepted range otherwise."""
    if dimensions is None:
        return rows
    width = rows.shape[1]
    if not _is_index(dimensions) or not 1 <= dimensions <= width:
        accepted = f"an int from 1 to {width} (the embedding size)" if width else "None (the rows are empty)"
        raise ValueError(f"dimensions must be {accepted}, or None for whole rows; got {dimensions!r}")
    return rows[:, : int(dimensions)]


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
    if not _is_index(start_index) or start_index < 0:
        raise ValueError(f"start_index must be an int >= 0, got {start_index!r}")
    first = operator.index(start_index)  # a plain int (json cannot write a numpy integer)
    rows = _cut(_rows(embeddings), dimensions)
    values: list[Any]
    if encoding_format == "float":
        # floats read back from the core's text (in "repr" mode the float32 values themselves),
        # NaN and infinity refused in every mode (json.dumps(allow_nan=False) refuses them)
        values = _native._finite_float_lists(rows, float_format=float_format, threads=threads)
    else:
        write = _cuda.encode_rows if _cuda.route(rows) != "host" else encode_rows
        values = write(rows, dtype=dtype, byteorder=byteorder, threads=threads)
    # Each entry's keys in the layout's order, from the core's table (json writes a dict's keys in
    # the order they were inserted).
    columns = {"object": itertools.repeat("embedding"), "index": itertools.count(first), "embedding": values}
    keys = _ENTRY_KEYS[layout]
    return [dict(zip(keys, entry, strict=True)) for entry in zip(*(columns[key] for key in keys), strict=False)]


# ---- the whole response body --------------------------------------------------------------------

# Exactly what Starlette's JSONResponse (and so FastAPI) renders with: json.dumps(content,
# ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).
_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
# A str as that encoder writes it (the function it calls itself for ensure_ascii=False).
_encode_str = json.encoder.encode_basestring
_LIST_MEMBER = ('"object"', '"list"')

# The chunk size of iter_response_body when none is given.
DEFAULT_CHUNK_SIZE = 1 << 20


def _envelope(model, usage, extra, layout: str) -> tuple:
    """(head, tail): the UTF-8 bytes of the response body before and after the data entries.

    The members ``"object": "list"``, ``"model": model``, ``"usage": usage`` and then ``extra``'s,
    each key and value serialised exactly as JSONResponse writes it (json.dumps), laid out by the
    core in ``layout``'s order: a member naming one of the layout's fields (an ``extra`` setting
    "id" or "model") goes in that field's place, the others after the last field, in order, as
    the dict ``{"object": "list", "data": ..., "model": model, "usage": usage, **extra}`` orders
    them for the "openai" layout.
    """
    if not isinstance(model, str):
        raise TypeError(f"model must be a str, got {type(model).__name__}")
    if usage is None:
        usage = {"prompt_tokens": 0, "total_tokens": 0}
    elif not isinstance(usage, dict):
        raise TypeError(f"usage must be a dict (or None for zero token counts), got {type(usage).__name__}")
    if extra is None:
        extra = {}
    elif not isinstance(extra, Mapping):
        raise TypeError(f"extra must be a dict of top-level fields (or None), got {type(extra).__name__}")
    try:
        members = [_LIST_MEMBER, ('"model"', _encode_str(model)), ('"usage"', _encode_usage(usage))]
        if extra:
            members += [(_key_text(key), _JSON.encode(value)) for key, value in extra.items()]
        return _native._body_envelope(layout, members)
    except (TypeError, ValueError, RecursionError) as e:  # UnicodeEncodeError is a ValueError
        if "data" in extra:
            raise ValueError('extra cannot set "data": the data entries are the embeddings themselves') from None
        body = {"object": "list", "data": None, "model": model, "usage": usage, **extra}
        raise _envelope_error(body, extra, e) from e


def _key_text(key) -> str:
    """A dict key as json.dumps writes it: a str quoted and escaped; an int, float, bool or None
    as its JSON text, quoted (what json.dumps writes for it, cut from the fixed ``{`` and
    ``:null}`` around it)."""
    if isinstance(key, str):
        return _encode_str(key)
    return _JSON.encode({key: None})[1:-6]


def _encode_usage(usage: dict) -> str:
    """json.dumps of ``usage``; token counts (str keys, int values: nearly every usage) written
    directly, a third of the time of setting up json's encoder for them."""
    parts = []
    for key, value in usage.items():
        if type(key) is not str or type(value) is not int:  # bool is an int json writes as true/false
            return _JSON.encode(usage)
        parts.append(_encode_str(key) + ":" + int.__repr__(value))
    return "{" + ",".join(parts) + "}"


def _envelope_error(body: dict, extra, error: Exception) -> ValueError:
    """A ValueError naming the part of the envelope (model, usage or a key of extra) that json
    or UTF-8 cannot encode."""
    for key, value in body.items():
        if key == "data":
            continue
        try:
            _JSON.encode({key: value}).encode("utf-8")
        except (TypeError, ValueError, RecursionError) as e:
            error = e
            where = f"extra[{key!r}]" if key in extra else key
            break
    else:
        where = "the envelope"
    if isinstance(error, UnicodeEncodeError):
        reason = f"it holds a lone surrogate ({error.object[error.start : error.end]!r}), which UTF-8 cannot encode"
    else:
        reason = f"json cannot serialise it ({error})"
    return ValueError(f"{where} cannot be written into the response body: {reason}")


class _Body:
    """A response body, every argument checked before anything is built: its rows (a view of the
    input), the envelope's head and tail (laid out by the core from ``model``, ``usage`` and
    ``extra``, or from ``members``: a server's own envelope, each member's key and value already
    serialised as that server serialises them), and how the rows are written (``staged``: CUDA
    tensors through the pipeline, as ``_cuda.route`` decides)."""

    __slots__ = ("head", "tail", "rows", "base64", "dtype", "byteorder", "float_format", "threads", "layout",
                 "staged")

    def __init__(self, embeddings, *, model: str | None = None, encoding_format: str, dimensions=None, usage=None,
                 extra=None, members=None, dtype: str = "float32", byteorder: str = "little", float_format: str = "repr",
                 threads: int = 1, layout: str = "openai"):
        # ValueError naming the accepted names
        _native._check_names(encoding_format=encoding_format, float_format=float_format, dtype=dtype, byteorder=byteorder,
                             layout=layout)
        _native._check_threads(threads)
        if members is None:
            self.head, self.tail = _envelope(model, usage, extra, layout)
        else:
            self.head, self.tail = _native._body_envelope(layout, members)
        self.rows = _cut(_rows(embeddings), dimensions)
        self.base64 = encoding_format == "base64"
        self.dtype, self.byteorder, self.float_format, self.threads = dtype, byteorder, float_format, threads
        self.layout = layout
        self.staged = _cuda.route(self.rows) != "host"

    def whole(self) -> bytes:
        return self._write(self.rows, 0, self.head, self.tail, False)

    def _write(self, rows, start: int, head: bytes, tail: bytes, leading_comma: bool) -> bytes:
        """head + the data entries of ``rows`` (indices from start, after a ``,`` with
        leading_comma) + tail, written by the core into one bytes object.

        The entries are ``{"object":"embedding","index":I,"embedding":<row>}`` (keys in the
        layout's order) joined by ``,`` with no brackets around them (head ends with ``[``, tail
        starts with ``]``). Base64 rows are written at their exact size; float rows into an object
        made at a bound and trimmed (the untouched pages cost no memory), each row's text exactly
        ``json_rows``'s: ``json.dumps(row.to(torch.float32).tolist())``'s in "repr" mode. NaN and
        infinity: ValueError naming the row and the column.
        """
        if self.base64:
            if self.staged:
                return _cuda.response_body_base64(rows, self.dtype, self.byteorder, head, tail, start, self.threads,
                                                  self.layout, leading_comma)
            return _native._response_body_base64(rows, self.dtype, self.byteorder, head, tail, start, self.threads,
                                                 self.layout, leading_comma)
        if self.staged:
            return _cuda.response_body_float(rows, self.float_format, head, tail, start, self.threads, self.layout,
                                             leading_comma)
        return _native._response_body_float(rows, self.float_format, head, tail, start, self.threads, self.layout,
                                            leading_comma)

    def chunks(self, chunk_size: int):
        """The body in chunks of about chunk_size bytes, as the core plans them (the rule:
        iter_response_body's)."""
        count, width = self.rows.shape
        if not self.base64:  # NaN and infinity refused before the first chunk
            if self.staged:
                _cuda.check_finite(self.rows)
            else:
                _native._check_finite(self.rows)
        entry = _native._entry_bound(width, max(count - 1, 0), self.dtype if self.base64 else None, self.float_format)
        return self._planned_chunks((len(self.head), len(self.tail), count, entry, chunk_size))

    def _planned_chunks(self, rule: tuple):
        head, tail = self.head, self.tail
        chunk = _native._next_body_chunk(*rule, None)
        while chunk is not None:
            head_begin, head_end, start, stop, leading_comma, tail_begin, tail_end = chunk
            if start == stop:  # a piece of the envelope alone
                yield head[head_begin:head_end] + tail[tail_begin:tail_end]
            else:
                yield self._write(self.rows[start:stop], start, head[head_begin:head_end], tail[tail_begin:tail_end],
                                  leading_comma)
            chunk = _native._next_body_chunk(*rule, chunk)


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
    return _Body(embeddings, model=model, encoding_format=encoding_format, dimensions=dimensions, usage=usage,
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
    if not _is_index(chunk_size) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int (bytes), got {chunk_size!r}")
    body = _Body(embeddings, model=model, encoding_format=encoding_format, dimensions=dimensions, usage=usage,
                 extra=extra, dtype=dtype, byteorder=byteorder, float_format=float_format, threads=threads,
                 layout=layout)
    return body.chunks(chunk_size)
