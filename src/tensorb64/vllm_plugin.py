"""The vLLM plugin: vLLM's ``/v1/embeddings`` and Cohere ``/v2/embed`` bodies written by tensorb64's core.

Installing tensorb64 registers ``register`` as the ``vllm.general_plugins`` entry point
``tensorb64``; vLLM calls it once in every process it starts (the API server, the engine core,
the workers). ``TENSORB64_VLLM=0`` turns it off, and so does a ``VLLM_PLUGINS`` allowlist that does
not name ``tensorb64``.

What it does, and nothing else:

* vLLM's API server: ``ServingEmbedding._openai_json_response`` (``encoding_format`` "float" and
  "base64") is replaced by one that writes the body with ``response_body``, for the releases
  whose method it recognises by its parameters (0.32, 0.33 and 0.34); for any other release it logs
  one line and leaves vLLM as it is. The client gets the very bytes vLLM's own method sends: base64
  text, float text as orjson writes it for vLLM (or json.dumps, for 0.32 without orjson), each
  envelope's fields and each data entry's keys in vLLM's order (the core's ``"vllm"`` layout),
  the envelope's values from vLLM's own ``EmbeddingResponse`` (0.34's leaves out
  ``prompt_tokens_details`` when None, and so does the plugin's). A batch it does not write (rows
  of different shapes, a float request over non-float32 rows, NaN in a float request) goes to
  vLLM's own method, untouched.
* vLLM's Cohere route ``/v2/embed``: ``ServingEmbedding._build_cohere_response_from_ctx``
  (``embedding_types`` float and base64, alone or together) is replaced by one that writes the
  whole body with the core (``cohere_body``), for the releases whose method it recognises by its
  parameters and its code's names (0.32, 0.33 and 0.34): vLLM's own bytes, float rows as orjson
  writes the Python floats ``.tolist()`` gives, base64 rows as ``struct.pack("<f")`` packs them,
  the envelope made by vLLM's own models. Binary and ubinary types, NaN or infinity in float rows,
  and rows it does not read go to vLLM's own method. A separate ``Host`` from the ``/v1/embeddings``
  builder: either is patched where the other's release is not recognised.
* Dynamo's vLLM worker (``dynamo.vllm.handlers``): its per-row ``_pooling_output_to_base64`` is
  replaced by ``encode_rows`` (the same strings).

Each is applied when its module is imported (or at once, if it already is): a process that
never imports them (vLLM's engine core and workers) pays for a hook in ``sys.meta_path``
(``_import_hooks.after_import``) and nothing more. Loading the plugin twice changes nothing.
"""

from __future__ import annotations

import functools
import logging
import math
import sys

from . import _native
from ._patching import (
    Host,
    Replacement,
    Unknown,
    attribute,
    code_names,
    expect_names,
    expect_parameters,
    fail_open,
    install,
    install_module,
)

ENABLE_VARIABLE = "TENSORB64_VLLM"
# Where ServingEmbedding is defined: today's module (0.32 to 0.34), and the one vLLM's package-layout
# RFC (#54653) moves it to, leaving a shim at today's name. vLLM's own imports then name the new
# module only, so a hook on today's name alone would never run; the shim, where something imports
# it, is the new module (or re-exports its class), which is patched once.
SERVING_MODULES = ("vllm.entrypoints.pooling.embed.serving", "vllm.frontend.entrypoints.pooling.embed.serving")
DYNAMO_MODULE = "dynamo.vllm.handlers"
DYNAMO_POOLING_MODULE = "dynamo.vllm.pooling_handlers"

# ServingEmbedding._openai_json_response's parameters in the releases whose answer this writes:
# 0.32 (answers through self.json_response_cls, orjson) and 0.33 and 0.34 (through
# create_json_response, orjson); all send EmbeddingResponse's model_dump with float32 rows as numpy
# arrays.
OPENAI_JSON_RESPONSE_PARAMETERS = (
    "self",
    "final_res_batch",
    "request_id",
    "created_time",
    "model_name",
    "encoding_format",
    "embed_dtype",
    "endianness",
)

# A child of vLLM's own logger, so the lines come out in vLLM's format, where vLLM's go.
logger = logging.getLogger("vllm.plugins.tensorb64")


def _serving_replacements(module):
    """vLLM's embeddings response builder, where its release is one whose answer this writes."""
    cls = attribute(module, "ServingEmbedding")
    original = attribute(cls, "_openai_json_response")
    expect_parameters(original, OPENAI_JSON_RESPONSE_PARAMETERS, "ServingEmbedding._openai_json_response")
    # The response model and the usage are read from the module that defines the class (a shim
    # at an old path may re-export the class alone).
    defining = sys.modules.get(getattr(cls, "__module__", None), module)
    for name in ("EmbeddingResponse", "get_pooling_usage"):
        attribute(defining, name)
    return [Replacement(cls, "_openai_json_response", functools.partial(_openai_json_response_for, defining))]


VLLM = Host(
    name="vLLM",
    logger=logger,
    what="/v1/embeddings float and base64 bodies are written by tensorb64",
    work="writing an embeddings body",
    modules={name: _serving_replacements for name in SERVING_MODULES},
    switch=ENABLE_VARIABLE,
    package="vllm",
    tested=("0.32.0", "0.33.0", "0.34.0"),
)


def register() -> None:
    """The entry point vLLM calls in each of its processes."""
    install(VLLM)
    install(VLLM_COHERE)
    install(DYNAMO_VLLM)


# ---- vLLM's API server -------------------------------------------------------------------------


def patch_serving(module) -> bool:
    """Replace ``module.ServingEmbedding._openai_json_response``; True if it is (now or already)
    tensorb64's. Logs one line either way."""
    return install_module(VLLM, SERVING_MODULES[0], module)


def _openai_json_response_for(module, original):
    from starlette.responses import Response

    def ours(self, final_res_batch, request_id, created_time, model_name, encoding_format, embed_dtype, endianness):
        # 0.32 renders with self.json_response_cls: ORJSONResponse where orjson is installed, else
        # Starlette's JSONResponse (json.dumps: floats as the doubles' repr). 0.33 and 0.34 always use orjson.
        response_cls = getattr(self, "json_response_cls", None)
        with_orjson = response_cls is None or response_cls.__name__ == "ORJSONResponse"
        body = openai_json_body(
            module, final_res_batch, request_id, created_time, model_name, encoding_format, embed_dtype, endianness, with_orjson
        )
        return None if body is None else Response(content=body, media_type="application/json")

    return fail_open(VLLM, original, ours)


def openai_json_body(
    module, final_res_batch, request_id, created_time, model_name, encoding_format, embed_dtype, endianness, with_orjson=True
):
    """The body vLLM's ``_openai_json_response`` would send, byte for byte: the values of vLLM's
    own envelope, serialised as vLLM serialises them, laid out with the data entries by the core
    (its ``"vllm"`` layout) in one bytes object; None for a batch that vLLM's own method should
    answer. with_orjson: vLLM renders with orjson (float32 rows as numpy arrays: float_format
    "orjson"), else with json.dumps (float rows as Python floats: the doubles' repr)."""
    from ._body import Body

    if encoding_format not in ("float", "base64"):
        return None
    rows = _stacked_rows(final_res_batch, _openai_row_rule(encoding_format))
    if rows is None:
        return None
    members = _envelope_members(module, final_res_batch, request_id, created_time, model_name, with_orjson)
    if members is None:
        return None
    body = Body(rows, members=members, encoding_format=encoding_format, dtype=embed_dtype, byteorder=endianness,
                 float_format="orjson" if with_orjson else "repr", threads=1, layout="vllm")
    try:
        return body.whole()  # written by the core into one bytes object
    except ValueError:
        if encoding_format == "float":
            return None  # NaN or infinity: vLLM's orjson writes null, so vLLM's own answers
        raise


def _stacked_rows(final_res_batch, accepts):
    """The batch's rows as one [batch, dim] tensor, or None where vLLM's own method answers: rows
    that are not 1-D tensors of one dtype, of one length and on one device, or a first row that
    ``accepts`` (the route's rule on dtype and device) refuses."""
    import torch

    try:
        rows = [output.outputs.data for output in final_res_batch]
    except AttributeError:
        return None
    if not rows:
        return None
    first = rows[0]
    if not isinstance(first, torch.Tensor) or first.ndim != 1 or not accepts(first):
        return None
    if len(rows) == 1:
        return first[None]  # a view (torch.stack would copy)
    for row in rows:  # one dtype (torch.stack would promote a mixed batch); lengths and devices: stack's check
        if not isinstance(row, torch.Tensor) or row.dtype is not first.dtype:
            return None
    try:
        return torch.stack(rows)
    except RuntimeError:  # rows of different lengths or on different devices
        return None


def _openai_row_rule(encoding_format):
    """/v1/embeddings: any dtype for base64 rows; float rows only as float32, since vLLM writes
    other dtypes' values as Python floats (bfloat16) or numpy's float16 text."""
    import torch

    return lambda first: encoding_format != "float" or first.dtype == torch.float32


def _cohere_row(first) -> bool:
    """/v2/embed: a floating dtype on the CPU (the rows are read as float64 values)."""
    return first.is_floating_point() and first.device.type == "cpu"


def _envelope_members(module, final_res_batch, request_id, created_time, model_name, with_orjson: bool):
    """The envelope's members but "data", each key and value as vLLM writes them (orjson, or
    json.dumps as Starlette's JSONResponse calls it), for the core's "vllm" layout; None where
    vLLM's own should answer (an envelope of other fields: another release's response).

    The request's id and created time are serialised here; the rest of the envelope is a
    function of the model's name and the prompt's token count alone, made by vLLM's own models
    once per pair (its pydantic response, built per request, costs as much as a 64-row base64
    body)."""
    if type(request_id) is not str or type(created_time) is not int or not (model_name is None or type(model_name) is str):
        return None  # (what vLLM's EmbeddingResponse would convert: its own answers)
    prompt_tokens = 0
    for output in final_res_batch:  # what vLLM's get_pooling_usage counts
        token_ids = output.prompt_token_ids
        prompt_tokens += len(token_ids) if token_ids is not None else 0
    shared = _shared_members(module.EmbeddingResponse, module.get_pooling_usage, model_name, prompt_tokens, with_orjson)
    if shared is None:
        return None
    return [(b'"id"', _dumps(request_id, with_orjson)), (b'"created"', _dumps(created_time, with_orjson)), *shared]


class _PromptTokens:
    """A pooling output as far as vLLM's get_pooling_usage reads it: its prompt's token count."""

    __slots__ = ("prompt_token_ids",)

    def __init__(self, count: int):
        self.prompt_token_ids = range(count)


@functools.lru_cache(maxsize=1024)
def _shared_members(response_model, get_pooling_usage, model_name, prompt_tokens: int, with_orjson: bool):
    """The envelope's members but "data", "id" and "created", made by vLLM's own EmbeddingResponse
    and get_pooling_usage for this model name and token count; None where its fields are not the
    "vllm" layout's or it does not keep an id and a created time as given."""
    usage = get_pooling_usage([_PromptTokens(prompt_tokens)])
    envelope = response_model(id="", created=0, model=model_name, data=[], usage=usage).model_dump()
    if tuple(envelope) != _vllm_fields() or envelope["id"] != "" or envelope["created"] != 0:
        return None
    return tuple((_dumps(key, with_orjson), _dumps(value, with_orjson)) for key, value in envelope.items()
                 if key not in ("data", "id", "created"))


@functools.cache
def _vllm_fields() -> tuple:
    return _native._response_layouts()["vllm"][1]


def _dumps(value, with_orjson: bool) -> bytes:
    if with_orjson:
        import orjson

        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    import json

    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


# ---- vLLM's Cohere route (/v2/embed) -----------------------------------------------------------

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
# names -> whether that release answers through self.json_response_cls
COHERE_RESPONSE_NAMES = {
    _COHERE_NAMES | {"create_json_response"}: False,  # 0.33, 0.34
    _COHERE_NAMES | {"json_response_cls"}: True,  # 0.32
}
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
    names = code_names(original)
    if names not in COHERE_RESPONSE_NAMES:
        raise Unknown(f"{what}'s code is not the known releases' (names {sorted(names or ())})")
    defining = sys.modules.get(getattr(cls, "__module__", None), module)
    for name in ("CohereEmbedRequest", "CohereEmbedResponse", "CohereMeta", "CohereBilledUnits",
                 "build_typed_embeddings", "get_pooling_usage"):
        attribute(defining, name)
    make = functools.partial(_cohere_response_for, defining, COHERE_RESPONSE_NAMES[names])
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


def patch_cohere(module) -> bool:
    """Replace ``module.ServingEmbedding._build_cohere_response_from_ctx``; True if it is (now or
    already) tensorb64's. Logs one line either way."""
    return install_module(VLLM_COHERE, SERVING_MODULES[0], module)


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
    that are not equally long CPU tensors of one floating dtype, NaN or infinity in float rows
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
    rows = _stacked_rows(final_res_batch, _cohere_row)
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

    from ._encode import encode_rows, json_rows

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


# ---- Dynamo's vLLM worker ----------------------------------------------------------------------

# vLLM's embed_dtype and endianness names, which Dynamo's pooling handlers accept (its
# _POOLING_EMBED_DTYPES and _POOLING_ENDIANNESS) and the core takes as they are.
VLLM_EMBED_DTYPES = ("float32", "float16", "bfloat16", "fp8_e4m3", "fp8_e5m2")
VLLM_ENDIANNESS = ("little", "big", "native")


# The names each function's code uses in the release whose output its replacement reproduces
# (Dynamo 1.6.1), its nested code's included (code_names): a function of one parameter is
# recognised by what it does, not by that name alone.
DYNAMO_CODE = {
    "_pooling_output_to_base64": ("Tensor", "_encode_floats_to_base64", "_flatten_pooling_tensor",
                                  "_pooling_output_to_list", "b64encode", "base64", "decode", "isinstance", "tobytes",
                                  "torch"),
    "_pooling_output_to_nested": ("Tensor", "TypeError", "__name__", "_pooling_output_to_nested", "cpu", "detach",
                                  "float", "isinstance", "list", "tolist", "torch", "tuple", "type"),
    "_encode_pooling_output": ("Tensor", "TypeError", "__name__", "b64encode", "base64", "cpu", "decode", "detach",
                               "import_module", "importlib", "isinstance", "list", "shape", "tensor", "tensor2binary",
                               "torch", "tuple", "type"),
}


def _dynamo_function(module, name: str, expected: tuple, replacement_for) -> Replacement:
    original = attribute(module, name)
    expect_parameters(original, expected, name)
    expect_names(original, DYNAMO_CODE[name], name)
    return Replacement(module, name, lambda original: fail_open(DYNAMO_VLLM, original, replacement_for()))


def _dynamo_replacements(module):
    return [_dynamo_function(module, "_pooling_output_to_base64", ("data",), _pooling_output_to_base64_for)]


def _dynamo_pooling_replacements(module):
    return [_dynamo_function(module, "_pooling_output_to_nested", ("data",), _pooling_output_to_nested_for),
            _dynamo_function(module, "_encode_pooling_output", ("data", "embed_dtype", "endianness"),
                             _encode_pooling_output_for)]


DYNAMO_VLLM = Host(
    name="Dynamo's vLLM worker",
    logger=logger,
    what="embeddings and /pooling rows are encoded by tensorb64",
    work="encoding a row",
    project="Dynamo",
    modules={DYNAMO_MODULE: _dynamo_replacements, DYNAMO_POOLING_MODULE: _dynamo_pooling_replacements},
    switch=ENABLE_VARIABLE,
    distribution="ai-dynamo",
    tested=("1.6.1",),
)


def patch_dynamo(module) -> bool:
    """Replace ``module._pooling_output_to_base64`` (``dynamo.vllm.handlers``, the embeddings
    route) with one that encodes a tensor row with ``encode_rows``; True if it is (now or
    already) tensorb64's."""
    return install_module(DYNAMO_VLLM, DYNAMO_MODULE, module)


def patch_dynamo_pooling(module) -> bool:
    """Replace ``module._pooling_output_to_nested`` and ``_encode_pooling_output``
    (``dynamo.vllm.pooling_handlers``, the /pooling route's float and base64 or bytes data) with
    the core's, both or neither; True if they are (now or already) tensorb64's."""
    return install_module(DYNAMO_VLLM, DYNAMO_POOLING_MODULE, module)


def _pooling_output_to_base64_for():
    import torch

    from ._encode import encode_rows

    def _pooling_output_to_base64(data):
        # Dynamo's: data.detach().cpu().flatten().to(float32) as little-endian bytes, base64; the
        # same row, read in place (or staged from the GPU) by encode_rows.
        if isinstance(data, torch.Tensor) and data.is_floating_point():
            return encode_rows(data.detach().reshape(1, data.numel()))[0]
        return None  # Dynamo's own

    return _pooling_output_to_base64


def _pooling_output_to_nested_for():
    import torch

    # The dtypes whose every value float32 holds exactly: the core's float32 values are the
    # tensor's own (float64 would be rounded).
    exact_in_float32 = (torch.float32, torch.bfloat16, torch.float16)

    def _pooling_output_to_nested(data):
        # Dynamo's: data.detach().cpu().tolist(), nested as the tensor is. For a row or a matrix
        # the same floats (NaN and infinity included), made by the core from the tensor's memory.
        if isinstance(data, torch.Tensor) and data.dtype in exact_in_float32 and data.ndim in (1, 2):
            rows = data.detach().cpu()
            lists = _native._float_lists(rows if rows.ndim == 2 else rows[None])
            return lists if rows.ndim == 2 else lists[0]
        return None  # Dynamo's own

    return _pooling_output_to_nested


def _encode_pooling_output_for():
    import torch

    from ._encode import encode_rows

    def _encode_pooling_output(data, embed_dtype, endianness):
        # Dynamo's: (base64 of vLLM's tensor2binary(data.detach().cpu(), embed_dtype, endianness):
        # the tensor cast to embed_dtype, flattened, in that byte order; and the shape). The same
        # bytes written by the core in one pass over the tensor read as one row (in place, or
        # staged from the GPU).
        if (isinstance(data, torch.Tensor) and data.is_floating_point() and embed_dtype in VLLM_EMBED_DTYPES
                and endianness in VLLM_ENDIANNESS):
            row = data.detach().reshape(1, data.numel())
            return encode_rows(row, dtype=embed_dtype, byteorder=endianness)[0], list(data.shape)
        return None  # Dynamo's own

    return _encode_pooling_output
