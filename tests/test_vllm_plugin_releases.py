"""The vLLM plugin's release check, without vLLM: it replaces vLLM's response builder only where
the builder has the parameters of a release it knows, and leaves any other as it is (in the
default suite: test_vllm_plugin.py, which needs vLLM, is skipped where vLLM is absent)."""

from __future__ import annotations

import logging
import types

import pytest

from tensorb64 import vllm_plugin


def _serving_module(builder):
    """A module shaped like vLLM's serving module: everything the plugin reads, with ``builder``
    as ServingEmbedding._openai_json_response."""
    module = types.ModuleType("vllm.entrypoints.pooling.embed.serving_of_another_release")
    module.ServingEmbedding = type("ServingEmbedding", (), {"_openai_json_response": builder})
    module.EmbeddingResponse = object
    module.get_pooling_usage = lambda final_res_batch: None
    return module


def _other_parameters(self, final_res_batch, request_id, created_time, model_name, encoding_format):
    return "vLLM's own"


def _one_more_parameter(self, final_res_batch, request_id, created_time, model_name, encoding_format, embed_dtype,
                        endianness, extra_kwargs):
    return "vLLM's own"


def _renamed_parameter(self, final_res_batch, request_id, created_time, model_name, encoding_format, embed_dtype,
                       byteorder):
    return "vLLM's own"


@pytest.mark.parametrize("builder", [_other_parameters, _one_more_parameter, _renamed_parameter])
def test_a_builder_with_other_parameters_is_left_alone(builder):
    """Another release's builder: one warning, nothing replaced."""
    module = _serving_module(builder)
    records = []
    handler = logging.Handler()
    handler.emit = records.append  # (vLLM may configure its "vllm" logger not to propagate to the root)
    vllm_plugin.logger.addHandler(handler)
    try:
        assert not vllm_plugin.patch_serving(module)
    finally:
        vllm_plugin.logger.removeHandler(handler)
    assert module.ServingEmbedding._openai_json_response is builder
    assert len(records) == 1 and "not one tensorb64 knows" in records[0].getMessage()


def test_the_known_parameters_are_those_checked():
    """The release check compares exactly these names, in this order (0.32 and 0.33)."""
    assert vllm_plugin.OPENAI_JSON_RESPONSE_PARAMETERS == (
        "self", "final_res_batch", "request_id", "created_time", "model_name", "encoding_format", "embed_dtype",
        "endianness",
    )


def test_a_dynamo_encoder_with_other_parameters_is_left_alone():
    def _pooling_output_to_base64(data, dtype):
        return "Dynamo's own"

    module = types.ModuleType("dynamo.vllm.handlers_of_another_release")
    module._pooling_output_to_base64 = _pooling_output_to_base64
    assert not vllm_plugin.patch_dynamo(module)
    assert module._pooling_output_to_base64 is _pooling_output_to_base64
