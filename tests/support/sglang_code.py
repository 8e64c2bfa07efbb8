"""SGLang 0.5.23's own embeddings code, read from its wheel, and a FastAPI route declared as
SGLang's, for the SGLang plugin's tests and its bench.

SGLang's serving module cannot be imported here (it imports SGLang's runtime: its managers, its GPU
kernels' package), so what SGLang's route runs for a /v1/embeddings request is read from its wheel:
its response models (protocol.py) and its OpenAIServingEmbedding methods
(_handle_non_streaming_request, _serialize_embedding, _build_embedding_response), each as written,
into modules of the same names. Its tokenizer manager is replaced by one that hands the rows over as
SGLang's does (lists of Python floats). A request goes through a FastAPI route declared as SGLang
declares its own (response_class ORJSONResponse), driven as an ASGI app: the bytes are what SGLang's
route sends, rendered by the installed FastAPI.
"""

import ast
import asyncio
import pathlib
import sys
import zipfile

SERVING_MODULE = "sglang.srt.entrypoints.openai.serving_embedding"
PROTOCOL_CLASSES = ("PromptTokensDetails", "CompletionTokensDetails", "UsageInfo", "EmbeddingObject", "EmbeddingResponse")
SERVING_METHODS = ("_handle_non_streaming_request", "_serialize_embedding", "_build_embedding_response")


def _definitions(source: str, names, kinds):
    found = {node.name: node for node in ast.parse(source).body if isinstance(node, kinds)}
    missing = [name for name in names if name not in found]
    if missing:
        raise LookupError(f"SGLang's source has no {missing}")
    return found


def sources(wheel: str) -> dict[str, str]:
    """The modules' paths and sources, as read from SGLang's wheel."""
    with zipfile.ZipFile(wheel) as z:
        protocol = z.read("sglang/srt/entrypoints/openai/protocol.py").decode()
        serving = z.read(SERVING_MODULE.replace(".", "/") + ".py").decode()
    classes = _definitions(protocol, PROTOCOL_CLASSES, ast.ClassDef)
    # protocol.py's own imports from typing and pydantic, then the classes
    imports = [ast.get_source_segment(protocol, node) for node in ast.parse(protocol).body
               if isinstance(node, ast.ImportFrom) and node.module in ("__future__", "typing", "pydantic")]
    protocol_module = "\n".join(imports) + "\n\n\n" + "\n\n\n".join(
        ast.get_source_segment(protocol, classes[name]) for name in PROTOCOL_CLASSES) + "\n"
    (cls,) = _definitions(serving, ["OpenAIServingEmbedding"], ast.ClassDef).values()
    methods = {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    missing = [name for name in SERVING_METHODS if name not in methods]
    if missing:
        raise LookupError(f"SGLang's OpenAIServingEmbedding has no {missing}")
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
        SERVING_MODULE.replace(".", "/") + ".py": serving_module,
    }


def install(modules: dict[str, str], folder: pathlib.Path) -> None:
    """Writes the modules under folder (with the packages' __init__.py) and puts it first on
    sys.path; uninstall(folder) undoes it."""
    for path, source in modules.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        for parent in target.relative_to(folder).parents:
            if parent.parts:
                (folder / parent / "__init__.py").touch()
        target.write_text(source, encoding="utf-8")  # (Python reads sources as UTF-8; Windows would write its code page)
    sys.path.insert(0, str(folder))


def uninstall(folder: pathlib.Path) -> None:
    sys.path.remove(str(folder))
    for name in [n for n in sys.modules if n.split(".")[0] in ("sglang", "dynamo")]:
        del sys.modules[name]


class TokenizerManager:
    """SGLang's, as far as the embeddings handler uses it: each request answered with the items
    given (each row a list of Python floats, as SGLang's scheduler hands them to its API process)."""

    model_path = "tiny-model/é"

    def __init__(self, items):
        self.items = items

    def generate_request(self, adapted_request, raw_request):
        async def answer():
            yield self.items

        return answer()


class EmbeddingRequest:
    def __init__(self, encoding_format):
        self.encoding_format = encoding_format


def route(serving_cls, items, response_class=None):
    """A FastAPI app with SGLang's /v1/embeddings route (response_class ORJSONResponse, or the one
    given) answering every request with `items`; ?encoding_format= as the request's."""
    from fastapi import FastAPI, Request
    from fastapi.responses import ORJSONResponse

    app = FastAPI()
    serving = serving_cls(TokenizerManager(items))

    async def openai_v1_embeddings(raw_request: Request):  # (evaluated here: FastAPI reads it)
        request = EmbeddingRequest(raw_request.query_params.get("encoding_format", "float"))
        return await serving._handle_non_streaming_request(None, request, raw_request)

    app.post("/v1/embeddings", response_class=response_class or ORJSONResponse)(openai_v1_embeddings)
    return app


async def request(app, encoding_format: str):
    """(status, content type, body) of one POST /v1/embeddings to the ASGI app."""
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/v1/embeddings", "raw_path": b"/v1/embeddings",
             "query_string": f"encoding_format={encoding_format}".encode(), "root_path": "",
             "headers": [(b"content-type", b"application/json")], "client": ("127.0.0.1", 1), "server": ("t", 80)}
    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], headers.get("content-type"), body


def answer(serving_cls, items, encoding_format: str, response_class=None):
    return asyncio.run(request(route(serving_cls, items, response_class), encoding_format))


DYNAMO_MODULE = "dynamo.sglang.request_handlers.embedding.embedding_handler"


def dynamo_sources(wheel: str) -> dict[str, str]:
    """Dynamo 1.6.1's SGLang worker's row encoder, _encode_floats_to_base64, as read from its wheel,
    with the imports it uses, in a module of its own name (the rest of the module imports SGLang's
    engine)."""
    with zipfile.ZipFile(wheel) as z:
        source = z.read(DYNAMO_MODULE.replace(".", "/") + ".py").decode()
    (function,) = _definitions(source, ["_encode_floats_to_base64"], ast.FunctionDef).values()
    header = "import base64\nimport struct\nfrom typing import List\n\n\n"
    return {DYNAMO_MODULE.replace(".", "/") + ".py": header + ast.get_source_segment(source, function) + "\n"}
