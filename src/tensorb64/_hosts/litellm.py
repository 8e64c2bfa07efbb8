"""LiteLLM under ``tensorb64.openai.patch()``: what the openai client's patch does not reach.

LiteLLM's openai provider calls the openai client, which the patch already reads natively. Two
more attributes are replaced, each as soon as its module is imported (LiteLLM imports its
providers lazily), each restored by ``unpatch()``, through the package's one patch mechanism
(``_hosts.patching``: recognised by shape, all or nothing, failing open to LiteLLM's own):

* ``HostedVLLMEmbeddingConfig.transform_embedding_response`` (the ``hosted_vllm`` provider posts
  with LiteLLM's own HTTP handler and parses the body itself, ``raw_response.json()``): LiteLLM's
  own method runs unchanged (its logging of ``raw_response.text``, its conversion to an
  ``EmbeddingResponse``), given a view of the response whose ``json()`` answers with the body read
  by the core, the same ``dict`` ``json.loads`` gives (inside a request of LiteLLM's proxy that
  keeps its rows as the array, each row a stand-in for its list: ``kept_rows``); every other
  attribute is the response's own, and the response itself is never changed. A response whose ``content`` is not bytes (a
  test's mock), or a body the core does not read, gets the response's own ``json()``.
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

import contextlib
import contextvars
import functools
import json
import logging
from collections.abc import Iterator, Mapping
from typing import Any

from .._codec.body_reader import rows_and_offsets, without_embeddings
from .kept_rows import JSON, python_rows, stand_ins
from .patching import (
    Call,
    Host,
    Replacement,
    Unknown,
    attribute,
    code_names,
    expect_names,
    expect_parameters,
    fail_open,
)

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
    strings (the text between the quotes, or json.loads of a string with an escape in it). Where
    the request being answered keeps its rows as the array (LiteLLM's proxy: ``kept_rows``), float
    rows are stand-ins, whose Python rows are those above, built when asked."""
    try:
        rows, offsets = rows_and_offsets(body)
    except (ValueError, OverflowError, MemoryError, UnicodeError):
        return None
    spans = offsets.tolist()
    if rows.dtype.itemsize == 4:  # base64 rows
        values = [json.loads(body[s:e]) if b"\\" in body[s:e] else body[s + 1 : e - 1].decode("ascii") for s, e in spans]
    elif (kept := stand_ins(body, rows, offsets, JSON)) is not None:
        values = kept  # (LiteLLM's proxy keeps the rows as the array: kept_rows)
    else:
        values = python_rows(rows, body, spans, JSON)
    response = json.loads(without_embeddings(body, offsets))
    for entry in response["data"]:
        entry["embedding"] = values[entry["index"]]
    return response


class _ReadNatively:
    """A view of one response for LiteLLM's parse: its first ``json()`` (asked without arguments)
    the body as the core read it, every other attribute the response's own."""

    __slots__ = ("_response", "_parsed")

    def __init__(self, response: Any, parsed: dict) -> None:
        self._response = response
        self._parsed = [parsed]

    def json(self, **kwargs: Any) -> Any:
        if not kwargs and self._parsed:
            return self._parsed.pop()
        return self._response.json(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._response, name)


def _read_natively(raw_response: Any) -> _ReadNatively | None:
    """The view of ``raw_response`` with its body read by the core, or None where LiteLLM's own
    reading should run (a body the core does not read, content that is not bytes: a mock's, a
    stream's)."""
    try:
        content = raw_response.content
    except Exception:  # not read (a stream), or no such attribute: LiteLLM's own reading says what happens
        return None
    parsed = loads_embeddings(content) if isinstance(content, bytes) else None
    return None if parsed is None else _ReadNatively(raw_response, parsed)


# transform_embedding_response in the release whose use of the response this view serves
# (1.110): its parameters, and the names its code uses (the response read as .text and .json()).
TRANSFORM_PARAMETERS = ("self", "model", "raw_response", "model_response", "logging_obj", "api_key", "request_data",
                        "optional_params", "litellm_params")
TRANSFORM_NAMES = ("convert_to_model_response_object", "json", "post_call", "text")


def _transform_reading_natively(original: Any) -> Any:
    # LiteLLM's own method answers, once, given the view or (where the core does not read the
    # body, or fails) the response itself: what it returns or raises is its own.
    def ours(self: Any, model: Any, raw_response: Any, *args: Any, **kwargs: Any) -> Any:
        view = _read_natively(raw_response)
        return None if view is None else Call((self, model, view, *args), kwargs)

    return fail_open(LITELLM, original, ours)


def hosted_vllm_replacements(module: Any) -> list[Replacement]:
    config = attribute(module, "HostedVLLMEmbeddingConfig")
    original = attribute(config, "transform_embedding_response")
    expect_parameters(original, TRANSFORM_PARAMETERS, "HostedVLLMEmbeddingConfig.transform_embedding_response")
    expect_names(original, TRANSFORM_NAMES, "HostedVLLMEmbeddingConfig.transform_embedding_response")
    return [Replacement(config, "transform_embedding_response", _transform_reading_natively)]


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
# The view's getter: ``return self.model_call_details``.
VIEW_NAMES = ("model_call_details",)


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


@contextlib.contextmanager
def _line_dropped_in(logging_object: Any) -> Iterator[None]:
    token = _line_dropped.set(logging_object)
    try:
        yield
    finally:
        _line_dropped.reset(token)


def _post_call_without_dropped_line(original: Any, module: Any) -> Any:
    # LiteLLM's own post_call answers, where the logger drops its RAW RESPONSE line with that
    # line's read of the response marked for the view below.
    def ours(self: Any, *args: Any, **kwargs: Any) -> Any:
        level = logging.WARNING if getattr(self, "litellm_request_debug", False) else logging.DEBUG
        if not _drops(getattr(module, "verbose_logger", None), level):
            return None
        return Call((self, *args), kwargs, _line_dropped_in(self))

    return fail_open(LITELLM, original, ours)


def _details_view(original: property) -> property:
    # The view's getter returns self.model_call_details (recognised by its code): the line's read,
    # the first in a post_call marked above, gets the details with the placeholder; any other,
    # LiteLLM's own getter.
    def ours(self: Any) -> Any:
        if _line_dropped.get() is not self:
            return None
        _line_dropped.set(None)  # the line's read is the first: later ones see the details
        return _DetailsForDroppedLine(self.model_call_details)

    return property(fail_open(LITELLM, original.fget, ours), original.fset, original.fdel, original.__doc__)


def logging_replacements(module: Any) -> list[Replacement]:
    cls = attribute(module, "Logging")
    post_call = attribute(cls, "post_call")
    view = attribute(cls, "_model_call_details_view")
    names = code_names(post_call) or frozenset()
    if not (_LINE_NAMES <= names and not _OTHER_LEVELS & names):
        raise Unknown("Logging.post_call does not build its RAW RESPONSE line as 1.110 does")
    if not (isinstance(view, property) and view.fget is not None):
        raise Unknown("Logging._model_call_details_view is not a property")
    expect_names(view.fget, VIEW_NAMES, "Logging._model_call_details_view")
    return [Replacement(cls, "post_call", functools.partial(_post_call_without_dropped_line, module=module)),
            Replacement(cls, "_model_call_details_view", _details_view)]


LITELLM = Host(
    name="LiteLLM",
    logger=logging.getLogger("tensorb64.litellm"),
    what="hosted_vllm embeddings bodies are read by tensorb64",
    work="reading an embeddings body",
    modules={HOSTED_VLLM_MODULE: hosted_vllm_replacements, LOGGING_MODULE: logging_replacements},
    distribution="litellm",
    tested=("1.110.2",),
)
