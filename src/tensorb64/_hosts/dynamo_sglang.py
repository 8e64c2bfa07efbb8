"""Dynamo's SGLang worker (``dynamo.sglang.request_handlers.embedding.embedding_handler``, Dynamo
1.6.1): its per-row ``_encode_floats_to_base64`` replaced by one that reads the row natively and
encodes it with the core (the same strings; a row it does not take, Dynamo's own). Installed by
the SGLang plugin.
"""

from __future__ import annotations

from .. import _native
from .patching import Host, Replacement, attribute, expect_names, expect_parameters, fail_open
from .sglang import ENABLE_VARIABLE, logger

DYNAMO_MODULE = "dynamo.sglang.request_handlers.embedding.embedding_handler"

# The names Dynamo 1.6.1's function uses: one parameter says little, what it does is its shape.
DYNAMO_CODE = ("b64encode", "base64", "decode", "len", "pack", "struct")


def _dynamo_replacements(module):
    original = attribute(module, "_encode_floats_to_base64")
    expect_parameters(original, ("floats",), "_encode_floats_to_base64")
    expect_names(original, DYNAMO_CODE, "_encode_floats_to_base64")
    return [Replacement(module, "_encode_floats_to_base64", _encode_floats_to_base64_for)]


DYNAMO_SGLANG = Host(
    name="Dynamo's SGLang worker",
    logger=logger,
    what="base64 rows are encoded by tensorb64",
    work="encoding a row",
    project="Dynamo",
    modules={DYNAMO_MODULE: _dynamo_replacements},
    switch=ENABLE_VARIABLE,
    distribution="ai-dynamo",
    tested=("1.6.1",),
)



def _encode_floats_to_base64_for(original):
    import numpy as np

    from .._codec.encode import encode

    def ours(floats):
        # Dynamo's: struct.pack("<nf", *floats) then base64. The row read natively into float32,
        # each value rounded as struct rounds it; what the reader refuses (not a list of floats;
        # NaN, infinity, a value past float32: struct's OverflowError) is Dynamo's own to write.
        try:
            row = np.empty(len(floats), dtype=np.float32)
            _native._read_float_lists([floats], row)
        except (TypeError, ValueError):
            return None
        return encode(row)

    return fail_open(DYNAMO_SGLANG, original, ours)

