"""The vLLM plugin: vLLM's ``/v1/embeddings`` bodies written by ``tensorb64.openai.response_body``.

Installing tensorb64 registers ``register`` as the ``vllm.general_plugins`` entry point
``tensorb64``; vLLM calls it once in every process it starts (the API server, the engine core,
the workers). ``TENSORB64_VLLM=0`` turns it off, and so does a ``VLLM_PLUGINS`` allowlist that does
not name ``tensorb64``.

What it does, and nothing else:

* vLLM's API server: ``ServingEmbedding._openai_json_response`` (``encoding_format`` "float" and
  "base64") is replaced by one that writes the body with ``response_body``, for the releases
  whose method it recognises by its parameters (0.32 and 0.33); for any other release it logs one
  line and leaves vLLM as it is. The client gets the very bytes vLLM's own method sends: base64
  text, float text as orjson writes it for vLLM (or json.dumps, for 0.32 without orjson), each
  envelope's fields and each data entry's keys in vLLM's order (the core's ``"vllm"`` layout),
  the envelope's values from vLLM's own ``EmbeddingResponse``. A batch it does not write (rows of different shapes, a float request
  over non-float32 rows, NaN in a float request) goes to vLLM's own method, untouched.
* Dynamo's vLLM worker (``dynamo.vllm.handlers``): its per-row ``_pooling_output_to_base64`` is
  replaced by ``encode_rows`` (the same strings).

Both are applied when their module is imported (or at once, if it already is): a process that
never imports them (vLLM's engine core and workers) pays for a hook in ``sys.meta_path``
(``_import_hooks.after_import``) and nothing more. Loading the plugin twice changes nothing.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import sys

from . import _native
from ._import_hooks import after_import

ENABLE_VARIABLE = "TENSORB64_VLLM"
SERVING_MODULE = "vllm.entrypoints.pooling.embed.serving"
DYNAMO_MODULE = "dynamo.vllm.handlers"

# ServingEmbedding._openai_json_response's parameters in the releases whose answer this writes:
# 0.32 (answers through self.json_response_cls, orjson) and 0.33 (through create_json_response,
# orjson); both send EmbeddingResponse's model_dump with float32 rows as numpy arrays.
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


def register() -> None:
    """The entry point vLLM calls in each of its processes."""
    if os.environ.get(ENABLE_VARIABLE, "1").strip().lower() in ("0", "false", "no", "off"):
        return
    after_import(SERVING_MODULE, patch_serving)
    after_import(DYNAMO_MODULE, patch_dynamo)


def _replaced(function) -> bool:
    return getattr(function, "__tensorb64_replaces__", None) is not None


# ---- vLLM's API server -------------------------------------------------------------------------


def patch_serving(module) -> bool:
    """Replace ``module.ServingEmbedding._openai_json_response``; True if it is (now or already)
    tensorb64's. Logs one line either way."""
    cls = getattr(module, "ServingEmbedding", None)
    original = getattr(cls, "_openai_json_response", None)
    if _replaced(original):
        return True
    version = getattr(sys.modules.get("vllm"), "__version__", "unknown")
    missing = [name for name in ("EmbeddingResponse", "get_pooling_usage") if not hasattr(module, name)]
    try:
        parameters = tuple(inspect.signature(original).parameters) if original is not None else None
    except (TypeError, ValueError):
        parameters = None
    if parameters != OPENAI_JSON_RESPONSE_PARAMETERS or missing:
        logger.warning(
            "tensorb64: vLLM %s's embeddings response builder (%s.ServingEmbedding._openai_json_response) is not one "
            "tensorb64 knows; vLLM's own is kept",
            version,
            module.__name__,
        )
        return False
    cls._openai_json_response = _openai_json_response_for(module, original)
    logger.info("tensorb64: vLLM %s's /v1/embeddings float and base64 bodies are written by tensorb64", version)
    return True


def _openai_json_response_for(module, original):
    from starlette.responses import Response

    def _openai_json_response(
        self, final_res_batch, request_id, created_time, model_name, encoding_format, embed_dtype, endianness
    ):
        # 0.32 renders with self.json_response_cls: ORJSONResponse where orjson is installed, else
        # Starlette's JSONResponse (json.dumps: floats as the doubles' repr). 0.33 always uses orjson.
        response_cls = getattr(self, "json_response_cls", None)
        with_orjson = response_cls is None or response_cls.__name__ == "ORJSONResponse"
        try:
            body = openai_json_body(
                module, final_res_batch, request_id, created_time, model_name, encoding_format, embed_dtype, endianness, with_orjson
            )
        except Exception:  # a bug here must not cost the client its answer: vLLM's own, and one log line
            _log_failure_once()
            body = None
        if body is None:
            return original(
                self, final_res_batch, request_id, created_time, model_name, encoding_format, embed_dtype, endianness
            )
        return Response(content=body, media_type="application/json")

    _openai_json_response.__tensorb64_replaces__ = original
    _openai_json_response.__doc__ = original.__doc__
    return _openai_json_response


_failure_logged = False


def _log_failure_once() -> None:
    global _failure_logged
    if not _failure_logged:
        _failure_logged = True
        logger.exception("tensorb64: writing an embeddings body failed; vLLM's own answered (logged once)")


def openai_json_body(
    module, final_res_batch, request_id, created_time, model_name, encoding_format, embed_dtype, endianness, with_orjson=True
):
    """The body vLLM's ``_openai_json_response`` would send, byte for byte: the values of vLLM's
    own envelope, serialised as vLLM serialises them, laid out with the data entries by the core
    (its ``"vllm"`` layout) in one bytes object; None for a batch that vLLM's own method should
    answer. with_orjson: vLLM renders with orjson (float32 rows as numpy arrays: float_format
    "orjson"), else with json.dumps (float rows as Python floats: the doubles' repr)."""
    from .openai import _Body

    if encoding_format not in ("float", "base64"):
        return None
    rows = _stacked_rows(final_res_batch, encoding_format)
    if rows is None:
        return None
    envelope = module.EmbeddingResponse(
        id=request_id, created=created_time, model=model_name, data=[], usage=module.get_pooling_usage(final_res_batch)
    ).model_dump()
    members = _envelope_members(envelope, with_orjson)
    if members is None:
        return None
    body = _Body(rows, members=members, encoding_format=encoding_format, dtype=embed_dtype, byteorder=endianness,
                 float_format="orjson" if with_orjson else "repr", threads=1, layout="vllm")
    try:
        return body.whole()  # written by the core into one bytes object
    except ValueError:
        if encoding_format == "float":
            return None  # NaN or infinity: vLLM's orjson writes null, so vLLM's own answers
        raise


def _stacked_rows(final_res_batch, encoding_format):
    """The batch's rows as one [batch, dim] tensor, or None where vLLM's own method answers."""
    import torch

    rows = [getattr(getattr(output, "outputs", None), "data", None) for output in final_res_batch]
    if not rows:
        return None
    first = rows[0]
    if not isinstance(first, torch.Tensor) or first.ndim != 1:
        return None
    if encoding_format == "float" and first.dtype != torch.float32:
        return None  # vLLM writes other dtypes' values as Python floats (bfloat16) or numpy's float16 text
    if len(rows) == 1:
        return first[None]  # a view (torch.stack would copy)
    for row in rows:
        if not (isinstance(row, torch.Tensor) and row.shape == first.shape and row.dtype == first.dtype and row.device == first.device):
            return None
    return torch.stack(rows)


def _envelope_members(envelope: dict, with_orjson: bool):
    """``envelope``'s members but "data", each key and value as vLLM writes them (orjson, or
    json.dumps as Starlette's JSONResponse calls it), for the core's "vllm" layout; None where
    its fields are not that layout's (another release's response: the body would differ)."""
    if tuple(envelope) != _vllm_fields():
        return None
    return [(_dumps(key, with_orjson), _dumps(value, with_orjson)) for key, value in envelope.items() if key != "data"]


@functools.cache
def _vllm_fields() -> tuple:
    return _native._response_layouts()["vllm"][1]


def _dumps(value, with_orjson: bool) -> bytes:
    if with_orjson:
        import orjson

        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    import json

    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


# ---- Dynamo's vLLM worker ----------------------------------------------------------------------


def patch_dynamo(module) -> bool:
    """Replace ``module._pooling_output_to_base64`` with one that encodes a tensor row with
    ``encode_rows``; True if it is (now or already) tensorb64's."""
    original = getattr(module, "_pooling_output_to_base64", None)
    if _replaced(original):
        return True
    try:
        parameters = tuple(inspect.signature(original).parameters) if original is not None else None
    except (TypeError, ValueError):
        parameters = None
    if parameters != ("data",):
        logger.warning("tensorb64: this Dynamo's %s._pooling_output_to_base64 is not one tensorb64 knows; Dynamo's own is kept", module.__name__)
        return False
    module._pooling_output_to_base64 = _pooling_output_to_base64_for(original)
    logger.info("tensorb64: Dynamo's vLLM worker encodes its base64 rows with tensorb64")
    return True


def _pooling_output_to_base64_for(original):
    import torch

    from ._encode import encode_rows

    def _pooling_output_to_base64(data):
        # Dynamo's: data.detach().cpu().flatten().to(float32) as little-endian bytes, base64; the
        # same row, read in place (or staged from the GPU) by encode_rows.
        if isinstance(data, torch.Tensor) and data.is_floating_point():
            return encode_rows(data.detach().reshape(1, data.numel()))[0]
        return original(data)

    _pooling_output_to_base64.__tensorb64_replaces__ = original
    _pooling_output_to_base64.__doc__ = original.__doc__
    return _pooling_output_to_base64
