"""An openai client over a mock transport, and the comparison of what two clients return (the
patched and the unpatched one): for tests/test_openai_patch.py and tests/test_client_frameworks.py.
Imported after openai is known to be installed."""

from __future__ import annotations

import importlib
import json
import struct

import numpy as np
import openai

from tensorb64.openai import response_body


def _http_library():
    """The HTTP library the client is built on (httpx; httpx2 in openai 3.x)."""
    client = openai.OpenAI(api_key="unused", base_url="http://mock.test/v1")
    try:
        modules = [cls.__module__.split(".")[0] for cls in type(client._client).__mro__]
        return importlib.import_module(next(m for m in modules if m != "openai"))
    finally:
        client.close()


httpx = _http_library()
JSON = {"content-type": "application/json"}
BASE_URL = "http://mock.test/v1"


def bits(value: float) -> bytes:
    return struct.pack("<d", value)


def server(rows: np.ndarray, answer=None, *, calls=None, fail_first=0):
    """A mock /v1/embeddings: answer(request_json) -> httpx.Response; by default the first rows
    of `rows` in the format asked for (floats where none was asked, as OpenAI and vLLM answer),
    as response_body writes them."""

    def default(asked):
        inputs = asked["input"] if isinstance(asked["input"], list) else [asked["input"]]
        return httpx.Response(200, headers=JSON, content=response_body(
            rows[: len(inputs)], model=asked["model"], encoding_format=asked.get("encoding_format", "float"),
            usage={"prompt_tokens": 3, "total_tokens": 3}))

    answer = answer or default

    def handle(request):
        if calls is not None:
            calls.append(request)
            if len(calls) <= fail_first:
                return httpx.Response(500, json={"error": {"message": "try again"}})
        if request.url.path.endswith("/models/m"):
            return httpx.Response(200, json={"id": "m", "object": "model", "created": 1, "owned_by": "x"})
        return answer(json.loads(request.content))

    return handle


def sync_http_client(handle):
    return httpx.Client(transport=httpx.MockTransport(handle))


def async_http_client(handle):
    async def handle_async(request):
        return handle(request)

    return httpx.AsyncClient(transport=httpx.MockTransport(handle_async))


def sync_client(handle, **kwargs):
    return openai.OpenAI(base_url=BASE_URL, api_key="sk-test", max_retries=kwargs.pop("max_retries", 0),
                         http_client=sync_http_client(handle), **kwargs)


def async_client(handle):
    return openai.AsyncOpenAI(base_url=BASE_URL, api_key="sk-test", max_retries=0,
                              http_client=async_http_client(handle))


def same(a, b) -> bool:
    """Equal types and values all the way down, floats bit for bit, pydantic models with the same
    fields set and extras."""
    if type(a) is not type(b):
        return False
    if isinstance(a, type):
        return a is b
    if isinstance(a, float):
        return bits(a) == bits(b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if hasattr(a, "model_fields_set"):
        return a.model_fields_set == b.model_fields_set and same(dict(a.__dict__), dict(b.__dict__)) and \
            same(a.model_extra, b.model_extra)
    return a == b
