"""The LiteLLM half of tensorb64.openai.patch() (src/tensorb64/_hosts/litellm.py), without LiteLLM:
the body read for its hosted_vllm provider against json.loads, and the post_call hook against a
stand-in with the shape of LiteLLM 1.110.2's Logging.post_call. The real LiteLLM, patched
against unpatched, is tested in tests/test_client_frameworks.py (marker `clients`).
"""

from __future__ import annotations

import base64
import json
import logging
import struct
import textwrap
import types

import numpy as np
import pytest

from tensorb64._hosts import litellm as litellm_host
from tensorb64._hosts import patching
from tensorb64._hosts.litellm import LITELLM, LOGGING_MODULE, NOT_BUILT, loads_embeddings, logging_replacements

RNG = np.random.default_rng(2027)


def same(a, b) -> bool:
    """Equal types and values all the way down, floats bit for bit."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


def body(entries, **envelope) -> bytes:
    return json.dumps({"object": "list", "data": entries, "model": "m",
                       "usage": {"prompt_tokens": 1, "total_tokens": 1}, **envelope}).encode()


def float_entries(rows, order=None):
    order = range(len(rows)) if order is None else order
    return [{"object": "embedding", "index": i, "embedding": rows[i]} for i in order]


def b64(row) -> str:
    return base64.b64encode(np.asarray(row, "<f4").tobytes()).decode()


X = RNG.normal(0, 0.05, (5, 32)).astype(np.float32)


@pytest.mark.parametrize("text", [
    body(float_entries(X.tolist())),
    body(float_entries(X.tolist(), order=[3, 0, 4, 1, 2]), id="embd-1", created=7),
    body(float_entries(RNG.normal(0, 1, (3, 16)).tolist())),  # doubles, not float32 values
    body([{"index": i, "embedding": b64(X[i]), "object": "embedding", "extra": [1]} for i in (1, 0, 2)]),
], ids=["float32-values", "out-of-order-with-envelope", "doubles", "base64"])
def test_reads_as_json_loads(text):
    assert same(loads_embeddings(text), json.loads(text))


def test_integers_nan_and_infinities_as_json_loads_keeps_them():
    """An integer text stays an int, NaN json.loads's own NaN object: those rows are json.loads's."""
    rows = ["[0.5, 1, -0, 0.25]", "[0.5, NaN, 0.25, 0.125]", "[Infinity, -Infinity, 0.5, 0.25]",
            "[-0.0, 2.0, 0.5, 1e2]", "[0.5, 0.25, 0.125, 0.0625]"]
    text = ('{"data":[' + ",".join(f'{{"index":{i},"embedding":{r}}}' for i, r in enumerate(rows)) + "]}").encode()
    got, expected = loads_embeddings(text), json.loads(text)
    assert same(got, expected)
    assert got["data"][1]["embedding"][1] is expected["data"][1]["embedding"][1]  # float("nan"), the one object
    assert type(got["data"][0]["embedding"][1]) is int


def test_escaped_base64_text_and_repeated_keys():
    text = (b'{"data":[{"index":0,"embedding":"AACAPw=="},{"index":1,"embedding":"AACAP\\u0077=="}],'
            b'"model":"a","model":"b","data":[{"embedding":"AACAPw==","index":0,"embedding":"AAAAQA=="}]}')
    assert same(loads_embeddings(text), json.loads(text))
    bom = b"\xef\xbb\xbf" + body(float_entries(X[:2].tolist()))
    got = loads_embeddings(bom)
    assert got is None or same(got, json.loads(bom))


@pytest.mark.parametrize("text", [
    b'{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1]}]}',
    b'{"data":[{"index":0,"embedding":[1,2]}',
    b'{"data":[{"index":0,"embedding":"AAAA AAA="}]}',
    b'{"data":[{"index":0,"embedding":[0.5, 12345678901234567890]}]}',
    b'{"error":{"message":"no"}}',
    "\u00e9".encode("utf-16"),
], ids=["unequal-rows", "truncated", "lenient-base64", "long-integer", "not-embeddings", "utf-16"])
def test_what_the_core_does_not_read_is_none(text):
    """The caller (httpx's json()) then reads it itself: its result or error is its own."""
    assert loads_embeddings(text) is None


# ---- post_call: a stand-in with the shape of LiteLLM 1.110.2's -------------------------------------


class Expensive:
    """A response whose str() is counted (LiteLLM's is the repr of every float)."""

    def __init__(self):
        self.formatted = 0

    def __str__(self):
        self.formatted += 1
        return "Expensive(...)"


def stand_in_module():
    """A module with a Logging class whose post_call builds its line as LiteLLM's does."""
    module = types.ModuleType("stand_in_litellm_logging")
    module.verbose_logger = logging.getLogger("tensorb64.tests.litellm")

    class Logging:
        litellm_request_debug = False

        def __init__(self, callback):
            self.model_call_details = {}
            self.callback = callback

        @property
        def _model_call_details_view(self):
            return self.model_call_details

        def post_call(self, original_response, input=None, api_key=None, additional_args=None):
            if isinstance(original_response, dict):
                original_response = json.dumps(original_response, default=str)
            self.model_call_details["original_response"] = original_response
            callattr = module.verbose_logger.warning if self.litellm_request_debug else module.verbose_logger.debug
            callattr("RAW RESPONSE:\n{}\n\n".format(
                self._model_call_details_view.get("original_response", self._model_call_details_view)))
            self.callback(self.model_call_details, dict(self._model_call_details_view))

    module.Logging = Logging
    return module


def install(module):
    """The stand-in patched as patch() patches LiteLLM's module: {name: the original replaced}."""
    assert [r.name for r in logging_replacements(module)] == ["post_call", "_model_call_details_view"]
    originals = {name: module.Logging.__dict__[name] for name in ("post_call", "_model_call_details_view")}
    assert patching.install_module(LITELLM, LOGGING_MODULE, module)
    assert all(module.Logging.__dict__[name] is not original for name, original in originals.items())
    return originals


@pytest.mark.parametrize("level, request_debug, built", [
    (logging.WARNING, False, False),  # LiteLLM's default: the debug line dropped
    (logging.DEBUG, False, True),
    (logging.WARNING, True, True),  # litellm_request_debug: the line at warning level, kept
    (logging.ERROR, True, False),
])
def test_line_not_built_only_where_the_logger_drops_it(caplog, level, request_debug, built):
    module = stand_in_module()
    originals = install(module)
    module.verbose_logger.setLevel(level)
    seen = []
    log = module.Logging(lambda details, view: seen.append((details["original_response"], view["original_response"])))
    log.litellm_request_debug = request_debug
    response = Expensive()
    with caplog.at_level(level, logger=module.verbose_logger.name):
        log.post_call(original_response=response)
    assert response.formatted == int(built)
    assert seen == [(response, response)]  # the callback's details and later reads of the view: the object
    assert log.model_call_details["original_response"] is response
    lines = [r.getMessage() for r in caplog.records if r.name == module.verbose_logger.name]
    assert lines == (["RAW RESPONSE:\nExpensive(...)\n\n"] if built else [])
    assert NOT_BUILT not in caplog.text
    for name, original in originals.items():
        setattr(module.Logging, name, original)


def test_a_dict_response_still_becomes_its_json_text():
    """The async openai provider hands post_call a dict, which it stores as JSON text: unchanged."""
    module = stand_in_module()
    install(module)
    module.verbose_logger.setLevel(logging.WARNING)
    seen = []
    log = module.Logging(lambda details, view: seen.append(details["original_response"]))
    log.post_call(original_response={"data": [{"embedding": [0.5]}]})
    assert seen == ['{"data": [{"embedding": [0.5]}]}']


def test_a_logger_with_its_own_debug_is_left_to_build_the_line():
    module = stand_in_module()
    install(module)
    module.verbose_logger = logging.getLogger("tensorb64.tests.litellm.own")
    module.verbose_logger.setLevel(logging.WARNING)
    lines = []
    module.verbose_logger.debug = lines.append  # not a Logger's own method: it may keep anything
    log = module.Logging(lambda details, view: None)
    response = Expensive()
    log.post_call(original_response=response)
    assert response.formatted == 1 and lines == ["RAW RESPONSE:\nExpensive(...)\n\n"]


def test_a_second_install_recognises_its_own_replacement_and_says_nothing(caplog, monkeypatch):
    """Recognition reads through the replacements in place to LiteLLM's own code: installing again
    (patch() after a module is imported anew, two processes' worth of plugins) changes nothing and
    logs nothing."""
    module = stand_in_module()
    install(module)
    replaced = dict(module.Logging.__dict__)
    with caplog.at_level(logging.DEBUG):
        assert patching.install_module(LITELLM, LOGGING_MODULE, module)
    assert [r.getMessage() for r in caplog.records if r.name.startswith("tensorb64")] == []
    assert all(module.Logging.__dict__[name] is replaced[name] for name in ("post_call", "_model_call_details_view"))


def test_a_failure_of_ours_in_hosted_vllm_gives_litellm_its_own_response(caplog, monkeypatch):
    """The body read raising (a bug of ours): LiteLLM's own method answers, once, given the
    response itself, and one line says so."""
    module = types.ModuleType("stand_in_hosted_vllm")
    exec(textwrap.dedent("""
        def convert_to_model_response_object(parsed):
            return parsed

        class HostedVLLMEmbeddingConfig:
            def transform_embedding_response(self, model, raw_response, model_response, logging_obj, api_key=None,
                                             request_data=None, optional_params=None, litellm_params=None):
                logging_obj.post_call(raw_response.text)
                return convert_to_model_response_object(raw_response.json())
    """), module.__dict__)
    HostedVLLMEmbeddingConfig = module.HostedVLLMEmbeddingConfig
    assert patching.install_module(LITELLM, litellm_host.HOSTED_VLLM_MODULE, module)

    class Response:
        content = b'{"data": [{"embedding": [0.5], "index": 0}]}'
        text = content.decode()

        def json(self):
            return {"the response's own": True}

    class Log:
        def post_call(self, text):
            pass

    monkeypatch.setattr(litellm_host, "loads_embeddings", lambda body: 1 / 0)
    with caplog.at_level(logging.ERROR):
        got = HostedVLLMEmbeddingConfig().transform_embedding_response("m", Response(), None, Log())
    assert got == {"the response's own": True}
    assert [r.getMessage() for r in caplog.records if r.name == LITELLM.logger.name] == [
        "tensorb64: reading an embeddings body failed; LiteLLM's own answered (logged once)"]


def test_a_post_call_of_another_shape_is_not_replaced():
    module = stand_in_module()

    def post_call(self, original_response):  # logs at info: the hook's reasoning does not hold
        module.verbose_logger.info("RAW RESPONSE:\n{}".format(self._model_call_details_view.get("original_response")))

    module.Logging.post_call = post_call
    for replacements, stand_in in [(logging_replacements, module), (logging_replacements, types.ModuleType("empty")),
                                   (litellm_host.hosted_vllm_replacements, types.ModuleType("empty"))]:
        with pytest.raises(patching.Unknown):
            replacements(stand_in)
    assert not patching.install_module(LITELLM, LOGGING_MODULE, module)
    assert module.Logging.post_call is post_call
