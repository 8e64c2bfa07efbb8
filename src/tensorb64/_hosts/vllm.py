"""vLLM's ``/v1/embeddings`` bodies written by the core: ``ServingEmbedding._openai_json_response``
("float" and "base64") replaced for the releases whose method it recognises by its parameters
(0.32, 0.33 and 0.34); the client gets the very bytes vLLM's own method sends (what each release
writes: the ``tensorb64.vllm_plugin`` docstring). Installed by the vLLM plugin.
"""

from __future__ import annotations

import functools
import logging
import sys

from .. import _native
from .patching import Host, Replacement, attribute, expect_parameters, fail_open

ENABLE_VARIABLE = "TENSORB64_VLLM"
# Where ServingEmbedding is defined: today's module (0.32 to 0.34), and the one vLLM's package-layout
# RFC (#54653) moves it to, leaving a shim at today's name. vLLM's own imports then name the new
# module only, so a hook on today's name alone would never run; the shim, where something imports
# it, is the new module (or re-exports its class), which is patched once.
SERVING_MODULES = ("vllm.entrypoints.pooling.embed.serving", "vllm.frontend.entrypoints.pooling.embed.serving")

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
    from .._codec.body import Body

    if encoding_format not in ("float", "base64"):
        return None
    rows = stacked_rows(final_res_batch, _openai_row_rule(encoding_format))
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


def stacked_rows(final_res_batch, accepts):
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

