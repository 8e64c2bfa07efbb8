"""LiteLLM's proxy end to end, with and without tensorb64's line in its config, with an A/A pair
for the noise floor.

    python -m benchmarks.litellm_proxy_bench [--rounds 3] [--clients 8] [--requests 16] [--out FILE]

Run from the repository root with the Python of a venv holding LiteLLM's proxy and the wheel under
test (ci/gateway_check.sh --prepare builds one: $TENSORB64_CI_CACHE/gateway-venv). It starts one
local upstream in a process of its own (tests/support/litellm_proxy.py: precomputed vLLM and
OpenAI bodies, so that its share is a lookup) and three `litellm --config` proxies of one model
list: tensorb64's line on, off, and off again (the A/A pair: what two identical proxies differ by
here). For each route type (``hosted_vllm/``, ``openai/``), shape (64x3072, 100x1536) and format
(float, base64):

* latency: single requests one after another, the median;
* requests/s: ``--requests`` requests from ``--clients`` concurrent clients (raw HTTP, bodies read,
  not parsed), the median over rounds;
* the proxy's CPU per request (user + system of its process, from /proc, over the loaded
  requests), the median over rounds;
* the proxy's own ``x-litellm-overhead-duration-ms`` header (sent by the ``openai/`` route only),
  the median over the latency requests.

And the same for one row of 64 values (``hosted_vllm``, float): the proxy's own cost of a request,
whatever its body, which bounds what any body writer can gain.

The proxies' order rotates round by round. Every body is first checked byte for byte against the
off proxy's. The clients and the upstream run on the same machine, and take their share of it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from benchmarks.http_load import load
from tests.support import litellm_proxy as lp

SHAPES = ((64, 3072), (100, 1536))
FLOOR = (1, 64)  # one short row: what the proxy costs a request whatever its body (auth, routing, logging)
ROUTES = {"hosted_vllm": ("hosted_vllm", "vllm"), "openai": ("openai", "openai")}
FORMATS = ("float", "base64")
LABELS = ("on", "off", "off again")


def model_list(port: int) -> list[dict]:
    return [lp.deployment(f"{route}-{dim}", f"{provider}/m-{dim}", lp.api_base(port, path))
            for route, (provider, path) in ROUTES.items() for _, dim in (*SHAPES, FLOOR)]


def payload(route: str, batch: int, dim: int, fmt: str) -> bytes:
    return json.dumps({"model": f"{route}-{dim}", "input": [f"row {i}" for i in range(batch)],
                       "encoding_format": fmt}).encode()


def post(proxy, body: bytes):
    request = urllib.request.Request(proxy.url + "/v1/embeddings", body, {
        "content-type": "application/json", "authorization": "Bearer " + lp.MASTER_KEY})
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as response:
        data = response.read()
        return time.perf_counter() - start, data, response.headers.get("x-litellm-overhead-duration-ms")


def cpu_seconds(pid: int) -> float:
    tick = os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick


async def loaded(url: str, body: bytes, requests: int, clients: int):
    headers = {"authorization": "Bearer " + lp.MASTER_KEY}
    return await load(url + "/v1/embeddings", body, requests, clients, headers=headers)


def measure(proxies, body, rounds, requests, clients, latency_requests):
    stats = {p.label: {"latency": [], "rps": [], "cpu": [], "overhead": []} for p in proxies}
    for r in range(rounds):
        for proxy in proxies[r % len(proxies):] + proxies[: r % len(proxies)]:
            s = stats[proxy.label]
            for _ in range(latency_requests):
                seconds, _, overhead = post(proxy, body)
                s["latency"].append(seconds)
                if overhead is not None:
                    s["overhead"].append(float(overhead))
            before = cpu_seconds(proxy.process.pid)
            seconds, _, _ = asyncio.run(loaded(proxy.url, body, requests, clients))
            s["cpu"].append((cpu_seconds(proxy.process.pid) - before) / (requests + 1))
            s["rps"].append(requests / seconds)
    return {label: {"latency_ms": statistics.median(s["latency"]) * 1e3, "rps": statistics.median(s["rps"]),
                    "cpu_ms": statistics.median(s["cpu"]) * 1e3,
                    "overhead_ms": statistics.median(s["overhead"]) if s["overhead"] else None}
            for label, s in stats.items()}


def start_upstream():
    process = subprocess.Popen([sys.executable, "-m", "tests.support.litellm_proxy", "upstream"],
                               stdout=subprocess.PIPE, text=True, start_new_session=True)
    return process, int(process.stdout.readline())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=16, help="requests a round under load (float; base64 and one row: 4x)")
    parser.add_argument("--latency-requests", type=int, default=3, help="single requests a round")
    parser.add_argument("--out", help="also write the table here (markdown)")
    args = parser.parse_args()

    upstream, port = start_upstream()
    folder = tempfile.mkdtemp(prefix="litellm-proxy-bench-")
    proxies = [lp.Proxy(label, os.path.join(folder, label.replace(" ", "-")),
                        lp.config_text(model_list(port), tensorb64=label == "on")) for label in LABELS]
    lines = []
    try:
        for proxy in proxies:
            proxy.wait_healthy()
        load_avg = os.getloadavg()
        lines += [f"LiteLLM proxy bench: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
                  f"load average {load_avg[0]:.1f} at start; {args.clients} clients, {args.rounds} rounds; "
                  "medians", "",
                  "| route | shape | format | proxy | latency ms | requests/s | proxy CPU ms/request | overhead header ms |",
                  "|---|---|---|---|---:|---:|---:|---:|"]
        summary = []
        cases = [(route, shape, fmt) for route in ROUTES for shape in SHAPES for fmt in FORMATS]
        for route, (batch, dim), fmt in [*cases, ("hosted_vllm", FLOOR, "float")]:
            body = payload(route, batch, dim, fmt)
            reference = post(proxies[1], body)[1]
            for proxy in proxies:
                assert post(proxy, body)[1] == reference, f"{proxy.label}: another body ({route} {fmt})"
            requests = args.requests * (1 if fmt == "float" and batch > 1 else 4)  # (the quick cases: more)
            result = measure(proxies, body, args.rounds, requests, args.clients, args.latency_requests)
            for label in LABELS:
                r = result[label]
                overhead = "-" if r["overhead_ms"] is None else f"{r['overhead_ms']:.1f}"
                lines.append(f"| {route} | {batch}x{dim} | {fmt} | {label} | {r['latency_ms']:.1f} | "
                             f"{r['rps']:.2f} | {r['cpu_ms']:.1f} | {overhead} |")
            on, off, aa = result["on"], result["off"], result["off again"]
            summary.append(f"| {route} | {batch}x{dim} | {fmt} | {off['latency_ms'] / on['latency_ms']:.2f} | "
                           f"{on['rps'] / off['rps']:.2f} | {off['cpu_ms'] / on['cpu_ms']:.2f} | "
                           f"{aa['latency_ms'] / off['latency_ms']:.2f} / {aa['rps'] / off['rps']:.2f} |")
            print("\n".join(lines[-3:]), flush=True)
        lines += ["", "| route | shape | format | latency off/on | requests/s on/off | CPU off/on | A/A latency / rps |",
                  "|---|---|---|---:|---:|---:|---:|", *summary,
                  "", f"load average at the end: {os.getloadavg()[0]:.1f}"]
    finally:
        for proxy in proxies:
            proxy.stop()
        upstream.terminate()
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
