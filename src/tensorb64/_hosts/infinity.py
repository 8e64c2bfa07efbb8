"""Infinity's ``/embeddings`` bodies written by the core: the staticmethod
``infinity_emb.fastapi_schemas.pymodels.OpenAIEmbeddingResult.to_embeddings_response`` replaced
(recognised by its parameters; what it writes and declines: the ``tensorb64.infinity``
docstring). Installed by ``tensorb64.infinity.patch()``.
"""

from __future__ import annotations

import functools
import inspect
import logging

from .. import _native
from .patching import Host, Replacement, Unknown, attribute, expect_parameters, fail_open

ENABLE_VARIABLE = "TENSORB64_INFINITY"
SCHEMAS_MODULE = "infinity_emb.fastapi_schemas.pymodels"
# OpenAIEmbeddingResult.to_embeddings_response's parameters in the release whose answer this writes.
PARAMETERS = ("embeddings", "engine_args", "usage", "encoding_format")

# A child of Infinity's own logger, so the lines come out in Infinity's format, where Infinity's go.
logger = logging.getLogger("infinity_emb.tensorb64")



def _schemas_replacements(module):
    cls = attribute(module, "OpenAIEmbeddingResult")
    method = attribute(cls, "to_embeddings_response")
    if not isinstance(method, staticmethod):
        raise Unknown("OpenAIEmbeddingResult.to_embeddings_response is not a staticmethod")
    expect_parameters(method, PARAMETERS, "OpenAIEmbeddingResult.to_embeddings_response")
    if not hasattr(cls, "model_fields"):
        raise Unknown("OpenAIEmbeddingResult is not a pydantic 2 model")
    return [Replacement(cls, "to_embeddings_response",
                        lambda method: staticmethod(_to_embeddings_response_for(cls, method.__func__)))]


INFINITY = Host(
    name="Infinity",
    logger=logger,
    what="/embeddings float and base64 bodies are written by tensorb64",
    work="writing an embeddings body",
    modules={SCHEMAS_MODULE: _schemas_replacements},
    switch=ENABLE_VARIABLE,
    package="infinity_emb",
    tested=("0.0.78",),
)


def _to_embeddings_response_for(result_model, original):
    from starlette.responses import Response

    default = inspect.signature(original).parameters["encoding_format"].default

    def ours(embeddings, engine_args, usage, encoding_format=default):
        body = embeddings_body(result_model, embeddings, engine_args, usage, encoding_format)
        return None if body is None else Response(content=body, media_type="application/json")

    return fail_open(INFINITY, original, ours)


def embeddings_body(result_model, embeddings, engine_args, usage, encoding_format):
    """The body Infinity's route sends for ``to_embeddings_response(embeddings, engine_args, usage,
    encoding_format)``, byte for byte but for its own ``id`` and ``created`` (made here by its
    model's default factories, as its route makes them); None where Infinity's own should answer."""
    import orjson

    from .._codec.body import Body

    base64 = encoding_format == "base64"  # (Infinity's str enum, or its value)
    if base64 and engine_args.embedding_dtype.uses_bitpacking():
        return None  # (Infinity's own refuses it)
    model = engine_args.served_model_name
    if type(model) is not str or type(usage) is not int:
        return None  # (what Infinity's models would convert)
    rows = _rows(embeddings, base64)
    if rows is None:
        return None
    shared = _shared_members(result_model, model, usage)
    if shared is None:
        return None
    fields = result_model.model_fields
    own = [(b'"id"', orjson.dumps(fields["id"].get_default(call_default_factory=True))),
           (b'"created"', orjson.dumps(fields["created"].get_default(call_default_factory=True)))]
    body = Body(rows, members=[*shared, *own], encoding_format="base64" if base64 else "float", byteorder="native",
                 float_format="orjson", threads=1, layout="infinity")
    try:
        return body.whole()
    except ValueError:
        if not base64:
            return None  # NaN or infinity: Infinity's serialisers write null, so Infinity's own answers
        raise


_FLOAT_DTYPES = ("float16", "float32", "float64")


def _rows(embeddings, base64: bool):
    """The rows as one [batch, dim] array (float64 for a float body: each value the double
    ``.tolist()`` gives), or None where Infinity's own should answer."""
    import numpy as np

    if isinstance(embeddings, np.ndarray):
        rows = embeddings if embeddings.ndim == 2 else None
    elif isinstance(embeddings, (list, tuple)) and embeddings:
        first = embeddings[0]
        if not isinstance(first, np.ndarray) or first.ndim != 1:
            return None
        for row in embeddings:
            if not isinstance(row, np.ndarray) or row.dtype != first.dtype or row.shape != first.shape:
                return None
        rows = np.stack(embeddings)
    else:
        return None  # (another iterable: consumed here, it would be empty for Infinity's own)
    if rows is None or rows.shape[0] == 0 or rows.dtype.name not in _FLOAT_DTYPES:
        return None
    return rows if base64 else rows.astype(np.float64)


@functools.lru_cache(maxsize=1024)
def _shared_members(result_model, model: str, usage: int):
    """The envelope's members but "data", "id" and "created", made by Infinity's own model for
    this model name and token count, as its route serialises them; None where its fields are not
    the "infinity" layout's, or where orjson and pydantic's JSON (the two serialisers FastAPI
    renders it with, by release) would write them differently."""
    import orjson

    envelope = result_model(data=[], model=model, usage=dict(prompt_tokens=usage, total_tokens=usage), id="",
                            created=0)
    dumped = envelope.model_dump(mode="json")
    if tuple(dumped) != _infinity_fields() or orjson.dumps(dumped) != envelope.model_dump_json().encode():
        return None
    return tuple((orjson.dumps(key), orjson.dumps(value)) for key, value in dumped.items()
                 if key not in ("data", "id", "created"))


@functools.cache
def _infinity_fields() -> tuple:
    return _native._response_layouts()["infinity"][1]
