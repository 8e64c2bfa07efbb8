"""A response body, built: the rows read and cut, the envelope laid out, the rows written by the
core (whole, or in chunks). The public builders (``tensorb64.openai.response_body``,
``iter_response_body``, ``embedding_data``) and the server integrations (vLLM, SGLang, Infinity,
with envelopes of their own serialised as each serialises them) all build through it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping

import numpy as np

from .. import _native
from .._cuda import route as cuda
from .._types import is_count
from .inputs import entered, readable


def batch_rows(embeddings) -> tuple:
    """``(rows, route)``: the input as a 2-D array or tensor (a view of the caller's memory where it
    can be), read and refused by the one reader, as every encoder reads and refuses it; and how
    it is read (None: on the host; else the CUDA room's route, decided here, once, and passed down
    with the rows)."""
    x, route = entered(embeddings)
    torch = sys.modules.get("torch")
    if not isinstance(x, np.ndarray) and not (torch is not None and isinstance(x, torch.Tensor)):
        x = readable(x)  # a list's array (or its tensors stacked), or a buffer
        if isinstance(x, cuda.OnDevice):
            x, route = x
        elif not (torch is not None and isinstance(x, torch.Tensor)):
            x = np.asarray(x)
    if x.ndim not in (1, 2):
        raise ValueError(f"embeddings must be a 2-D [batch, dim] array (or one 1-D row), got shape {tuple(x.shape)}")
    if route is None:  # (a device's rows are read where they are encoded)
        _native._row_shape(x)  # refuses what every encoder refuses, in the same words
    return (x if x.ndim == 2 else x[None]), route


def cut_rows(rows, dimensions):
    """The first ``dimensions`` values of each row (a view: strides do the truncation), or the
    rows themselves for None; ValueError naming the accepted range otherwise."""
    if dimensions is None:
        return rows
    width = rows.shape[1]
    if not is_count(dimensions) or not 1 <= dimensions <= width:
        accepted = f"an int from 1 to {width} (the embedding size)" if width else "None (the rows are empty)"
        raise ValueError(f"dimensions must be {accepted}, or None for whole rows; got {dimensions!r}")
    return rows[:, : int(dimensions)]


# Exactly what Starlette's JSONResponse (and so FastAPI) renders with: json.dumps(content,
# ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).
_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
# A str as that encoder writes it (the function it calls itself for ensure_ascii=False).
_encode_str = json.encoder.encode_basestring
_LIST_MEMBER = ('"object"', '"list"')

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


class Body:
    """A response body, every argument checked before anything is built: its rows (a view of the
    input), the envelope's head and tail (laid out by the core from ``model``, ``usage`` and
    ``extra``, or from ``members``: a server's own envelope, each member's key and value already
    serialised as that server serialises them), and how the rows are read (``route``: None on the
    host, else the CUDA room's route, decided once where the input entered)."""

    __slots__ = ("head", "tail", "rows", "base64", "dtype", "byteorder", "float_format", "threads", "layout",
                 "route")

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
        rows, self.route = batch_rows(embeddings)
        self.rows = cut_rows(rows, dimensions)
        self.base64 = encoding_format == "base64"
        self.dtype, self.byteorder, self.float_format, self.threads = dtype, byteorder, float_format, threads
        self.layout = layout

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
            if self.route is not None:
                return self.route.response_body_base64(rows, self.dtype, self.byteorder, head, tail, start,
                                                       self.threads, self.layout, leading_comma)
            return _native._response_body_base64(rows, self.dtype, self.byteorder, head, tail, start, self.threads,
                                                 self.layout, leading_comma)
        if self.route is not None:
            return self.route.response_body_float(rows, self.float_format, head, tail, start, self.threads,
                                                  self.layout, leading_comma)
        return _native._response_body_float(rows, self.float_format, head, tail, start, self.threads, self.layout,
                                            leading_comma)

    def chunks(self, chunk_size: int):
        """The body in chunks of about chunk_size bytes, as the core plans them (the rule:
        iter_response_body's)."""
        count, width = self.rows.shape
        if not self.base64:  # NaN and infinity refused before the first chunk
            if self.route is not None:
                self.route.check_finite(self.rows)
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
