"""``tensorb64.openai.patch()``: the openai client's own embeddings responses read by the core.

Every route by which the openai client turns an HTTP response into a ``CreateEmbeddingResponse``
(``embeddings.create()``, ``with_raw_response``/``with_streaming_response``, async, and
``client.post("/embeddings", cast_to=CreateEmbeddingResponse)`` as LiteLLM calls it) meets in the
response classes' ``_parse`` (``openai._response.BaseAPIResponse`` and
``openai._legacy_response.LegacyAPIResponse``). The patch wraps those two methods: for an
embeddings response it reads the rows with the core, parses only the rest of the body (the body
with each embedding cut out, a few hundred bytes) through the client's own
``_process_response_data``, and puts each row's Python floats in its entry. The result is the
object the client builds, with the same floats:

* float rows (``encoding_format="float"``, or a server that answers floats to a default request):
  read to float64, each value the double ``json.loads`` gives, which is the float the client keeps;
* base64 rows of a default request (openai asks for base64 and its post-parser decodes each row
  with ``np.frombuffer(b64decode(s), "float32").tolist()``): decoded to float32 here, ``.tolist()``
  giving the same floats; the post-parser then finds nothing left to decode;
* base64 rows the caller asked for (or that nothing will decode): left to the client, strings
  untouched.

Anything the core does not read (a malformed body, an error status's body, rows of different
lengths, lenient base64, an integer text of more than 15 digits, a non-JSON content type, a
stream, base64 rows under ``_strict_response_validation``) goes down the client's own path, so what it raises or returns is exactly as unpatched.

Global, not per client: the parse is the response classes', shared by every ``OpenAI`` /
``AsyncOpenAI`` (and Azure) client however and whenever it was made, including those a framework
makes inside itself (LangChain, LlamaIndex, LiteLLM), which a caller cannot reach to patch one by
one; and the wrappers a client has already cached (``with_raw_response``) keep working, since
nothing they hold is replaced.

LiteLLM is covered by the same call (``_litellm_patch``: its ``hosted_vllm`` provider, which posts
with its own HTTP handler, and the eager text of its ``RAW RESPONSE`` debug line), as soon as the
modules concerned are imported, before or after ``patch()``.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
import threading
from typing import Any

from ._client import _read_rows_and_offsets

__all__ = ["patch", "unpatch", "is_patched"]

# (owner, attribute name, the original object) for each attribute replaced, in the order replaced.
_originals: list[tuple[type, str, Any]] = []
_patched = False  # between patch() and unpatch(): modules imported later are patched on import
_waiting: set[str] = set()  # the modules whose after-import callback has not run yet
_lock = threading.Lock()


def _response_classes() -> list[type]:
    from openai import _legacy_response, _response

    return [_response.BaseAPIResponse, _legacy_response.LegacyAPIResponse]


def _decodes_base64(post_parser: Any) -> bool:
    """Whether the request's post-parser is openai's own for a request that gave no
    ``encoding_format`` (it decodes base64 rows into floats): a ``partial`` of
    ``parse_embedding_response`` in openai 3.x, a closure ``parser`` inside ``Embeddings.create``
    in 2.x. Anything else (none, a caller's format, an unknown parser) leaves base64 rows as
    strings."""
    if isinstance(post_parser, functools.partial):
        if getattr(post_parser.func, "__name__", "") != "parse_embedding_response":
            return False
        fmt = post_parser.keywords.get("encoding_format")
    else:
        code = getattr(post_parser, "__code__", None)
        if code is None or not post_parser.__qualname__.endswith("Embeddings.create.<locals>.parser"):
            return False
        try:
            fmt = post_parser.__closure__[code.co_freevars.index("encoding_format")].cell_contents
        except (ValueError, TypeError, IndexError):
            return False
    from openai._utils import is_given

    return not is_given(fmt)


def _without_embeddings(body: bytes, offsets: Any) -> bytes:
    """The body with each row's embedding text replaced by ``[]``."""
    pieces = []
    at = 0
    for start, end in sorted(offsets.tolist()):
        pieces.append(body[at:start])
        at = end
    pieces.append(body[at:])
    return b"[]".join(pieces)


def _read_embeddings(response_wrapper: Any, cast_to: Any) -> Any:
    """The parsed ``CreateEmbeddingResponse``, or None where the client's own path must run."""
    http_response = response_wrapper.http_response
    content_type = http_response.headers.get("content-type", "*").split(";")[0]
    if not content_type.endswith("json"):
        return None
    try:
        body = http_response.content  # read already: parse() reads before _parse
    except Exception:  # not read (a stream): the client's path says what happens
        return None
    try:
        rows, offsets = _read_rows_and_offsets(body)
    except (ValueError, OverflowError, MemoryError, UnicodeError):
        return None
    if rows.dtype.itemsize == 4:  # base64 rows
        # Left as strings where the caller keeps them, where openai would decode them in another
        # byte order (the host's), and under strict validation (which refuses a string where
        # the model says floats, before the post-parser could decode it).
        if (sys.byteorder != "little" or response_wrapper._client._strict_response_validation
                or not _decodes_base64(response_wrapper._options.post_parser)):
            return None
    data = json.loads(_without_embeddings(body, offsets))
    parsed = response_wrapper._client._process_response_data(data=data, cast_to=cast_to, response=http_response)
    values = rows.tolist()
    for entry in parsed.data:
        entry.embedding = values[entry.index]
    return parsed


def _patched_parse(original: Any) -> Any:
    from openai.types import CreateEmbeddingResponse

    @functools.wraps(original)
    def _parse(self: Any, *, to: Any = None) -> Any:
        cast_to = to if to is not None else self._cast_to
        streamed = getattr(self, "_is_sse_stream", False) or getattr(self, "_stream", False)
        if cast_to is CreateEmbeddingResponse and not streamed:
            parsed = _read_embeddings(self, cast_to)
            if parsed is not None:
                return parsed
        return original(self, to=to)

    _parse.__tensorb64_replaces__ = original  # type: ignore[attr-defined]
    return _parse


def _replace(owner: type, name: str, replacement: Any) -> None:
    """Under _lock: ``owner.name`` replaced, its original kept for unpatch()."""
    _originals.append((owner, name, owner.__dict__[name]))
    setattr(owner, name, replacement)


def _patch_module(module_name: str, replacements: Any, module: Any) -> None:
    """After-import callback: the replacements for ``module`` installed if patch() is still in
    effect and they are not installed already."""
    with _lock:
        _waiting.discard(module_name)
        if not _patched:
            return
        try:
            replaced = replacements(module)
        except Exception:  # a module of a shape not foreseen: left as it is, its import unbroken
            logging.getLogger("tensorb64").exception("tensorb64.openai.patch(): %s left unpatched", module_name)
            return
        for owner, name, replacement in replaced:
            if not any(o is owner and n == name for o, n, _ in _originals):
                _replace(owner, name, replacement)


def patch() -> None:
    """Makes every openai client (``OpenAI``, ``AsyncOpenAI``, made before or after this call)
    read ``/v1/embeddings`` responses with the core: the same ``CreateEmbeddingResponse``, the
    same Python floats, without the per-row ``b64decode`` or the per-float validation; and
    LiteLLM's ``hosted_vllm`` embeddings likewise (``_litellm_patch``). Calling it again does
    nothing; ``unpatch()`` restores the client's own parsing."""
    global _patched
    from . import _litellm_patch
    from ._import_hooks import after_import

    with _lock:
        if _patched:
            return
        for cls in _response_classes():
            _replace(cls, "_parse", _patched_parse(cls.__dict__["_parse"]))
        _patched = True
    for module_name, replacements in _litellm_patch.REPLACEMENTS:
        with _lock:
            if module_name in _waiting:  # (from an earlier patch(): one callback is enough)
                continue
            _waiting.add(module_name)
        # Outside the lock: a module imported already has its callback run at once.
        after_import(module_name, functools.partial(_patch_module, module_name, replacements))


def unpatch() -> None:
    """Undoes ``patch()``: each attribute it replaced is the original object again, and modules
    imported later are left alone. Does nothing when not patched."""
    global _patched
    with _lock:
        _patched = False
        while _originals:
            owner, name, original = _originals.pop()
            setattr(owner, name, original)


def is_patched() -> bool:
    """Whether ``patch()`` is in effect."""
    return _patched
