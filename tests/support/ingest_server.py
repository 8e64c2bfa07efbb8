"""What the ingestion tests share (tests/test_embeddings_http.py, tests/test_ingest.py): a table of
vectors, the local server's answers in each real server's shape, servers that fail, the
reference reading of a body (json.loads, then numpy float32, as a client reads it today), and a
self-signed certificate for a server on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import threading
from pathlib import Path

import numpy as np

from tests.support.embeddings_server import Written, row_numbers

# (layout, encoding_format, float_format): the bodies as vLLM (orjson's shortest digits), SGLang
# (orjson of Python floats: repr's digits) and OpenAI (base64 by default) write them.
SHAPES = [("vllm", "float", "shortest"), ("vllm", "base64", "shortest"), ("sglang", "float", "repr"),
          ("sglang", "base64", "repr"), ("openai", "base64", "repr"), ("openai", "float", "repr")]


def vectors(rows: int, width: int, seed: int = 0) -> np.ndarray:
    """Float32 N(0, 0.05) rows with the edges of float text among them (subnormals, ±0, extremes)."""
    x = np.random.default_rng(seed).normal(0, 0.05, (rows, width)).astype(np.float32)
    x.flat[:6] = [0.0, -0.0, 1e-45, -3.4028235e38, 1.1754942e-38, 0.1]
    return x


def reference(body: bytes) -> np.ndarray:
    """The rows of a body as json.loads + numpy give them: by index, float text to double to
    float32, base64 as little-endian float32 bytes."""
    data = sorted(json.loads(body)["data"], key=lambda entry: entry["index"])
    if data and isinstance(data[0]["embedding"], str):
        return np.array([np.frombuffer(base64.b64decode(e["embedding"]), "<f4") for e in data], np.float32)
    return np.array([e["embedding"] for e in data], np.float32)


def expected(table: np.ndarray, texts, *, layout: str, encoding_format: str, float_format: str,
             dimensions: int | None = None) -> np.ndarray:
    """What a client must read for ``texts``: the reference reading of the body the server sends."""
    status, _, body = Written(table, layout=layout, float_format=float_format)(
        {"input": list(texts), "model": "m", "encoding_format": encoding_format, "dimensions": dimensions})
    assert status == 200
    return reference(body)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.view(np.uint32), b.view(np.uint32))


class Failing:
    """``answer``, but the first ``failures`` requests (and each request of rows listed in
    ``always``, for good) are refused: ``status`` with ``body`` and ``headers`` (a Retry-After)."""

    def __init__(self, answer, *, failures: int = 0, status: int = 503, body: bytes = b'{"message":"overloaded"}',
                 headers: dict | None = None, always: set | None = None):
        self.answer, self.failures, self.status, self.body = answer, failures, status, body
        self.headers, self.always = headers or {}, always or set()
        self.refused = 0
        self._lock = threading.Lock()

    def __call__(self, request: dict):
        with self._lock:
            refuse = self.refused < self.failures or bool(self.always & set(row_numbers(request["input"])))
            self.refused += refuse
        return (self.status, self.headers, self.body) if refuse else self.answer(request)


def self_signed(folder: Path) -> tuple[Path, ssl.SSLContext] | None:
    """A certificate for 127.0.0.1 that no client trusts unless told to (its file, for a client's
    ``verify``), and a server context holding it; None where the openssl command is missing."""
    if shutil.which("openssl") is None:
        return None
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return cert, context
