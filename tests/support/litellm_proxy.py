"""LiteLLM's proxy in front of a local embeddings upstream: the one launcher of the gateway tests
(tests/test_litellm_proxy_server.py) and the gateway bench (benchmarks/litellm_proxy_bench.py),
run in the venv ci/litellm_proxy_check.sh builds.

* ``Upstream``: a ``/v1/embeddings`` server on 127.0.0.1 answering as the servers a gateway sits in
  front of answer, chosen by the first segment of the path (so one upstream serves every
  deployment of a proxy's config through its ``api_base``):

      /vllm/v1/embeddings       vLLM's body: ``id, object, created, model, data, usage`` (usage with
                                ``completion_tokens`` 0 and ``prompt_tokens_details`` null), entries
                                ``index, object, embedding``, float rows in orjson's digits
      /openai/v1/embeddings     OpenAI's: ``object, data, model, usage``, entries ``object, index,
                                embedding``, float rows in float32's shortest digits
      /openai/openai/deployments/NAME/embeddings
                                the same, at the path Azure's client posts to
      /pretty/v1/embeddings     OpenAI's body indented as OpenAI's API sends it
      /integers/v1/embeddings   OpenAI's body with every integral value written as an integer
      /flaky/v1/embeddings      429 to every odd sighting of a request body, then vLLM's body
      /status/CODE/v1/...       that status with OpenAI's error body
      /malformed/v1/embeddings  200 with a body that is not JSON
      /ragged/v1/embeddings     200 with rows of two lengths

  The rows are a fixed table (``table(dim)``): a text's row is its last word as a number (``"row
  17"``: row 17 of the table, modulo its size; any other text: row 0), so a body is a function of
  the request; ``dimensions`` cuts the rows. Bodies are written by tensorb64's ``response_body``
  (its output is checked against json.dumps by the package's own tests) and kept, so that the
  upstream's share of a request is a lookup: ``python -m tests.support.litellm_proxy upstream
  PORT`` serves it in a process of its own (the bench's), ``Upstream().start()`` on a thread (the
  tests').
* ``Proxy``: ``litellm --config FILE`` on a free port, in a process group of its own, with a config
  written from a model list (each deployment's ``api_base`` a path of the upstream) and
  ``litellm_settings``; ``tensorb64=True`` adds ``callbacks: ["tensorb64.litellm_proxy.handler"]``,
  the one line a user adds.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import sys
import threading
import urllib.request

import numpy as np

from tests.support.server_process import ServerProcess

MASTER_KEY = "sk-tensorb64-test-" + "0123456789abcdef" * 2  # the proxy refuses to start without one
ROWS = 128  # the table's rows
LAYOUT_PATHS = ("vllm", "openai", "pretty", "integers", "flaky", "malformed", "ragged", "status")


def table(dim: int) -> np.ndarray:
    """ROWS float32 rows of length ``dim``: unit-norm random rows (as embedding models give),
    except row 1 (float32's extremes, subnormals, signed zeros, integral values) and row 2 (values
    whose float32 shortest text has every length from 1 to 9 digits)."""
    rng = np.random.default_rng(dim)
    rows = rng.standard_normal((ROWS, dim)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    specials = np.array([3.4028235e38, -3.4028235e38, 1.17549435e-38, 1e-45, -1e-45, 0.0, -0.0, 1.0, -2.0, 0.1,
                         123456.0, 1e-7, 16777216.0], dtype=np.float32)
    rows[1] = np.resize(specials, dim)
    rows[2] = np.resize(np.float32(1) / np.arange(1, 10, dtype=np.float32), dim)
    return rows


def row_numbers(texts) -> list[int]:
    if isinstance(texts, str):
        texts = [texts]
    numbers = []
    for text in texts:
        word = str(text).rsplit(" ", 1)[-1]
        numbers.append(int(word) % ROWS if word.isdigit() else 0)
    return numbers


def _error_body(status: int) -> bytes:
    return json.dumps({"error": {"message": f"upstream says {status}", "type": "invalid_request_error",
                                 "param": None, "code": str(status)}}).encode()


class Bodies:
    """The upstream's answers, each body written once per distinct request and kept."""

    def __init__(self) -> None:
        self._tables: dict[int, np.ndarray] = {}
        self._bodies: dict[tuple, bytes] = {}
        self._sightings: dict[bytes, int] = {}
        self._lock = threading.Lock()

    def table(self, dim: int) -> np.ndarray:
        with self._lock:
            if dim not in self._tables:
                self._tables[dim] = table(dim)
            return self._tables[dim]

    def answer(self, path: str, raw: bytes) -> tuple[int, bytes]:
        parts = path.strip("/").split("/")
        kind = parts[0]
        if kind == "status":
            return int(parts[1]), _error_body(int(parts[1]))
        if kind == "malformed":
            return 200, b'{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,'
        if kind == "flaky":
            with self._lock:
                sighting = self._sightings[raw] = self._sightings.get(raw, 0) + 1
            if sighting % 2:  # (so that each of several proxies sent the same request sees it too)
                return 429, _error_body(429)
        request = json.loads(raw)
        model = request["model"]
        dim = int(re.search(r"(\d+)$", model).group(1)) if re.search(r"(\d+)$", model) else 64
        fmt = request.get("encoding_format") or "float"
        key = (kind, model, fmt, request.get("dimensions"), tuple(row_numbers(request["input"])))
        with self._lock:
            body = self._bodies.get(key)
        if body is None:
            body = self._write(kind, model, fmt, request.get("dimensions"), self.table(dim)[list(key[-1])])
            with self._lock:
                self._bodies[key] = body
        return 200, body

    @staticmethod
    def _write(kind: str, model: str, fmt: str, dimensions, rows: np.ndarray) -> bytes:
        from tensorb64.openai import response_body

        n = len(rows)
        if kind in ("vllm", "flaky"):
            usage = {"prompt_tokens": n, "total_tokens": n, "completion_tokens": 0, "prompt_tokens_details": None}
            return response_body(rows, model=model, encoding_format=fmt, dimensions=dimensions, usage=usage,
                                 layout="vllm", float_format="shortest",
                                 extra={"id": "embd-0123456789abcdef", "created": 1764806400})
        usage = {"prompt_tokens": n, "total_tokens": n}
        body = response_body(rows, model=model, encoding_format=fmt, dimensions=dimensions, usage=usage,
                             float_format="shortest")
        if kind == "pretty":  # OpenAI's API indents its bodies
            return json.dumps(json.loads(body), indent=2).encode()
        if kind == "integers":  # a server that writes 1.0 as 1
            return re.sub(rb"(?<=[\[,])(-?\d+)\.0(?=[,\]])", rb"\1", body)
        if kind == "ragged":
            return body.replace(b"]}", b",0.5]}", 1)
        return body


def handler_for(bodies: Bodies):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            path = self.path.split("?")[0]
            if path.endswith("/embeddings") and path.strip("/").split("/")[0] in LAYOUT_PATHS:
                status, body = bodies.answer(path, raw)
            else:
                status, body = 404, _error_body(404)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # /health
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    return Handler


class Upstream:
    """The upstream on threads of this process: ``url(kind)`` is an ``api_base``."""

    def __init__(self, port: int = 0) -> None:
        self.bodies = Bodies()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler_for(self.bodies))
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def start(self) -> Upstream:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def api_base(port: int, kind: str) -> str:
    return f"http://127.0.0.1:{port}/{kind}/v1"


def deployment(name: str, model: str, base: str, **params) -> dict:
    """One entry of a config's ``model_list``."""
    return {"model_name": name, "litellm_params": {"model": model, "api_base": base, "api_key": "sk-upstream", **params}}


def config_text(model_list: list[dict], *, tensorb64: bool, litellm_settings: dict | None = None,
                router_settings: dict | None = None) -> str:
    """A proxy config (JSON is YAML): the model list, the master key, and with ``tensorb64`` the
    one callback line."""
    settings = dict(litellm_settings or {})
    if tensorb64:
        settings["callbacks"] = ["tensorb64.litellm_proxy.handler", *settings.get("callbacks", [])]
    config = {"model_list": model_list, "general_settings": {"master_key": MASTER_KEY}}
    if settings:
        config["litellm_settings"] = settings
    if router_settings:
        config["router_settings"] = router_settings
    return json.dumps(config, indent=1)


# What every proxy here runs with: LiteLLM's cost map from its own package (not the network), no
# telemetry, and no per-request log line (it would be measured too).
PROXY_ENVIRONMENT = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False",
                     "LITELLM_LOG": "ERROR", "DISABLE_SCHEMA_UPDATE": "True"}


class Proxy(ServerProcess):
    """``litellm --config`` of ``config_text(...)`` on a free port: ``url`` is its base."""

    what = "LiteLLM's proxy"

    def __init__(self, label: str, tmp, config: str, env: dict | None = None, workers: int = 1) -> None:
        os.makedirs(tmp, exist_ok=True)
        super().__init__(label, tmp)
        path = os.path.join(tmp, "config.yaml")
        with open(path, "w") as f:
            f.write(config)
        litellm = os.path.join(os.path.dirname(sys.executable), "litellm")
        command = [litellm, "--config", path, "--host", "127.0.0.1", "--port", str(self.port),
                   "--num_workers", str(workers)]
        self.start(command, {**os.environ, **PROXY_ENVIRONMENT, **(env or {})}, cwd=tmp)
        self.url = f"http://127.0.0.1:{self.port}"

    def wait_healthy(self, timeout: float = 300) -> None:
        deadline_path = "/health/liveliness"
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.what} ({self.label}) exited with {self.process.returncode}:\n"
                                   f"{self.output()[-6000:]}")
            try:
                with urllib.request.urlopen(self.url + deadline_path, timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"{self.what} ({self.label}) not healthy after {timeout} s:\n{self.output()[-6000:]}")


def main(argv: list[str]) -> None:
    if argv[:1] == ["upstream"]:
        upstream = Upstream(int(argv[1]) if len(argv) > 1 else 0)
        print(upstream.port, flush=True)
        upstream.httpd.serve_forever()
    else:
        raise SystemExit("usage: python -m tests.support.litellm_proxy upstream [PORT]")


if __name__ == "__main__":
    main(sys.argv[1:])
