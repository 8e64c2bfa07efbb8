"""LiteLLM's proxy (``litellm --config``): its ``/v1/embeddings`` float bodies written without
FastAPI's walk over every value. The public side, the handler its config names and what looking
it up installs, is ``tensorb64.litellm_proxy``.

FastAPI renders the embeddings route's return with ``jsonable_encoder`` (a Python call per float:
most of a float request's CPU) and then ``ORJSONResponse``. Here
``ProxyBaseLLMRequestProcessing.base_process_llm_request`` runs as the proxy's own (its hooks,
callbacks, cost tracking, logging, retries, headers and errors on its own ``EmbeddingResponse``),
and then, for an embeddings response whose rows are lists of plain floats and ints, answers the
``Response`` FastAPI would send: the envelope and every entry but its row rendered by those same
two functions (so every key, its order, ``usage`` with its ``None`` details and ``model`` as the
proxy names it are the proxy's own), each row by the response class's own ``render``, spliced in
its entry's place; status 200, the response class's headers and then those the proxy set on the
route's response, as FastAPI merges them. The bytes are the proxy's, byte for byte.

Left to FastAPI, as the proxy returned it: base64 bodies (the proxy's own render of a 64x3072
base64 body takes about 0.5 ms, less than splicing 1 MB anew), a response of another type, an
entry that is neither a dict nor LiteLLM's ``Embedding``, a row holding anything but plain floats
and ints, a status the proxy set itself, a route not rendered with ``ORJSONResponse`` alone
(checked on the first embeddings request), and a failure of ours (one log line).

Recognised by LiteLLM's release (1.110; the tests run 1.110.2) and the method's parameters; any
other keeps the proxy's own rendering, with one log line.
"""

from __future__ import annotations

import functools
import inspect
import logging
import secrets
import sys
from typing import Any

from .patching import Call, Host, Replacement, Unknown, attribute, expect_parameters, fail_open

PROCESSING_MODULE = "litellm.proxy.common_request_processing"
SERVER_MODULE = "litellm.proxy.proxy_server"

# base_process_llm_request in the release whose return this writes (1.110).
PROCESS_PARAMETERS = ("self", "request", "fastapi_response", "user_api_key_dict", "route_type", "proxy_logging_obj",
                      "general_settings", "proxy_config", "select_data_generator", "llm_router", "model", "user_model",
                      "user_temperature", "user_request_timeout", "user_max_tokens", "user_api_base", "version",
                      "is_streaming_request", "contents", "skip_pre_call_logic", "sse_framing")
EMBEDDINGS_PATHS = ("/v1/embeddings", "/embeddings")

# What stands for a row while the envelope is rendered: unique to this process, so that nothing
# a client sends (a model name) can be mistaken for it.
_PLACEHOLDER = "tensorb64-row-" + secrets.token_hex(16)


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
    """A float row as the route's response class renders it, or None for a row this does not
    write. A row written here is a list of plain floats and ints (what FastAPI's encoder passes
    through as it is, so that rendering the row alone gives the text it has inside the whole
    body). Base64 rows are left to the proxy: its own render of a 64x3072 base64 body takes about
    0.5 ms, less than splicing 1 MB anew costs."""
    if type(row) is list and set(map(type, row)) <= _PLAIN_NUMBERS:
        return _plan.renderer.render(row)
    return None


_PLAIN_NUMBERS = {float, int}


def _without_rows(response: Any, embedding_class: type) -> tuple[Any, list[bytes]] | None:
    """A shallow copy of ``response`` whose rows are the placeholder, and the rows' texts; None
    where an entry or a row is not one this writes."""
    entries, texts = [], []
    for entry in response.data:
        if type(entry) is dict:
            row, stand_in = entry.get("embedding"), {**entry, "embedding": _PLACEHOLDER}
            if "embedding" not in entry:
                return None
        elif type(entry) is embedding_class:
            row, stand_in = entry.embedding, entry.model_copy(update={"embedding": _PLACEHOLDER})
        else:
            return None
        text = _row_text(row)
        if text is None:
            return None
        entries.append(stand_in)
        texts.append(text)
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
    return _rendered(response, fastapi_response)


def _writing_natively(original: Any) -> Any:
    def ours(*args: Any, **kwargs: Any) -> Call | None:
        # (the proxy's own runs first, as called: what it raises is its own; its answer then)
        if kwargs.get("route_type") != "aembedding" or "fastapi_response" not in kwargs:
            return None
        return Call(args, kwargs, then=functools.partial(_write, kwargs["fastapi_response"]))

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
    work="writing an embeddings body",
    modules={PROCESSING_MODULE: _processing_replacements},
    switch="TENSORB64_LITELLM",
    distribution="litellm",
    tested=("1.110.2",),
    accepted=((1, 110), (1, 111)),
    project="LiteLLM",
)
