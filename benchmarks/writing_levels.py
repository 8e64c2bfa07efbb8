"""The float-text writers at each SIMD level this CPU has, forced in turn, against what a server
uses today, in one process: a 64x3072 float32 batch (N(0, 0.05)) written as JSON rows by each of
the core's writers, beside orjson writing the same rows.

    python -m benchmarks.writing_levels [--rows 64] [--dim 3072] [--rounds 15] [--allocator raised|fresh]

The works: float32 rows in the shortest text (`json_rows(t, float_format="shortest")`), in
json.dumps's (`"repr"`) and in orjson's (`"orjson"`), each against `orjson.dumps(row,
OPT_SERIALIZE_NUMPY)` per row (vLLM's float route); float64 rows of the same values (the Python
floats vLLM's Cohere route and SGLang's float route hand orjson) in orjson's text, the orjson
float64 writer, against `orjson.dumps(row, OPT_SERIALIZE_NUMPY)` per float64 row, and in
json.dumps's. Every level's rows are checked byte for byte against the scalar level's first, and
orjson's own text against the "orjson" rows. Medians of interleaved rounds
(tensorb64._bench.timing.measure), one thread, glibc's allocator pinned in the state named
(default "raised": a long-running server's, its freed memory reused; tensorb64._bench.allocator).
The table: orjson's time over each level's (above 1: tensorb64 faster), and each level's speed-up
over the scalar level. Read ratios, not times: the machine may be shared (the load is printed).
"""

from __future__ import annotations

import argparse
import os
import platform

import numpy as np
import orjson

import tensorb64
from tensorb64 import _native
from tensorb64._bench.allocator import allocator_states
from tensorb64._bench.timing import measure

OPT = orjson.OPT_SERIALIZE_NUMPY


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def works(x32: np.ndarray) -> dict:
    """{work: (the rows' array, float_format, the competitor's name, its call)}."""
    x64 = x32.astype(np.float64)
    orjson32 = ("orjson.dumps(float32 row, OPT_SERIALIZE_NUMPY)", lambda: [orjson.dumps(r, option=OPT) for r in x32])
    orjson64 = ("orjson.dumps(float64 row, OPT_SERIALIZE_NUMPY)", lambda: [orjson.dumps(r, option=OPT) for r in x64])
    return {
        "float32 rows, shortest": (x32, "shortest", *orjson32),
        "float32 rows, repr (json.dumps's text)": (x32, "repr", *orjson32),
        "float32 rows, orjson's text": (x32, "orjson", *orjson32),
        "float64 rows, orjson's text (Cohere, SGLang)": (x64, "orjson", *orjson64),
        "float64 rows, repr": (x64, "repr", *orjson64),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--dim", type=int, default=3072)
    parser.add_argument("--rounds", type=int, default=15)
    states = {name: apply for name, _, apply in allocator_states()}
    parser.add_argument("--allocator", choices=sorted(states), default="raised" if "raised" in states else None)
    args = parser.parse_args(argv)
    if args.allocator is not None:
        states[args.allocator]()
    x = np.random.default_rng(0).normal(0, 0.05, (args.rows, args.dim)).astype(np.float32)
    levels = list(_native.available_simd_levels())
    initial = _native.simd_level()
    work = works(x)
    calls = {}
    try:
        for name, (rows, fmt, competitor, theirs) in work.items():
            _native._set_simd_level("scalar")
            reference = tensorb64.json_rows(rows, float_format=fmt)
            if fmt == "orjson":
                assert theirs() == reference, f"{name}: orjson's own text differs"
            calls[(name, competitor)] = theirs
            for level in levels:

                def at_level(level=level, rows=rows, fmt=fmt):
                    _native._set_simd_level(level)
                    return tensorb64.json_rows(rows, float_format=fmt)

                assert at_level() == reference, f"{name}: level {level}'s text differs from the scalar level's"
                calls[(name, level)] = at_level
        load = os.getloadavg()[0]
        result = measure(calls, rounds=args.rounds, sample_s=0.05, budget_s=10.0)
    finally:
        _native._set_simd_level(initial)
    us = {key: r["us"] for key, r in result.items()}
    values = args.rows * args.dim
    print(f"{args.rows} x {args.dim} N(0, 0.05) float32; {cpu_name()}; load {load:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after; glibc's allocator {args.allocator or 'as found'}; tensorb64 "
          f"{tensorb64.__version__}, orjson {orjson.__version__}, numpy {np.__version__}; medians of "
          f"{args.rounds} interleaved rounds, one thread. Each cell: orjson's time over the level's "
          "(above 1: tensorb64 faster), the level's ns a value, and its speed-up over the scalar level.\n")
    print("| work | orjson | " + " | ".join(levels) + " |")
    print("|---|---|" + "---:|" * len(levels))
    for name, (_, _, competitor, _) in work.items():
        theirs = us[(name, competitor)]
        scalar = us[(name, "scalar")]
        cells = [f"{theirs / us[(name, level)]:.2f}x ({us[(name, level)] * 1e3 / values:.1f} ns; "
                 f"{scalar / us[(name, level)]:.1f}x scalar)" for level in levels]
        print(f"| {name} | {theirs * 1e3 / values:.1f} ns | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
