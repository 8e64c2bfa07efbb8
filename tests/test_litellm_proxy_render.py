"""tensorb64.litellm_proxy's body (tensorb64._hosts.litellm_proxy) against the one FastAPI renders for the proxy's embeddings route
(``ORJSONResponse(jsonable_encoder(response))``, the sub-response's headers after its own), in
one process with LiteLLM 1.110.2's own response types and its proxy's routes (ci/gateway_check.sh's
venv): every shape of entry the proxy's parsers build, rows of doubles, float32 values, ints,
special values and base64 strings with escapes, byte for byte; and what it declines.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

pytestmark = [
    pytest.mark.gateway,
    # what importing LiteLLM's proxy warns about (its own TypedDicts; FastAPI's view of ORJSONResponse)
    pytest.mark.filterwarnings("ignore:Item.*ReadOnly.*qualifier:UserWarning"),
    pytest.mark.filterwarnings("ignore:ORJSONResponse is deprecated"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]
litellm = pytest.importorskip("litellm", reason="LiteLLM is not installed here (ci/gateway_check.sh builds a venv with it)")

RNG = np.random.default_rng(47)


@pytest.fixture(scope="module")
def proxy():
    """The proxy's server module (its routes, which say how the route renders) and the package's
    module, enabled as the config line enables it."""
    import litellm.proxy.proxy_server  # noqa: F401

    from tensorb64 import litellm_proxy
    from tensorb64._hosts import litellm_proxy as host

    assert litellm_proxy.handler is not None  # (the config line's lookup)
    return host


def embedding_response(data, model="emb", usage=None):
    from litellm.litellm_core_utils.llm_response_utils.convert_dict_to_response import convert_to_model_response_object
    from litellm.types.utils import EmbeddingResponse

    body = {"object": "list", "data": data, "model": "upstream-model",
            "usage": usage or {"prompt_tokens": len(data), "total_tokens": len(data)}}
    response = convert_to_model_response_object(response_object=body, model_response_object=EmbeddingResponse(),
                                                 response_type="embedding")
    response.model = model
    return response


def sub_response(**headers):
    """The response FastAPI hands a route to set headers on (its status unset, no length)."""
    from starlette.responses import Response

    response = Response()
    del response.headers["content-length"]
    response.status_code = None
    response.headers.update(headers)
    return response


def reference(response, fastapi_response) -> tuple[bytes, list]:
    from fastapi.encoders import jsonable_encoder
    from fastapi.responses import ORJSONResponse

    answer = ORJSONResponse(jsonable_encoder(response))
    answer.headers.raw.extend(fastapi_response.headers.raw)
    return answer.body, answer.headers.raw


def doubles(n, d):
    return RNG.normal(0, 0.05, (n, d)).tolist()


SPECIAL = [0.0, -0.0, 1.0, -2.0, 1e-7, 1e-5, 1.5e16, 1e16, 5e-324, 1.7976931348623157e308, 0.1, 1 / 3, 123456789.0,
           2.0**53, float("nan"), float("inf"), -float("inf")]
ROWS = {
    "doubles": doubles(5, 64),
    "float32-values": np.asarray(doubles(3, 48), np.float32).astype(np.float64).tolist(),
    "short-texts": [[float(f"{v:.7g}") for v in row] for row in doubles(4, 32)],
    "special": [SPECIAL, SPECIAL[::-1]],
    "ints": [[1, 2, -3, 0, 10**15], [1.0, 2, 3.5, -0, 7]],
    "empty": [[], []],
}


def entries(rows, order="vllm"):
    if order == "vllm":
        return [{"index": i, "object": "embedding", "embedding": row} for i, row in enumerate(rows)]
    return [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(rows)]


@pytest.mark.parametrize("order", ["vllm", "openai"])
@pytest.mark.parametrize("kind", list(ROWS))
def test_the_same_bytes_as_fastapi(proxy, kind, order):
    response = embedding_response(entries(ROWS[kind], order))
    headers = {"x-litellm-call-id": "c", "x-litellm-model-id": "m"}
    answer = proxy._rendered(response, sub_response(**headers))
    assert answer is not None
    body, raw = reference(response, sub_response(**headers))
    assert answer.body == body
    assert answer.headers.raw == raw and answer.status_code == 200


@pytest.mark.parametrize("model", ["emb", "\u00e9\u4e2d \"quoted\" \\", "tensorb64-row-0123"])
@pytest.mark.parametrize("usage", [None, {"prompt_tokens": 3, "total_tokens": 3, "prompt_tokens_details": {"cached_tokens": 1}}])
def test_the_envelope_is_the_proxys(proxy, model, usage):
    response = embedding_response(entries(doubles(2, 8)), model=model, usage=usage)
    response._hidden_params = {"not": "rendered"}
    answer = proxy._rendered(response, sub_response())
    assert answer.body == reference(response, sub_response())[0]


def test_embedding_models_as_entries(proxy):
    from litellm.types.utils import Embedding

    response = embedding_response(entries(doubles(2, 8)))
    response.data = [Embedding(embedding=row["embedding"], index=row["index"], object="embedding") for row in response.data]
    assert proxy._rendered(response, sub_response()).body == reference(response, sub_response())[0]


def test_the_response_is_left_as_it_was(proxy):
    rows = doubles(3, 16)
    response = embedding_response(entries(rows))
    before = response.model_dump()
    proxy._rendered(response, sub_response())
    after = response.model_dump()
    assert [e["embedding"] for e in after["data"]] == rows and after == before


@pytest.mark.parametrize("row", [
    [True, 1.0],  # bool: a type the encoder passes, not one this writes
    [np.float64(0.5)],
    [[0.5]],
    "AAAAAAAAgD8=",  # base64: the proxy's own render is the faster
    None,
    (0.5, 1.0),
    b"AAAA",
], ids=["bool", "numpy-scalar", "nested", "base64", "none", "tuple", "bytes"])
def test_a_row_it_does_not_write_is_left_to_fastapi(proxy, row):
    response = embedding_response(entries([[0.5], [0.25]]))
    response.data[1]["embedding"] = row
    assert proxy._rendered(response, sub_response()) is None


def test_what_else_it_declines(proxy):
    response = embedding_response(entries([[0.5]]))
    assert proxy._rendered(response.model_dump(), sub_response()) is None  # not the proxy's response type
    no_row = embedding_response(entries([[0.5]]))
    del no_row.data[0]["embedding"]
    assert proxy._rendered(no_row, sub_response()) is None
    other_entry = embedding_response(entries([[0.5]]))
    other_entry.data = [[0.5]]
    assert proxy._rendered(other_entry, sub_response()) is None
    created = sub_response()
    created.status_code = 201  # a status the proxy set itself: FastAPI's own rendering keeps it
    assert proxy._rendered(response, created) is None


def test_nan_and_infinity_as_fastapi_writes_them(proxy):
    response = embedding_response(entries([[math.nan, math.inf, -math.inf, 0.5]]))
    body = proxy._rendered(response, sub_response()).body
    assert body == reference(response, sub_response())[0] and b"[null,null,null,0.5]" in body
    assert struct.pack("<d", response.data[0]["embedding"][3]) == struct.pack("<d", 0.5)
