"""The SGLang plugin: SGLang's ``/v1/embeddings`` bodies written by the core.

Installing tensorb64 registers ``register`` as the ``sglang.srt.plugins`` entry point
``tensorb64``; SGLang's ``load_plugins()`` calls it in the processes it starts (the HTTP server and
tokenizer manager, the scheduler, the detokenizer). ``TENSORB64_SGLANG=0`` turns it off, and so
does an ``SGLANG_PLUGINS`` allowlist that does not name ``tensorb64`` (SGLang's own rule).

What it does, and nothing else: ``OpenAIServingEmbedding._build_embedding_response`` (SGLang
0.5.23, recognised by its parameters; any other release keeps its own, with one log line) answers
an HTTP request whose route renders with ``ORJSONResponse`` (checked per route on its first
request; any other route keeps SGLang's own builder, one log line) with the very bytes that route
sends, written by the core in one pass: the
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

from . import _native
from ._patching import (
    Host,
    Replacement,
    Unknown,
    attribute,
    enabled,
    expect_names,
    expect_parameters,
    fail_open,
    install,
    install_module,
)

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
# The response class of the /v1/embeddings route whose bytes the builder's answer replaces
# (0.5.23: FastAPI renders what the builder returns with ORJSONResponse). A route that renders
# otherwise (SGLang's chat routes moved to model_json_response) keeps SGLang's own builder, with
# one log line.
ROUTE_RESPONSE_CLASS = "ORJSONResponse"

# A child of SGLang's own logger, so the lines come out in SGLang's format, where SGLang's go.
logger = logging.getLogger("sglang.srt.plugins.tensorb64")

# Whether the request being answered came over HTTP (set around SGLang's own handler, read by the
# builder, which is not given the request).
_over_http: contextvars.ContextVar[bool] = contextvars.ContextVar("tensorb64_sglang_over_http", default=False)


def register() -> None:
    """The entry point SGLang calls in each of its processes."""
    if not enabled(ENABLE_VARIABLE):
        return
    install(SGLANG)
    install(DYNAMO_SGLANG)
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


def _serving_replacements(module):
    """SGLang's embeddings response builder and the handler that marks its HTTP requests, where its
    release is one whose answer this writes."""
    cls = attribute(module, "OpenAIServingEmbedding")
    build = attribute(cls, "_build_embedding_response")
    handle = attribute(cls, "_handle_non_streaming_request")
    expect_parameters(build, BUILD_PARAMETERS, "OpenAIServingEmbedding._build_embedding_response")
    expect_parameters(handle, HANDLE_PARAMETERS, "OpenAIServingEmbedding._handle_non_streaming_request")
    if not inspect.iscoroutinefunction(handle):
        raise Unknown("OpenAIServingEmbedding._handle_non_streaming_request is not a coroutine function")
    for name in ("EmbeddingResponse", "UsageInfo"):
        attribute(module, name)
    return [Replacement(cls, "_handle_non_streaming_request", _handler_for),
            Replacement(cls, "_build_embedding_response", functools.partial(_builder_for, module))]


SGLANG = Host(
    name="SGLang",
    logger=logger,
    what="/v1/embeddings float and base64 bodies are written by tensorb64",
    work="writing an embeddings body",
    modules={SERVING_MODULE: _serving_replacements},
    switch=ENABLE_VARIABLE,
    package="sglang",
    tested=("0.5.23",),
)


def patch_serving(module) -> bool:
    """Replace ``module.OpenAIServingEmbedding``'s response builder (and mark its HTTP requests);
    True if it is (now or already) tensorb64's. Logs one line either way."""
    return install_module(SGLANG, SERVING_MODULE, module)


def _handler_for(original):
    from starlette.requests import Request

    async def _handle_non_streaming_request(self, adapted_request, request, raw_request):
        token = _over_http.set(isinstance(raw_request, Request) and _route_is_known(raw_request))
        try:
            return await original(self, adapted_request, request, raw_request)
        finally:
            _over_http.reset(token)

    _handle_non_streaming_request.__doc__ = original.__doc__
    return _handle_non_streaming_request


_known_routes: dict[int, bool] = {}  # id(route) -> whether it renders with ROUTE_RESPONSE_CLASS (routes live as long as their app)


def _route_is_known(raw_request) -> bool:
    """Whether the request's route renders the builder's answer as SGLang 0.5.23's /v1/embeddings
    does (its route object, which FastAPI puts in the request's scope). Checked on the first
    request of each route, not when the serving module is patched: SGLang's routes are made after
    that module is imported."""
    try:
        route = raw_request.scope.get("route")
        known = _known_routes.get(id(route))
        if known is None:
            response_class = getattr(getattr(route, "response_class", None), "__name__", None)
            known = _known_routes[id(route)] = response_class == ROUTE_RESPONSE_CLASS
            if not known:
                logger.warning("tensorb64: SGLang's route %s renders its answer otherwise (%s); SGLang's own builder "
                               "answers it", getattr(route, "path", "?"), response_class)
        return known
    except Exception:  # (a request of another shape: SGLang's own answers)
        return False


def _builder_for(module, original):
    from starlette.responses import Response

    def ours(self, ret, encoding_format="float"):
        if not _over_http.get():
            return None
        body = embedding_body(module, ret, encoding_format, self.tokenizer_manager.model_path)
        return None if body is None else Response(content=body, media_type="application/json")

    return fail_open(SGLANG, original, ours)


def embedding_body(module, ret, encoding_format: str, model: str):
    """The body SGLang's route sends for ``_build_embedding_response(ret, encoding_format)``, byte
    for byte; None for a batch that SGLang's own builder should answer."""
    import numpy as np

    from ._body import Body

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
    return Body(rows, members=members, encoding_format=encoding_format, float_format="orjson", threads=1,
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


# The names Dynamo 1.6.1's function uses: one parameter says little, what it does is its shape.
DYNAMO_CODE = ("b64encode", "base64", "decode", "len", "pack", "struct")


def _dynamo_replacements(module):
    original = attribute(module, "_encode_floats_to_base64")
    expect_parameters(original, ("floats",), "_encode_floats_to_base64")
    expect_names(original, DYNAMO_CODE, "_encode_floats_to_base64")
    return [Replacement(module, "_encode_floats_to_base64", _encode_floats_to_base64_for)]


DYNAMO_SGLANG = Host(
    name="Dynamo's SGLang worker",
    logger=logger,
    what="base64 rows are encoded by tensorb64",
    work="encoding a row",
    project="Dynamo",
    modules={DYNAMO_MODULE: _dynamo_replacements},
    switch=ENABLE_VARIABLE,
    distribution="ai-dynamo",
    tested=("1.6.1",),
)


def patch_dynamo(module) -> bool:
    """Replace ``module._encode_floats_to_base64`` with one that encodes a row of Python floats with
    the core; True if it is (now or already) tensorb64's."""
    return install_module(DYNAMO_SGLANG, DYNAMO_MODULE, module)


def _encode_floats_to_base64_for(original):
    import numpy as np

    from ._encode import encode

    def ours(floats):
        # Dynamo's: struct.pack("<nf", *floats) then base64. The row read natively into float32,
        # each value rounded as struct rounds it; what the reader refuses (not a list of floats;
        # NaN, infinity, a value past float32: struct's OverflowError) is Dynamo's own to write.
        try:
            row = np.empty(len(floats), dtype=np.float32)
            _native._read_float_lists([floats], row)
        except (TypeError, ValueError):
            return None
        return encode(row)

    return fail_open(DYNAMO_SGLANG, original, ours)
