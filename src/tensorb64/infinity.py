"""Infinity's ``/embeddings`` bodies written by the core: ``tensorb64.infinity.patch()``.

Infinity (``infinity-emb`` 0.0.78) has no plugin mechanism, so this is a call in the server's
start-up, or Infinity's own command line run through this module::

    python -m tensorb64.infinity v2 --model-id BAAI/bge-small-en-v1.5   # = infinity_emb v2 ..., patched

    import tensorb64.infinity
    tensorb64.infinity.patch()   # before or after infinity_emb is imported; unpatch() undoes it

What it replaces, and nothing else: the staticmethod
``infinity_emb.fastapi_schemas.pymodels.OpenAIEmbeddingResult.to_embeddings_response`` (recognised
by its parameters; another release's keeps its own, with one log line). Infinity's routes
(``/embeddings`` and its image and audio ones) return its dict, which FastAPI validates into
``OpenAIEmbeddingResult`` and renders (orjson through ``ORJSONResponse``, or pydantic's own JSON in
FastAPI releases that serialise a response model directly; the two write the same text for these
bodies). The replacement answers with the very bytes of that route instead, written by the core in
one pass: each entry's keys and the envelope's fields in Infinity's order (the core's
``"infinity"`` layout), float rows as those serialisers write the doubles of ``row.tolist()``
(``float_format="orjson"`` over the rows as float64), base64 rows as
``base64.b64encode(row.astype(float32))`` writes them (native byte order), the envelope's values
from Infinity's own models, ``id`` and ``created`` from their own default factories. What it does
not write goes to Infinity's own code, untouched: rows that are not equally long 1-D float
arrays (int8 and binary embeddings, multi-vector outputs), NaN or infinity in a float body, an
envelope its two serialisers would write differently.

``TENSORB64_INFINITY=0`` makes ``patch()`` do nothing.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import sys

from . import _native
from ._import_hooks import after_import
from ._patching import parameters, replaced

ENABLE_VARIABLE = "TENSORB64_INFINITY"
SCHEMAS_MODULE = "infinity_emb.fastapi_schemas.pymodels"
# OpenAIEmbeddingResult.to_embeddings_response's parameters in the release whose answer this writes.
PARAMETERS = ("embeddings", "engine_args", "usage", "encoding_format")

# A child of Infinity's own logger, so the lines come out in Infinity's format, where Infinity's go.
logger = logging.getLogger("infinity_emb.tensorb64")

_wanted = False  # patch() called and unpatch() not since: a pending import hook patches only then


def patch() -> None:
    """Route Infinity's embeddings bodies through the core: at once where its schemas module is
    imported, else right after it is. Calling it again changes nothing."""
    global _wanted
    if os.environ.get(ENABLE_VARIABLE, "1").strip().lower() in ("0", "false", "no", "off"):
        return
    _wanted = True
    after_import(SCHEMAS_MODULE, _patch_if_wanted)


def unpatch() -> None:
    """Give Infinity its own ``to_embeddings_response`` back (the same function object)."""
    global _wanted
    _wanted = False
    cls = getattr(sys.modules.get(SCHEMAS_MODULE), "OpenAIEmbeddingResult", None)
    replacement = _function(cls)
    if replaced(replacement):
        cls.to_embeddings_response = staticmethod(replacement.__tensorb64_replaces__)


def is_patched() -> bool:
    """Whether Infinity's imported schemas answer through the core."""
    return replaced(_function(getattr(sys.modules.get(SCHEMAS_MODULE), "OpenAIEmbeddingResult", None)))


def _patch_if_wanted(module) -> None:
    if _wanted:
        patch_schemas(module)


def _function(cls):
    """The function of ``cls``'s staticmethod to_embeddings_response, or None."""
    method = getattr(cls, "__dict__", {}).get("to_embeddings_response")
    return method.__func__ if isinstance(method, staticmethod) else None


def patch_schemas(module) -> bool:
    """Replace ``module.OpenAIEmbeddingResult.to_embeddings_response``; True if it is (now or
    already) tensorb64's. Logs one line either way."""
    cls = getattr(module, "OpenAIEmbeddingResult", None)
    original = _function(cls)
    if replaced(original):
        return True
    version = getattr(sys.modules.get("infinity_emb"), "__version__", "unknown")
    if parameters(original) != PARAMETERS or not hasattr(cls, "model_fields"):
        logger.warning("tensorb64: Infinity %s's %s.OpenAIEmbeddingResult.to_embeddings_response is not one tensorb64 "
                       "knows; Infinity's own is kept", version, module.__name__)
        return False
    cls.to_embeddings_response = staticmethod(_to_embeddings_response_for(cls, original))
    logger.info("tensorb64: Infinity %s's /embeddings float and base64 bodies are written by tensorb64", version)
    return True


def _to_embeddings_response_for(result_model, original):
    from starlette.responses import Response

    default = inspect.signature(original).parameters["encoding_format"].default

    def to_embeddings_response(embeddings, engine_args, usage, encoding_format=default):
        try:
            body = embeddings_body(result_model, embeddings, engine_args, usage, encoding_format)
        except Exception:  # a bug here must not cost the client its answer: Infinity's own, and one log line
            _log_failure_once()
            body = None
        if body is None:
            return original(embeddings, engine_args, usage, encoding_format)
        return Response(content=body, media_type="application/json")

    to_embeddings_response.__tensorb64_replaces__ = original
    to_embeddings_response.__doc__ = original.__doc__
    return to_embeddings_response


_failure_logged = False


def _log_failure_once() -> None:
    global _failure_logged
    if not _failure_logged:
        _failure_logged = True
        logger.exception("tensorb64: writing an embeddings body failed; Infinity's own answered (logged once)")


def embeddings_body(result_model, embeddings, engine_args, usage, encoding_format):
    """The body Infinity's route sends for ``to_embeddings_response(embeddings, engine_args, usage,
    encoding_format)``, byte for byte but for its own ``id`` and ``created`` (made here by its
    model's default factories, as its route makes them); None where Infinity's own should answer."""
    import orjson

    from .openai import _Body

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
    body = _Body(rows, members=[*shared, *own], encoding_format="base64" if base64 else "float", byteorder="native",
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


def main(argv=None) -> None:
    """Infinity's command line (``infinity_emb ...``), patched: ``python -m tensorb64.infinity ...``."""
    patch()
    from infinity_emb.cli import cli

    sys.argv = ["infinity_emb", *(sys.argv[1:] if argv is None else argv)]
    cli()


if __name__ == "__main__":
    from tensorb64 import infinity  # (the package's module, not this __main__ copy)

    infinity.main()
