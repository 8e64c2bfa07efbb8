"""A local ``/v1/embeddings`` server on 127.0.0.1 for the ingestion tests (tests/test_ingest.py,
tests/test_embeddings_http.py) and the ingestion bench (benchmarks/ingest_bench.py): a threaded
HTTP/1.1 server with keep-alive, whose answers come from a function of the request, so that what
is measured or tested is the client.

Texts are row numbers: the text ``"17"`` (or ``"row 17"``: the last word) is row 17 of a table
of vectors, so that a client's order can be checked against the table (any other text: row 0).

  Precomputed(table)   the bench's answers: each row's embedding text written once beforehand
                       (base64 and float), a body joined from them per request (OpenAI's layout),
                       its cost per request measured (``handler_cpu_s``)
  Written(table)       the tests' answers: the whole body written per request by
                       tensorb64.openai.response_body in a server's layout (vLLM, SGLang, OpenAI)
                       and float format, ``dimensions`` honoured, as those servers write them
"""

from __future__ import annotations

import http.server
import json
import ssl
import threading
import time
from collections.abc import Callable

import numpy as np

import tensorb64
from tensorb64.openai import response_body

# answer(request JSON) -> (status, headers, body)
Answer = Callable[[dict], tuple[int, dict, bytes]]


def row_numbers(texts) -> list[int]:
    """Each text's row: its last word as a number, else row 0 (a client's probe of the width)."""
    words = [str(t).rsplit(" ", 1)[-1] for t in texts]
    return [int(w) if w.isdigit() else 0 for w in words]


class Written:
    """Bodies written per request by response_body: ``layout`` ("vllm", "sglang", "openai"),
    ``float_format`` for float bodies ("shortest": vLLM's orjson digits; "repr": json.dumps's,
    SGLang's and OpenAI's), rows cut to the request's ``dimensions``."""

    def __init__(self, table: np.ndarray, *, layout: str = "vllm", float_format: str = "shortest"):
        self.table, self.layout, self.float_format = table, layout, float_format

    def __call__(self, request: dict) -> tuple[int, dict, bytes]:
        rows = self.table[row_numbers(request["input"])]
        extra = {"id": "embd-test", "created": 1764633600} if self.layout == "vllm" else None
        body = response_body(rows, model=request["model"], encoding_format=request.get("encoding_format", "float"),
                             dimensions=request.get("dimensions"), float_format=self.float_format, layout=self.layout,
                             usage={"prompt_tokens": len(rows), "total_tokens": len(rows)}, extra=extra)
        return 200, {}, body


class Precomputed:
    """Bodies joined per request from each row's embedding text written beforehand (OpenAI's
    layout: the same bytes response_body writes), so that the server's cost per request is a
    join: ``handler_cpu_s`` sums the CPU time of every answer."""

    def __init__(self, table: np.ndarray, float_format: str = "shortest"):
        self.table = table
        self.rows = {"base64": [s.encode() for s in tensorb64.encode_rows(table)],
                     "float": tensorb64.json_rows(table, float_format=float_format)}
        self.handler_cpu_s, self.requests = 0.0, 0
        self._lock = threading.Lock()

    def __call__(self, request: dict) -> tuple[int, dict, bytes]:
        started = time.thread_time()
        texts = self.rows[request.get("encoding_format", "float")]
        quote = b'"' if request.get("encoding_format") == "base64" else b""
        parts = [b'{"object":"list","data":[']
        for k, i in enumerate(row_numbers(request["input"])):
            parts += (b',{"object":"embedding","index":' if k else b'{"object":"embedding","index":', str(k).encode(),
                      b',"embedding":', quote, texts[i % len(texts)], quote, b"}")
        n = len(request["input"])
        parts.append(f'],"model":{json.dumps(request["model"])},"usage":{{"prompt_tokens":{n},"total_tokens":{n}}}}}'.encode())
        body = b"".join(parts)
        with self._lock:
            self.handler_cpu_s += time.thread_time() - started
            self.requests += 1
        return 200, {}, body


class LocalServer:
    """``answer`` served at ``http://127.0.0.1:PORT/v1/embeddings`` on threads of this process
    (``base_url`` is ``http://127.0.0.1:PORT/v1``; ``https://`` with ``tls``, a server-side
    ``ssl.SSLContext``); a context manager. ``requests`` counts the requests answered,
    ``last_headers`` the headers of the last one."""

    def __init__(self, answer: Answer, tls: ssl.SSLContext | None = None):
        self.answer, self.requests, self.last_headers = answer, 0, {}
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the servers measured here answer

            def log_message(self, *args):  # no line per request
                pass

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    server.requests += 1
                    server.last_headers = dict(self.headers)
                if self.path.rstrip("/") != "/v1/embeddings":
                    status, headers, body = 404, {}, b'{"message":"not found"}'
                else:
                    status, headers, body = server.answer(request)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

        lock = threading.Lock()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        if tls is not None:  # each connection's handshake made by its own thread, on its first read
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True, do_handshake_on_connect=False)
        self.base_url = f"{'https' if tls else 'http'}://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), name="local-embeddings-server", daemon=True)

    def __enter__(self) -> LocalServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(10)
