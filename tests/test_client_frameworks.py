"""The frameworks that call the openai client, with tensorb64.openai.patch() on against off, in
one process: LangChain's OpenAIEmbeddings, LlamaIndex's OpenAIEmbedding, LiteLLM's
litellm.embedding() (openai provider, default and explicit encoding_format, sync and async; the
hosted_vllm provider, which does not go through the openai client). Each call's result is
compared with the unpatched library's, floats bit for bit.

Marked `clients`: needs langchain-openai, llama-index-embeddings-openai and litellm, installed in
a venv of their own by ci/client_check.sh (pinned versions there); excluded from the default run.
"""

from __future__ import annotations

import asyncio
import os

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

from tensorb64.openai import patch, unpatch  # noqa: E402
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


def test_litellm_hosted_vllm_provider(native_reads):
    """LiteLLM's hosted_vllm provider posts with its own HTTP handler and parses the body itself
    (json.loads): the patch leaves it as it is, and its values are the server's."""
    from litellm.llms.custom_httpx.http_handler import HTTPHandler

    handle = server(X)

    def plain(request):  # the mock answers in the openai client's httpx flavour: copy it across
        answer = handle(request)
        return plain_httpx.Response(answer.status_code, headers=dict(answer.headers), content=answer.content)

    client = HTTPHandler(client=plain_httpx.Client(transport=plain_httpx.MockTransport(plain)))

    def call():
        return litellm_result(litellm.embedding(model="hosted_vllm/m", input=TEXTS, client=client,
                                                api_base=BASE_URL, api_key="sk-test"))

    theirs, ours = patched_and_not(call)
    assert same(theirs, ours) and [d["embedding"] for d in ours[1]["data"]] == X[:4].tolist()
