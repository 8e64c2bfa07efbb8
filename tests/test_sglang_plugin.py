"""The SGLang plugin (tensorb64.sglang_plugin) against SGLang 0.5.23's own code.

SGLang's serving module cannot be imported here (it imports SGLang's runtime: its managers, its GPU
kernels' package), so the tests read from SGLang's wheel (TENSORB64_SGLANG_WHEEL; ci/vllm_check.sh
downloads it and sets it) its own response models (protocol.py) and its own
OpenAIServingEmbedding methods (_handle_non_streaming_request, _serialize_embedding,
_build_embedding_response), each as written, into modules of the same names; SGLang's tokenizer
manager is replaced by one that hands the rows over as SGLang's does (lists of Python floats).
Each request goes through a FastAPI route declared as SGLang declares its own (response_class
ORJSONResponse), driven as an ASGI app, so that the reference bytes are what SGLang's route sends,
rendered by this FastAPI: plugin off against plugin on, byte for byte.
"""

from __future__ import annotations

import ast
import asyncio
import json
import logging
import os
import sys
import zipfile

import numpy as np
import pytest

from tensorb64 import sglang_plugin

pytest.importorskip("fastapi", reason="fastapi (the test extra) is not installed")
pytest.importorskip("orjson", reason="orjson (the test extra) is not installed")
from fastapi import Request as HTTPRequest  # noqa: E402  (the route's annotation, resolved by FastAPI)

MODULE = sglang_plugin.SERVING_MODULE
PROTOCOL_CLASSES = ("PromptTokensDetails", "CompletionTokensDetails", "UsageInfo", "EmbeddingObject", "EmbeddingResponse")
SERVING_METHODS = ("_handle_non_streaming_request", "_serialize_embedding", "_build_embedding_response")
# ORJSONResponse, as SGLang's route uses it, is deprecated in recent FastAPI releases.
pytestmark = pytest.mark.filterwarnings("ignore:ORJSONResponse is deprecated")


def _segments(source: str, names, kind):
    found = {node.name: node for node in ast.parse(source).body if isinstance(node, kind)}
    missing = [name for name in names if name not in found]
    assert not missing, f"SGLang's source has no {missing}"
    return found


@pytest.fixture(scope="module")
def sglang_sources():
    wheel = os.environ.get("TENSORB64_SGLANG_WHEEL")
    if not wheel:
        pytest.skip("TENSORB64_SGLANG_WHEEL (a path to sglang's wheel; ci/vllm_check.sh sets it) is not set")
    with zipfile.ZipFile(wheel) as z:
        protocol = z.read("sglang/srt/entrypoints/openai/protocol.py").decode()
        serving = z.read("sglang/srt/entrypoints/openai/serving_embedding.py").decode()
    classes = _segments(protocol, PROTOCOL_CLASSES, ast.ClassDef)
    # its own imports from typing and pydantic, then the classes
    imports = [ast.get_source_segment(protocol, node) for node in ast.parse(protocol).body
               if isinstance(node, ast.ImportFrom) and node.module in ("__future__", "typing", "pydantic")]
    protocol_module = (
        "\n".join(imports) + "\n\n\n"
        + "\n\n\n".join(ast.get_source_segment(protocol, classes[name]) for name in PROTOCOL_CLASSES) + "\n"
    )
    (cls,) = [n for n in ast.parse(serving).body if isinstance(n, ast.ClassDef) and n.name == "OpenAIServingEmbedding"]
    methods = {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    missing = [name for name in SERVING_METHODS if name not in methods]
    assert not missing, f"SGLang's OpenAIServingEmbedding has no {missing}"
    lines = serving.splitlines()

    def method_source(node):
        start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
        return "\n".join(lines[start : node.end_lineno])

    serving_module = (
        "from __future__ import annotations\nimport base64\nimport struct\n"
        "from typing import Any, Dict, List, Optional, Union\n\n"
        "from sglang.srt.entrypoints.openai.protocol import EmbeddingObject, EmbeddingResponse, UsageInfo\n\n\n"
        "class OpenAIServingEmbedding:\n"
        "    def __init__(self, tokenizer_manager):\n"
        "        self.tokenizer_manager = tokenizer_manager\n\n"
        "    def create_error_response(self, message):\n"
        "        raise AssertionError(message)\n\n"
        + "\n\n".join(method_source(methods[name]) for name in SERVING_METHODS) + "\n"
    )
    return {
        "sglang/__init__.py": '__version__ = "0.5.23"\n',
        "sglang/srt/entrypoints/openai/protocol.py": protocol_module,
        MODULE.replace(".", "/") + ".py": serving_module,
    }


@pytest.fixture
def sglang_tree(sglang_sources, tmp_path):
    """SGLang's modules (as read above) importable, and gone again after the test."""
    for path, source in sglang_sources.items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        for parent in target.relative_to(tmp_path).parents:
            if parent.parts:
                (tmp_path / parent / "__init__.py").touch()
        target.write_text(source)
    sys.path.insert(0, str(tmp_path))
    try:
        yield
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n == "sglang" or n.startswith("sglang.")]:
            del sys.modules[name]


class TokenizerManager:
    """SGLang's, as far as the embeddings handler uses it: each request answered with the rows
    given (lists of Python floats, as SGLang's scheduler hands them to its API process)."""

    model_path = "tiny-model/é"

    def __init__(self, items):
        self.items = items

    def generate_request(self, adapted_request, raw_request):
        async def answer():
            yield self.items

        return answer()


class Request:
    def __init__(self, encoding_format):
        self.encoding_format = encoding_format


def route_body(serving, encoding_format: str):
    """The bytes (and status) a FastAPI route declared as SGLang's own sends for one request."""
    from fastapi import FastAPI
    from fastapi.responses import ORJSONResponse

    app = FastAPI()

    @app.post("/v1/embeddings", response_class=ORJSONResponse)
    async def openai_v1_embeddings(raw_request: HTTPRequest):
        return await serving._handle_non_streaming_request(None, Request(encoding_format), raw_request)

    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/v1/embeddings", "raw_path": b"/v1/embeddings", "query_string": b"", "root_path": "",
             "headers": [(b"content-type", b"application/json")], "client": ("127.0.0.1", 1), "server": ("t", 80)}
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], headers.get("content-type"), body


def items_of(rows, tokens=3):
    return [{"embedding": row, "meta_info": {"prompt_tokens": tokens + i}} for i, row in enumerate(rows)]


def rows_f32(batch, dim, seed=0, scale=0.05):
    x = np.random.default_rng(seed).normal(0, scale, (batch, dim)).astype(np.float32)
    return x.tolist()


SPECIAL = [0.0, -0.0, 1e-45, -1e-45, 1.1754944e-38, 3.4028234663852886e38, -3.4028234663852886e38, 1e-7, 1e16,
           123456789.0, 0.1, 1 / 3, 2.999999892949745e-8, 5e-324, 1e300, -2.5e-39]


def answer(serving_cls, items, encoding_format):
    return route_body(serving_cls(TokenizerManager(items)), encoding_format)


def test_bodies_are_sglangs_own(sglang_tree):
    """Plugin on against off, byte for byte (status and content type too), float and base64, over
    shapes, values that are float32 values (what SGLang's rows hold) and doubles that are not."""
    import importlib

    module = importlib.import_module(MODULE)
    original = module.OpenAIServingEmbedding
    off = {}
    cases = {
        "1x1": items_of([[0.5]]),
        "3x5": items_of(rows_f32(3, 5, seed=1)),
        "2x384": items_of(rows_f32(2, 384, seed=2)),
        "64x3072": items_of(rows_f32(64, 3072, seed=3)),
        "wide values": items_of(rows_f32(4, 64, seed=4, scale=1e30) + rows_f32(4, 64, seed=5, scale=1e-30)),
        "special": items_of([SPECIAL[:8], SPECIAL[8:]]),
        "empty rows": items_of([[], []]),
        "no meta_info": [{"embedding": [1.5, 2.5]}],
    }
    for name, items in cases.items():
        for encoding_format in ("float", "base64"):
            if name == "special" and encoding_format == "base64":
                continue  # 1e300: struct.pack refuses it (below)
            off[name, encoding_format] = answer(original, items, encoding_format)
    assert sglang_plugin.patch_serving(module)
    patched = module.OpenAIServingEmbedding
    assert patched._build_embedding_response.__tensorb64_replaces__ is not None
    for (name, encoding_format), expected in off.items():
        got = answer(patched, cases[name], encoding_format)
        assert got == expected, (name, encoding_format)
        assert got[0] == 200 and got[1] == "application/json"
    first = json.loads(off["3x5", "float"][2])
    assert list(first) == ["data", "model", "object", "usage"] and list(first["data"][0]) == ["embedding", "index", "object"]


def test_what_it_does_not_write_goes_to_sglangs_own(sglang_tree, monkeypatch):
    """NaN and infinity (orjson's null), ints, rows of other lengths, a value past float32 in
    base64 (struct.pack's error), a request not over HTTP (the gRPC bridge's): SGLang's own answer,
    exactly, and the plugin's writer is never asked."""
    import importlib

    module = importlib.import_module(MODULE)
    original = module.OpenAIServingEmbedding
    nan_rows = items_of([[0.5, float("nan")], [float("inf"), -float("inf")]])
    cases = [
        (nan_rows, "float"),
        (nan_rows, "base64"),
        (items_of([[1, 2.5], [3.0, 4.0]]), "float"),
        (items_of([[1.0, 2.5], [3.0]]), "float"),
        (items_of([[1.0], [3.0, 4.0]]), "base64"),
    ]
    off = [answer(original, items, fmt) for items, fmt in cases]
    assert b"null" in off[0][2]
    assert sglang_plugin.patch_serving(module)
    patched = module.OpenAIServingEmbedding
    for (items, fmt), expected in zip(cases, off, strict=True):
        assert answer(patched, items, fmt) == expected
    # past float32's range: SGLang's own struct.pack raises, the same error either way
    too_big = items_of([[1e39, 0.0]])
    with pytest.raises(OverflowError):
        answer(original, too_big, "base64")
    with pytest.raises(OverflowError):
        answer(patched, too_big, "base64")
    # not over HTTP: SGLang's own EmbeddingResponse, not a body
    serving = patched(TokenizerManager(items_of(rows_f32(2, 8))))
    result = asyncio.run(serving._handle_non_streaming_request(None, Request("base64"), None))
    assert isinstance(result, module.EmbeddingResponse)
    # a failure inside the plugin: SGLang's own answer, logged once
    monkeypatch.setattr(sglang_plugin, "_envelope_members", lambda envelope: 1 / 0)
    expected = answer(original, items_of(rows_f32(2, 8)), "float")
    assert answer(patched, items_of(rows_f32(2, 8)), "float") == expected


def test_patched_once_on_import_and_kept_off_when_asked(sglang_tree, monkeypatch):
    import importlib

    monkeypatch.setenv(sglang_plugin.ENABLE_VARIABLE, "0")
    sglang_plugin.register()
    module = importlib.import_module(MODULE)
    assert not hasattr(module.OpenAIServingEmbedding._build_embedding_response, "__tensorb64_replaces__")
    monkeypatch.delenv(sglang_plugin.ENABLE_VARIABLE)
    sglang_plugin.register()  # (already imported: applied at once)
    build = module.OpenAIServingEmbedding._build_embedding_response
    assert build.__tensorb64_replaces__ is not None
    sglang_plugin.register()
    assert sglang_plugin.patch_serving(module)
    assert module.OpenAIServingEmbedding._build_embedding_response is build  # not wrapped twice


def test_another_release_is_left_alone(caplog):
    """A builder with other parameters (another SGLang release): untouched, one warning."""
    import types

    class OpenAIServingEmbedding:
        def _build_embedding_response(self, ret, encoding_format="float", dimensions=None):
            return "sglang's own"

        async def _handle_non_streaming_request(self, adapted_request, request, raw_request):
            return "sglang's own"

    module = types.SimpleNamespace(__name__=MODULE, OpenAIServingEmbedding=OpenAIServingEmbedding,
                                   EmbeddingResponse=object, UsageInfo=object)
    build = OpenAIServingEmbedding._build_embedding_response
    with caplog.at_level(logging.WARNING, logger=sglang_plugin.logger.name):
        assert not sglang_plugin.patch_serving(module)
    assert OpenAIServingEmbedding._build_embedding_response is build
    assert [r.levelname for r in caplog.records] == ["WARNING"] and "SGLang's own is kept" in caplog.records[0].message


def test_read_rows_reads_python_floats_exactly():
    """The native list reader: each value the double its float holds; anything else refused."""
    rows = rows_f32(3, 7) + [SPECIAL[:7]]
    got = sglang_plugin.read_rows(items_of(rows))
    assert got.dtype == np.float64 and got.tobytes() == np.array(rows, dtype=np.float64).tobytes()
    assert sglang_plugin.read_rows(items_of([[1.0, 2]])) is None  # an int
    assert sglang_plugin.read_rows(items_of([[1.0], [1.0, 2.0]])) is None
    assert sglang_plugin.read_rows([{"embedding": "abc"}]) is None
    assert sglang_plugin.read_rows([{"no embedding": []}]) is None
