"""The base64 section (`--section base64`, formerly `rows`): embedding rows to base64 strings.

For each case (input dtype, output dtype, B, D) the competing paths are checked once against
tensorb64's output, then timed side by side (timing.measure). The paths, per row as embedding
workers run them:
  struct     base64.b64encode(struct.pack(f"<{D}f", *t[i].tolist())).decode()   (the contract)
  numpy      base64.b64encode(t[i].to(torch.float32).numpy().tobytes()).decode()
  pybase64   a = t.to(torch.float32).numpy(); [pybase64.b64encode_as_string(r) for r in a]
             (pybase64's fastest use: the array converted once; the ratios are against this)
  pybase64 per-row .to()   pybase64.b64encode_as_string(t[i].to(torch.float32).numpy())
  vllm       pybase64.b64encode(t[i].to(torch.float16).numpy().tobytes()).decode()   (float16 output)
  tensorb64  tensorb64.encode_rows(t)                      (one call for the whole batch)
and whole-batch (one str for all rows): pybase64 of the whole array against tensorb64.encode(t);
plus a numpy copy of a uint8 array of the output's size, the physical reference. Then the small
calls (one request's embedding) against pybase64 on the same row.
"""

from __future__ import annotations

import base64
import struct

import numpy as np

import tensorb64
from .report import fmt_us, markdown_table, spread_text, text_table
from .timing import measure

NAME = "base64"
REQUIRES = ("torch", "pybase64")

QUICK_B = (1, 64)
QUICK_D = (384, 3072)
FULL_B = (1, 15, 64, 256, 1024)
FULL_D = (384, 1024, 3072, 4096)
# The struct path costs ~60 ns per value; above this many values a call takes a large part of a
# second and is timed in --full only once per round for a few rounds, or skipped in quick runs.
STRUCT_MAX_VALUES_QUICK = 256 * 1024
STRUCT_MAX_VALUES_FULL = 1024 * 1024


class Path:
    """One competing way of producing a case's output: `make()` returns the zero-argument call."""

    def __init__(self, name, make, ref, skip=None):
        self.name = name
        self.make = make
        self.ref = ref  # the name of the tensorb64 path its speed-up is measured against (None: it is one)
        self.skip = skip  # why it is not timed in this case, or None


# --------------------------------------------------------------------------- cases


def _struct_rows(t, D):
    fmt = f"<{D}f"
    B = t.shape[0]
    return lambda: [base64.b64encode(struct.pack(fmt, *t[i].tolist())).decode() for i in range(B)]


def _numpy_rows(t, torch):
    B = t.shape[0]
    return lambda: [base64.b64encode(t[i].to(torch.float32).numpy().tobytes()).decode() for i in range(B)]


def _pybase64_rows(t, torch, pybase64):
    # The fastest way a user calls pybase64 on a batch: the array converted once, then one call
    # per row of it (b64encode_as_string takes any C-contiguous buffer and returns a str).
    enc = pybase64.b64encode_as_string

    def call():
        return [enc(r) for r in t.to(torch.float32).numpy()]

    return call


def _pybase64_per_row_to(t, torch, pybase64):
    # The per-row loop some workers write: a .to() and a .numpy() for every row.
    B = t.shape[0]
    enc = pybase64.b64encode_as_string
    return lambda: [enc(t[i].to(torch.float32).numpy()) for i in range(B)]


def _pybase64_batch(t, torch, pybase64):
    enc = pybase64.b64encode_as_string
    return lambda: enc(t.to(torch.float32).numpy())


def _vllm_f16_rows(t, torch, pybase64):
    # vLLM's base64 path for embed_dtype="float16": .to(dtype) -> numpy() -> tobytes() -> b64encode.
    B = t.shape[0]
    return lambda: [pybase64.b64encode(t[i].to(torch.float16).numpy().tobytes()).decode() for i in range(B)]


def _memcpy(n_bytes):
    src = np.ones(n_bytes, dtype=np.uint8)
    dst = np.empty_like(src)
    return lambda: np.copyto(dst, src)


def output_bytes(B: int, D: int, width: int) -> int:
    return B * 4 * ((D * width + 2) // 3)


def build_case(torch, pybase64, in_dtype, out_dtype, B, D, *, struct_max, threads=None):
    """(description, {name: Path}, reference output per ref name)."""
    g = torch.Generator().manual_seed(1000003 * B + D)
    t = torch.randn(B, D, generator=g, dtype=torch.float32)
    if in_dtype == "bfloat16":
        t = t.to(torch.bfloat16)
    width = {"float32": 4, "float16": 2}[out_dtype]
    paths = []
    if threads is not None:  # threads=N against threads=1 of the same call
        paths.append(Path("tensorb64 rows threads=1", lambda: (lambda: tensorb64.encode_rows(t)), ref=None))
        paths.append(Path(f"tensorb64 rows threads={threads}", lambda: (lambda: tensorb64.encode_rows(t, threads=threads)), ref="tensorb64 rows threads=1"))
        return t, paths
    if out_dtype == "float16":
        paths.append(Path("vllm f16 (.to/numpy/tobytes/pybase64)", lambda: _vllm_f16_rows(t, torch, pybase64), ref="tensorb64 rows"))
        paths.append(Path("tensorb64 rows", lambda: (lambda: tensorb64.encode_rows(t, dtype="float16")), ref=None))
        paths.append(Path("memcpy of output size", lambda: _memcpy(output_bytes(B, D, width)), ref="tensorb64 rows"))
        return t, paths
    struct_skip = None
    if B * D > struct_max:
        struct_skip = f"struct path not timed at {B}x{D} (> {struct_max} values; ~{B * D * 60e-9:.2f} s a call); its output is still checked"
    paths += [
        Path("struct", lambda: _struct_rows(t, D), ref="tensorb64 rows", skip=struct_skip),
        Path("numpy", lambda: _numpy_rows(t, torch), ref="tensorb64 rows"),
        Path("pybase64", lambda: _pybase64_rows(t, torch, pybase64), ref="tensorb64 rows"),
        Path("pybase64 per-row .to()", lambda: _pybase64_per_row_to(t, torch, pybase64), ref="tensorb64 rows"),
        Path("tensorb64 rows", lambda: (lambda: tensorb64.encode_rows(t)), ref=None),
        Path("pybase64 batch", lambda: _pybase64_batch(t, torch, pybase64), ref="tensorb64 batch"),
        Path("tensorb64 batch", lambda: (lambda: tensorb64.encode(t)), ref=None),
        Path("memcpy of output size", lambda: _memcpy(output_bytes(B, D, width)), ref="tensorb64 rows"),
    ]
    return t, paths


def check_outputs(paths, calls) -> list:
    """Problems found comparing each path's output with tensorb64's (empty when all agree)."""
    problems = []
    refs = {}
    for p in paths:
        if p.name.startswith("tensorb64"):
            refs[p.name] = calls[p.name]()
    rows_ref = next((v for k, v in refs.items() if "rows" in k), None)
    batch_ref = refs.get("tensorb64 batch")
    for p in paths:
        if p.name.startswith("memcpy"):
            continue
        got = calls[p.name]() if p.name not in refs else refs[p.name]
        want = batch_ref if isinstance(got, str) else rows_ref
        if got != want:
            problems.append(f"{p.name}: output differs from tensorb64's")
    if rows_ref is not None and batch_ref is not None:
        # The whole-batch string is the base64 of every row's bytes back to back.
        raw = b"".join(base64.b64decode(s) for s in rows_ref)
        if base64.b64encode(raw).decode() != batch_ref:
            problems.append("tensorb64 batch: differs from the concatenated rows")
    return problems


def run_case(torch, pybase64, spec, cfg, log) -> dict:
    in_dtype, out_dtype, B, D = spec["input"], spec["output"], spec["B"], spec["D"]
    struct_max = STRUCT_MAX_VALUES_FULL if cfg["mode"] == "full" else STRUCT_MAX_VALUES_QUICK
    t, paths = build_case(torch, pybase64, in_dtype, out_dtype, B, D, struct_max=struct_max, threads=spec.get("threads"))
    calls = {}
    errors = []
    for p in paths:
        try:
            calls[p.name] = p.make()
        except Exception as e:  # a path that cannot even be set up is reported, not fatal
            errors.append(f"{p.name}: {type(e).__name__}: {e}")
    try:
        errors += check_outputs([p for p in paths if p.name in calls], calls)
    except Exception as e:
        errors.append(f"output check raised {type(e).__name__}: {e}")
    notes = [p.skip for p in paths if p.skip]
    timed = {p.name: calls[p.name] for p in paths if p.name in calls and not p.skip}
    if errors:
        for e in errors:
            log(f"  ERROR {in_dtype}->{out_dtype} B={B} D={D}: {e}")
        timed = {}
    stats = measure(timed, rounds=cfg["rounds"], sample_s=cfg["sample_s"], budget_s=cfg["budget_s"]) if timed else {}
    input_bytes = B * D * 4  # throughput is counted in float32-input bytes for every input dtype
    results = []
    for p in paths:
        row = {"path": p.name, "ref": p.ref}
        if p.name in stats:
            s = stats[p.name]
            row.update(s)
            row["gbps"] = input_bytes / (s["us"] * 1e-6) / 1e9
            if p.ref in stats:
                row["speedup"] = s["us"] / stats[p.ref]["us"]
        elif p.skip:
            row["skipped"] = p.skip
        results.append(row)
    return {**spec, "input_bytes_f32": input_bytes, "output_bytes": output_bytes(B, D, 4 if out_dtype == "float32" else 2), "results": results, "notes": notes, "errors": errors}


# --------------------------------------------------------------------------- small calls


def measure_small_calls(torch, pybase64, cfg) -> dict:
    """One request's embedding (one row of 384 and of 3072 values): tensorb64 against pybase64 on the same row, side by
    side. pybase64's fastest use on a tensor converts it once (``t.numpy()``), then encodes rows."""
    rng = np.random.default_rng(0)
    row384 = rng.standard_normal(384).astype(np.float32)
    t384 = torch.from_numpy(rng.standard_normal((1, 384)).astype(np.float32))
    t3072 = torch.from_numpy(rng.standard_normal((1, 3072)).astype(np.float32))
    b64 = pybase64.b64encode_as_string
    assert tensorb64.encode(row384) == b64(row384)
    assert tensorb64.encode_rows(t3072) == [b64(r) for r in t3072.numpy()]
    calls = {
        "pybase64.b64encode_as_string(ndarray 384)": lambda: b64(row384),
        "tensorb64.encode(ndarray 384)": lambda: tensorb64.encode(row384),
        "tensorb64.encode_rows(tensor 1x384)": lambda: tensorb64.encode_rows(t384),
        "pybase64 rows of tensor 1x3072 (t.numpy() once)": lambda: [b64(r) for r in t3072.numpy()],
        "tensorb64.encode_rows(tensor 1x3072)": lambda: tensorb64.encode_rows(t3072),
    }
    s = measure(calls, rounds=cfg["small_call_rounds"], sample_s=0.002, budget_s=10.0)
    us = {k: v["us"] for k, v in s.items()}
    base = us["pybase64.b64encode_as_string(ndarray 384)"]
    return {
        "us": us,
        "ratios": {
            "encode(ndarray 1x384) / pybase64 (target <= 1.3)": us["tensorb64.encode(ndarray 384)"] / base,
            "encode_rows(tensor 1x384) / pybase64 (target <= 2.5)": us["tensorb64.encode_rows(tensor 1x384)"] / base,
            "pybase64 fastest path / encode_rows(tensor 1x3072) (target >= 2.2)":
                us["pybase64 rows of tensor 1x3072 (t.numpy() once)"] / us["tensorb64.encode_rows(tensor 1x3072)"],
        },
    }


def case_specs(mode: str) -> list:
    if mode == "smoke":
        return [{"input": "float32", "output": "float32", "B": 2, "D": 16}, {"input": "float32", "output": "float16", "B": 2, "D": 16}]
    Bs, Ds = (FULL_B, FULL_D) if mode == "full" else (QUICK_B, QUICK_D)
    specs = [{"input": i, "output": "float32", "B": B, "D": D} for i in ("float32", "bfloat16") for D in Ds for B in Bs]
    specs += [{"input": "float32", "output": "float16", "B": B, "D": 3072} for B in (1, 64)]
    if mode == "full":
        specs += [{"input": i, "output": "float32", "B": 1024, "D": 3072, "threads": 2} for i in ("float32", "bfloat16")]
    return specs


def run(mods: dict, cfg: dict, log) -> dict:
    torch, pybase64 = mods["torch"], mods["pybase64"]
    cases = []
    for spec in case_specs(cfg["mode"]):
        cases.append(run_case(torch, pybase64, spec, cfg, log))
        if cfg["mode"] != "smoke":
            last = cases[-1]
            ours = next((r for r in last["results"] if r["path"].startswith("tensorb64 rows") and "us" in r), None)
            log(f"  done {last['input']:>8}->{last['output']:<7} B={last['B']:<4} D={last['D']:<4}" + (f" threads={last['threads']}" if last.get("threads") else "") + (f"  tensorb64 rows {ours['us']:.1f} µs" if ours else ""))
    return {"cases": cases, "small_calls": measure_small_calls(torch, pybase64, cfg)}


def errors(report: dict) -> list:
    return [e for c in report["cases"] for e in c["errors"]]


def summary(report: dict) -> str:
    return f"{len(report['cases'])} cases"


# --------------------------------------------------------------------------- output

COLUMNS = ("input", "output", "B", "D", "path", "µs/call", "spread", "GB/s", "tensorb64 ×")
_RIGHT = {2, 3, 5, 6, 7, 8}


def table_rows(cases):
    for c in cases:
        out = c["output"] if not c.get("threads") else f"{c['output']} (threads)"
        for r in c["results"]:
            if "us" in r:
                ratio = f"{r['speedup']:.2f}×" if "speedup" in r else "1 (ref)" if r["ref"] is None else ""
                cells = (fmt_us(r["us"]), spread_text(r), f"{r['gbps']:.2f}", ratio)
            elif "skipped" in r:
                cells = ("skipped", "", "", "")
            else:
                cells = ("error", "", "", "")
            yield (c["input"], out, str(c["B"]), str(c["D"]), r["path"], *cells)


def _notes(cases) -> list:
    return sorted({n for c in cases for n in c["notes"]})


def small_call_lines(o: dict) -> list:
    return [
        "Small calls (one request's embedding; median µs per call, interleaved, same process):",
        *(f"  {k:<50} {v:8.2f}" for k, v in o["us"].items()),
        *(f"  => {k}: {v:.2f}" for k, v in o["ratios"].items()),
    ]


def text(report: dict) -> list:
    cases = report["cases"]
    lines = [text_table(COLUMNS, table_rows(cases), _RIGHT)] if cases else []
    notes = _notes(cases)
    if notes:
        lines += ["", *("note: " + n for n in notes)]
    for c in cases:
        if c.get("threads"):
            r = {x["path"]: x for x in c["results"]}
            one, many = r.get("tensorb64 rows threads=1", {}), r.get(f"tensorb64 rows threads={c['threads']}", {})
            if "us" in one and "us" in many:
                lines.append(f"threads={c['threads']} at B={c['B']} D={c['D']} {c['input']}: {one['us'] / many['us']:.2f}× the speed of "
                             f"threads=1 ({report['machine']['usable_cores']} usable cores)")
    return lines + ["", *small_call_lines(report["small_calls"])]


def markdown(report: dict) -> str:
    cases = report["cases"]
    out = ""
    if cases:
        out += markdown_table(COLUMNS, table_rows(cases), _RIGHT) + "\n\n" + "".join(f"* {n}\n" for n in _notes(cases))
    return out + "\n" + "\n".join("    " + line for line in small_call_lines(report["small_calls"])) + "\n"
