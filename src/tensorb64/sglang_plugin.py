"""The SGLang plugin: SGLang's ``/v1/embeddings`` bodies written by the core.

Installing tensorb64 registers ``register`` as the ``sglang.srt.plugins`` entry point
``tensorb64``; SGLang's ``load_plugins()`` calls it in the processes it starts (the HTTP server and
tokenizer manager, the scheduler, the detokenizer). ``TENSORB64_SGLANG=0`` turns it off, and so
does an ``SGLANG_PLUGINS`` allowlist that does not name ``tensorb64`` (SGLang's own rule).

What it does, and nothing else: ``OpenAIServingEmbedding._build_embedding_response`` (SGLang
0.5.23, recognised by its parameters; any other release keeps its own, with one log line) answers
an HTTP request with the very bytes SGLang's route sends, written by the core in one pass: the
rows (lists of Python floats, as SGLang's scheduler hands them over) read natively into one
float64 array, each entry's keys and the envelope's fields in SGLang's order (the core's
``"sglang"`` layout), float rows as orjson writes SGLang's Python floats (``float_format="orjson"``
over the doubles), base64 rows as SGLang's ``struct.pack("<nf")`` + ``b64encode`` writes them, the
envelope's values from SGLang's own ``EmbeddingResponse`` and ``UsageInfo`` serialised as its route
serialises them (FastAPI's ``jsonable_encoder``, then orjson). A batch it does not write (rows that
are not equally long lists of floats, a NaN or infinity, a value past float32's range in a base64
request, an envelope of other fields) and any request that did not come over HTTP (SGLang's gRPC
bridge serialises the builder's result itself) go to SGLang's own code, untouched.

Dynamo's SGLang worker (``dynamo.sglang.request_handlers.embedding.embedding_handler``, Dynamo
1.6.1): its per-row ``_encode_floats_to_base64`` is replaced by one that reads the row natively and
encodes it with the core (the same strings; a row it does not take, Dynamo's own).

Both patches are applied when their module is imported (or at once, if it already is),
through the package's one after-import mechanism: a process that never imports them pays for a hook
in ``sys.meta_path`` and nothing more. Loading the plugin twice changes nothing.

SGLang's extra HTTP workers (``--tokenizer-worker-num`` N > 1: N uvicorn or granian worker
processes, spawned, each importing the app that ``SGLANG_HTTP_SERVER_APP_PATH`` names) never call
``load_plugins()``. So the plugin, loaded in the process that starts them, names this module's
``http_worker_app`` there when that setting is SGLang's default: each worker then registers the plugin
and gets SGLang's own app. A value of the user's own is left as it is (its workers answer with
SGLang's builder, said in one log line).
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
import os
import sys

from . import _native
from ._import_hooks import after_import
from ._patching import parameters, replaced

ENABLE_VARIABLE = "TENSORB64_SGLANG"
SERVING_MODULE = "sglang.srt.entrypoints.openai.serving_embedding"
DYNAMO_MODULE = "dynamo.sglang.request_handlers.embedding.embedding_handler"
# The app SGLang's extra HTTP workers import ("module:attribute"): SGLang's setting and its default.
HTTP_APP_VARIABLE = "SGLANG_HTTP_SERVER_APP_PATH"
SGLANG_HTTP_APP = "sglang.srt.entrypoints.http_server:app"
WORKER_HTTP_APP = f"{__name__}:http_worker_app"

# The methods' parameters in the release whose answer this writes (0.5.23).
BUILD_PARAMETERS = ("self", "ret", "encoding_format")
HANDLE_PARAMETERS = ("self", "adapted_request", "request", "raw_request")

# A child of SGLang's own logger, so the lines come out in SGLang's format, where SGLang's go.
logger = logging.getLogger("sglang.srt.plugins.tensorb64")

# Whether the request being answered came over HTTP (set around SGLang's own handler, read by the
# builder, which is not given the request).
_over_http: contextvars.ContextVar[bool] = contextvars.ContextVar("tensorb64_sglang_over_http", default=False)


def register() -> None:
    """The entry point SGLang calls in each of its processes."""
    if os.environ.get(ENABLE_VARIABLE, "1").strip().lower() in ("0", "false", "no", "off"):
        return
    after_import(SERVING_MODULE, patch_serving)
    after_import(DYNAMO_MODULE, patch_dynamo)
    app = os.environ.get(HTTP_APP_VARIABLE, "")
    if app in ("", SGLANG_HTTP_APP):
        os.environ[HTTP_APP_VARIABLE] = WORKER_HTTP_APP  # (read when the workers start, inherited by them)
    elif app != WORKER_HTTP_APP:
        logger.info("tensorb64: %s=%s is set: SGLang's extra HTTP workers (--tokenizer-worker-num > 1), if any, "
                    "keep SGLang's own embeddings builder", HTTP_APP_VARIABLE, app)


def __getattr__(name: str):
    # http_worker_app: what each of SGLang's extra HTTP workers imports (see the module's docstring):
    # the plugin registered in that process, then SGLang's own app.
    if name == "http_worker_app":
        register()
        from sglang.srt.entrypoints.http_server import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def patch_serving(module) -> bool:
    """Replace ``module.OpenAIServingEmbedding``'s response builder (and mark its HTTP requests);
    True if it is (now or already) tensorb64's. Logs one line either way."""
    cls = getattr(module, "OpenAIServingEmbedding", None)
    build = getattr(cls, "_build_embedding_response", None)
    handle = getattr(cls, "_handle_non_streaming_request", None)
    if replaced(build):
        return True
    version = getattr(sys.modules.get("sglang"), "__version__", "unknown")
    missing = [name for name in ("EmbeddingResponse", "UsageInfo") if not hasattr(module, name)]
    if (parameters(build) != BUILD_PARAMETERS or parameters(handle) != HANDLE_PARAMETERS
            or not inspect.iscoroutinefunction(handle) or missing):
        logger.warning(
            "tensorb64: SGLang %s's embeddings response builder (%s.OpenAIServingEmbedding._build_embedding_response) "
            "is not one tensorb64 knows; SGLang's own is kept",
            version,
            module.__name__,
        )
        return False
    cls._handle_non_streaming_request = _handler_for(handle)
    cls._build_embedding_response = _builder_for(module, build)
    logger.info("tensorb64: SGLang %s's /v1/embeddings float and base64 bodies are written by tensorb64", version)
    return True


def _handler_for(original):
    from starlette.requests import Request

    async def _handle_non_streaming_request(self, adapted_request, request, raw_request):
        token = _over_http.set(isinstance(raw_request, Request))
        try:
            return await original(self, adapted_request, request, raw_request)
        finally:
            _over_http.reset(token)

    _handle_non_streaming_request.__tensorb64_replaces__ = original
    _handle_non_streaming_request.__doc__ = original.__doc__
    return _handle_non_streaming_request


def _builder_for(module, original):
    from starlette.responses import Response

    def _build_embedding_response(self, ret, encoding_format="float"):
        body = None
        if _over_http.get():
            try:
                body = embedding_body(module, ret, encoding_format, self.tokenizer_manager.model_path)
            except Exception:  # a bug here must not cost the client its answer: SGLang's own, and one log line
                _log_failure_once()
        if body is None:
            return original(self, ret, encoding_format)
        return Response(content=body, media_type="application/json")

    _build_embedding_response.__tensorb64_replaces__ = original
    _build_embedding_response.__doc__ = original.__doc__
    return _build_embedding_response


_failure_logged = False


def _log_failure_once() -> None:
    global _failure_logged
    if not _failure_logged:
        _failure_logged = True
        logger.exception("tensorb64: writing an embeddings body failed; SGLang's own answered (logged once)")


def embedding_body(module, ret, encoding_format: str, model: str):
    """The body SGLang's route sends for ``_build_embedding_response(ret, encoding_format)``, byte
    for byte; None for a batch that SGLang's own builder should answer."""
    import numpy as np

    from .openai import _Body

    if encoding_format not in ("float", "base64") or not isinstance(ret, list) or not ret:
        return None
    rows = read_rows(ret)
    if rows is None:
        return None
    if encoding_format == "base64":
        # struct.pack("<f") rounds each double to float32 as numpy's cast does, and refuses one past
        # float32's range; NaN and infinity keep SGLang's own (struct's NaN bits are its own).
        with np.errstate(over="ignore"):  # (past float32: inf, checked below)
            rows = rows.astype(np.float32)
    if not np.isfinite(rows).all():
        return None  # (float: orjson writes null for them, which the core does not write)
    prompt_tokens = sum(item.get("meta_info", {}).get("prompt_tokens", 0) for item in ret)
    if type(model) is not str or type(prompt_tokens) is not int:
        return None
    members = _envelope_for(module, model, prompt_tokens)
    if members is None:
        return None
    return _Body(rows, members=members, encoding_format=encoding_format, float_format="orjson", threads=1,
                 layout="sglang").whole()


def read_rows(ret):
    """The ``embedding`` of each item of ``ret`` as one float64 array (each value the double its
    Python float holds), or None where they are not equally long lists of floats."""
    import numpy as np

    try:
        lists = [item["embedding"] for item in ret]
        rows = np.empty((len(lists), len(lists[0])), dtype=np.float64)
        _native._read_float_lists(lists, rows)
    except (TypeError, ValueError, KeyError, IndexError):
        return None
    return rows


# The envelope is a function of the model's name and the token count alone: its text is made by
# SGLang's own models and FastAPI's encoder (~80 us, as much as a small body) once per pair.
@functools.lru_cache(maxsize=1024)
def _envelope_for(module, model: str, prompt_tokens: int):
    envelope = module.EmbeddingResponse(
        data=[], model=model, usage=module.UsageInfo(prompt_tokens=prompt_tokens, total_tokens=prompt_tokens)
    )
    return _envelope_members(envelope)


def _envelope_members(envelope):
    """The envelope's members but "data", each key and value as SGLang's route writes them
    (FastAPI's jsonable_encoder, then orjson), for the core's "sglang" layout; None where its
    fields are not that layout's (another release's response: the body would differ)."""
    import orjson
    from fastapi.encoders import jsonable_encoder

    fields = jsonable_encoder(envelope)
    if tuple(fields) != _sglang_fields():
        return None
    return tuple((orjson.dumps(key), orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))
                 for key, value in fields.items() if key != "data")


@functools.cache
def _sglang_fields() -> tuple:
    return _native._response_layouts()["sglang"][1]


# ---- Dynamo's SGLang worker -----------------------------------------------------------------------


def patch_dynamo(module) -> bool:
    """Replace ``module._encode_floats_to_base64`` with one that encodes a row of Python floats with
    the core; True if it is (now or already) tensorb64's."""
    original = getattr(module, "_encode_floats_to_base64", None)
    if replaced(original):
        return True
    if parameters(original) != ("floats",):
        logger.warning("tensorb64: this Dynamo's %s._encode_floats_to_base64 is not one tensorb64 knows; Dynamo's own "
                       "is kept", module.__name__)
        return False
    module._encode_floats_to_base64 = _encode_floats_to_base64_for(original)
    logger.info("tensorb64: Dynamo's SGLang worker encodes its base64 rows with tensorb64")
    return True


def _encode_floats_to_base64_for(original):
    import numpy as np

    from ._encode import encode

    def _encode_floats_to_base64(floats):
        # Dynamo's: struct.pack("<nf", *floats) then base64. The row read natively into float32,
        # each value rounded as struct rounds it; what the reader refuses (not a list of floats;
        # NaN, infinity, a value past float32: struct's OverflowError) is Dynamo's own to write.
        try:
            row = np.empty(len(floats), dtype=np.float32)
            _native._read_float_lists([floats], row)
        except (TypeError, ValueError):
            return original(floats)
        return encode(row)

    _encode_floats_to_base64.__tensorb64_replaces__ = original
    _encode_floats_to_base64.__doc__ = original.__doc__
    return _encode_floats_to_base64
