"""The reading kernels at each SIMD level this CPU has, forced in turn, against what a client uses
today, in one process: a 64x3072 float32 response body read back to one array (base64 rows; float
rows in orjson's and vLLM's layout, "shortest", and in json.dumps's, "repr") against orjson.loads
plus pybase64 or numpy.array, and base64 rows decoded against pybase64 alone.

    python -m benchmarks.reading_levels [--rows 64] [--dim 3072] [--rounds 15]

Each path is checked against the embeddings first; then rounds run every path once, in an order
that rotates each round; the table shows medians and the competitor's median over tensorb64's (above
1: tensorb64 faster). Read ratios, not times: the machine may be shared (the load is printed).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import time

import numpy as np
import orjson
import pybase64

import tensorb64
from tensorb64 import _native
from tensorb64.openai import decode_response_body, response_body


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def paths(x: np.ndarray) -> dict:
    """{work: (tensorb64's call, the competitor's name, its call)}."""
    rows, dim = x.shape
    row_bytes = dim * 4
    strings = tensorb64.encode_rows(x)
    b64 = response_body(x, model="m", encoding_format="base64")
    shortest = response_body(x, model="m", encoding_format="float", float_format="shortest")
    repr_body = response_body(x, model="m", encoding_format="float", float_format="repr")

    def pybase64_rows():
        out = np.empty((rows, dim), np.float32)
        buffer = memoryview(out).cast("B")
        for i, s in enumerate(strings):
            buffer[i * row_bytes:(i + 1) * row_bytes] = pybase64.b64decode(s, validate=True)
        return out

    def orjson_pybase64():
        data = orjson.loads(b64)["data"]
        out = np.empty((len(data), dim), np.float32)
        buffer = memoryview(out).cast("B")
        for e in data:
            i = e["index"]
            buffer[i * row_bytes:(i + 1) * row_bytes] = pybase64.b64decode(e["embedding"], validate=True)
        return out

    def orjson_numpy(body):
        return lambda: np.array([e["embedding"] for e in orjson.loads(body)["data"]], dtype=np.float32)

    return {
        "float body read, shortest": (lambda: decode_response_body(shortest), "orjson + numpy.array", orjson_numpy(shortest)),
        "float body read, repr": (lambda: decode_response_body(repr_body), "orjson + numpy.array", orjson_numpy(repr_body)),
        "base64 body read": (lambda: decode_response_body(b64), "orjson + pybase64", orjson_pybase64),
        "base64 rows decoded": (lambda: tensorb64.decode_rows(strings), "pybase64 alone", pybase64_rows),
    }


def median_times(calls: dict, rounds: int) -> dict:
    """Median seconds a call of each, rounds interleaved (the order rotating), each call repeated
    to a few milliseconds."""
    repeat = {}
    for name, call in calls.items():
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < 0.005:
            call()
            n += 1
        repeat[name] = n
    samples = {name: [] for name in calls}
    names = list(calls)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            start = time.perf_counter()
            for _ in range(repeat[name]):
                calls[name]()
            samples[name].append((time.perf_counter() - start) / repeat[name])
    return {name: statistics.median(s) for name, s in samples.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--dim", type=int, default=3072)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    x = np.random.default_rng(0).normal(0, 0.05, (args.rows, args.dim)).astype(np.float32)
    work = paths(x)
    levels = tensorb64.available_simd_levels()
    calls = {}
    for name, (ours, competitor, theirs) in work.items():
        for level in levels:
            _native._set_simd_level(level)
            assert np.array_equal(ours().view(np.uint32), x.view(np.uint32)), (name, level)

            def at_level(level=level, ours=ours):
                _native._set_simd_level(level)
                return ours()
            calls[(name, level)] = at_level
        assert np.array_equal(theirs().view(np.uint32), x.view(np.uint32)), name
        calls[(name, competitor)] = theirs
    gc.disable()
    try:
        times = median_times(calls, args.rounds)
    finally:
        gc.enable()
    print(f"{args.rows} x {args.dim} N(0, 0.05) float32; {cpu_name()}; load {os.getloadavg()[0]:.1f}; "
          f"tensorb64 {tensorb64.__version__}, orjson {orjson.__version__}, pybase64 {pybase64.__version__}, "
          f"numpy {np.__version__}; medians of {args.rounds} interleaved rounds (competitor / tensorb64: above 1, "
          "tensorb64 faster)\n")
    print("| work | competitor | " + " | ".join(levels) + " |")
    print("|---|---|" + "---:|" * len(levels))
    for name, (_, competitor, _) in work.items():
        theirs = times[(name, competitor)]
        cells = [f"{theirs / times[(name, level)]:.1f}x ({times[(name, level)] * 1e6:,.0f} us)" for level in levels]
        print(f"| {name} | {competitor} {theirs * 1e6:,.0f} us | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
