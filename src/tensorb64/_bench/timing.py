"""How every section times its paths: interleaved rounds, medians, minor page faults per call.

Each path is warmed up and its inner loop sized to about `sample_s`; then rounds run every path
once, in an order that rotates each round, with the garbage collector off, so that load from other
processes on a shared machine hits all paths alike. Read the ratios, not the absolute times.
"""

from __future__ import annotations

import gc
import statistics
import time

from . import os_facts


def _loop(fn, n: int) -> float:
    """Seconds per call of n back-to-back calls (results dropped, as a worker drops them)."""
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


# settle's calls are made only for paths faster than this a call (for a slower one, what the
# path before it left costs little beside the call itself).
SETTLE_BELOW_S = 0.1


def measure(calls: dict, *, rounds: int, sample_s: float, budget_s: float, settle: int = 0) -> dict:
    """Interleaved medians: {name: {us, p25, p75, rounds, inner}} for {name: zero-arg call}.
    settle: untimed calls before each sample (of a path below SETTLE_BELOW_S a call), where a
    path's first calls after another path's are slower than its later ones (the patched clients':
    switching the patch on or off, and the first calls after the other states' runs, up to 1 ms
    slower at 64x3072), so that each sample times the path's own steady state."""
    names = list(calls)
    inner, n_rounds, settled = {}, {}, {}
    for name in names:  # warm-up, which also sizes the inner loop of each sample
        fn = calls[name]
        fn()
        per_call = _loop(fn, 1)
        if per_call < sample_s:
            per_call = _loop(fn, max(1, int(0.2 * sample_s / per_call)))
        inner[name] = max(1, int(sample_s / per_call))
        settled[name] = settle if per_call < SETTLE_BELOW_S else 0
        sample = inner[name] * per_call
        n_rounds[name] = max(5, min(rounds, int(budget_s / max(sample, 1e-9))))
    samples = {name: [] for name in names}
    gc.collect()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for r in range(max(n_rounds.values())):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                if r < n_rounds[name]:
                    for _ in range(settled[name]):
                        calls[name]()
                    samples[name].append(_loop(calls[name], inner[name]))
    finally:
        if gc_was_enabled:
            gc.enable()
    out = {}
    for name in names:
        s = sorted(samples[name])
        q = statistics.quantiles(s, n=4) if len(s) >= 2 else [s[0], s[0], s[0]]
        out[name] = {"us": statistics.median(s) * 1e6, "p25": q[0] * 1e6, "p75": q[2] * 1e6, "rounds": len(s), "inner": inner[name]}
    return out


def minor_faults_per_call(call, per_call_s: float) -> float | None:
    """Minor page faults of this process per call, over calls lasting about 0.2 s in all; None
    where this OS's faults are not counted (os_facts.MINOR_FAULTS)."""
    if not os_facts.MINOR_FAULTS:
        return None
    n = max(3, min(200, int(0.2 / max(per_call_s, 1e-7))))
    call()
    before = os_facts.minor_faults()
    for _ in range(n):
        call()
    return (os_facts.minor_faults() - before) / n


def measure_paths(paths: dict, cfg: dict, *, checked: bool, ref: str, ratio_key: str, extra=None,
                  settle: int = 0) -> list:
    """The result rows of {name: (zero-arg call, skip reason or None)}: each path's measure()
    entry (none where its case failed its output check, `checked` False), `extra(call, entry)`'s
    fields, and its time over `ref`'s under `ratio_key`; a skipped path says why."""
    timed = {name: call for name, (call, skip) in paths.items() if not skip}
    stats = measure(timed, rounds=cfg["rounds"], sample_s=cfg["sample_s"], budget_s=cfg["budget_s"],
                    settle=settle) if checked else {}
    results = []
    for name, (call, skip) in paths.items():
        row = {"path": name}
        if name in stats:
            row.update(stats[name])
            if extra is not None:
                row.update(extra(call, stats[name]))
            if ref in stats:
                row[ratio_key] = stats[name]["us"] / stats[ref]["us"]
        elif skip:
            row["skipped"] = skip
        results.append(row)
    return results
