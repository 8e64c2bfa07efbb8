"""The vLLM plugin's release check, without vLLM: it replaces vLLM's response builder only where
the builder has the parameters of a release it knows, and leaves any other as it is (in the
default suite: test_vllm_plugin.py, which needs vLLM, is skipped where vLLM is absent)."""

from __future__ import annotations

import logging
import types

import pytest

from tensorb64._hosts import dynamo_vllm
from tensorb64._hosts import vllm as vllm_host
from tensorb64._hosts.patching import install_module


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
    vllm_host.logger.addHandler(handler)
    try:
        assert not install_module(vllm_host.VLLM, vllm_host.SERVING_MODULES[0], module)
    finally:
        vllm_host.logger.removeHandler(handler)
    assert module.ServingEmbedding._openai_json_response is builder
    assert len(records) == 1 and "not one tensorb64 knows" in records[0].getMessage()


def test_the_known_parameters_are_those_checked():
    """The release check compares exactly these names, in this order (0.32 and 0.33)."""
    assert vllm_host.OPENAI_JSON_RESPONSE_PARAMETERS == (
        "self", "final_res_batch", "request_id", "created_time", "model_name", "encoding_format", "embed_dtype",
        "endianness",
    )


def test_a_dynamo_encoder_with_other_parameters_is_left_alone():
    def _pooling_output_to_base64(data, dtype):
        return "Dynamo's own"

    module = types.ModuleType("dynamo.vllm.handlers_of_another_release")
    module._pooling_output_to_base64 = _pooling_output_to_base64
    assert not install_module(dynamo_vllm.DYNAMO_VLLM, dynamo_vllm.DYNAMO_MODULE, module)
    assert module._pooling_output_to_base64 is _pooling_output_to_base64


def test_a_dynamo_pooling_module_with_other_parameters_is_left_alone():
    def _pooling_output_to_nested(data, shape):
        return "Dynamo's own"

    def _encode_pooling_output(data, embed_dtype):
        return "Dynamo's own"

    module = types.ModuleType("dynamo.vllm.pooling_handlers_of_another_release")
    module._pooling_output_to_nested = _pooling_output_to_nested
    module._encode_pooling_output = _encode_pooling_output
    assert not install_module(dynamo_vllm.DYNAMO_VLLM, dynamo_vllm.DYNAMO_POOLING_MODULE, module)
    assert module._pooling_output_to_nested is _pooling_output_to_nested
    assert module._encode_pooling_output is _encode_pooling_output


# ---- the next vLLM's layout: vllm/entrypoints moved to vllm/frontend/entrypoints, shims left --------

# A vLLM of today's layout, as far as the plugin reads it: the serving module with a builder of the
# known parameters (its pydantic model and usage function only named: the patch reads them when a
# body is written, which the vLLM suite does on vLLM's own code moved the same way).
TODAYS_SERVING = '''
class EmbeddingResponse:
    pass


def get_pooling_usage(final_res_batch):
    return None


class ServingEmbedding:
    def _openai_json_response(self, final_res_batch, request_id, created_time, model_name, encoding_format,
                              embed_dtype, endianness):
        return "vLLM's own"
'''

MOVED_LAYOUT_CHECK = '''
import importlib, logging, sys
records = []
handler = logging.Handler()
handler.emit = records.append
logger = logging.getLogger("vllm.plugins.tensorb64")
logger.addHandler(handler)
logger.setLevel(logging.INFO)
import tensorb64.vllm_plugin as plugin
from tensorb64._hosts import vllm as vllm_host
NEW, OLD = vllm_host.SERVING_MODULES[1], vllm_host.SERVING_MODULES[0]
imports = sys.argv[1].split(",")
if imports[0] == "before register":  # the module imported before vLLM loads its plugins
    importlib.import_module(NEW)
    imports = imports[1:]
plugin.register()
plugin.register()  # (loaded twice: nothing more)
modules = [importlib.import_module(name) for name in imports]
defining = sys.modules[NEW]
method = defining.ServingEmbedding._openai_json_response
assert method.__tensorb64_replaces__.__qualname__ == "ServingEmbedding._openai_json_response", method
assert not hasattr(method.__tensorb64_replaces__, "__tensorb64_replaces__"), "patched twice"
for module in modules:
    assert module.ServingEmbedding is defining.ServingEmbedding
written = [r for r in records if "are written by tensorb64" in r.getMessage()]
assert len(written) == 1 and len(records) == 1, [r.getMessage() for r in records]
print("imported:", ",".join(sorted(n for n in (NEW, OLD) if n in sys.modules)))
'''


@pytest.fixture(scope="module")
def moved_vllm(tmp_path_factory):
    """A today's-layout vLLM stand-in, moved by tests/support/vllm_moved.py as RFC #54653 moves vLLM."""
    from tests.support import vllm_moved

    today = tmp_path_factory.mktemp("today")
    serving = today / "vllm" / "entrypoints" / "pooling" / "embed" / "serving.py"
    serving.parent.mkdir(parents=True)
    for folder in (serving.parent, *serving.parent.parents):
        if folder == today:
            break
        (folder / "__init__.py").write_text('__version__ = "0.34.0.dev0"\n' if folder.name == "vllm" else "")
    serving.write_text(TODAYS_SERVING)
    moved = vllm_moved.build(today, tmp_path_factory.mktemp("moved"))
    assert "sys.modules[__name__] = importlib.import_module" in (moved / serving.relative_to(today)).read_text()
    return moved


@pytest.mark.parametrize(
    "imports, imported",
    [
        # vLLM's own imports, rewritten to the new path: today's name is never imported
        ("vllm.frontend.entrypoints.pooling.embed.serving", "vllm.frontend.entrypoints.pooling.embed.serving"),
        # a user's import of today's name, through the shim
        ("vllm.entrypoints.pooling.embed.serving", "vllm.entrypoints.pooling.embed.serving,"
                                                   "vllm.frontend.entrypoints.pooling.embed.serving"),
        ("vllm.frontend.entrypoints.pooling.embed.serving,vllm.entrypoints.pooling.embed.serving",
         "vllm.entrypoints.pooling.embed.serving,vllm.frontend.entrypoints.pooling.embed.serving"),
        ("before register,vllm.entrypoints.pooling.embed.serving",
         "vllm.entrypoints.pooling.embed.serving,vllm.frontend.entrypoints.pooling.embed.serving"),
    ],
)
@pytest.mark.parametrize("shim", ["module alias", "class re-exported"])
def test_the_moved_layout_is_patched_once(moved_vllm, imports, imported, shim, tmp_path):
    """ServingEmbedding found where RFC #54653 moves it, whichever name is imported first and
    whether or not today's name ever is; replaced once, one log line."""
    import os
    import shutil
    import subprocess
    import sys

    root = tmp_path / "vllm-tree"
    shutil.copytree(moved_vllm, root, symlinks=True)
    if shim == "class re-exported":  # a shim of another kind: today's module re-exports the class alone
        (root / "vllm" / "entrypoints" / "pooling" / "embed" / "serving.py").write_text(
            "from vllm.frontend.entrypoints.pooling.embed.serving import ServingEmbedding  # noqa: F401\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", MOVED_LAYOUT_CHECK, imports], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"imported: {imported}" in result.stdout
