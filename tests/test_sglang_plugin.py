"""The SGLang plugin (tensorb64.sglang_plugin) against SGLang 0.5.23's own code: its response models
and embeddings handler read from its wheel behind a FastAPI route declared as SGLang's
(tests/support/sglang_code.py says how), plugin off against plugin on, byte for byte.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os

import numpy as np
import pytest

from tensorb64 import sglang_plugin
from tensorb64._hosts import dynamo_sglang, patching
from tensorb64._hosts import sglang as sglang_host
from tensorb64._hosts.patching import install_module

pytest.importorskip("fastapi", reason="fastapi (the test extra) is not installed")
pytest.importorskip("orjson", reason="orjson (the test extra) is not installed")
from tests.support import sglang_code  # noqa: E402
from tests.support.sglang_code import EmbeddingRequest, TokenizerManager  # noqa: E402

MODULE = sglang_host.SERVING_MODULE
assert MODULE == sglang_code.SERVING_MODULE
# ORJSONResponse, as SGLang's route uses it, is deprecated in recent FastAPI releases.
pytestmark = pytest.mark.filterwarnings("ignore:ORJSONResponse is deprecated")


@pytest.fixture(scope="module")
def sglang_sources():
    wheel = os.environ.get("TENSORB64_SGLANG_WHEEL")
    if not wheel:
        pytest.skip("TENSORB64_SGLANG_WHEEL (a path to sglang's wheel; ci/sglang_check.sh sets it) is not set")
    return sglang_code.sources(wheel)


@pytest.fixture
def sglang_tree(sglang_sources, tmp_path):
    """SGLang's modules (as read from its wheel) importable, and gone again after the test."""
    sglang_code.install(sglang_sources, tmp_path)
    try:
        yield
    finally:
        sglang_code.uninstall(tmp_path)


@pytest.fixture(autouse=True)
def http_app_setting(monkeypatch):
    """SGLang's HTTP worker app setting, which register() sets, as it was after each test."""
    monkeypatch.setenv(sglang_plugin.HTTP_APP_VARIABLE, "")


def items_of(rows, tokens=3):
    return [{"embedding": row, "meta_info": {"prompt_tokens": tokens + i}} for i, row in enumerate(rows)]


def rows_f32(batch, dim, seed=0, scale=0.05):
    x = np.random.default_rng(seed).normal(0, scale, (batch, dim)).astype(np.float32)
    return x.tolist()


SPECIAL = [0.0, -0.0, 1e-45, -1e-45, 1.1754944e-38, 3.4028234663852886e38, -3.4028234663852886e38, 1e-7, 1e16,
           123456789.0, 0.1, 1 / 3, 2.999999892949745e-8, 5e-324, 1e300, -2.5e-39]


answer = sglang_code.answer


def test_bodies_are_sglangs_own(sglang_tree, monkeypatch):
    """Plugin on against off, byte for byte (status and content type too), float and base64, over
    shapes, values that are float32 values (what SGLang's rows hold) and doubles that are not;
    every one of these bodies written by the plugin, none by SGLang's own builder."""
    import importlib

    written = []
    body_of = sglang_host.embedding_body
    monkeypatch.setattr(sglang_host, "embedding_body", lambda *a: written.append(body_of(*a)) or written[-1])

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
    assert install_module(sglang_host.SGLANG, sglang_host.SERVING_MODULE, module)
    patched = module.OpenAIServingEmbedding
    assert patched._build_embedding_response.__tensorb64_replaces__ is not None
    for (name, encoding_format), expected in off.items():
        written.clear()
        got = answer(patched, cases[name], encoding_format)
        assert got == expected, (name, encoding_format)
        assert written == [expected[2]], (name, encoding_format)
        assert got[0] == 200 and got[1] == "application/json"
    first = json.loads(off["3x5", "float"][2])
    assert list(first) == ["data", "model", "object", "usage"] and list(first["data"][0]) == ["embedding", "index", "object"]


def test_what_it_does_not_write_goes_to_sglangs_own(sglang_tree, monkeypatch, caplog):
    """NaN and infinity (orjson's null), ints, rows of other lengths, a value past float32 in
    base64 (struct.pack's error), a request not over HTTP (the gRPC bridge's): SGLang's own answer,
    exactly, and the plugin's writer is never asked."""
    import importlib

    module = importlib.import_module(MODULE)
    original = module.OpenAIServingEmbedding
    monkeypatch.setattr(patching, "_logged", set())  # (the one line a process logs per outcome, afresh)
    caplog.set_level(logging.ERROR, logger=sglang_plugin.logger.name)
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
    assert install_module(sglang_host.SGLANG, sglang_host.SERVING_MODULE, module)
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
    result = asyncio.run(serving._handle_non_streaming_request(None, EmbeddingRequest("base64"), None))
    assert isinstance(result, module.EmbeddingResponse)
    assert not caplog.records  # each of these declined, none by the plugin failing
    # a failure inside the plugin: SGLang's own answer, logged once
    monkeypatch.setattr(sglang_host, "_envelope_members", lambda envelope: 1 / 0)
    expected = answer(original, items_of(rows_f32(2, 8)), "float")
    assert answer(patched, items_of(rows_f32(2, 8)), "float") == expected
    assert answer(patched, items_of(rows_f32(2, 8)), "float") == expected
    assert [r.message for r in caplog.records] == ["tensorb64: writing an embeddings body failed; SGLang's own answered (logged once)"]


def test_a_route_rendering_with_another_response_class_keeps_sglangs_builder(sglang_tree, monkeypatch, caplog):
    """SGLang's chat routes moved from ORJSONResponse to model_json_response: an embeddings route
    that renders with anything but ORJSONResponse gets SGLang's own builder (the body its own
    renderer makes), with one log line; the ORJSONResponse route is still written by the core."""
    import importlib

    from fastapi.responses import JSONResponse

    monkeypatch.setattr(patching, "_logged", set())
    module = importlib.import_module(MODULE)
    original = module.OpenAIServingEmbedding
    items = items_of(rows_f32(3, 8))
    expected = answer(original, items, "float", JSONResponse)
    own_orjson = answer(original, items, "float")
    assert install_module(sglang_host.SGLANG, sglang_host.SERVING_MODULE, module)  # (the same class, its methods replaced)
    written = []
    real = sglang_host.embedding_body
    monkeypatch.setattr(sglang_host, "embedding_body", lambda *a: written.append(1) or real(*a))
    caplog.set_level(logging.WARNING, logger=sglang_plugin.logger.name)
    assert answer(module.OpenAIServingEmbedding, items, "float", JSONResponse) == expected and written == []
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert "renders its answer otherwise (JSONResponse)" in caplog.records[0].message
    assert answer(module.OpenAIServingEmbedding, items, "float") == own_orjson and written == [1]


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
    assert install_module(sglang_host.SGLANG, sglang_host.SERVING_MODULE, module)
    assert module.OpenAIServingEmbedding._build_embedding_response is build  # not wrapped twice


HTTP_SERVER = "sglang/srt/entrypoints/http_server.py"


def test_http_workers_load_the_plugin(sglang_tree, tmp_path, monkeypatch):
    """--tokenizer-worker-num > 1: register() (in the process that starts the workers) names the
    plugin's http_worker_app for them; a fresh process loading that app as uvicorn loads one
    ("module:attribute") gets SGLang's own app, with the plugin registered; with TENSORB64_SGLANG=0,
    SGLang's app without it."""
    import subprocess
    import sys

    (tmp_path / HTTP_SERVER).write_text(f"import {MODULE}\napp = object()\n")  # (SGLang's app imports its handlers)
    for default in ("", sglang_plugin.SGLANG_HTTP_APP):
        monkeypatch.setenv(sglang_plugin.HTTP_APP_VARIABLE, default)
        sglang_plugin.register()
        assert os.environ[sglang_plugin.HTTP_APP_VARIABLE] == sglang_plugin.WORKER_HTTP_APP == "tensorb64.sglang_plugin:http_worker_app"
    worker = f"""if True:
        import importlib, os, sys
        module, attribute = os.environ["{sglang_plugin.HTTP_APP_VARIABLE}"].split(":")
        app = getattr(importlib.import_module(module), attribute)
        assert app is sys.modules["sglang.srt.entrypoints.http_server"].app
        build = sys.modules["{MODULE}"].OpenAIServingEmbedding._build_embedding_response
        print(getattr(build, "__tensorb64_replaces__", None) is not None)
    """
    for enabled, patched in (("1", "True"), ("0", "False")):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]), sglang_plugin.ENABLE_VARIABLE: enabled}
        done = subprocess.run([sys.executable, "-c", worker], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.strip() == patched, done.stderr


def test_an_http_app_of_the_users_own_is_kept(monkeypatch, caplog):
    monkeypatch.setenv(sglang_plugin.HTTP_APP_VARIABLE, "my_server:app")
    with caplog.at_level(logging.INFO, logger=sglang_plugin.logger.name):
        sglang_plugin.register()
    assert os.environ[sglang_plugin.HTTP_APP_VARIABLE] == "my_server:app"
    assert "keep SGLang's own embeddings builder" in caplog.text
    with pytest.raises(AttributeError):
        sglang_plugin.no_such_name  # noqa: B018


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
        assert not install_module(sglang_host.SGLANG, sglang_host.SERVING_MODULE, module)
    assert OpenAIServingEmbedding._build_embedding_response is build
    assert [r.levelname for r in caplog.records] == ["WARNING"] and "SGLang's own is kept" in caplog.records[0].message


def test_read_rows_reads_python_floats_exactly():
    """The native list reader: each value the double its float holds; anything else refused."""
    rows = rows_f32(3, 7) + [SPECIAL[:7]]
    got = sglang_host.read_rows(items_of(rows))
    assert got.dtype == np.float64 and got.tobytes() == np.array(rows, dtype=np.float64).tobytes()
    assert sglang_host.read_rows(items_of([[1.0, 2]])) is None  # an int
    assert sglang_host.read_rows(items_of([[1.0], [1.0, 2.0]])) is None
    assert sglang_host.read_rows([{"embedding": "abc"}]) is None
    assert sglang_host.read_rows([{"no embedding": []}]) is None


# The double halfway between float32's largest value and 2^128: it and every double above it round
# to infinity (struct.pack("<f") raises OverflowError); the double just below rounds to the largest.
FLOAT32_ROUNDS_TO_INFINITY = 2.0**128 - 2.0**103


def test_float_lists_read_into_float32_round_as_struct_does():
    """_read_float_lists into a float32 out: each value rounded as struct.pack("<f") rounds it (the
    reference, bit for bit), over N(0, 1) doubles, float32's edges and subnormals, both signs; a
    value struct refuses or whose float32 is not finite refused, naming its row and column; an out
    of another type or size refused."""
    import struct

    from tensorb64 import _native

    rng = np.random.default_rng(7)
    below = math.nextafter(FLOAT32_ROUNDS_TO_INFINITY, 0.0)
    values = [*rng.normal(0, 1, 4000).tolist(), *rng.normal(0, 1e-40, 500).tolist(), below, -below, 1e-46,
              -1e-46, 1.5e-45, 2.1e-45, *[v for v in SPECIAL if abs(v) < FLOAT32_ROUNDS_TO_INFINITY]]
    rows = [values[i::3][:1500] for i in range(3)]
    out = np.empty((3, 1500), dtype=np.float32)
    _native._read_float_lists(rows, out)
    expected = b"".join(struct.pack(f"={len(row)}f", *row) for row in rows)
    assert out.tobytes() == expected
    for bad in (FLOAT32_ROUNDS_TO_INFINITY, -FLOAT32_ROUNDS_TO_INFINITY, 1e300, float("inf"), float("nan")):
        if not math.isnan(bad) and not math.isinf(bad):
            with pytest.raises(OverflowError):
                struct.pack("<f", bad)
        with pytest.raises(ValueError, match=r"row 1, column 2 is not a finite float32"):
            _native._read_float_lists([[0.5, 0.5, 0.5], [0.5, 0.25, bad]], np.empty((2, 3), dtype=np.float32))
    for wrong in (np.empty(3, dtype=np.float16), np.empty(3, dtype=np.int32), np.empty(3, dtype=">f4"),
                  bytearray(12)):
        with pytest.raises(TypeError, match="out must be a buffer of float64 or float32 values"):
            _native._read_float_lists([[1.0, 2.0, 3.0]], wrong)
    with pytest.raises(ValueError, match="out must hold exactly"):
        _native._read_float_lists([[1.0, 2.0, 3.0]], np.empty(4, dtype=np.float32))


# ---- Dynamo's SGLang worker ------------------------------------------------------------------------


@pytest.fixture
def dynamo_tree(tmp_path):
    wheel = os.environ.get("TENSORB64_DYNAMO_WHEEL")
    if not wheel:
        pytest.skip("TENSORB64_DYNAMO_WHEEL (a path to ai-dynamo's wheel; ci/sglang_check.sh sets it) is not set")
    sglang_code.install(sglang_code.dynamo_sources(wheel), tmp_path)
    try:
        yield
    finally:
        sglang_code.uninstall(tmp_path)


def test_dynamo_encoder_gives_dynamos_strings(dynamo_tree):
    """Dynamo 1.6.1's _encode_floats_to_base64, read from its wheel, against the swapped one: the
    same strings (or the same error) for rows of float32 values, doubles, special values, ints,
    NaN, infinity, values past float32, an empty row; swapped once, on import."""
    import importlib

    sglang_plugin.register()
    module = importlib.import_module(sglang_code.DYNAMO_MODULE)
    swapped = module._encode_floats_to_base64
    original = swapped.__tensorb64_replaces__
    assert original.__module__ == sglang_code.DYNAMO_MODULE
    assert install_module(dynamo_sglang.DYNAMO_SGLANG, dynamo_sglang.DYNAMO_MODULE, module) and module._encode_floats_to_base64 is swapped
    below = math.nextafter(FLOAT32_ROUNDS_TO_INFINITY, 0.0)
    rows = rows_f32(3, 3072) + rows_f32(2, 7, scale=1e30) + [SPECIAL[:8], [0.1, 1 / 3, -2.5e-39, 1e-46], [],
                                                              [1, 2.5], [float("nan"), -float("inf")], [below, -below]]
    for row in rows:
        assert swapped(row) == original(row), row[:4]
    for bad in ([1e39], [1e300, 0.0], [0.5, -FLOAT32_ROUNDS_TO_INFINITY]):
        with pytest.raises(OverflowError):
            original(bad)
        with pytest.raises(OverflowError):
            swapped(bad)


def test_dynamo_encoder_of_another_release_is_left_alone(caplog):
    import types

    def _encode_floats_to_base64(floats, byteorder="<"):
        return "dynamo's own"

    module = types.SimpleNamespace(__name__=sglang_code.DYNAMO_MODULE, _encode_floats_to_base64=_encode_floats_to_base64)
    with caplog.at_level(logging.WARNING, logger=sglang_plugin.logger.name):
        assert not install_module(dynamo_sglang.DYNAMO_SGLANG, dynamo_sglang.DYNAMO_MODULE, module)
    assert module._encode_floats_to_base64 is _encode_floats_to_base64 and "Dynamo's own is kept" in caplog.text
