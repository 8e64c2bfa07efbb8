"""LiteLLM's proxy with tensorb64's line in its config, against the same proxy without it: real
``litellm --config`` processes (LiteLLM 1.110.2, ci/gateway_check.sh's venv) in front of a local
upstream answering vLLM's and OpenAI's bodies (tests/support/litellm_proxy.py), on every route
type that reaches an OpenAI-compatible upstream: ``hosted_vllm/``, ``openai/``, ``azure/`` and a
router group of two deployments with a 429 before each 200, and a group falling back to another.

Four proxies of one config, started together: ``on`` (the line), ``off`` (without it), ``fault``
(the line, with tensorb64's writer made to raise) and ``switched off`` (the line, and
``TENSORB64_LITELLM=0``). Each also loads a user's callback (tests/support/litellm_proxy_probe.py)
whose success hook and success event read every row of the response. For every request: the same
status, body and headers (less those that differ per request: ids, times, dates) from all four;
the body written by tensorb64 on ``on`` alone (float bodies: base64 ones are left to the proxy's
own render); and what the callbacks saw the same on all four.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import pathlib
import time
import urllib.error
import urllib.request

import pytest

from tests.support import litellm_proxy as lp

pytestmark = pytest.mark.gateway
pytest.importorskip("litellm", reason="LiteLLM is not installed here (ci/gateway_check.sh builds a venv with it)")

# Headers that differ between two requests, whoever answers them.
PER_REQUEST = {"x-litellm-call-id", "x-litellm-response-duration-ms", "x-litellm-overhead-duration-ms", "date",
               "llm_provider-date", "x-litellm-callback-duration-ms", "x-litellm-model-api-base"}
# ... and for the router group, which of its two deployments answered (its choice is random).
PER_DEPLOYMENT = {"x-litellm-model-id"}

PROXIES = {"on": ({}, True), "off": ({}, False), "fault": ({"PROBE_FAULT": "1"}, True),
           "switched off": ({"TENSORB64_LITELLM": "0"}, True)}


def model_list(port: int) -> list[dict]:
    def at(kind):
        return lp.api_base(port, kind)

    azure = f"http://127.0.0.1:{port}/openai"
    return [
        lp.deployment("vllm-64", "hosted_vllm/m-64", at("vllm")),
        lp.deployment("vllm-3072", "hosted_vllm/m-3072", at("vllm")),
        lp.deployment("openai-64", "openai/m-64", at("openai")),
        lp.deployment("openai-1536", "openai/m-1536", at("openai")),
        lp.deployment("te3-64", "openai/text-embedding-3-small", at("openai")),  # (dimensions: for these alone)
        lp.deployment("azure-64", "azure/dep-64", azure, api_version="2024-06-01"),
        lp.deployment("azure-3072", "azure/dep-3072", azure, api_version="2024-06-01"),
        lp.deployment("pretty-64", "openai/m-64", at("pretty")),
        lp.deployment("integers-64", "hosted_vllm/m-64", at("integers")),
        lp.deployment("integers-openai-64", "openai/m-64", at("integers")),
        lp.deployment("ragged-64", "hosted_vllm/m-64", at("ragged")),
        lp.deployment("malformed-64", "hosted_vllm/m-64", at("malformed")),
        lp.deployment("malformed-openai-64", "openai/m-64", at("malformed")),
        lp.deployment("refused-64", "openai/m-64", at("status/400")),
        lp.deployment("down-64", "hosted_vllm/m-64", at("status/500")),
        lp.deployment("falls-back-64", "openai/m-64", at("status/500")),  # (its fallback: vllm-64)
        # two deployments of one group, each answering 429 to a request's first sighting
        lp.deployment("pair-64", "hosted_vllm/m-64", at("flaky"), api_key="sk-upstream-a"),
        lp.deployment("pair-64", "hosted_vllm/m-64", at("flaky"), api_key="sk-upstream-b"),
    ]


@pytest.fixture(scope="module")
def proxies(tmp_path_factory):
    upstream = lp.Upstream().start()
    root = tmp_path_factory.mktemp("proxies")
    repository = str(pathlib.Path(__file__).resolve().parents[1])
    started = {}
    try:
        for label, (env, line) in PROXIES.items():
            folder = root / label.replace(" ", "-")
            config = lp.config_text(model_list(upstream.port), tensorb64=line,
                                    litellm_settings={"callbacks": ["tests.support.litellm_proxy_probe.probe"]},
                                    router_settings={"num_retries": 2, "retry_after": 0, "disable_cooldowns": True,
                                                     "fallbacks": [{"falls-back-64": ["vllm-64"]}]})
            probe = folder / "probe.jsonl"
            env = {**env, "PROBE_FILE": str(probe),
                   "PYTHONPATH": os.pathsep.join([repository, os.environ.get("PYTHONPATH", "")])}
            started[label] = lp.Proxy(label, folder, config, env=env)
            started[label].probe = probe
        for proxy in started.values():
            proxy.wait_healthy()
        yield started
    finally:
        for proxy in started.values():
            proxy.stop()
        upstream.stop()


def post(proxy, payload: dict, path: str = "/v1/embeddings", headers: dict | None = None):
    request = urllib.request.Request(proxy.url + path, json.dumps(payload).encode(),
                                     {"content-type": "application/json", "authorization": "Bearer " + lp.MASTER_KEY,
                                      **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers, error.read()


def written(proxy) -> int:
    path = pathlib.Path(str(proxy.probe) + ".written")
    return len(path.read_text().splitlines()) if path.exists() else 0


def answers(proxies, payload, path="/v1/embeddings", ignore=frozenset(), headers=None):
    """Each proxy's (status, headers, body) for one request (sent to each in turn), the headers
    less those that differ per request, and how many bodies each wrote natively for it."""
    before = {label: written(proxy) for label, proxy in proxies.items()}
    result = {}
    for label, proxy in proxies.items():
        status, got, body = post(proxy, payload, path, headers)
        kept = [(k.lower(), v) for k, v in got.items() if k.lower() not in PER_REQUEST | ignore]
        result[label] = (status, kept, body)
    return result, {label: written(proxy) - before[label] for label, proxy in proxies.items()}


def check_same(result):
    status, headers, body = result["off"]
    for label, (s, h, b) in result.items():
        assert s == status, (label, s, status, b[:300])
        assert b == body, (label, len(b), len(body), _first_difference(b, body))
        assert h == headers, (label, set(h) ^ set(headers))


def _first_difference(a: bytes, b: bytes):
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return i, a[max(0, i - 80) : i + 80], b[max(0, i - 80) : i + 80]


def texts(n: int, first: int = 0):
    return [f"row {first + i}" for i in range(n)]


EMBEDDING_MODELS = ["vllm-64", "openai-64", "azure-64", "pretty-64", "integers-64", "integers-openai-64", "ragged-64"]
CASES = [(model, fmt, inputs) for model in EMBEDDING_MODELS for fmt in (None, "float", "base64")
         for inputs in ("row 1", texts(7, first=1))]
CASES += [(model, fmt, texts(64)) for model in ("vllm-3072", "azure-3072") for fmt in (None, "float", "base64")]
CASES += [("openai-1536", fmt, texts(100, first=3)) for fmt in (None, "float", "base64")]


@pytest.mark.parametrize("model, fmt, inputs", CASES, ids=[f"{m}-{f}-{1 if isinstance(i, str) else len(i)}"
                                                           for m, f, i in CASES])
def test_the_same_bytes_written_by_tensorb64(proxies, model, fmt, inputs):
    payload = {"model": model, "input": inputs, **({"encoding_format": fmt} if fmt else {})}
    result, writes = answers(proxies, payload)
    check_same(result)
    assert result["on"][0] == 200
    # (base64 rows are left to the proxy's own render, the faster for them)
    assert writes == {"on": int(fmt != "base64"), "off": 0, "fault": 0, "switched off": 0}


@pytest.mark.parametrize("payload", [
    {"model": "te3-64", "input": texts(5), "dimensions": 16},
    {"model": "te3-64", "input": texts(5), "encoding_format": "base64", "dimensions": 16},
    {"model": "vllm-64", "input": [[1, 2, 3], [4, 5]]},  # token ids
    {"model": "vllm-64", "input": texts(3), "user": "someone", "metadata": {"tags": ["a"]}},
], ids=["dimensions", "dimensions-base64", "token-ids", "user-and-metadata"])
def test_the_clients_options(proxies, payload):
    result, writes = answers(proxies, payload)
    check_same(result)
    assert result["on"][0] == 200 and writes["on"] == int(payload.get("encoding_format") != "base64")


def test_a_client_that_takes_gzip(proxies):
    """(whatever the proxy's own middleware does with it, it does to either answer)"""
    result, writes = answers(proxies, {"model": "vllm-64", "input": texts(9)}, headers={"accept-encoding": "gzip"})
    check_same(result)
    assert result["on"][0] == 200 and writes["on"] == 1


def test_other_routes_to_embeddings(proxies):
    for path in ("/embeddings", "/openai/deployments/vllm-64/embeddings"):
        result, writes = answers(proxies, {"model": "vllm-64", "input": texts(3)}, path=path)
        check_same(result)
        assert result["on"][0] == 200 and writes["on"] == 1, path


@pytest.mark.parametrize("model", ["malformed-64", "malformed-openai-64", "refused-64", "down-64", "no-such-model"])
def test_errors_are_the_proxys_own(proxies, model):
    result, writes = answers(proxies, {"model": model, "input": texts(2)})
    check_same(result)
    assert result["off"][0] >= 400
    assert writes == {"on": 0, "off": 0, "fault": 0, "switched off": 0}


def test_a_request_the_proxy_refuses(proxies):
    for payload in ({"input": texts(2)}, {"model": "vllm-64"}):
        result, writes = answers(proxies, payload)
        check_same(result)
        assert result["off"][0] >= 400 and writes["on"] == 0
    request = urllib.request.Request(proxies["on"].url + "/v1/embeddings", b'{"model":"vllm-64","input":["a"]}',
                                     {"content-type": "application/json"})  # no key
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=60)
    with refused.value:
        assert refused.value.code == 401


def test_two_deployments_429_then_200(proxies):
    for first in (10, 20, 30):
        result, writes = answers(proxies, {"model": "pair-64", "input": texts(6, first=first)}, ignore=PER_DEPLOYMENT)
        check_same(result)
        assert result["on"][0] == 200 and writes["on"] == 1
        retries = dict(result["on"][1])["x-litellm-attempted-retries"]
        assert retries == "1", retries


def test_a_fallback_to_another_group(proxies):
    result, writes = answers(proxies, {"model": "falls-back-64", "input": texts(5, first=40)})
    check_same(result)
    assert result["on"][0] == 200 and writes["on"] == 1
    assert dict(result["on"][1])["x-litellm-attempted-fallbacks"] == "1"


def test_the_callbacks_saw_the_same_responses(proxies):
    answers(proxies, {"model": "vllm-64", "input": texts(4)})
    answers(proxies, {"model": "openai-64", "input": texts(4), "encoding_format": "base64"})
    deadline = time.monotonic() + 30

    def events(proxy):
        lines = proxy.probe.read_text().splitlines() if proxy.probe.exists() else []
        return sorted(lines)

    while time.monotonic() < deadline:  # (success events are logged after the response is sent)
        seen = {label: events(proxy) for label, proxy in proxies.items()}
        if len({len(v) for v in seen.values()}) == 1:
            break
        time.sleep(0.5)
    assert all(v == seen["off"] for v in seen.values()), {k: len(v) for k, v in seen.items()}
    kinds = {json.loads(line)["event"] for line in seen["on"]}
    assert kinds == {"post_call_success_hook", "log_success_event"}
    assert all(json.loads(line)["type"] == "EmbeddingResponse" for line in seen["on"])


def test_concurrent_requests(proxies):
    payloads = [{"model": m, "input": texts(n, first=n), **({"encoding_format": f} if f else {})}
                for m in ("vllm-64", "openai-64") for n in (3, 9) for f in (None, "base64")]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        expected = list(pool.map(lambda p: post(proxies["off"], p)[2], payloads))
        got = list(pool.map(lambda p: post(proxies["on"], p)[2], payloads))
    assert got == expected


def test_the_failure_of_ours_logged_once(proxies):
    lines = [line for line in proxies["fault"].output().splitlines() if line.startswith("tensorb64:")]
    assert lines == ["tensorb64: writing an embeddings body failed; LiteLLM's own answered (logged once)"], lines
    for label in ("on", "off", "switched off"):
        assert "tensorb64:" not in proxies[label].output(), label
