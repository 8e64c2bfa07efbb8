"""SGLang's /v1/embeddings route with the tensorb64 plugin on and off, in one process.

    TENSORB64_SGLANG_WHEEL=path/to/sglang-0.5.23-*.whl [TENSORB64_DYNAMO_WHEEL=path/to/ai_dynamo-1.6.1-*.whl] \
        python -m benchmarks.sglang_route_bench

Run from the repository root (it reads SGLang's code with tests.support.sglang_code). What is
timed is what SGLang's API process does for a request once its scheduler has handed the rows over
(lists of Python floats): SGLang 0.5.23's own _handle_non_streaming_request and
_build_embedding_response (read from its wheel) behind a FastAPI route declared as SGLang's,
driven as an ASGI app (no HTTP server, no network, no model), plugin off against on, interleaved
request by request, with an A/A pair (off against off) for the noise floor. Also: the rows read
by _read_float_lists alone, in ns a value; with Dynamo's wheel, its SGLang worker's row encoder
(read from the wheel) over a 64×3072 batch, its own against the plugin's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import platform
import statistics
import tempfile
import time
import warnings

import numpy as np

from tensorb64 import _native
from tensorb64._hosts import dynamo_sglang
from tensorb64._hosts import sglang as sglang_host
from tensorb64._hosts.patching import install_module
from tests.support import sglang_code

SHAPES = [(1, 384), (1, 3072), (64, 384), (64, 3072)]


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=60, help="requests per path and case (default 60)")
    args = parser.parse_args()
    wheel = os.environ.get("TENSORB64_SGLANG_WHEEL")
    if not wheel:
        raise SystemExit("set TENSORB64_SGLANG_WHEEL to SGLang 0.5.23's wheel (pip download --no-deps sglang==0.5.23)")
    warnings.filterwarnings("ignore", message="ORJSONResponse is deprecated")
    folder = pathlib.Path(tempfile.mkdtemp())
    sglang_code.install(sglang_code.sources(wheel), folder)
    import importlib

    module = importlib.import_module(sglang_code.SERVING_MODULE)
    cls = module.OpenAIServingEmbedding
    own = {name: getattr(cls, name) for name in ("_build_embedding_response", "_handle_non_streaming_request")}
    assert install_module(sglang_host.SGLANG, sglang_host.SERVING_MODULE, module)
    off_cls = type("OpenAIServingEmbedding", (cls,), own)  # SGLang's own methods
    loop = asyncio.new_event_loop()
    print(f"# SGLang 0.5.23's embeddings route in one process, plugin on and off ({platform.processor() or platform.machine()}, "
          f"SIMD level {_native.simd_level()}, load average {os.getloadavg()[0]:.1f}; {args.rounds} requests a path, "
          "interleaved; the allocator warm)")
    print("| rows | format | SGLang's own: ms a request (p50 / p99) | plugin on (p50 / p99) | requests/s on ÷ off | A/A |")
    print("|---|---|---:|---:|---:|---:|")
    for batch, dim in SHAPES:
        rows = np.random.default_rng(0).normal(0, 0.05, (batch, dim)).astype(np.float32).tolist()
        items = [{"embedding": row, "meta_info": {"prompt_tokens": 7}} for row in rows]
        apps = {"off": sglang_code.route(off_cls, items), "on": sglang_code.route(cls, items),
                "off again": sglang_code.route(off_cls, items)}
        for encoding_format in ("float", "base64"):
            bodies = {k: loop.run_until_complete(sglang_code.request(app, encoding_format)) for k, app in apps.items()}
            assert bodies["on"] == bodies["off"], "the plugin's body differs from SGLang's"
            rounds = args.rounds if (batch, encoding_format) != (64, "float") or dim < 3072 else max(5, args.rounds // 6)
            times = {k: [] for k in apps}
            for _ in range(rounds):
                for k, app in apps.items():
                    start = time.perf_counter()
                    loop.run_until_complete(sglang_code.request(app, encoding_format))
                    times[k].append(time.perf_counter() - start)
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"| {batch}×{dim} | {encoding_format} | {med['off'] * 1e3:.2f} / {percentile(times['off'], 0.99) * 1e3:.2f} "
                  f"| {med['on'] * 1e3:.3f} / {percentile(times['on'], 0.99) * 1e3:.3f} | {med['off'] / med['on']:.1f}× "
                  f"| {med['off'] / med['off again']:.2f} |")
    rows = np.random.default_rng(0).normal(0, 0.05, (64, 3072)).astype(np.float32).tolist()
    out = np.empty((64, 3072))
    reads = []
    for _ in range(51):
        start = time.perf_counter()
        _native._read_float_lists(rows, out)
        reads.append(time.perf_counter() - start)
    print(f"\n_read_float_lists, 64×3072 Python floats: {statistics.median(reads) * 1e9 / out.size:.2f} ns a value (median of 51)")
    dynamo_wheel = os.environ.get("TENSORB64_DYNAMO_WHEEL")
    if dynamo_wheel:
        sglang_code.install(sglang_code.dynamo_sources(dynamo_wheel), folder)
        handler = importlib.import_module(sglang_code.DYNAMO_MODULE)
        own_encoder = handler._encode_floats_to_base64
        assert install_module(dynamo_sglang.DYNAMO_SGLANG, dynamo_sglang.DYNAMO_MODULE, handler)
        swapped = handler._encode_floats_to_base64
        assert [swapped(row) for row in rows] == [own_encoder(row) for row in rows]
        batches = {"Dynamo's own": [], "swapped": []}
        for _ in range(21):
            for name, encoder in (("Dynamo's own", own_encoder), ("swapped", swapped)):
                start = time.perf_counter()
                [encoder(row) for row in rows]
                batches[name].append(time.perf_counter() - start)
        own_ms, swapped_ms = (statistics.median(batches[k]) * 1e3 for k in ("Dynamo's own", "swapped"))
        print(f"Dynamo 1.6.1's SGLang worker, _encode_floats_to_base64 over a 64×3072 batch: its own {own_ms:.2f} ms, "
              f"swapped {swapped_ms:.2f} ms ({own_ms / swapped_ms:.1f}×; medians of 21)")
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()
    sglang_code.uninstall(folder)


if __name__ == "__main__":
    main()
