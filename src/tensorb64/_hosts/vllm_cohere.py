"""vLLM's Cohere route ``/v2/embed`` written by the core:
``ServingEmbedding._build_cohere_response_from_ctx`` (``embedding_types`` float and base64, alone
or together) replaced for the releases whose method it recognises by its parameters and its
code's names (0.32, 0.33 and 0.34). A ``Host`` of its own, apart from the ``/v1/embeddings``
builder's (``vllm``): either is patched where the other's release is not recognised. Installed by
the vLLM plugin.
"""

from __future__ import annotations

import functools
import math
import sys

from .patching import Host, Replacement, attribute, expect_names, expect_parameters, fail_open
from .vllm import ENABLE_VARIABLE, SERVING_MODULES, logger, stacked_rows

# ServingEmbedding._build_cohere_response_from_ctx in the releases whose answer this writes: its
# parameters say little, so it is recognised by what its code does as well, by the global and
# attribute names it uses, its comprehensions' included (Python 3.12 inlines a list comprehension
# into the function's own code, 3.11 does not: the union is the same on both). 0.33 and 0.34 answer
# through create_json_response (orjson); 0.32 through self.json_response_cls (ORJSONResponse where
# orjson is installed, whose bytes these are; else Starlette's JSONResponse: vLLM's own answers).
COHERE_RESPONSE_PARAMETERS = ("self", "ctx")
_COHERE_NAMES = frozenset((
    "CohereBilledUnits", "CohereEmbedRequest", "CohereEmbedResponse", "CohereMeta", "any", "build_typed_embeddings",
    "cast", "content", "embedding_types", "encode_pooling_output_float", "final_res_batch", "float",
    "get_pooling_usage", "images", "inputs", "isinstance", "list", "model_dump", "prompt_tokens", "request",
    "request_id", "texts", "type",
))
# The names of each release's code, the releases that answer through self.json_response_cls last.
COHERE_RESPONSE_NAMES = (
    _COHERE_NAMES | {"create_json_response"},  # 0.33, 0.34
    _COHERE_NAMES | {"json_response_cls"},  # 0.32: through self.json_response_cls
)
# The embedding types whose rows the core writes: float (orjson's text of the Python floats
# .tolist() gives) and base64 (struct.pack("<f") of them, base64); binary and ubinary: vLLM's own.
COHERE_TYPES = ("float", "base64")


def _cohere_replacements(module):
    """vLLM's Cohere /v2/embed response builder, where its release is one whose answer this writes;
    none where the module has no such builder (a module without ServingEmbedding is the
    /v1/embeddings Host's to report: one line, not two)."""
    cls = getattr(module, "__dict__", {}).get("ServingEmbedding")
    if "_build_cohere_response_from_ctx" not in getattr(cls, "__dict__", {}):
        return []
    original = attribute(cls, "_build_cohere_response_from_ctx")
    what = "ServingEmbedding._build_cohere_response_from_ctx"
    expect_parameters(original, COHERE_RESPONSE_PARAMETERS, what)
    through_response_cls = expect_names(original, COHERE_RESPONSE_NAMES[0], what, COHERE_RESPONSE_NAMES[1]) == 1
    defining = sys.modules.get(getattr(cls, "__module__", None), module)
    for name in ("CohereEmbedRequest", "CohereEmbedResponse", "CohereMeta", "CohereBilledUnits",
                 "build_typed_embeddings", "get_pooling_usage"):
        attribute(defining, name)
    make = functools.partial(_cohere_response_for, defining, through_response_cls)
    return [Replacement(cls, "_build_cohere_response_from_ctx", make)]


VLLM_COHERE = Host(
    name="vLLM's Cohere route",
    logger=logger,
    what="/v2/embed float and base64 bodies are written by tensorb64",
    work="writing a /v2/embed body",
    project="vLLM",
    modules={name: _cohere_replacements for name in SERVING_MODULES},
    switch=ENABLE_VARIABLE,
    package="vllm",
    tested=("0.32.0", "0.33.0", "0.34.0"),
)


def _cohere_response_for(module, through_response_cls, original):
    from starlette.responses import Response

    def ours(self, ctx):
        response_cls = getattr(self, "json_response_cls", None) if through_response_cls else None
        if through_response_cls and getattr(response_cls, "__name__", None) != "ORJSONResponse":
            return None  # 0.32 without orjson: Starlette's JSONResponse (json.dumps) writes vLLM's own body
        body = cohere_body(module, ctx)
        return None if body is None else Response(content=body, status_code=200, media_type="application/json")

    return fail_open(VLLM_COHERE, original, ours)


def cohere_body(module, ctx):
    """The body vLLM's ``_build_cohere_response_from_ctx`` would send, byte for byte, or None for a
    request that vLLM's own method should answer: embedding types other than float and base64, rows
    that are not equally long tensors of one floating dtype on one device, NaN or infinity in float rows
    (orjson writes null), an envelope orjson refuses (vLLM then answers through JSONResponse).

    The envelope is made by vLLM's own models (``build_typed_embeddings`` over no rows says which
    embedding types the body has, in its order), each member serialised with orjson as vLLM's
    ``create_json_response`` serialises it; the rows are written by the core, one ``bytes`` per
    row (base64: the core's ``str``, encoded), joined once: float rows as orjson writes the Python
    floats ``.tolist()`` gives (float_format "orjson" over the rows as float64), base64 rows as
    ``struct.pack("<f")`` packs them."""
    import orjson

    request = ctx.request
    if not isinstance(request, module.CohereEmbedRequest):
        return None  # (vLLM's own asserts it)
    embedding_types = request.embedding_types or ["float"]
    if not all(kind in COHERE_TYPES for kind in embedding_types):
        return None
    final_res_batch = ctx.final_res_batch
    rows = stacked_rows(final_res_batch, _cohere_row)
    if rows is None:
        return None
    written = _cohere_written_rows(rows, embedding_types)
    if written is None:
        return None

    # vLLM's own, but for the rows.
    total_tokens = module.get_pooling_usage(final_res_batch).prompt_tokens
    has_image_input = request.images is not None or any(
        content.type == "image_url" for input_item in request.inputs or [] for content in input_item.content)
    image_tokens = total_tokens if has_image_input else 0
    response = module.CohereEmbedResponse(
        id=ctx.request_id,
        embeddings=module.build_typed_embeddings([], embedding_types),
        texts=request.texts,
        meta=module.CohereMeta(billed_units=module.CohereBilledUnits(input_tokens=total_tokens - image_tokens,
                                                                    image_tokens=image_tokens)),
    ).model_dump(exclude_none=True)
    embeddings = response.get("embeddings")
    if not isinstance(embeddings, dict) or list(embeddings.items()) != [(kind, []) for kind in written]:
        return None  # (another release's model: vLLM's own answers)

    option = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
    pieces = [b"{"]
    try:
        for key, value in response.items():
            if len(pieces) > 1:
                pieces.append(b",")
            pieces += (orjson.dumps(key, option=option), b":")
            if key != "embeddings":
                pieces.append(orjson.dumps(value, option=option))
                continue
            pieces.append(b"{")
            for number, (kind, entries) in enumerate(written.items()):
                pieces += (b',"' if number else b'"', kind.encode(), b'":[', *entries, b"]")
            pieces.append(b"}")
    except TypeError:  # (orjson.JSONEncodeError: vLLM answers through Starlette's JSONResponse)
        return None
    pieces.append(b"}")
    return b"".join(pieces)


def _cohere_written_rows(rows, embedding_types):
    """{kind: the pieces of its rows' text (the rows, and what goes between and around them)} for
    each of the embedding types (float, base64) asked for, in COHERE_TYPES' order (the model's:
    cohere_body checks it); None where vLLM's own should write them."""
    import torch

    from .._codec.encode import encode_rows, json_rows

    written = {}
    wide = None
    for kind in COHERE_TYPES:
        if kind not in embedding_types:
            continue
        if kind == "float":
            # .tolist()'s Python floats are the values widened to double, exactly; orjson writes
            # each as the shortest text of that double.
            wide = rows.to(torch.float64) if wide is None else wide
            try:
                texts = json_rows(wide, float_format="orjson")
            except ValueError:  # NaN or infinity: orjson writes null, the core does not
                return None
        else:
            if rows.dtype not in (torch.float32, torch.bfloat16, torch.float16):
                return None  # (a float64 row past float32's range: struct.pack raises OverflowError)
            source = rows
            if math.isnan(rows.sum()):  # (NaN in any value makes the sum NaN: one pass, no temporary)
                # struct.pack packs the double .tolist() gives: a signaling NaN comes out quieted, as
                # the core's cast of a float64 row quiets it (the core keeps a float32 row's bits).
                source = wide = rows.to(torch.float64) if wide is None else wide
            texts = [text.encode("ascii") for text in encode_rows(source)]
        separator = b"," if kind == "float" else b'","'  # (base64 text: JSON strings, nothing to escape)
        entries = [separator] * (2 * len(texts) + 1)
        entries[1::2] = texts
        entries[0] = entries[-1] = b"" if kind == "float" else b'"'
        written[kind] = entries
    return written



def _cohere_row(first) -> bool:
    """/v2/embed: a floating dtype (the rows are read as float64 values; on any device: the
    entry points read them where they are)."""
    return first.is_floating_point()

