"""Dynamo's vLLM worker: its per-row encoders written by the core, in ``dynamo.vllm.handlers``
(``_pooling_output_to_base64``, the embeddings route) and ``dynamo.vllm.pooling_handlers``
(``_pooling_output_to_nested`` and ``_encode_pooling_output``, the /pooling route's float and
base64 or bytes data), each recognised by its parameters and its code's names (Dynamo 1.6.1).
Installed by the vLLM plugin (Dynamo's worker runs vLLM in its process).
"""

from __future__ import annotations

from .. import _native
from .patching import Host, Replacement, attribute, expect_names, expect_parameters, fail_open
from .vllm import ENABLE_VARIABLE, logger

DYNAMO_MODULE = "dynamo.vllm.handlers"
DYNAMO_POOLING_MODULE = "dynamo.vllm.pooling_handlers"

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



def _pooling_output_to_base64_for():
    import torch

    from .._codec.encode import encode_rows

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
            rows = data.detach()  # (on a device: read by the entry point from one host copy)
            lists = _native._float_lists(rows if rows.ndim == 2 else rows[None])
            return lists if rows.ndim == 2 else lists[0]
        return None  # Dynamo's own

    return _pooling_output_to_nested


def _encode_pooling_output_for():
    import torch

    from .._codec.encode import encode_rows

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

