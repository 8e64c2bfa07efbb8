"""LiteLLM's proxy (``litellm --config``) answering ``/v1/embeddings`` with the upstream's float rows
kept as the one array the core read them into, and its body written from it. The public side,
the handler its config names and what looking it up installs, is ``tensorb64.litellm_proxy``.

Without tensorb64, a float request's rows become a Python float per value, which LiteLLM's own
steps then copy over and over (its cost and logging steps dump the whole response with pydantic
four times, though they read only its usage) and FastAPI renders with ``jsonable_encoder`` (a
Python call per float) and ``ORJSONResponse``. Here, per request (``_Request``):

* **Kept, where nothing that reads the rows is configured** (``rows_unread``): the readers of the
  openai client and of ``hosted_vllm`` (``tensorb64.openai.patch()``'s) give each entry a
  stand-in (``kept_rows``), which LiteLLM's steps pass along as they are; the Python rows are
  built, once and equal to today's, only where something asks. A hook of the proxy's that gets
  the response itself (a ``CustomLogger``'s ``async_post_call_success_hook`` and
  ``async_post_call_response_headers_hook``, guardrails) gets it with its rows built on first
  access (``_LazyRows``: reading ``data``, dumping, copying or comparing it); one that reads only
  ``usage`` builds nothing. Any step that reads the rows otherwise (a success event, which gets
  the logging payload holding a dump of the rows; a string callback; the cache; LiteLLM's debug
  output) is configured, and then the rows are made as today, up front.
* **Written natively**: the answer ``base_process_llm_request`` returns is rendered as FastAPI
  would (the envelope and every entry but its row by FastAPI's own ``jsonable_encoder`` and the
  route's ``ORJSONResponse``, so every key, its order, ``usage`` with its ``None`` details and
  ``model`` as the proxy names it are the proxy's own), each row spliced in its entry's place:
  kept rows written from the array by the core's writer of doubles in orjson's layout
  (``json_rows(..., float_format="orjson")``, the text orjson gives the Python floats), Python
  rows by the response class's own ``render``; status 200, the response class's headers and
  then those the proxy set, as FastAPI merges them. The bytes are the proxy's, byte for byte.

Left to FastAPI, as the proxy returned it (with any kept rows built first): base64 bodies (the
proxy's own render of a 64x3072 base64 body takes about 0.5 ms, less than splicing 1 MB anew), a
response of another type, an entry that is neither a dict nor LiteLLM's ``Embedding``, a row
holding anything but plain floats and ints, a status the proxy set itself, a route not rendered
with ``ORJSONResponse`` alone (checked on the first embeddings request), and a failure of ours
(one log line). A failure of ours building the Python rows from the array gives the rows
LiteLLM's own reading of their text gives (one log line).

Recognised by LiteLLM's release (1.110; the tests run 1.110.2), the methods' parameters and the
callbacks' classes its proxy loads by itself; any other keeps the proxy's own path, with one log
line.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .._codec.encode import json_rows
from . import kept_rows
from .kept_rows import KeptRow
from .patching import (
    Call,
    Host,
    Replacement,
    Unknown,
    attribute,
    expect_parameters,
    fail_open,
    failed,
    is_replacement,
    log_once,
)

PROCESSING_MODULE = "litellm.proxy.common_request_processing"
UTILS_MODULE = "litellm.proxy.utils"
SERVER_MODULE = "litellm.proxy.proxy_server"

# base_process_llm_request in the release whose return this writes (1.110).
PROCESS_PARAMETERS = ("self", "request", "fastapi_response", "user_api_key_dict", "route_type", "proxy_logging_obj",
                      "general_settings", "proxy_config", "select_data_generator", "llm_router", "model", "user_model",
                      "user_temperature", "user_request_timeout", "user_max_tokens", "user_api_base", "version",
                      "is_streaming_request", "contents", "skip_pre_call_logic", "sse_framing")
# ProxyLogging's hooks that hand the response to the proxy's callbacks before it is sent.
HOOK_PARAMETERS = {
    "post_call_success_hook": ("self", "data", "response", "user_api_key_dict"),
    "post_call_response_headers_hook": ("self", "data", "user_api_key_dict", "response", "request_headers"),
}
EMBEDDINGS_PATHS = ("/v1/embeddings", "/embeddings")

# What stands for a row while the envelope is rendered: unique to this process, so that nothing
# a client sends (a model name) can be mistaken for it.
_PLACEHOLDER = "tensorb64-row-" + secrets.token_hex(16)


# --------------------------------------------------------------------------- who reads the rows

# The CustomLogger methods a callback may override without reading a successful embeddings
# response's rows: they run before the call, or get a failure's exception (not the logging
# details, which hold the openai provider's text of a response read before a later step failed).
BLIND_HOOKS = frozenset({
    "log_pre_api_call", "async_log_pre_api_call", "async_pre_request_hook", "async_pre_call_hook",
    "async_moderation_hook", "async_pre_routing_hook", "async_filter_deployments", "async_pre_call_deployment_hook",
    "async_pre_call_check", "pre_call_check", "async_filter_listed_models", "async_post_call_failure_hook",
    "async_post_call_failure_deployment_hook", "log_model_group_rate_limit_error", "async_log_audit_log_event",
})
# ... and those that get the response itself while the proxy answers: they get it with its rows
# built on first access (_LazyRows).
LAZY_HOOKS = frozenset(f"async_{name}" for name in HOOK_PARAMETERS)
# The callbacks LiteLLM 1.110's proxy loads by itself (its hooks, limiters and service logger),
# which read the usage, the cost and the metadata of an embeddings response, never its rows
# (read in 1.110.2; its tests check no row is read).
LITELLM_CALLBACKS = frozenset({
    "litellm.proxy.hooks.model_max_budget_limiter._PROXY_VirtualKeyModelMaxBudgetLimiter",
    "litellm.proxy.hooks.parallel_request_limiter_v3._PROXY_MaxParallelRequestsHandler_v3",
    "litellm.proxy.hooks.cache_control_check._PROXY_CacheControlCheck",
    "litellm.proxy.hooks.responses_id_security.ResponsesIDSecurity",
    "litellm.proxy.hooks.litellm_skills.main.SkillsInjectionHook",
    "litellm.proxy.hooks.max_iterations_limiter._PROXY_MaxIterationsHandler",
    "litellm.proxy.hooks.max_budget_per_session_limiter._PROXY_MaxBudgetPerSessionHandler",
    "litellm.proxy.hooks.sensitive_data_routing._PROXY_SensitiveDataRoutingHandler",
    "litellm.proxy.hooks.prompt_cache_prediction.PromptCacheObserver",
    "litellm._service_logger.ServiceLogging",
})
# LiteLLM's loggers, whose debug output prints responses (its RAW RESPONSE line among them).
LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Proxy", "LiteLLM Router")


@functools.cache
def _blind_class(cls: type) -> bool:
    """Whether a callback of this class reads no row of a successful embeddings response, or reads
    it only from the response handed to a lazy hook: a callback of LiteLLM's own proxy, or a
    ``CustomLogger`` whose class and bases (up to CustomLogger) override only ``BLIND_HOOKS`` and
    ``LAZY_HOOKS`` (tensorb64's handler overrides none)."""
    from litellm.integrations.custom_logger import CustomLogger

    if f"{cls.__module__}.{cls.__qualname__}" in LITELLM_CALLBACKS:
        return True
    if not issubclass(cls, CustomLogger):
        return False
    hooks = {name for name, value in vars(CustomLogger).items() if callable(value) and name != "__init__"}
    own = cls.__mro__[: cls.__mro__.index(CustomLogger)]
    overridden = {name for klass in own for name in vars(klass) if name in hooks}
    return overridden <= BLIND_HOOKS | LAZY_HOOKS


def rows_unread(logging_obj: Any) -> bool:
    """Whether, for the request ``logging_obj`` logs, nothing the proxy is configured with reads the
    rows except through a lazy hook: every callback (the proxy's, and the request's own) blind to
    them (``_blind_class``), no cache (which stores the response), no ``logger_fn``, LiteLLM's
    debug output off and its standard logging payload not printed."""
    import litellm

    if logging_obj is None or getattr(litellm, "cache", None) is not None or getattr(litellm, "set_verbose", False):
        return False
    if os.environ.get("LITELLM_PRINT_STANDARD_LOGGING_PAYLOAD") or getattr(logging_obj, "logger_fn", None):
        return False
    if getattr(logging_obj, "litellm_request_debug", False) or any(
            logging.getLogger(name).isEnabledFor(logging.DEBUG) for name in LITELLM_LOGGERS):
        return False
    lists = [getattr(litellm, name, None) for name in ("callbacks", "success_callback", "_async_success_callback",
                                                      "input_callback", "service_callback")]
    lists += [getattr(logging_obj, name, None) for name in ("dynamic_input_callbacks", "dynamic_success_callbacks",
                                                            "dynamic_async_success_callbacks")]
    return all(_blind_class(type(callback)) for callbacks in lists for callback in callbacks or ())


class _Request(kept_rows.Keeper):
    """One embeddings request as the readers see it (``kept_rows.keeping``): its rows kept where
    nothing reads them (``rows_unread``, decided at its first body read, once the proxy's pre-call
    steps have set up its logging)."""

    __slots__ = ("_processing", "_keeps")

    def __init__(self, processing: Any) -> None:
        self._processing = processing
        self._keeps: bool | None = None

    def keeps(self) -> bool:
        if self._keeps is None:
            data = getattr(self._processing, "data", None)
            self._keeps = (_windows_in_place() and isinstance(data, dict)
                           and rows_unread(data.get("litellm_logging_obj")))
        return self._keeps

    def report(self, what: str) -> None:
        log_once(PROXY, "row read", logging.WARNING,
                 "tensorb64: %s: a step tensorb64 does not know read an embedding row it keeps natively (%s); "
                 "it got the row's values (logged once)", PROXY.label(), what)

    def failed(self) -> None:
        failed(PROXY)


def _windows_in_place() -> bool:
    """Whether the proxy's hooks get a lazy response (ProxyLogging's hooks replaced)."""
    proxy_logging = getattr(sys.modules.get(UTILS_MODULE), "ProxyLogging", None)
    return proxy_logging is not None and all(is_replacement(vars(proxy_logging).get(name)) for name in HOOK_PARAMETERS)


# --------------------------------------------------------------------------- the rows built


def _entries(answer: Any) -> list | None:
    """The data entries of an answer the proxy may return (its response, or a dict of it)."""
    data = answer.get("data") if isinstance(answer, dict) else getattr(answer, "__dict__", {}).get("data")
    return data if isinstance(data, list) else None


def _holds_kept_rows(answer: Any) -> bool:
    return any(isinstance(_row(entry), KeptRow) for entry in _entries(answer) or ())


def _row(entry: Any) -> Any:
    if isinstance(entry, dict):
        return entry.get("embedding")
    return getattr(entry, "__dict__", {}).get("embedding")


def build_rows(answer: Any) -> None:
    """Each kept row of ``answer`` replaced by its Python row (built once per body, as LiteLLM's own
    parse makes it), in place."""
    for entry in _entries(answer) or ():
        row = _row(entry)
        if isinstance(row, KeptRow):
            if isinstance(entry, dict):
                entry["embedding"] = row.values()
            else:
                entry.__dict__["embedding"] = row.values()


@functools.cache
def _lazy_class(embedding_response: type) -> type:
    """``EmbeddingResponse`` for the time a hook of the proxy's holds a response with kept rows:
    the first read of its ``data``, or a dump, copy, comparison, iteration, repr or pickling of it,
    builds its rows and makes it an ``EmbeddingResponse`` again; anything else (its ``usage``, its
    hidden params) reads it as it is. Same name and fields: only ``type()`` tells them apart."""

    class LazyRows(embedding_response):  # type: ignore[misc, valid-type]
        pass

    def built(response: Any) -> Any:
        build_rows(response)
        object.__setattr__(response, "__class__", embedding_response)
        return response

    def get_data(response: Any) -> Any:
        try:
            return built(response).__dict__["data"]
        except KeyError:
            raise AttributeError("data") from None

    def set_data(response: Any, value: Any) -> None:
        built(response).data = value

    def building(name: str) -> Any:
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            return getattr(built(self), name)(*args, **kwargs)

        method.__name__ = name
        return method

    type.__setattr__(LazyRows, "data", property(get_data, set_data))
    for name in ("model_dump", "model_dump_json", "__iter__", "__repr_args__", "__copy__", "__deepcopy__", "__eq__",
                 "__getstate__", "__reduce_ex__"):
        type.__setattr__(LazyRows, name, building(name))
    for attr in ("__name__", "__qualname__", "__module__"):
        type.__setattr__(LazyRows, attr, getattr(embedding_response, attr))
    return LazyRows


@contextmanager
def _lazy_while(response: Any, embedding_response: type) -> Iterator[None]:
    lazy = _lazy_class(embedding_response)
    object.__setattr__(response, "__class__", lazy)
    try:
        yield
    finally:
        if type(response) is lazy:  # (no hook read the rows: they stay kept)
            object.__setattr__(response, "__class__", embedding_response)


def _lazy_hooks(original: Any, parameters: tuple[str, ...]) -> Any:
    at = parameters.index("response")

    def ours(*args: Any, **kwargs: Any) -> Call | None:
        from litellm.types.utils import EmbeddingResponse

        response = kwargs["response"] if "response" in kwargs else args[at] if len(args) > at else None
        if type(response) is not EmbeddingResponse or not _holds_kept_rows(response):
            return None
        return Call(args, kwargs, context=_lazy_while(response, EmbeddingResponse))

    return fail_open(PROXY, original, ours)


def _utils_replacements(module: Any) -> list[Replacement]:
    PROXY.check_release()
    from litellm.types.utils import EmbeddingResponse

    proxy_logging = attribute(module, "ProxyLogging")
    for name, parameters in HOOK_PARAMETERS.items():
        original = attribute(proxy_logging, name)
        expect_parameters(original, parameters, f"ProxyLogging.{name}")
        if not inspect.iscoroutinefunction(original):
            raise Unknown(f"ProxyLogging.{name} is not a coroutine")
    _lazy_class(EmbeddingResponse)  # (made here, once: a pydantic model class takes a few ms to make)
    return [Replacement(proxy_logging, name, functools.partial(_lazy_hooks, parameters=parameters))
            for name, parameters in HOOK_PARAMETERS.items()]


# --------------------------------------------------------------------------- the body written


class _Plan:
    """How the embeddings route renders: FastAPI's encoder and the route's response class, found
    on the first embeddings request (the routes are made when the proxy's server module is
    imported, after this one); None where they are not what this writes for."""

    def __init__(self) -> None:
        self.checked = False
        self.encoder = self.response_class = self.renderer = None

    def ready(self) -> bool:
        if not self.checked:
            self.checked = True
            self._find()
        return self.response_class is not None

    def _find(self) -> None:
        from fastapi import routing
        from fastapi.responses import ORJSONResponse

        server = sys.modules.get(SERVER_MODULE)
        embeddings = getattr(server, "embeddings", None)
        routes = [r for r in getattr(getattr(server, "router", None), "routes", ())
                  if getattr(r, "endpoint", None) is embeddings and getattr(r, "path", None) in EMBEDDINGS_PATHS]
        if not routes or any(r.response_class is not ORJSONResponse or r.response_model is not None for r in routes):
            PROXY.logger.warning("tensorb64: %s: the embeddings route is not rendered with ORJSONResponse alone; "
                                 "the proxy renders its own bodies", PROXY.label())
            return
        # (FastAPI's serialize_response calls the encoder by this name; a row is rendered by the
        # response class's own render, on an instance made once)
        self.encoder, self.response_class = routing.jsonable_encoder, ORJSONResponse
        self.renderer = ORJSONResponse.__new__(ORJSONResponse)


_plan = _Plan()


def _row_text(row: Any) -> bytes | None:
    """A Python float row as the route's response class renders it, or None for a row this does not
    write. A row written here is a list of plain floats and ints (what FastAPI's encoder passes
    through as it is, so that rendering the row alone gives the text it has inside the whole
    body). Base64 rows are left to the proxy: its own render of a 64x3072 base64 body takes about
    0.5 ms, less than splicing 1 MB anew costs."""
    if type(row) is list and set(map(type, row)) <= _PLAIN_NUMBERS:
        return _plan.renderer.render(row)
    return None


_PLAIN_NUMBERS = {float, int}


def _kept_texts(rows: list[KeptRow]) -> list[bytes]:
    """The texts of kept rows as the response class renders their Python rows: the core's writer of
    doubles in orjson's layout for each body's rows whose Python values are the array's floats
    (orjson's text of those floats), the response class's render of the row as LiteLLM's own parse
    reads it for the others (integers, NaN and infinity: orjson's null)."""
    texts: list[bytes | None] = [None] * len(rows)
    by_body: dict[int, tuple[kept_rows.KeptRows, list[int]]] = {}
    for at, row in enumerate(rows):
        if row.rows.native[row.position]:
            by_body.setdefault(id(row.rows), (row.rows, []))[1].append(at)
        else:
            texts[at] = _plan.renderer.render(row.rows.row_from_text(row.position))
    for kept, places in by_body.values():
        positions = [rows[at].position for at in places]
        for at, text in zip(places, json_rows(kept.array[positions], float_format="orjson"), strict=True):
            texts[at] = text
    return texts  # type: ignore[return-value]


def _without_rows(response: Any, embedding_class: type) -> tuple[Any, list[bytes]] | None:
    """A shallow copy of ``response`` whose rows are the placeholder, and the rows' texts; None
    where an entry or a row is not one this writes."""
    entries, texts, kept, kept_at = [], [], [], []
    for entry in response.data:
        if type(entry) is dict:
            if "embedding" not in entry:
                return None
            row, stand_in = entry["embedding"], {**entry, "embedding": _PLACEHOLDER}
        elif type(entry) is embedding_class:
            row, stand_in = entry.embedding, entry.model_copy(update={"embedding": _PLACEHOLDER})
        else:
            return None
        if isinstance(row, KeptRow):
            kept.append(row)
            kept_at.append(len(texts))
            text = b""
        else:
            text = _row_text(row)
            if text is None:
                return None
        entries.append(stand_in)
        texts.append(text)
    for at, text in zip(kept_at, _kept_texts(kept), strict=True):
        texts[at] = text
    return response.model_copy(update={"data": entries}), texts


def _rendered(response: Any, fastapi_response: Any) -> Any:
    """The ``Response`` FastAPI would send for ``response``, its rows written here; None where
    the proxy's own rendering should run."""
    from litellm.types.utils import Embedding, EmbeddingResponse
    from starlette.responses import Response

    if (type(response) is not EmbeddingResponse or type(response.data) is not list
            or fastapi_response.status_code not in (None, 200) or not _plan.ready()):
        return None
    split = _without_rows(response, Embedding)
    if split is None:
        return None
    stripped, texts = split
    envelope = _plan.response_class(_plan.encoder(stripped)).body
    parts = envelope.split(b'"' + _PLACEHOLDER.encode() + b'"')
    if len(parts) != len(texts) + 1:
        return None
    pieces = [parts[0]]
    for text, part in zip(texts, parts[1:], strict=True):
        pieces += (text, part)
    body = b"".join(pieces)
    # As FastAPI answers a route that returns a value: the response class's headers, then those
    # the proxy set on the route's own response; background tasks are added by FastAPI.
    answer = Response(body, status_code=200, media_type=_plan.response_class.media_type)
    answer.raw_headers.extend(fastapi_response.headers.raw)
    return answer


def _write(fastapi_response: Any, response: Any) -> Any:
    """The body written here, or None (the proxy's own rendering) with any kept rows of the answer
    built first, as they are where this raises (the proxy's own rendering then runs too)."""
    written = None
    try:
        written = _rendered(response, fastapi_response)
    finally:
        if written is None and _holds_kept_rows(response):
            build_rows(response)
    return written


def _writing_natively(original: Any) -> Any:
    def ours(self: Any, *args: Any, **kwargs: Any) -> Call | None:
        # (the proxy's own runs first, as called, its reads keeping the rows where nothing reads
        # them: what it raises is its own; its answer then)
        if kwargs.get("route_type") != "aembedding" or "fastapi_response" not in kwargs:
            return None
        return Call((self, *args), kwargs, context=kept_rows.keeping(_Request(self)),
                    then=functools.partial(_write, kwargs["fastapi_response"]))

    return fail_open(PROXY, original, ours)


def _processing_replacements(module: Any) -> list[Replacement]:
    PROXY.check_release()
    processing = attribute(module, "ProxyBaseLLMRequestProcessing")
    original = attribute(processing, "base_process_llm_request")
    expect_parameters(original, PROCESS_PARAMETERS, "ProxyBaseLLMRequestProcessing.base_process_llm_request")
    if not inspect.iscoroutinefunction(original):
        raise Unknown("ProxyBaseLLMRequestProcessing.base_process_llm_request is not a coroutine")
    return [Replacement(processing, "base_process_llm_request", _writing_natively)]


PROXY = Host(
    name="LiteLLM's proxy",
    logger=logging.getLogger("tensorb64.litellm"),
    what="/v1/embeddings bodies are read and written by tensorb64",
    work="answering /v1/embeddings natively",
    modules={PROCESSING_MODULE: _processing_replacements, UTILS_MODULE: _utils_replacements},
    switch="TENSORB64_LITELLM",
    distribution="litellm",
    tested=("1.110.2",),
    accepted=((1, 110), (1, 111)),
    project="LiteLLM",
)
