"""Infinity's /embeddings route with tensorb64.infinity.patch() on and off, in one process.

    TENSORB64_INFINITY_WHEEL=path/to/infinity_emb-0.0.78-py3-none-any.whl python -m benchmarks.infinity_route_bench

Run from the repository root (it imports tests.support.infinity_code) in a venv with FastAPI,
pydantic, orjson and Infinity's import dependencies (ci/vllm_check.sh's). What is timed is what
Infinity's API process does for a request once its engine has the rows: Infinity 0.0.78's own app
(create_server, imported from its wheel) driven as an ASGI app, its engine answering at once with
precomputed float32 rows (no HTTP server, no network, no model): request parsing, its route, its
response body. Patched and unpatched are interleaved in blocks of a few requests (the patch is
global: it is applied or undone between blocks), with an A/A pair (unpatched against unpatched)
for the noise floor; medians over all requests.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import time
import warnings

import numpy as np

from tensorb64 import _native, infinity
from tensorb64._hosts.infinity import INFINITY
from tests.support import infinity_code

SHAPES = [(1, 384), (1, 3072), (64, 384), (64, 3072)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=40, help="requests per path and case (default 40)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="ORJSONResponse is deprecated")
    infinity_code.install(infinity_code.wheel())
    INFINITY.logger.setLevel("WARNING")  # (its line on each patch() would be timed between blocks)
    loop = asyncio.new_event_loop()
    print(f"# Infinity 0.0.78's /embeddings route in one process, patched and not ({platform.machine()}, SIMD level "
          f"{_native.simd_level()}, load average {os.getloadavg()[0]:.1f}; {args.rounds} requests a path, interleaved)")
    print("| rows | format | Infinity's own: ms a request | patched | requests/s patched ÷ own | A/A |")
    print("|---|---|---:|---:|---:|---:|")
    for batch, dim in SHAPES:
        rows = list(np.random.default_rng(0).normal(0, 0.05, (batch, dim)).astype(np.float32))
        server = infinity_code.app(rows)
        for encoding_format in ("float", "base64"):
            times = {"off": [], "on": [], "off again": []}
            bodies = {}
            rounds = args.rounds if (batch, encoding_format) != (64, "float") else max(5, args.rounds // 4)
            block = 5
            for _ in range(-(-rounds // block)):
                for path in times:
                    (infinity.patch if path == "on" else infinity.unpatch)()
                    for _ in range(block):
                        start = time.perf_counter()
                        bodies[path] = loop.run_until_complete(infinity_code.request(server, encoding_format))
                        times[path].append(time.perf_counter() - start)
            assert bodies["on"][0] == bodies["off"][0] == 200 and len(bodies["on"][2]) == len(bodies["off"][2])
            med = {path: statistics.median(values) for path, values in times.items()}
            print(f"| {batch}×{dim} | {encoding_format} | {med['off'] * 1e3:.2f} | {med['on'] * 1e3:.2f} | "
                  f"{med['off'] / med['on']:.2f} | {med['off'] / med['off again']:.2f} |", flush=True)
    infinity.unpatch()
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
