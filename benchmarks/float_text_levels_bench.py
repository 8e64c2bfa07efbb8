"""Float text written at every SIMD level this CPU runs, against orjson, in one process.

    python -m benchmarks.float_text_levels_bench [--rounds N] [--rows B] [--dim D] [--allocator raised|fresh]

Run from the repository root with the package installed (torch, orjson and numpy beside it). A
B×D float32 batch drawn from N(0, 0.05) (default 64×3072, an embeddings batch), written as JSON rows
by each of the core's float-text writers with each level forced in turn (the private switch the
tests use), beside what a server does today, all interleaved in the same rounds (medians;
tensorb64._bench.timing.measure), one thread, glibc's allocator pinned in the state named (default
"raised": a long-running server's, its freed memory reused; tensorb64._bench.allocator):

  * float32 rows, shortest (`json_rows(t, float_format="shortest")`), json.dumps's text
    (`"repr"`) and orjson's (`"orjson"`), against `orjson.dumps(row, OPT_SERIALIZE_NUMPY)` per
    row, vLLM's float route;
  * float64 rows (the same values widened: the Python floats that vLLM's Cohere route and
    SGLang's float route hand to orjson) in orjson's text (`"orjson"`, the orjson float64
    writer), against `orjson.dumps(row, OPT_SERIALIZE_NUMPY)` per float64 row and
    `orjson.dumps(row.tolist())` per row, what those routes run; and in json.dumps's (`"repr"`).

Every level's rows are checked byte for byte against the scalar level's first, and orjson's own
text against the "orjson" rows. Ratios: orjson's time over each writer's (above 1: tensorb64
faster), and each writer's speed-up over the scalar level's.
"""

from __future__ import annotations

import argparse
import os
import platform

import numpy as np
import orjson
import torch

import tensorb64
from tensorb64 import _native
from tensorb64._bench.allocator import allocator_states
from tensorb64._bench.timing import measure

OPT = orjson.OPT_SERIALIZE_NUMPY

# (name, dtype of the rows, float_format): the writers a level provides.
WRITERS = (
    ("f32 shortest", torch.float32, "shortest"),
    ("f32 repr", torch.float32, "repr"),
    ("f32 orjson", torch.float32, "orjson"),
    ("f64 orjson", torch.float64, "orjson"),
    ("f64 repr", torch.float64, "repr"),
)
# Each writer's competitor: the fastest way a server writes the same rows today.
COMPETITOR = {
    "f32 shortest": "orjson f32 numpy rows",
    "f32 repr": "orjson f32 numpy rows",
    "f32 orjson": "orjson f32 numpy rows",
    "f64 orjson": "orjson f64 numpy rows",
    "f64 repr": "orjson f64 numpy rows",
}


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--dim", type=int, default=3072)
    states = {name: apply for name, _, apply in allocator_states()}
    parser.add_argument("--allocator", choices=sorted(states), default="raised" if "raised" in states else None)
    args = parser.parse_args()
    if args.allocator is not None:
        states[args.allocator]()
    torch.set_num_threads(1)
    levels = list(_native.available_simd_levels())
    initial = _native.simd_level()
    t32 = torch.from_numpy(np.random.default_rng(0).normal(0, 0.05, (args.rows, args.dim)).astype(np.float32))
    t64 = t32.to(torch.float64)
    a32, a64 = t32.numpy(), t64.numpy()
    inputs = {torch.float32: t32, torch.float64: t64}

    def writer(level, dtype, fmt):
        t = inputs[dtype]

        def call():
            _native._set_simd_level(level)
            return tensorb64.json_rows(t, float_format=fmt)

        return call

    calls = {
        "orjson f32 numpy rows": lambda: [orjson.dumps(r, option=OPT) for r in a32],
        "orjson f64 numpy rows": lambda: [orjson.dumps(r, option=OPT) for r in a64],
        "orjson f64 rows of Python floats": lambda: [orjson.dumps(r) for r in t64.tolist()],
    }
    try:
        # Every level's text is the scalar level's; orjson's own text is the "orjson" rows'.
        reference = {name: writer("scalar", dtype, fmt)() for name, dtype, fmt in WRITERS}
        assert reference["f32 orjson"] == [orjson.dumps(r, option=OPT) for r in a32]
        assert reference["f64 orjson"] == [orjson.dumps(r, option=OPT) for r in a64]
        for level in levels:
            for name, dtype, fmt in WRITERS:
                call = writer(level, dtype, fmt)
                assert call() == reference[name], f"level {level}, {name}: not the scalar level's text"
                calls[f"{level} {name}"] = call
        load = os.getloadavg()
        result = measure(calls, rounds=args.rounds, sample_s=0.05, budget_s=10.0)
    finally:
        _native._set_simd_level(initial)
    values = args.rows * args.dim
    us = {name: r["us"] for name, r in result.items()}
    print(f"# float text written, {args.rows}x{args.dim} float32 N(0, 0.05), one thread; {cpu_name()}; "
          f"allocator {args.allocator or 'as found'}; load average {load[0]:.2f} before, {os.getloadavg()[0]:.2f} after; tensorb64 {tensorb64.__version__}, "
          f"orjson {orjson.__version__}; medians of {args.rounds} interleaved rounds")
    print(f"{'path':40s} {'µs':>9s} {'ns/value':>9s} {'bytes/value':>11s} {'vs orjson':>10s} {'vs scalar':>10s}")
    for name in ("orjson f32 numpy rows", "orjson f64 numpy rows", "orjson f64 rows of Python floats"):
        print(f"{name:40s} {us[name]:9.0f} {us[name] * 1e3 / values:9.2f}")
    for level in levels:
        for name, _, _ in WRITERS:
            key = f"{level} {name}"
            size = sum(map(len, reference[name])) / values
            vs_orjson = us[COMPETITOR[name]] / us[key]
            vs_scalar = us[f"scalar {name}"] / us[key]
            print(f"{key:40s} {us[key]:9.0f} {us[key] * 1e3 / values:9.2f} {size:11.2f} {vs_orjson:9.2f}x {vs_scalar:9.2f}x")
    print("(vs orjson: orjson's time on the same rows over the writer's, float32 rows against orjson's float32 numpy "
          "rows, float64 against its float64 numpy rows; vs scalar: the scalar level's time over the writer's)")


if __name__ == "__main__":
    main()
