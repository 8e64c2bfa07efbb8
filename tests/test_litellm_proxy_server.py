"""LiteLLM's proxy with tensorb64's line in its config, against the same proxy without it: real
``litellm --config`` processes (LiteLLM 1.110.2, ci/gateway_check.sh's venv) in front of a local
upstream answering vLLM's and OpenAI's bodies (tests/support/litellm_proxy.py), on every route
type that reaches an OpenAI-compatible upstream: ``hosted_vllm/``, ``openai/``, ``azure/`` and a
router group of two deployments with a 429 before each 200, and a group falling back to another.

Four proxies of one model list, started together, each loading a user's callbacks
(tests/support/litellm_proxy_probe.py):

* ``off``: without the line; the ``hook`` and ``event`` callbacks;
* ``on``: the line, ``hook`` and ``event``: ``event``'s success event gets the logging payload,
  which holds a dump of the rows, so tensorb64 makes the rows up front, as the proxy does;
* ``kept``: the line and ``hook`` alone: the rows stay the array the core read, built only where
  the hook reads them (the request's ``metadata.probe``);
* ``switched off``: as ``kept``, with ``TENSORB64_LITELLM=0``.

For every request: the same status, body and headers (less those that differ per request: ids,
times, dates) from all four, ``x-litellm-response-cost`` included; each float body written by
tensorb64 on ``on`` and ``kept`` alone (base64 bodies are left to the proxy's own render); on
``kept``, the rows built only for a request whose hook read them, or where a failure of
tensorb64's own (injected, per request) gave the proxy's own answer; what the callbacks saw the
same on every proxy that has them; and no proxy's step reading a kept row unforeseen.
"""

from __future__ import annotations

import collections
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

HOOK, EVENT = "tests.support.litellm_proxy_probe.hook", "tests.support.litellm_proxy_probe.event"
# label: (environment, tensorb64's line, callbacks)
PROXIES = {"off": ({}, False, [HOOK, EVENT]), "on": ({}, True, [HOOK, EVENT]), "kept": ({}, True, [HOOK]),
           "switched off": ({"TENSORB64_LITELLM": "0"}, True, [HOOK])}
WRITING = ("on", "kept")
PRICED = ("vllm-64", "openai-64", "azure-64", "pair-64")


def model_list(port: int) -> list[dict]:
    def at(kind):
        return lp.api_base(port, kind)

    azure = f"http://127.0.0.1:{port}/openai"
    price = {"input_cost_per_token": 1e-6}  # (the proxy's cost tracking: a cost, its header, its logging)
    return [
        lp.deployment("vllm-64", "hosted_vllm/m-64", at("vllm"), **price),
        lp.deployment("vllm-3072", "hosted_vllm/m-3072", at("vllm")),
        lp.deployment("openai-64", "openai/m-64", at("openai"), **price),
        lp.deployment("openai-1536", "openai/m-1536", at("openai")),
        lp.deployment("te3-64", "openai/text-embedding-3-small", at("openai")),  # (dimensions: for these alone)
        lp.deployment("azure-64", "azure/dep-64", azure, api_version="2024-06-01", **price),
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
        lp.deployment("pair-64", "hosted_vllm/m-64", at("flaky"), api_key="sk-upstream-a", **price),
        lp.deployment("pair-64", "hosted_vllm/m-64", at("flaky"), api_key="sk-upstream-b", **price),
    ]


@pytest.fixture(scope="module")
def proxies(tmp_path_factory):
    upstream = lp.Upstream().start()
    root = tmp_path_factory.mktemp("proxies")
    repository = str(pathlib.Path(__file__).resolve().parents[1])
    started = {}
    try:
        for label, (env, line, callbacks) in PROXIES.items():
            folder = root / label.replace(" ", "-")
            config = lp.config_text(model_list(upstream.port), tensorb64=line, litellm_settings={"callbacks": callbacks},
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


def records(proxy, suffix: str = "") -> list[dict]:
    path = pathlib.Path(str(proxy.probe) + suffix)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def tensorb64_did(proxy) -> collections.Counter:
    """What tensorb64 did on a proxy so far: (event, request) -> how many times."""
    return collections.Counter((r["event"], r["request"]) for r in records(proxy, ".tensorb64"))


def answers(proxies, payload, path="/v1/embeddings", ignore=frozenset(), headers=None):
    """Each proxy's (status, headers, body) for one request (sent to each in turn), the headers
    less those that differ per request, and what tensorb64 did for it on each: ``{label:
    {"written": n, "built": n}}``."""
    before = {label: tensorb64_did(proxy) for label, proxy in proxies.items()}
    result = {}
    for label, proxy in proxies.items():
        status, got, body = post(proxy, payload, path, headers)
        kept = [(k.lower(), v) for k, v in got.items() if k.lower() not in PER_REQUEST | ignore]
        result[label] = (status, kept, body)
    did = {}
    for label, proxy in proxies.items():
        counts = tensorb64_did(proxy) - before[label]
        did[label] = {event: sum(n for (e, _), n in counts.items() if e == event) for event in ("written", "built")}
    return result, did


def check_same(result):
    status, headers, body = result["off"]
    for label, (s, h, b) in result.items():
        assert s == status, (label, s, status, b[:300])
        assert b == body, (label, len(b), len(body), _first_difference(b, body))
        assert h == headers, (label, set(h) ^ set(headers))


def _first_difference(a: bytes, b: bytes):
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return i, a[max(0, i - 80) : i + 80], b[max(0, i - 80) : i + 80]


def written_natively(did, written: int, built: int = 0):
    """``written`` bodies by tensorb64 on the proxies with the line, none elsewhere; ``built``: how
    many times ``kept`` built the Python rows."""
    assert {label: d["written"] for label, d in did.items()} == {
        label: written if label in WRITING else 0 for label in PROXIES}, did
    assert did["kept"]["built"] == built and all(did[label]["built"] == 0 for label in PROXIES if label != "kept"), did


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
    result, did = answers(proxies, payload)
    check_same(result)
    assert result["on"][0] == 200
    if model in PRICED:  # (the same cost from all four: check_same)
        assert float(dict(result["on"][1])["x-litellm-response-cost"]) > 0
    written_natively(did, int(fmt != "base64"))  # (base64 rows are left to the proxy's own render, the faster)


@pytest.mark.parametrize("payload", [
    {"model": "te3-64", "input": texts(5), "dimensions": 16},
    {"model": "te3-64", "input": texts(5), "encoding_format": "base64", "dimensions": 16},
    {"model": "vllm-64", "input": [[1, 2, 3], [4, 5]]},  # token ids
    {"model": "vllm-64", "input": texts(3), "user": "someone", "metadata": {"tags": ["a"]}},
], ids=["dimensions", "dimensions-base64", "token-ids", "user-and-metadata"])
def test_the_clients_options(proxies, payload):
    result, did = answers(proxies, payload)
    check_same(result)
    assert result["on"][0] == 200
    written_natively(did, int(payload.get("encoding_format") != "base64"))


def test_a_client_that_takes_gzip(proxies):
    """(whatever the proxy's own middleware does with it, it does to either answer)"""
    result, did = answers(proxies, {"model": "vllm-64", "input": texts(9)}, headers={"accept-encoding": "gzip"})
    check_same(result)
    assert result["on"][0] == 200
    written_natively(did, 1)


def test_other_routes_to_embeddings(proxies):
    for path in ("/embeddings", "/openai/deployments/vllm-64/embeddings"):
        result, did = answers(proxies, {"model": "vllm-64", "input": texts(3)}, path=path)
        check_same(result)
        assert result["on"][0] == 200, path
        written_natively(did, 1)


@pytest.mark.parametrize("model", ["malformed-64", "malformed-openai-64", "refused-64", "down-64", "no-such-model"])
def test_errors_are_the_proxys_own(proxies, model):
    result, did = answers(proxies, {"model": model, "input": texts(2)})
    check_same(result)
    assert result["off"][0] >= 400
    written_natively(did, 0)


def test_a_request_the_proxy_refuses(proxies):
    for payload in ({"input": texts(2)}, {"model": "vllm-64"}):
        result, did = answers(proxies, payload)
        check_same(result)
        assert result["off"][0] >= 400
        written_natively(did, 0)
    request = urllib.request.Request(proxies["kept"].url + "/v1/embeddings", b'{"model":"vllm-64","input":["a"]}',
                                     {"content-type": "application/json"})  # no key
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=60)
    with refused.value:
        assert refused.value.code == 401


def test_two_deployments_429_then_200(proxies):
    for first in (10, 20, 30):
        result, did = answers(proxies, {"model": "pair-64", "input": texts(6, first=first)}, ignore=PER_DEPLOYMENT)
        check_same(result)
        assert result["on"][0] == 200
        written_natively(did, 1)
        retries = dict(result["on"][1])["x-litellm-attempted-retries"]
        assert retries == "1", retries


def test_a_fallback_to_another_group(proxies):
    result, did = answers(proxies, {"model": "falls-back-64", "input": texts(5, first=40)})
    check_same(result)
    assert result["on"][0] == 200
    written_natively(did, 1)
    assert dict(result["on"][1])["x-litellm-attempted-fallbacks"] == "1"


def hook_saw(proxies, request: str) -> dict:
    """What each proxy's ``hook`` callback saw of one request (its first input)."""
    return {label: [r for r in records(proxy) if r["event"] == "hook" and r["request"] == request]
            for label, proxy in proxies.items()}


@pytest.mark.parametrize("model", ["vllm-64", "openai-64", "integers-64", "pair-64"])
def test_a_hook_that_reads_the_rows_sees_todays_and_one_that_reads_the_usage_builds_none(proxies, model):
    for asked, built in (("rows", 1), ("usage", 0)):
        inputs = [f"{model} {asked} 1", *texts(6, first=2)]
        result, did = answers(proxies, {"model": model, "input": inputs, "metadata": {"probe": asked}},
                              ignore=PER_DEPLOYMENT)
        check_same(result)
        written_natively(did, 1, built=built)
        seen = hook_saw(proxies, inputs[0])
        assert len(seen["off"]) == 1 and all(v == seen["off"] for v in seen.values()), seen
        assert ("digest" in seen["off"][0]) == (asked == "rows") and seen["off"][0]["usage"]["total_tokens"] == 7


@pytest.mark.parametrize("model", ["vllm-64", "openai-64"])
def test_the_success_events_and_the_logging_payload(proxies, model):
    """(the ``event`` callback, on ``off`` and ``on``: its success event reads the rows, and the
    rows in the logging payload, with the cost and tokens logged)"""
    inputs = [f"{model} event 1", *texts(4, first=2)]
    answers(proxies, {"model": model, "input": inputs})
    deadline = time.monotonic() + 30

    def events(proxy):
        return sorted(json.dumps(r) for r in records(proxy) if r["request"] == inputs[0] and r["event"] != "hook")

    while time.monotonic() < deadline:  # (success events are logged after the response is sent)
        if len(events(proxies["off"])) == len(events(proxies["on"])) == 2:
            break
        time.sleep(0.5)
    off, on = events(proxies["off"]), events(proxies["on"])
    assert len(off) == 2 and on == off
    assert {json.loads(e)["event"] for e in on} == {"event-hook", "success-event"}
    assert all(json.loads(e)["type"] == "EmbeddingResponse" for e in on)
    assert events(proxies["kept"]) == []


@pytest.mark.parametrize("model", ["vllm-64", "openai-64", "azure-64"])
@pytest.mark.parametrize("fault, built", [("fault-render", 1), ("fault-rows", 1)])
def test_a_failure_of_ours_gives_the_proxys_own_answer(proxies, model, fault, built):
    """(injected for the request: tensorb64's writer raising, which leaves the body to the proxy's
    own render, with the rows built first; building the rows from the array raising, which builds
    them from their text as LiteLLM's own parse reads it)"""
    inputs = [f"{model} {fault} 1", *texts(6, first=2)]
    result, did = answers(proxies, {"model": model, "input": inputs, "metadata": {"probe": fault}})
    check_same(result)
    assert result["kept"][0] == 200
    writes = int(fault != "fault-render")
    assert {label: d["written"] for label, d in did.items()} == {
        label: writes if label in WRITING else 0 for label in PROXIES}, did
    assert did["kept"]["built"] == built, did
    seen = hook_saw(proxies, inputs[0])
    assert all(v == seen["off"] for v in seen.values()), seen


def test_concurrent_requests(proxies):
    payloads = [{"model": m, "input": texts(n, first=n), **({"encoding_format": f} if f else {}),
                 **({"metadata": {"probe": "rows"}} if n == 9 else {})}
                for m in ("vllm-64", "openai-64") for n in (3, 9) for f in (None, "base64")]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        expected = list(pool.map(lambda p: post(proxies["off"], p)[2], payloads))
        for label in WRITING:
            got = list(pool.map(lambda p, label=label: post(proxies[label], p)[2], payloads))
            assert got == expected, label


def test_the_lines_tensorb64_logged(proxies):
    """One line for the failures injected (logged once a proxy), and none that says a step the
    keeping did not foresee read a kept row."""
    failure = "tensorb64: answering /v1/embeddings natively failed; LiteLLM's own answered (logged once)"
    for label, proxy in proxies.items():
        lines = [line for line in proxy.output().splitlines() if line.startswith("tensorb64:")]
        assert lines == ([failure] if label in WRITING else []), (label, lines)
