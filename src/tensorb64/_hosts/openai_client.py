"""The openai client's own embeddings responses read by the core (the openai half of
``tensorb64.openai.patch()``; the LiteLLM half is ``litellm``).

Every route by which the openai client turns an HTTP response into a ``CreateEmbeddingResponse``
(``embeddings.create()``, ``with_raw_response``/``with_streaming_response``, async, and
``client.post("/embeddings", cast_to=CreateEmbeddingResponse)`` as LiteLLM calls it) meets in the
response classes' ``_parse`` (``openai._response.BaseAPIResponse`` and
``openai._legacy_response.LegacyAPIResponse``). The patch replaces those two methods, both or
neither: for an embeddings response it reads the rows with the core, parses only the rest of the
body (the body with each embedding cut out, a few hundred bytes) through the client's own
``_process_response_data``, and puts each row's Python floats in its entry. The result is the
object the client builds, with the same floats:

* float rows (``encoding_format="float"``, or a server that answers floats to a default request):
  read to float64, each value the double ``json.loads`` gives, which is the float the client keeps;
* base64 rows of a default request (openai asks for base64 and its post-parser decodes each row
  with ``np.frombuffer(b64decode(s), "float32").tolist()``): decoded to float32 here, ``.tolist()``
  giving the same floats; the post-parser then finds nothing left to decode;
* base64 rows the caller asked for (``encoding_format="base64"``): the client's own, strings
  untouched, and nothing read by the core.

Everything else is the client's own parse, so what it returns or raises is exactly as unpatched: a
body the core does not read (malformed, an error status's, rows of different lengths, lenient
base64, an integer text of more than 15 digits), a non-JSON content type, a stream, base64 rows
under ``_strict_response_validation``, a response the client's own processing refuses (its error
then comes from the whole body, as unpatched), and any failure of tensorb64's own (one log line).

Recognised: openai 1.17 to 3.x (the releases with these internals: the tests run 2.54 and 3.57),
where both ``_parse`` methods, ``BaseClient._process_response_data`` and the response models are as
those releases have them (not frozen: the entries are filled in after parsing). Any other release
keeps its own parse, with one log line.

Global, not per client: the parse is the response classes', shared by every ``OpenAI`` /
``AsyncOpenAI`` (and Azure) client however and whenever it was made, including those a framework
makes inside itself (LangChain, LlamaIndex, LiteLLM), which a caller cannot reach to patch one by
one; and the wrappers a client has already cached (``with_raw_response``) keep working, since
nothing they hold is replaced.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from typing import Any

from .._codec.body_reader import rows_and_offsets, without_embeddings
from .patching import Host, Replacement, Unknown, attribute, expect_parameters, fail_open

# What the client's parse must look like (openai 1.17 to 3.x).
PARSE_PARAMETERS = ("self", "to")
PROCESS_PARAMETERS = ("self", "data", "cast_to", "response")


def _decodes_base64(post_parser: Any) -> bool | None:
    """What the request's post-parser does with base64 rows: True where it is openai's own for a
    request that gave no ``encoding_format`` (it decodes them into floats: a ``partial`` of
    ``parse_embedding_response`` in openai 3.x, a closure ``parser`` inside ``Embeddings.create``
    in 2.x); False where it is openai's own for a format the caller gave (it keeps what was
    sent); None for anything else (no post-parser, or one unknown)."""
    if isinstance(post_parser, functools.partial):
        if getattr(post_parser.func, "__name__", "") != "parse_embedding_response":
            return None
        fmt = post_parser.keywords.get("encoding_format")
    else:
        code = getattr(post_parser, "__code__", None)
        if code is None or not getattr(post_parser, "__qualname__", "").endswith("Embeddings.create.<locals>.parser"):
            return None
        try:
            fmt = post_parser.__closure__[code.co_freevars.index("encoding_format")].cell_contents
        except (ValueError, TypeError, IndexError):
            return None
    from openai._utils import is_given

    return not is_given(fmt)


def _read_embeddings(response_wrapper: Any, cast_to: Any) -> Any:
    """The parsed ``CreateEmbeddingResponse``, or None where the client's own parse must run."""
    decodes_base64 = _decodes_base64(response_wrapper._options.post_parser)
    if decodes_base64 is False and _asked_base64(response_wrapper):
        return None  # the caller keeps the strings: nothing for the core to do
    http_response = response_wrapper.http_response
    content_type = http_response.headers.get("content-type", "*").split(";")[0]
    if not content_type.endswith("json"):
        return None
    try:
        body = http_response.content  # read already: parse() reads before _parse
    except Exception:  # not read (a stream): the client's path says what happens
        return None
    try:
        rows, offsets = rows_and_offsets(body)
    except (ValueError, OverflowError, MemoryError, UnicodeError):
        return None
    if rows.dtype.itemsize == 4:  # base64 rows
        # Left as strings where the caller keeps them, where openai would decode them in another
        # byte order (the host's), and under strict validation (which refuses a string where
        # the model says floats, before the post-parser could decode it).
        if sys.byteorder != "little" or response_wrapper._client._strict_response_validation or not decodes_base64:
            return None
    data = json.loads(without_embeddings(body, offsets))
    try:
        parsed = response_wrapper._client._process_response_data(data=data, cast_to=cast_to, response=http_response)
    except Exception:  # the client's own refusal: raised by its own parse of the whole body instead
        return None
    values = rows.tolist()
    for entry in parsed.data:
        entry.embedding = values[entry.index]
    return parsed


def _asked_base64(response_wrapper: Any) -> bool:
    """Whether the request's JSON body asked for base64 rows (the caller's explicit format)."""
    body = getattr(response_wrapper._options, "json_data", None)
    return isinstance(body, dict) and body.get("encoding_format") == "base64"


def _parse_for(original: Any) -> Any:
    from openai.types import CreateEmbeddingResponse

    def ours(self: Any, *, to: Any = None) -> Any:
        cast_to = to if to is not None else self._cast_to
        streamed = getattr(self, "_is_sse_stream", False) or getattr(self, "_stream", False)
        if cast_to is not CreateEmbeddingResponse or streamed:
            return None
        return _read_embeddings(self, cast_to)

    return fail_open(OPENAI, original, ours)


def _openai_replacements(module: Any) -> list[Replacement]:
    """Both response classes' ``_parse``, where the client's release is one whose parse this
    reproduces."""
    OPENAI.check_release()
    from openai import _base_client, _legacy_response, _response
    from openai.types import CreateEmbeddingResponse, Embedding

    classes = [attribute(_response, "BaseAPIResponse"), attribute(_legacy_response, "LegacyAPIResponse")]
    for cls in classes:
        expect_parameters(attribute(cls, "_parse"), PARSE_PARAMETERS, f"{cls.__name__}._parse")
    process = attribute(attribute(_base_client, "BaseClient"), "_process_response_data")
    expect_parameters(process, PROCESS_PARAMETERS, "BaseClient._process_response_data")
    for model in (CreateEmbeddingResponse, Embedding):
        if getattr(model, "model_config", {}).get("frozen"):
            raise Unknown(f"{model.__name__} is frozen (its entries cannot be filled in after parsing)")
    return [Replacement(cls, "_parse", _parse_for) for cls in classes]


OPENAI = Host(
    name="openai",
    logger=logging.getLogger("tensorb64.openai"),
    what="embeddings responses are read by tensorb64",
    work="reading an embeddings body",
    modules={"openai": _openai_replacements},
    package="openai",
    tested=("2.54.0", "3.57.0"),
    accepted=((1, 17), (4,)),
)
