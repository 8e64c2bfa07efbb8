"""Throughput of `encode_rows` and `response_body` called from 1 and from 2 Python threads at once
(plain threads, each making its own calls; not `threads=`), on any CPython:

    python benchmarks/free_threading.py [--rounds 15] [--seconds 0.2]

On a free-threaded build (3.13t, 3.14t) the two threads run the whole call in parallel (argument
parsing, allocation, the kernel); on a GIL build only the section that releases the GIL (the
kernel's writing, above 64 KiB) overlaps. Each thread encodes its own copy of the batch, as a
server's requests each bring their own tensor (--shared: both encode one array, whose reference
count and buffer export every call touches; that costs the small batches some of their scaling). The scaling figure is the throughput with 2 threads over
the throughput with 1 (2.0: perfect on 2 free cores). Each round measures 1 thread then 2 threads
back to back, each for about --seconds; the figure is the median over rounds of the per-round
ratio (the machine's load moves both sides of a round together). The load average is printed:
on a shared machine the ratio is bounded by the cores actually free.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import sysconfig
import threading
import time

import numpy as np

import tensorb64

CASES = [  # (rows, dim): one short request, a small batch, the 64 x 3072 batch of the design notes
    (1, 768),
    (8, 1024),
    (64, 3072),
]


class Workers:
    """Threads kept for the whole run; each round starts them together on a barrier."""

    def __init__(self, count: int):
        self.count = count
        self.start = threading.Barrier(count + 1)
        self.done = threading.Barrier(count + 1)
        self.job = None
        self.calls = [0] * count
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(count)]
        for t in self.threads:
            t.start()

    def _run(self, i: int) -> None:
        while True:
            self.start.wait()
            if self.job is None:
                return
            calls, deadline = self.job
            call = calls[i]
            n = 0
            while time.perf_counter() < deadline:
                for _ in range(8):
                    call()
                n += 8
            self.calls[i] = n
            self.done.wait()

    def throughput(self, calls, seconds: float) -> float:
        """Calls a second, all threads together, thread i making calls[i] for about `seconds`."""
        t0 = time.perf_counter()
        self.job = (calls, t0 + seconds)
        self.start.wait()
        self.done.wait()
        elapsed = time.perf_counter() - t0
        return sum(self.calls) / elapsed

    def close(self) -> None:
        self.job = None
        self.start.wait()
        for t in self.threads:
            t.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--seconds", type=float, default=0.2)
    parser.add_argument("--shared", action="store_true", help="both threads encode one shared array")
    args = parser.parse_args()

    free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    gil = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
    print(f"CPython {sys.version.split()[0]}{'t' if free_threaded else ''} | GIL enabled: {gil} | "
          f"inputs: {'one shared array' if args.shared else 'a copy per thread'} | "
          f"simd: {tensorb64.simd_level()} | cores: {os.cpu_count()} | load average: "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    one, two = Workers(1), Workers(2)
    rng = np.random.default_rng(0)
    print(f"{'call':<14} {'rows x dim':>11} {'1 thread calls/s':>17} {'2 threads calls/s':>18} {'scaling':>8}")
    for rows, dim in CASES:
        x = rng.standard_normal((rows, dim)).astype(np.float32)
        inputs = [x, x] if args.shared else [x.copy(), x.copy()]
        calls = {
            "encode_rows": [lambda x=x: tensorb64.encode_rows(x) for x in inputs],
            "response_body": [lambda x=x: tensorb64.response_body(x, model="m") for x in inputs],
        }
        for name, per_thread in calls.items():
            per_thread[0]()
            singles, ratios = [], []
            for _ in range(args.rounds):
                single = one.throughput(per_thread, args.seconds)
                double = two.throughput(per_thread, args.seconds)
                singles.append(single)
                ratios.append(double / single)
            single = statistics.median(singles)
            ratio = statistics.median(ratios)
            print(f"{name:<14} {f'{rows} x {dim}':>11} {single:>17,.0f} {single * ratio:>18,.0f} {ratio:>7.2f}x")
    one.close()
    two.close()
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
