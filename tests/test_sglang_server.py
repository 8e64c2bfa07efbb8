"""The SGLang plugin in a real SGLang 0.5.23 server on the CPU.

Opt-in (`-m sglang`) and run by ci/sglang_check.sh, which builds a venv with SGLang (its wheel
without its CUDA dependencies; its import dependencies; torch 2.13's CPU build; import-only
stand-ins for torchvision and sgl_kernel, which satisfy imports and nothing else:
tests/support/sglang_server.py), the openai client and the wheel under test; where SGLang is not
installed the module is skipped, saying so.

Three servers of one tiny random Qwen3 embedding model (hidden size 384, made here from a config,
nothing downloaded), started at once (tests/support/sglang_server.py): the plugin on (as
installed), off (``TENSORB64_SGLANG=0``), and on with two HTTP workers
(``--tokenizer-worker-num 2``, where SGLang's ``load_plugins()`` never runs in the processes that
answer). Each request goes to all three, through the official openai client (raw bodies read) or
raw HTTP, and the bodies must be the same bytes: SGLang's response carries no per-request id or
time.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import tempfile
import urllib.error
import urllib.request

import pytest

pytest.importorskip("sglang", reason="SGLang is not installed here (ci/sglang_check.sh builds a venv with it)")
openai = pytest.importorskip("openai", reason="the openai client is not installed")

from tests.support.sglang_server import Server, make_model  # noqa: E402

pytestmark = pytest.mark.sglang

HIDDEN_SIZE = 384
WORDS = "embeddings on the wire measured end to end through an api server of a tiny random model".split()
TEXTS = ["hello world", "embeddings on the wire", "one", "Ünïcödé, and words the tokenizer has never seen",
         " ".join(WORDS * 3), "one two three four five six seven eight nine ten"]
BATCH_OF_64 = [" ".join(WORDS[i % len(WORDS) : i % len(WORDS) + 1 + i % 5]) for i in range(64)]
TOKEN_IDS = [[5, 6, 7], [8], [9, 10, 11, 12, 13]]


@pytest.fixture(scope="module")
def servers():
    root = pathlib.Path(tempfile.mkdtemp(prefix="sglang-servers-", dir=os.environ.get("TENSORB64_SGLANG_SERVER_TMP")))
    model = make_model(root / "model", HIDDEN_SIZE)
    started = []
    try:
        for label, arguments, env in (("on", [], {}), ("off", [], {"TENSORB64_SGLANG": "0"}),
                                      ("on, 2 HTTP workers", ["--tokenizer-worker-num", "2"], {})):
            (root / label).mkdir()
            started.append(Server(label, root / label, model, arguments, env))
        for server in started:
            server.wait_healthy(timeout=900)
        yield {server.label: server for server in started}
    finally:
        for server in started:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


def create(server, inputs, **options):
    """The raw body and the openai client's reading of it, for embeddings.create(...)."""
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="unused", max_retries=0, timeout=120)
    raw = client.embeddings.with_raw_response.create(model="tiny-embedding", input=inputs, **options)
    assert raw.http_response.status_code == 200 and raw.http_response.headers["content-type"] == "application/json"
    return raw.http_response.content, raw.parse()


def post(server, payload: dict):
    """(status, content type, body) of a raw POST /v1/embeddings."""
    request = urllib.request.Request(server.url, data=json.dumps(payload).encode(), headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, response.headers["content-type"], response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["content-type"], error.read()


def test_plugin_loaded_only_when_on(servers):
    assert "are written by tensorb64" in servers["on"].output()
    assert "tensorb64:" not in servers["off"].output()  # (SGLang's own lines name the entry point)


INPUTS = {"1 text": TEXTS[:1], "6 texts": TEXTS, "64 texts": BATCH_OF_64, "a string": TEXTS[1], "token ids": TOKEN_IDS}


@pytest.mark.parametrize("encoding_format", ["float", "base64", None], ids=["float", "base64", "the client's default"])
@pytest.mark.parametrize("inputs", INPUTS.values(), ids=INPUTS.keys())
def test_bodies_are_sglangs_own(servers, inputs, encoding_format):
    """Through the openai client (its default: it asks for base64 and decodes it itself): the same
    bytes from all three servers, and the same embeddings read from them."""
    options = {} if encoding_format is None else {"encoding_format": encoding_format}
    off_body, off = create(servers["off"], inputs, **options)
    count = 1 if isinstance(inputs, str) else len(inputs)
    assert len(off.data) == count and [d.index for d in off.data] == list(range(count))
    # (given base64, the client hands over the strings; not given it, it decodes them itself)
    width = 4 * -(-HIDDEN_SIZE * 4 // 3) if encoding_format == "base64" else HIDDEN_SIZE
    assert all(len(d.embedding) == width for d in off.data)
    assert (b'"embedding":"' in off_body) == (encoding_format != "float")
    for label in ("on", "on, 2 HTTP workers"):
        for _ in range(2 if "workers" in label else 1):  # (each worker, likely: uvicorn's share out connections)
            body, parsed = create(servers[label], inputs, **options)
            assert body == off_body, label
            assert [d.embedding for d in parsed.data] == [d.embedding for d in off.data]


@pytest.mark.parametrize("payload", [
    {"input": TEXTS},  # no encoding_format: SGLang's default, float
    {"input": TEXTS, "encoding_format": "base64", "dimensions": 100},
    {"input": TEXTS[:2], "encoding_format": "float", "dimensions": 100},
    {"input": TEXTS, "encoding_format": "float16"},  # refused by SGLang: its error body
    {"input": []},
    {"input": ["  "]},
], ids=["no encoding_format", "base64, dimensions", "float, dimensions", "float16", "no input", "blank input"])
def test_raw_requests_are_answered_as_sglang_answers(servers, payload):
    """Raw HTTP (what the client does not send): status, content type and body the same bytes."""
    payload = {"model": "tiny-embedding", **payload}
    expected = post(servers["off"], payload)
    assert post(servers["on"], payload) == expected
    assert post(servers["on, 2 HTTP workers"], payload) == expected


def test_every_http_worker_has_the_plugin(servers):
    """With --tokenizer-worker-num 2 the requests are answered by two spawned HTTP workers, where
    SGLang never calls load_plugins(): each imported the plugin (the app it loads is the plugin's
    http_worker_app, which registers it first; its native extension is mapped), and no process
    declined or failed (a warning would say so). The servers without extra workers have none."""
    workers = {pid: cmd for pid, cmd in servers["on, 2 HTTP workers"].processes().items()
               if cmd.startswith("sglang::tokenizer_worker")}
    assert len(workers) == 2, workers
    for pid in workers:
        with open(f"/proc/{pid}/maps") as f:
            assert "tensorb64/_native" in f.read(), workers[pid]
    for label in ("on", "off"):
        assert not any(cmd.startswith("sglang::tokenizer_worker") for cmd in servers[label].processes().values())
    output = servers["on, 2 HTTP workers"].output()
    assert "is not one tensorb64 knows" not in output and "writing an embeddings body failed" not in output


def test_plugin_never_failed_over(servers):
    """After the requests above: none had its body written by SGLang's own builder because the
    plugin's failed (which it logs once)."""
    for label in ("on", "on, 2 HTTP workers"):
        assert "writing an embeddings body failed" not in servers[label].output()
