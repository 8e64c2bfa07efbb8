"""LiteLLM under ``tensorb64.openai.patch()``: what the openai client's patch does not reach.

LiteLLM's openai provider calls the openai client, which the patch already reads natively. Two
more attributes are replaced, each as soon as its module is imported (LiteLLM imports its
providers lazily), each restored by ``unpatch()``:

* ``HostedVLLMEmbeddingConfig.transform_embedding_response`` (the ``hosted_vllm`` provider posts
  with LiteLLM's own HTTP handler and parses the body itself, ``raw_response.json()``): for the
  duration of the call, that response's ``json()`` answers with the body read by the core, the
  same ``dict`` ``json.loads`` gives. LiteLLM's own method runs unchanged around it (its logging of
  ``raw_response.text``, its conversion to an ``EmbeddingResponse``).
* ``Logging.post_call``, with ``Logging._model_call_details_view``: post_call builds
  ``"RAW RESPONSE:\\n{}\\n\\n".format(original_response)`` for a debug line whether or not the
  logger keeps it, and the sync openai provider's ``original_response`` is the parsed
  ``CreateEmbeddingResponse``: its ``str()`` is the repr of every float (tens to hundreds of ms
  for 64x3072). Where the logger drops the line (not ``isEnabledFor`` its level, debug, or warning
  with ``litellm_request_debug``), that one read of the response, the line's own, finds a
  placeholder instead. Nothing else changes: ``model_call_details["original_response"]`` is the same
  object, so ``logger_fn``, the callbacks and the success handlers get what they get unpatched;
  where the logger keeps the line it is LiteLLM's own text. Installed only where ``post_call``
  reads the response through that view and logs at no other level (checked on its code), so a
  LiteLLM that builds the line another way is left as it is.
"""

from __future__ import annotations

import contextvars
import functools
import json
import logging
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from ._client import _read_rows_and_offsets
from ._openai_patch import _without_embeddings

HOSTED_VLLM_MODULE = "litellm.llms.hosted_vllm.embedding.transformation"
LOGGING_MODULE = "litellm.litellm_core_utils.litellm_logging"


# --------------------------------------------------------------------------- hosted_vllm


def loads_embeddings(body: bytes) -> dict | None:
    """``json.loads(body)`` for an embeddings body the core reads, None for any other (the caller
    then runs json.loads itself, so what it returns or raises is its own).

    The body with each embedding cut out goes through json.loads (a few hundred bytes); each entry
    then gets its row: float rows as the core's doubles (exactly json.loads's), except a row
    holding an integral value or a NaN, which json.loads reads from the row's own text (it keeps
    an integer text an ``int``, and gives every NaN its one float object); base64 rows as their
    strings (the text between the quotes, or json.loads of a string with an escape in it)."""
    try:
        rows, offsets = _read_rows_and_offsets(body)
    except (ValueError, OverflowError, MemoryError, UnicodeError):
        return None
    spans = offsets.tolist()
    if rows.dtype.itemsize == 4:  # base64 rows
        values = [json.loads(body[s:e]) if b"\\" in body[s:e] else body[s + 1 : e - 1].decode("ascii") for s, e in spans]
    else:
        values = rows.tolist()
        for i in np.flatnonzero((~np.isfinite(rows) | (rows == np.trunc(rows))).any(axis=1)).tolist():
            s, e = spans[i]
            values[i] = json.loads(body[s:e])
    response = json.loads(_without_embeddings(body, offsets))
    for entry in response["data"]:
        entry["embedding"] = values[entry["index"]]
    return response


def _json_read_natively(raw_response: Any) -> Any:
    """A ``json()`` for one httpx response: the core's reading of its body the first time it is
    asked without arguments, httpx's own otherwise (a second call gets a dict of its own)."""
    answered = []

    def json_method(**kwargs: Any) -> Any:
        if not kwargs and not answered:
            answered.append(True)
            try:
                content = raw_response.content
            except Exception:  # not read (a stream): httpx says what happens
                content = None
            parsed = loads_embeddings(content) if isinstance(content, bytes) else None
            if parsed is not None:
                return parsed
        return type(raw_response).json(raw_response, **kwargs)

    return json_method


def _transform_reading_natively(original: Any) -> Any:
    @functools.wraps(original)
    def transform_embedding_response(self: Any, *args: Any, **kwargs: Any) -> Any:
        raw_response = kwargs["raw_response"] if "raw_response" in kwargs else args[1] if len(args) > 1 else None
        if raw_response is None or not hasattr(raw_response, "__dict__") or "json" in raw_response.__dict__:
            return original(self, *args, **kwargs)
        raw_response.json = _json_read_natively(raw_response)
        try:
            return original(self, *args, **kwargs)
        finally:
            del raw_response.json

    transform_embedding_response.__tensorb64_replaces__ = original  # type: ignore[attr-defined]
    return transform_embedding_response


def hosted_vllm_replacements(module: Any) -> list[tuple[type, str, Any]]:
    config = getattr(module, "HostedVLLMEmbeddingConfig", None)
    original = getattr(config, "__dict__", {}).get("transform_embedding_response")
    if not callable(original):
        return []
    return [(config, "transform_embedding_response", _transform_reading_natively(original))]


# --------------------------------------------------------------------------- post_call's line

# The Logging object whose post_call is running with its RAW RESPONSE line dropped by the logger,
# until that line's read of the response has happened.
_line_dropped: contextvars.ContextVar[Any] = contextvars.ContextVar("tensorb64_litellm_line_dropped", default=None)
# What the dropped line formats instead of the response: never seen by anyone.
NOT_BUILT = "(not built: the logger drops this line)"
# The names post_call's code must use (its line built from the view, at debug or warning level)
# and those it must not (another level at which the line could be logged).
_LINE_NAMES = frozenset({"_model_call_details_view", "format", "verbose_logger", "debug", "warning", "litellm_request_debug"})
_OTHER_LEVELS = frozenset({"info", "error", "critical", "log", "print_verbose"})


class _DetailsForDroppedLine(Mapping):
    """``model_call_details`` as post_call's RAW RESPONSE line reads it, when the logger drops the
    line: the same mapping, except that the line's own read,
    ``view.get("original_response", view)``, gives the placeholder."""

    def __init__(self, details: Mapping) -> None:
        self._details = details

    def __getitem__(self, key: Any) -> Any:
        return self._details[key]

    def __iter__(self) -> Iterator:
        return iter(self._details)

    def __len__(self) -> int:
        return len(self._details)

    def get(self, key: Any, default: Any = None) -> Any:
        if key == "original_response" and default is self._details:
            return NOT_BUILT
        return self._details.get(key, default)


def _drops(logger: Any, level: int) -> bool:
    """Whether ``logger.debug``/``.warning`` at ``level`` drops a message unread: a plain Logger
    (no per-instance override of its methods) not enabled for the level."""
    return (isinstance(logger, logging.Logger) and not {"debug", "warning"} & vars(logger).keys()
            and not logger.isEnabledFor(level))


def _post_call_without_dropped_line(original: Any, module: Any) -> Any:
    @functools.wraps(original)
    def post_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        level = logging.WARNING if getattr(self, "litellm_request_debug", False) else logging.DEBUG
        if not _drops(getattr(module, "verbose_logger", None), level):
            return original(self, *args, **kwargs)
        token = _line_dropped.set(self)
        try:
            return original(self, *args, **kwargs)
        finally:
            _line_dropped.reset(token)

    post_call.__tensorb64_replaces__ = original  # type: ignore[attr-defined]
    return post_call


def _details_view(original: property) -> property:
    def view(self: Any) -> Any:
        details = original.fget(self)
        if _line_dropped.get() is self:
            _line_dropped.set(None)  # the line's read is the first: later ones see the details
            return _DetailsForDroppedLine(details)
        return details

    return property(view, original.fset, original.fdel, original.__doc__)


def logging_replacements(module: Any) -> list[tuple[type, str, Any]]:
    cls = getattr(module, "Logging", None)
    post_call = getattr(cls, "__dict__", {}).get("post_call")
    view = getattr(cls, "__dict__", {}).get("_model_call_details_view")
    names = set(getattr(getattr(post_call, "__code__", None), "co_names", ()))
    if not (isinstance(view, property) and view.fget is not None and _LINE_NAMES <= names and not _OTHER_LEVELS & names):
        return []
    return [(cls, "post_call", _post_call_without_dropped_line(post_call, module)),
            (cls, "_model_call_details_view", _details_view(view))]


# (module name, the replacements for it): installed by tensorb64.openai.patch() once each is imported.
REPLACEMENTS = ((HOSTED_VLLM_MODULE, hosted_vllm_replacements), (LOGGING_MODULE, logging_replacements))
