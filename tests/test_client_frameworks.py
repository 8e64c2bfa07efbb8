"""The frameworks that call the openai client, with tensorb64.openai.patch() on against off, in
one process: LangChain's OpenAIEmbeddings, LlamaIndex's OpenAIEmbedding, LiteLLM's
litellm.embedding() (openai provider, default and explicit encoding_format, sync and async; the
hosted_vllm provider, which does not go through the openai client, and the RAW RESPONSE debug
line with what LiteLLM's callbacks are handed). Each call's result is compared with the
unpatched library's, floats bit for bit.

Marked `clients`: needs langchain-openai, llama-index-embeddings-openai and litellm, installed in
a venv of their own by ci/client_check.sh (pinned versions there); excluded from the default run.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytestmark = [
    pytest.mark.clients,
    # LiteLLM's import (pydantic's schema of its TypedDicts) warns; nothing here can change that.
    pytest.mark.filterwarnings("ignore:Item.*ReadOnly.*qualifier:UserWarning"),
]

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of the cost map

openai = pytest.importorskip("openai")
langchain_openai = pytest.importorskip("langchain_openai")
llama_openai = pytest.importorskip("llama_index.embeddings.openai")
litellm = pytest.importorskip("litellm")
plain_httpx = pytest.importorskip("httpx")  # LiteLLM's own HTTP handler is built on httpx
from litellm.integrations.custom_logger import CustomLogger  # noqa: E402

from tensorb64.openai import patch, unpatch  # noqa: E402
from tests.support import openai_mock  # noqa: E402
from tests.support.openai_mock import BASE_URL, async_http_client, same, server, sync_http_client  # noqa: E402

X = np.random.default_rng(7).normal(0, 0.05, (5, 64)).astype(np.float32)
TEXTS = ["a", "b", "c", "d"]


def patched_and_not(call):
    unpatch()
    theirs = call()
    patch()
    ours = call()
    return theirs, ours


def test_langchain_embed_documents(native_reads):
    embeddings = langchain_openai.OpenAIEmbeddings(
        model="text-embedding-3-small", api_key="sk-test", base_url=BASE_URL, max_retries=0,
        http_client=sync_http_client(server(X)), check_embedding_ctx_length=False)
    theirs, ours = patched_and_not(lambda: embeddings.embed_documents(TEXTS))
    assert same(theirs, ours) and ours == X[:4].tolist()
    theirs, ours = patched_and_not(lambda: embeddings.embed_query("q"))
    assert same(theirs, ours)
    assert native_reads[0] == 2


def test_llamaindex_text_embedding_batch(native_reads):
    embedding = llama_openai.OpenAIEmbedding(
        model="text-embedding-3-small", api_key="sk-test", api_base=BASE_URL, max_retries=0,
        http_client=sync_http_client(server(X)), async_http_client=async_http_client(server(X)))
    theirs, ours = patched_and_not(lambda: embedding.get_text_embedding_batch(TEXTS))
    assert same(theirs, ours) and ours == X[:4].tolist()
    theirs, ours = patched_and_not(lambda: asyncio.run(embedding.aget_text_embedding_batch(TEXTS)))
    assert same(theirs, ours)
    assert native_reads[0] == 2


def litellm_result(response):
    """What litellm.embedding() hands its caller: the EmbeddingResponse's fields (its id-like
    fields and timings aside, which differ call to call)."""
    dumped = response.model_dump()
    dumped.pop("_response_ms", None)
    dumped.pop("_hidden_params", None)
    return type(response), dumped


# LiteLLM's model_dump() warns of base64 strings where its model says floats (patched or not).
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
@pytest.mark.parametrize("kwargs", [{}, {"encoding_format": "float"}, {"encoding_format": "base64"}])
def test_litellm_openai_provider(native_reads, kwargs):
    """Its default posts no encoding_format (the server sends floats) through
    client.post(cast_to=CreateEmbeddingResponse); an explicit one goes through
    with_raw_response.create(); base64 strings are passed through as they came."""
    client = openai.OpenAI(base_url=BASE_URL, api_key="sk-test", max_retries=0,
                           http_client=sync_http_client(server(X)))

    def call():
        return litellm_result(litellm.embedding(model="openai/text-embedding-3-small", input=TEXTS, client=client,
                                                api_base=BASE_URL, api_key="sk-test", **kwargs))

    theirs, ours = patched_and_not(call)
    assert same(theirs, ours)
    if kwargs.get("encoding_format") != "base64":
        assert [d["embedding"] for d in ours[1]["data"]] == X[:4].tolist()
    assert native_reads[0] == (0 if kwargs.get("encoding_format") == "base64" else 1)


def test_litellm_openai_provider_async(native_reads):
    client = openai.AsyncOpenAI(base_url=BASE_URL, api_key="sk-test", max_retries=0,
                                http_client=async_http_client(server(X)))

    def call():
        return litellm_result(asyncio.run(litellm.aembedding(
            model="openai/text-embedding-3-small", input=TEXTS, client=client, api_base=BASE_URL, api_key="sk-test")))

    theirs, ours = patched_and_not(call)
    assert same(theirs, ours) and native_reads[0] == 1


@pytest.fixture
def litellm_native_reads(monkeypatch):
    """The number of hosted_vllm bodies the patch read with the core (not left to httpx's json())."""
    from tensorb64._hosts import litellm as litellm_host

    count = [0]
    original = litellm_host.loads_embeddings

    def counting(body):
        parsed = original(body)
        count[0] += parsed is not None
        return parsed

    monkeypatch.setattr(litellm_host, "loads_embeddings", counting)
    yield count
    unpatch()


def plain_answer(handle):
    """The mock's handler answering in plain httpx (LiteLLM's own HTTP handler is built on it),
    where the openai client's flavour (httpx2 in 3.x) differs."""

    def plain(request):
        answer = handle(request)
        return plain_httpx.Response(answer.status_code, headers=dict(answer.headers), content=answer.content)

    return plain


def hosted_vllm_handlers(handle):
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler, HTTPHandler

    plain = plain_answer(handle)

    async def plain_async(request):
        return plain(request)

    sync = HTTPHandler(client=plain_httpx.Client(transport=plain_httpx.MockTransport(plain)))
    asynchronous = AsyncHTTPHandler()
    asynchronous.client = plain_httpx.AsyncClient(transport=plain_httpx.MockTransport(plain_async))
    return sync, asynchronous


def hosted_vllm_outcome(call):
    """What the call hands its caller, or the type and message of what it raises."""
    try:
        return litellm_result(call())
    except Exception as e:  # compared between patched and unpatched
        return type(e), str(e)


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
@pytest.mark.parametrize("kwargs", [{}, {"encoding_format": "float"}, {"encoding_format": "base64"}])
def test_litellm_hosted_vllm_provider(litellm_native_reads, kwargs):
    """LiteLLM's hosted_vllm provider posts with its own HTTP handler and parses the body itself
    (httpx's json()): read by the core under the patch, sync and async, the caller's result the
    same; base64 rows as the strings they came as."""
    sync, asynchronous = hosted_vllm_handlers(server(X))
    common = {"model": "hosted_vllm/m", "input": TEXTS, "api_base": BASE_URL, "api_key": "sk-test", **kwargs}

    def both():
        return (litellm_result(litellm.embedding(client=sync, **common)),
                litellm_result(asyncio.run(litellm.aembedding(client=asynchronous, **common))))

    theirs, ours = patched_and_not(both)
    assert same(theirs, ours)
    rows = [d["embedding"] for d in ours[0][1]["data"]]
    assert rows == ([b64(r) for r in X[:4]] if kwargs.get("encoding_format") == "base64" else X[:4].tolist())
    assert litellm_native_reads[0] == 2


def b64(row):
    import base64

    return base64.b64encode(np.asarray(row, "<f4").tobytes()).decode()


def answering(content: bytes, status: int = 200):
    return lambda asked: openai_mock.httpx.Response(status, headers=openai_mock.JSON, content=content)


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
@pytest.mark.parametrize("answer, native", [
    (answering(b'{"object":"list","data":[{"index":1,"embedding":[0.5,1,-0]},{"index":0,"embedding":[NaN,0.25,2.5]}],'
               b'"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}'), True),
    (answering(b'{"data":[{"index":0,"embedding":"AACAP\\u0077=="}],"model":"m","id":"embd-7","created":3}'), True),
    (answering(b'{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1]}],"model":"m"}'), False),
    (answering(b'{"data":[{"index":0,"embedding":[1,2]}'), False),
    (answering(b'{"error":{"message":"no such model"}}', 404), False),
], ids=["integers-nan-out-of-order", "escaped-base64", "unequal-rows", "truncated", "http-error"])
def test_litellm_hosted_vllm_bodies(litellm_native_reads, answer, native):
    """Integers kept as ints and NaN as json.loads's, escapes, envelope fields; what the core does
    not read goes to httpx's json(), so the result or error is the unpatched one."""
    sync, _ = hosted_vllm_handlers(server(X, answer))

    def call():
        return litellm.embedding(model="hosted_vllm/m", input=["a", "b"], client=sync, api_base=BASE_URL, api_key="k")

    unpatch()
    theirs = hosted_vllm_outcome(call)
    patch()
    ours = hosted_vllm_outcome(call)
    assert same(theirs, ours), (theirs, ours)
    assert litellm_native_reads[0] == int(native)


class Recorder(CustomLogger):
    """A registered callback: what it is handed after the call and on success."""

    def __init__(self):
        super().__init__()
        self.post_call, self.success = [], []

    def log_post_api_call(self, kwargs, response_obj, start_time, end_time):
        self.post_call.append(kwargs["original_response"])

    def log_success_event(self, kwargs, response_obj, start_time, end_time):
        self.success.append((kwargs["original_response"], response_obj))


def test_litellm_post_call_line_not_built_where_dropped(monkeypatch):
    """LiteLLM's sync openai provider formats the parsed response into a debug line even with
    debug logging off: under the patch that line is not built where the logger drops it, and the
    callbacks (a registered CustomLogger, after the call and on success) get what they get
    unpatched."""
    import time

    from litellm.litellm_core_utils.litellm_logging import verbose_logger

    assert not verbose_logger.isEnabledFor(logging.DEBUG)  # LiteLLM's default
    formatted = []
    response_type = openai.types.CreateEmbeddingResponse
    own_str = response_type.__str__
    monkeypatch.setattr(response_type, "__str__", lambda self: formatted.append(1) or own_str(self))
    client = openai.OpenAI(base_url=BASE_URL, api_key="sk-test", max_retries=0,
                           http_client=sync_http_client(server(X)))

    recorder = Recorder()
    for name in ("callbacks", "input_callback", "success_callback", "_async_success_callback", "_async_input_callback"):
        monkeypatch.setattr(litellm, name, list(getattr(litellm, name)))  # restored afterwards
    litellm.callbacks.append(recorder)

    def call():
        formatted.clear()
        result = litellm.embedding(model="openai/text-embedding-3-small", input=TEXTS, client=client, api_base=BASE_URL,
                                   api_key="sk-test")
        line_built = len(formatted)
        calls = len(recorder.post_call)
        deadline = time.monotonic() + 30  # sync success callbacks run on LiteLLM's worker thread
        while len(recorder.success) < calls and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(recorder.success) == calls
        assert recorder.post_call[-1] is recorder.success[-1][0]
        return litellm_result(result), line_built, (recorder.post_call[-1], litellm_result(recorder.success[-1][1]))

    (theirs, built_theirs, seen_theirs), (ours, built_ours, seen_ours) = patched_and_not(call)
    assert same(theirs, ours) and same(seen_theirs, seen_ours)
    assert isinstance(seen_ours[0], response_type) and str(seen_ours[0]) == str(seen_theirs[0])
    assert built_theirs == 1 and built_ours == 0


@pytest.mark.parametrize("debug", ["logger", "litellm_request_debug"])
def test_litellm_post_call_line_kept_where_logged(monkeypatch, caplog, debug):
    """Where the logger keeps the line (debug logging on, or a call's litellm_request_debug at
    warning level), it is LiteLLM's own text, patched or not."""
    from litellm.litellm_core_utils.litellm_logging import verbose_logger

    client = openai.OpenAI(base_url=BASE_URL, api_key="sk-test", max_retries=0,
                           http_client=sync_http_client(server(X)))
    extra = {"litellm_request_debug": True} if debug == "litellm_request_debug" else {}

    def call():
        caplog.clear()
        litellm.embedding(model="openai/text-embedding-3-small", input=TEXTS, client=client, api_base=BASE_URL,
                          api_key="sk-test", **extra)
        return [r.getMessage() for r in caplog.records if r.getMessage().startswith("RAW RESPONSE:")]

    with caplog.at_level(logging.DEBUG if debug == "logger" else logging.WARNING, logger=verbose_logger.name):
        theirs, ours = patched_and_not(call)
    assert len(ours) == 1 and ours == theirs
    assert ours[0].startswith("RAW RESPONSE:\nCreateEmbeddingResponse(data=") and repr(X[0, 0].item()) in ours[0]


def test_litellm_replacements_installed_on_import_and_restored(tmp_path):
    """patch() before LiteLLM is imported: its attributes replaced once it is (once, however many
    patch() calls), restored by unpatch(); a patch() undone before the import leaves them alone."""
    script = tmp_path / "check.py"
    script.write_text(textwrap.dedent("""
        import sys
        import tensorb64.openai as t
        from tensorb64._hosts.litellm import HOSTED_VLLM_MODULE, LOGGING_MODULE
        scenario = sys.argv[1]
        t.patch()
        if scenario == "undone":
            t.unpatch()
        else:
            t.unpatch(); t.patch()
        assert HOSTED_VLLM_MODULE not in sys.modules and LOGGING_MODULE not in sys.modules
        import litellm
        from litellm.litellm_core_utils.litellm_logging import Logging
        from litellm.llms.hosted_vllm.embedding.transformation import HostedVLLMEmbeddingConfig as C
        replaced = [Logging.__dict__["post_call"], Logging.__dict__["_model_call_details_view"],
                    C.__dict__["transform_embedding_response"]]
        wrapped = [hasattr(f, "__tensorb64_replaces__") for f in replaced[::2]]
        if scenario == "undone":
            assert wrapped == [False, False], wrapped
        else:
            assert wrapped == [True, True], wrapped
            originals = [replaced[0].__tensorb64_replaces__, replaced[2].__tensorb64_replaces__]
            assert not any(hasattr(f, "__tensorb64_replaces__") for f in originals)  # wrapped once
            t.unpatch()
            assert [Logging.__dict__["post_call"], C.__dict__["transform_embedding_response"]] == originals
            assert not isinstance(Logging.__dict__["_model_call_details_view"], type(replaced[1])) or \
                Logging.__dict__["_model_call_details_view"] is not replaced[1]
        print("ok", scenario)
    """))
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    for scenario in ("repatched", "undone"):
        done = subprocess.run([sys.executable, str(script), scenario], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0 and done.stdout.strip() == f"ok {scenario}", done.stderr[-3000:]
