"""SGLang's ``/v1/embeddings`` bodies written by the core:
``OpenAIServingEmbedding._build_embedding_response`` (SGLang 0.5.23, recognised by its parameters)
answers an HTTP request whose route renders with ``ORJSONResponse`` with the very bytes that route
sends (what it writes and declines: the ``tensorb64.sglang_plugin`` docstring). Installed by the
SGLang plugin.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import logging

from .. import _native
from .patching import Call, Host, Replacement, Unknown, attribute, expect_parameters, fail_open

ENABLE_VARIABLE = "TENSORB64_SGLANG"
SERVING_MODULE = "sglang.srt.entrypoints.openai.serving_embedding"

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


@contextlib.contextmanager
def _over_http_as(value: bool):
    token = _over_http.set(value)
    try:
        yield
    finally:
        _over_http.reset(token)


def _handler_for(original):
    from starlette.requests import Request

    def ours(self, adapted_request, request, raw_request):
        # SGLang's own handler answers, with the builder told whether the request came over HTTP
        # on a route rendered as the builder's answer is written.
        over_http = isinstance(raw_request, Request) and _route_is_known(raw_request)
        return Call((self, adapted_request, request, raw_request), {}, _over_http_as(over_http))

    return fail_open(SGLANG, original, ours)


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

    from .._codec.body import Body

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

