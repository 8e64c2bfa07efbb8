"""`python -m tensorb64 bench`: tensorb64 against the paths embedding servers use today.

Every comparison is a ratio taken side by side in one process on the same tensors: for each
case (input dtype, output dtype, B, D) the competing paths are checked once against tensorb64's
output, warmed up, then timed in interleaved rounds (each round runs every path once, in a
rotating order) and summarised by medians, so that load from other processes on a shared
machine hits all paths alike.

The paths, per row as embedding workers run them:
  struct     base64.b64encode(struct.pack(f"<{D}f", *t[i].tolist())).decode()   (the contract)
  numpy      base64.b64encode(t[i].to(torch.float32).numpy().tobytes()).decode()
  pybase64   a = t.to(torch.float32).numpy(); [pybase64.b64encode_as_string(r) for r in a]
             (pybase64's fastest use: the array converted once; the ratios are against this)
  pybase64 per-row .to()   pybase64.b64encode_as_string(t[i].to(torch.float32).numpy())
  vllm       pybase64.b64encode(t[i].to(torch.float16).numpy().tobytes()).decode()   (float16 output)
  tensorb64  tensorb64.encode_rows(t)                      (one call for the whole batch)
and whole-batch (one str for all rows): pybase64 of the whole array against tensorb64.encode(t);
plus a numpy copy of a uint8 array of the output's size, the physical reference.

The "response body" section (--section body) times the whole /v1/embeddings body, for base64
and float rows: today's Starlette route (embedding_data or tolist, then JSONResponse), vLLM's
route (per row .to(dtype).numpy().tobytes() + pybase64, or numpy rows for floats, then
orjson.dumps(..., OPT_SERIALIZE_NUMPY)), encode_rows (or tolist) + orjson.dumps, and
tensorb64.openai.response_body; with minor page faults per call, in two glibc allocator states
(see allocator_states).

Needs the bench extra: pip install "tensorb64[bench]" (torch, pybase64, matplotlib for --plot).
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import os
import platform
import statistics
import struct
import sys
import time

import numpy as np

import tensorb64

EXTRA_HINT = 'install the benchmark dependencies with: pip install "tensorb64[bench]"'

QUICK_B = (1, 64)
QUICK_D = (384, 3072)
FULL_B = (1, 15, 64, 256, 1024)
FULL_D = (384, 1024, 3072, 4096)
# The struct path costs ~60 ns per value; above this many values a call takes a large part of a
# second and is timed in --full only once per round for a few rounds, or skipped in quick runs.
STRUCT_MAX_VALUES_QUICK = 256 * 1024
STRUCT_MAX_VALUES_FULL = 1024 * 1024

COLUMNS = ("input", "output", "B", "D", "path", "µs/call", "spread", "GB/s", "tensorb64 ×")


def _require(module: str):
    try:
        return __import__(module)
    except ImportError as e:
        raise SystemExit(f"tensorb64 bench needs {module} ({e}); {EXTRA_HINT}") from None


# --------------------------------------------------------------------------- machine


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("model name", "Model", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


_ISA_FLAGS = ("avx2", "f16c", "avx512bw", "avx512vbmi", "avx512_bf16", "avx512_fp16", "asimd", "asimdhp", "sve")


def cpu_features() -> list:
    """The ISA extensions a base64 kernel can use that /proc/cpuinfo lists (x86 flags, arm Features)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    have = set(line.split(":", 1)[1].split())
                    return [x for x in _ISA_FLAGS if x in have]
    except OSError:
        pass
    return []


def machine_info(torch, pybase64) -> dict:
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = None
    return {
        "cpu": cpu_model(),
        "cpu_features": cpu_features(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "load_1min": load,
        "machine": platform.machine(),
        "python": platform.python_version(),
        "tensorb64": tensorb64.__version__,
        "simd_level": tensorb64.simd_level(),
        "available_simd_levels": tensorb64.available_simd_levels(),
        "TENSORB64_SIMD": os.environ.get("TENSORB64_SIMD"),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "numpy": np.__version__,
        "pybase64": pybase64.get_version() if hasattr(pybase64, "get_version") else pybase64.__version__,
    }


def machine_line(m: dict) -> str:
    features = f" ({' '.join(m['cpu_features'])})" if m["cpu_features"] else ""
    return f"{m['cpu']}{features}, {m['cores']} cores; tensorb64 {m['tensorb64']} simd_level={m['simd_level']}"


# --------------------------------------------------------------------------- timing


class Path:
    """One competing way of producing a case's output: `make()` returns the zero-argument call."""

    def __init__(self, name, make, ref, skip=None):
        self.name = name
        self.make = make
        self.ref = ref  # the name of the tensorb64 path its speed-up is measured against (None: it is one)
        self.skip = skip  # why it is not timed in this case, or None


def _loop(fn, n: int) -> float:
    """Seconds per call of n back-to-back calls (results dropped, as a worker drops them)."""
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def measure(calls: dict, *, rounds: int, sample_s: float, budget_s: float) -> dict:
    """Interleaved medians: {name: {us, p25, p75, rounds, inner}} for {name: zero-arg call}."""
    names = list(calls)
    inner, n_rounds = {}, {}
    for name in names:  # warm-up, which also sizes the inner loop of each sample
        fn = calls[name]
        fn()
        per_call = _loop(fn, 1)
        if per_call < sample_s:
            per_call = _loop(fn, max(1, int(0.2 * sample_s / per_call)))
        inner[name] = max(1, int(sample_s / per_call))
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
    t, paths = build_case(torch, pybase64, in_dtype, out_dtype, B, D, struct_max=cfg["struct_max"], threads=spec.get("threads"))
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


# --------------------------------------------------------------------------- small calls and float text


def measure_small_calls(torch, pybase64, cfg) -> dict:
    """One request's embedding (issue 10): tensorb64 against pybase64 on the same row, side by
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


def measure_float_text(torch, cfg, orjson) -> dict:
    """Float rows as JSON text (issue 11), B=64 D=3072 float32 N(0, 0.05), one thread, per row
    as each route makes it: json.dumps of tolist (what JSONResponse does), orjson on the numpy
    row (vLLM's float route), and json_rows in each mode."""
    B, D = (8, 384) if cfg.get("smoke") else (64, 3072)
    t = torch.from_numpy(np.random.default_rng(0).normal(0, 0.05, (B, D)).astype(np.float32))
    a = t.numpy()
    dumps = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
    assert tensorb64.json_rows(t) == [dumps(r).encode() for r in t.tolist()]
    calls = {
        "json.dumps(row.tolist()) per row": lambda: [dumps(r) for r in t.tolist()],
        "tensorb64.json_rows(repr)": lambda: tensorb64.json_rows(t),
        "tensorb64.json_rows(shortest)": lambda: tensorb64.json_rows(t, float_format="shortest"),
    }
    if orjson is not None:
        option = orjson.OPT_SERIALIZE_NUMPY
        calls["orjson.dumps(row, OPT_SERIALIZE_NUMPY) per row"] = lambda: [orjson.dumps(r, option=option) for r in a]
    rounds = max(3, cfg["rounds"] // 4)
    s = measure(calls, rounds=rounds, sample_s=cfg["sample_s"], budget_s=cfg["budget_s"] * 4)
    us = {k: v["us"] for k, v in s.items()}
    values = B * D
    sizes = {
        "repr": sum(map(len, tensorb64.json_rows(t))) / values,
        "shortest": sum(map(len, tensorb64.json_rows(t, float_format="shortest"))) / values,
    }
    out = {"B": B, "D": D, "us": us, "ns_per_value": {k: v * 1e3 / values for k, v in us.items()}, "bytes_per_value": sizes}
    ratios = {"json.dumps route / repr (target >= 40)": us["json.dumps(row.tolist()) per row"] / us["tensorb64.json_rows(repr)"]}
    if orjson is not None:
        orj = us["orjson.dumps(row, OPT_SERIALIZE_NUMPY) per row"]
        ratios["orjson / shortest (target >= 2.5)"] = orj / us["tensorb64.json_rows(shortest)"]
        ratios["orjson / repr (target >= 1)"] = orj / us["tensorb64.json_rows(repr)"]
    out["ratios"] = ratios
    return out


# --------------------------------------------------------------------------- the response body

BODY_SHAPES = ((1, 384), (64, 384), (64, 3072), (1024, 3072))
BODY_MODEL = "all-MiniLM-L6-v2"
# Above this many values, a float path that runs json.dumps on Python floats (Starlette's) takes
# seconds a call: not timed.
FLOAT_PYTHON_MAX_VALUES = 64 * 3072
BODY_COLUMNS = ("allocator", "format", "B", "D", "path", "µs/call", "spread", "minflt/call", "× response_body")

# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def allocator_states() -> list:
    """[(name, description, apply)]: the glibc malloc states the body section is measured in.

    glibc starts with a 128 KiB mmap threshold and a 128 KiB trim threshold: a block above the
    first is mmapped (its pages faulted in on first write, returned on free), and the top of the
    heap is returned to the kernel past the second, so every call of a fresh process that makes
    a large output can fault in all its pages. After it frees an mmapped block, glibc raises both
    (up to 32 MiB and 64 MiB), and a long-running server then reuses the same memory. Both states
    are pinned with mallopt (which also stops glibc adjusting them), so a measurement does not
    depend on what ran before it.
    """
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return [("as found", "not glibc: the allocator is left as it is", lambda: None)]
    import ctypes

    libc = ctypes.CDLL(None)

    def pin(mmap_threshold, trim_threshold):
        def apply():
            if not (libc.mallopt(_M_MMAP_THRESHOLD, mmap_threshold) and libc.mallopt(_M_TRIM_THRESHOLD, trim_threshold)):
                raise RuntimeError("mallopt refused the thresholds")
            libc.malloc_trim(0)

        return apply

    return [
        ("fresh", "glibc's initial thresholds (mmap 128 KiB, trim 128 KiB), held: a fresh process before its first "
                  "large free, or one run with MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ set; large outputs are mmapped "
                  "or trimmed away after each call, so each call faults their pages in", pin(128 << 10, 128 << 10)),
        ("raised", "the thresholds glibc raises itself to after freeing a large mmapped block (mmap 32 MiB, trim "
                   "64 MiB at most), as in a long-running server once it has sent one large body by any route: "
                   "freed memory is reused", pin(32 << 20, 64 << 20)),
    ]


def body_paths(torch, pybase64, orjson, encoding_format, B, D):
    """(the input tensor, response_body's bytes, {name: (zero-arg call, skip reason or None)})
    for one case."""
    from starlette.responses import JSONResponse

    from tensorb64.openai import embedding_data, response_body

    g = torch.Generator().manual_seed(7 * B + D)
    t = torch.randn(B, D, generator=g) * 0.05  # the spread of real embeddings' values
    usage = {"prompt_tokens": 8 * B, "total_tokens": 8 * B}

    def envelope(data):
        return {"object": "list", "data": data, "model": BODY_MODEL, "usage": usage}

    numpy_option = orjson.OPT_SERIALIZE_NUMPY
    paths = {}
    if encoding_format == "base64":
        paths["starlette (embedding_data + JSONResponse)"] = (
            lambda: JSONResponse(envelope(embedding_data(t, encoding_format="base64"))).body, None)

        def vllm():
            data = [{"object": "embedding", "index": i, "embedding": pybase64.b64encode(t[i].to(torch.float32).numpy().tobytes()).decode("utf-8")}
                    for i in range(B)]
            return orjson.dumps(envelope(data), option=numpy_option)

        def rows_orjson():
            data = [{"object": "embedding", "index": i, "embedding": s} for i, s in enumerate(tensorb64.encode_rows(t))]
            return orjson.dumps(envelope(data))

        paths["vllm (per-row pybase64 + orjson)"] = (vllm, None)
        paths["encode_rows + orjson"] = (rows_orjson, None)
        paths["encode_rows alone (no body)"] = (lambda: tensorb64.encode_rows(t), None)
        paths["response_body"] = (lambda: response_body(t, model=BODY_MODEL, usage=usage), None)
    else:
        slow = None
        if B * D > FLOAT_PYTHON_MAX_VALUES:
            slow = f"not timed at {B}x{D}: json.dumps of Python floats takes seconds a call"
        paths["starlette (tolist + JSONResponse)"] = (
            lambda: JSONResponse(envelope(embedding_data(t, encoding_format="float"))).body, slow)

        def vllm():
            a = t.to(torch.float32).numpy()
            return orjson.dumps(envelope([{"object": "embedding", "index": i, "embedding": a[i]} for i in range(B)]), option=numpy_option)

        def tolist_orjson():
            return orjson.dumps(envelope([{"object": "embedding", "index": i, "embedding": r} for i, r in enumerate(t.tolist())]))

        paths["vllm (numpy rows + orjson)"] = (vllm, None)
        paths["tolist + orjson"] = (tolist_orjson, None)
        paths["response_body (repr)"] = (
            lambda: response_body(t, model=BODY_MODEL, usage=usage, encoding_format="float"), None)
        paths["response_body (shortest)"] = (
            lambda: response_body(t, model=BODY_MODEL, usage=usage, encoding_format="float", float_format="shortest"),
            None)
    reference = response_body(t, model=BODY_MODEL, usage=usage, encoding_format=encoding_format)
    return t, reference, paths


def check_body_outputs(reference: bytes, paths: dict, encoding_format: str) -> list:
    """Problems found comparing each path's body with response_body's (empty when all agree):
    base64 bodies byte for byte; float bodies byte for byte where they write repr (Starlette),
    value for value (as float32) where orjson or the shortest mode writes other digits."""
    problems = []
    want = json.loads(reference)
    want_rows = None
    for name, (call, _skip) in paths.items():
        if name.startswith("encode_rows alone"):
            continue
        got = call()
        if got == reference:
            continue
        if encoding_format == "float" and ("orjson" in name or "shortest" in name):
            parsed = json.loads(got)
            if want_rows is None:
                want_rows = np.array([e["embedding"] for e in want["data"]], np.float32)
            rows = np.array([e["embedding"] for e in parsed["data"]], np.float32)
            envelope_same = {k: v for k, v in parsed.items() if k != "data"} == {k: v for k, v in want.items() if k != "data"}
            if envelope_same and rows.shape == want_rows.shape and np.array_equal(rows.view(np.uint32), want_rows.view(np.uint32)):
                continue
        problems.append(f"{name}: body differs from response_body's")
    return problems


def minor_faults_per_call(call, per_call_s: float) -> float:
    """Minor page faults of this process per call, over calls lasting about 0.2 s in all."""
    import resource

    n = max(3, min(200, int(0.2 / max(per_call_s, 1e-7))))
    call()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(n):
        call()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / n


def run_body_section(torch, pybase64, orjson, cfg, log) -> list:
    cases = []
    shapes = ((2, 16), (3, 5)) if cfg.get("smoke") else BODY_SHAPES
    for state, description, apply in allocator_states():
        apply()
        for encoding_format in ("base64", "float"):
            for B, D in shapes:
                t, reference, paths = body_paths(torch, pybase64, orjson, encoding_format, B, D)
                errors = check_body_outputs(reference, {k: v for k, v in paths.items() if not v[1]}, encoding_format)
                timed = {name: call for name, (call, skip) in paths.items() if not skip}
                stats = {} if errors else measure(timed, rounds=cfg["rounds"], sample_s=cfg["sample_s"], budget_s=cfg["budget_s"])
                results = []
                ours = next(n for n in paths if n.startswith("response_body"))
                for name, (call, skip) in paths.items():
                    row = {"path": name}
                    if name in stats:
                        row.update(stats[name])
                        row["minflt"] = minor_faults_per_call(call, stats[name]["us"] * 1e-6)
                        if ours in stats:
                            row["vs_response_body"] = stats[name]["us"] / stats[ours]["us"]
                    elif skip:
                        row["skipped"] = skip
                    results.append(row)
                for e in errors:
                    log(f"  ERROR body {encoding_format} B={B} D={D} ({state}): {e}")
                case = {"allocator": state, "allocator_state": description, "format": encoding_format, "B": B, "D": D,
                        "body_bytes": len(reference), "results": results, "errors": errors}
                cases.append(case)
                if not cfg.get("smoke"):
                    r = {x["path"]: x for x in results}
                    log(f"  done body {state:<6} {encoding_format:<6} B={B:<4} D={D:<4} response_body "
                        + (f"{r[ours]['us']:.1f} µs" if "us" in r[ours] else "not timed"))
    return cases


def body_table_rows(cases):
    for c in cases:
        for r in c["results"]:
            if "us" in r:
                spread = (r["p75"] - r["p25"]) / r["us"] * 100
                ratio = f"{r['vs_response_body']:.2f}×" if "vs_response_body" in r else ""
                cells = (_fmt_us(r["us"]), f"±{spread:.0f}%", f"{r['minflt']:.0f}", ratio)
            elif "skipped" in r:
                cells = ("skipped", "", "", "")
            else:
                cells = ("error", "", "", "")
            yield (c["allocator"], c["format"], str(c["B"]), str(c["D"]), r["path"], *cells)


def body_text_table(cases) -> str:
    rows = [BODY_COLUMNS] + list(body_table_rows(cases))
    widths = [max(len(r[i]) for r in rows) for i in range(len(BODY_COLUMNS))]
    right = {2, 3, 5, 6, 7, 8}
    out, prev = [], None
    for k, r in enumerate(rows):
        if k > 1 and r[:4] != prev:
            out.append("")
        prev = r[:4]
        out.append("  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if k == 0:
            out.append("-" * len(out[-1]))
    return "\n".join(out)


def body_markdown_table(cases) -> str:
    lines = ["| " + " | ".join(BODY_COLUMNS) + " |", "|" + "|".join("---:" if i in (2, 3, 5, 6, 7, 8) else "---" for i in range(len(BODY_COLUMNS))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body_table_rows(cases)]
    return "\n".join(lines)


def body_target_lines(cases) -> list:
    """The issue's targets for the body (one thread, float32), as measured, per allocator state."""
    lines = []

    def us(c, prefix):
        return next((r["us"] for r in c["results"] if r["path"].startswith(prefix) and "us" in r), None)

    for c in cases:
        key = (c["format"], c["B"], c["D"])
        rb = us(c, "response_body")
        if rb is None:
            continue
        checks = []
        if key == ("base64", 64, 3072):
            checks = [("response_body / encode_rows alone", rb / us(c, "encode_rows alone"), "<=", 1.3),
                      ("Starlette route / response_body", us(c, "starlette") / rb, ">=", 100),
                      ("encode_rows + orjson / response_body", us(c, "encode_rows + orjson") / rb, ">=", 1.3)]
        elif key == ("base64", 1024, 3072):
            checks = [("encode_rows + orjson / response_body", us(c, "encode_rows + orjson") / rb, ">=", 1.8),
                      ("response_body / encode_rows alone", rb / us(c, "encode_rows alone"), "", None)]
        elif key == ("float", 64, 3072):
            starlette = us(c, "starlette")
            checks = [("Starlette route / response_body (repr)", starlette / rb if starlette else float("nan"), ">=", 40),
                      ("vLLM route / response_body (shortest)",
                       us(c, "vllm") / us(c, "response_body (shortest)"), ">=", 2.5)]
        for what, value, op, target in checks:
            verdict = "" if target is None else ("  met" if (value <= target if op == "<=" else value >= target) else "  NOT met")
            goal = f" (target {op} {target})" if target is not None else ""
            lines.append(f"  {c['allocator']:<6} {c['format']} {c['B']}x{c['D']}: {what} = {value:.2f}{goal}{verdict}")
    return lines


# --------------------------------------------------------------------------- output


def _fmt_us(us):
    return f"{us:,.1f}" if us < 1000 else f"{us:,.0f}"


def table_rows(cases):
    for c in cases:
        out = c["output"] if not c.get("threads") else f"{c['output']} (threads)"
        for r in c["results"]:
            if "us" in r:
                spread = (r["p75"] - r["p25"]) / r["us"] * 100
                ratio = f"{r['speedup']:.2f}×" if "speedup" in r else "1 (ref)" if r["ref"] is None else ""
                cells = (_fmt_us(r["us"]), f"±{spread:.0f}%", f"{r['gbps']:.2f}", ratio)
            elif "skipped" in r:
                cells = ("skipped", "", "", "")
            else:
                cells = ("error", "", "", "")
            yield (c["input"], out, str(c["B"]), str(c["D"]), r["path"], *cells)


def markdown_table(cases) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---:" if i >= 5 or i in (2, 3) else "---" for i in range(len(COLUMNS))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(cases)]
    return "\n".join(lines)


def text_table(cases) -> str:
    rows = [COLUMNS] + list(table_rows(cases))
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    right = {2, 3, 5, 6, 7, 8}
    out, prev = [], None
    for k, r in enumerate(rows):
        key = r[:4]
        if k > 1 and key != prev:
            out.append("")
        prev = key
        out.append("  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if k == 0:
            out.append("-" * len(out[-1]))
    return "\n".join(out)


def _load(x) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def header_lines(m: dict) -> list:
    return [
        f"machine:   {m['cpu']} ({m['cores']} cores, {m['usable_cores']} usable, load {_load(m['load_1min'])}), {m['machine']}"
        + (f", {' '.join(m['cpu_features'])}" if m["cpu_features"] else ""),
        f"tensorb64: {m['tensorb64']}  simd_level={m['simd_level']}  available={','.join(m['available_simd_levels'])}"
        + (f"  TENSORB64_SIMD={m['TENSORB64_SIMD']}" if m["TENSORB64_SIMD"] else ""),
        f"versions:  python {m['python']}, torch {m['torch']} (intra-op threads {m['torch_threads']}), numpy {m['numpy']}, pybase64 {m['pybase64']}",
    ]


def small_call_lines(o: dict) -> list:
    return [
        "Small calls (one request's embedding; median µs per call, interleaved, same process):",
        *(f"  {k:<50} {v:8.2f}" for k, v in o["us"].items()),
        *(f"  => {k}: {v:.2f}" for k, v in o["ratios"].items()),
    ]


def float_text_lines(o: dict) -> list:
    return [
        f"Float rows as JSON text, B={o['B']} D={o['D']} float32 N(0, 0.05), one thread (median µs per batch; ns per value):",
        *(f"  {k:<50} {v:10.1f} µs {o['ns_per_value'][k]:8.1f} ns/value" for k, v in o["us"].items()),
        f"  bytes per value (comma included): repr {o['bytes_per_value']['repr']:.2f}, shortest {o['bytes_per_value']['shortest']:.2f}",
        *(f"  => {k}: {v:.2f}" for k, v in o["ratios"].items()),
    ]


def plot(cases, machine, path):
    try:
        import matplotlib
    except ImportError as e:
        raise SystemExit(f"--plot needs matplotlib ({e}); {EXTRA_HINT}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweep = [c for c in cases if c["output"] == "float32" and not c.get("threads")]
    inputs = [d for d in ("float32", "bfloat16") if any(c["input"] == d for c in sweep)]
    Ds = sorted({c["D"] for c in sweep})
    if not inputs or not Ds:
        return
    fig, axes = plt.subplots(len(inputs), len(Ds), figsize=(4.2 * len(Ds), 3.8 * len(inputs)), squeeze=False, sharey=True)
    styles = {
        "struct": ("tab:gray", "v"),
        "numpy": ("tab:orange", "s"),
        "pybase64": ("tab:blue", "^"),
        "pybase64 per-row .to()": ("tab:green", "^"),
        "pybase64 batch": ("tab:cyan", "^"),
        "tensorb64 rows": ("tab:red", "o"),
        "tensorb64 batch": ("tab:purple", "o"),
        "memcpy of output size": ("black", ""),
    }
    for i, ind in enumerate(inputs):
        for j, D in enumerate(Ds):
            ax = axes[i][j]
            sel = sorted((c for c in sweep if c["input"] == ind and c["D"] == D), key=lambda c: c["B"])
            for name, (color, marker) in styles.items():
                pts = [(c["B"], r["gbps"]) for c in sel for r in c["results"] if r["path"] == name and "gbps" in r]
                if pts:
                    xs, ys = zip(*pts)
                    ax.plot(xs, ys, marker=marker or None, color=color, label=name, linestyle="--" if name.startswith("memcpy") else "-", linewidth=1.4)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{ind} input, D={D}", fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
            if i == len(inputs) - 1:
                ax.set_xlabel("batch size B (rows)")
            if j == 0:
                ax.set_ylabel("GB/s of float32 input")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=9, frameon=False)
    fig.suptitle(f"base64 of embedding rows, throughput vs batch size (higher is better)\n{machine_line(machine)}", fontsize=11)
    fig.tight_layout(rect=(0, 0.1 if len(inputs) == 1 else 0.07, 1, 0.94))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_body(cases, machine, path):
    """The body section as bars: µs per call of each route, per shape, one panel per allocator
    state and format (log scale; lower is better)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    states = list(dict.fromkeys(c["allocator"] for c in cases))
    formats = [f for f in ("base64", "float") if any(c["format"] == f for c in cases)]
    colors = {"starlette": "tab:blue", "vllm": "tab:orange", "encode_rows +": "tab:green", "tolist +": "tab:green",
              "encode_rows alone": "tab:gray", "response_body": "tab:red"}
    fig, axes = plt.subplots(len(states), len(formats), figsize=(6.5 * len(formats), 4.2 * len(states)), squeeze=False)
    for (i, state), (j, fmt) in ((s, f) for s in enumerate(states) for f in enumerate(formats)):
        ax = axes[i][j]
        sel = [c for c in cases if c["allocator"] == state and c["format"] == fmt]
        names = [r["path"] for r in sel[0]["results"]]
        width = 0.8 / len(names)
        for k, name in enumerate(names):
            xs, ys = [], []
            for i, c in enumerate(sel):
                r = next(r for r in c["results"] if r["path"] == name)
                if "us" in r:
                    xs.append(i + k * width)
                    ys.append(r["us"])
            ax.bar(xs, ys, width, label=name, color=next((v for k, v in colors.items() if name.startswith(k)), None))
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(sel))])
        ax.set_xticklabels([f"{c['B']}x{c['D']}" for c in sel])
        ax.set_yscale("log")
        ax.set_ylabel("µs per call (lower is better)")
        ax.set_title(f"{fmt} body, allocator {state}", fontsize=10)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(f"the whole /v1/embeddings body, float32 input, one thread\n{machine_line(machine)}", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------- driver


def case_specs(mode: str) -> list:
    if mode == "smoke":
        return [{"input": "float32", "output": "float32", "B": 2, "D": 16}, {"input": "float32", "output": "float16", "B": 2, "D": 16}]
    Bs, Ds = (FULL_B, FULL_D) if mode == "full" else (QUICK_B, QUICK_D)
    specs = [{"input": i, "output": "float32", "B": B, "D": D} for i in ("float32", "bfloat16") for D in Ds for B in Bs]
    specs += [{"input": "float32", "output": "float16", "B": B, "D": 3072} for B in (1, 64)]
    if mode == "full":
        specs += [{"input": i, "output": "float32", "B": 1024, "D": 3072, "threads": 2} for i in ("float32", "bfloat16")]
    return specs


def config(mode: str) -> dict:
    if mode == "smoke":
        return {"rounds": 3, "sample_s": 0.0005, "budget_s": 0.01, "struct_max": STRUCT_MAX_VALUES_QUICK, "small_call_rounds": 3}
    if mode == "full":
        return {"rounds": 31, "sample_s": 0.005, "budget_s": 2.5, "struct_max": STRUCT_MAX_VALUES_FULL, "small_call_rounds": 41}
    return {"rounds": 21, "sample_s": 0.003, "budget_s": 1.0, "struct_max": STRUCT_MAX_VALUES_QUICK, "small_call_rounds": 21}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensorb64 bench", description="tensorb64 against the struct, numpy and pybase64 paths (ratios, interleaved, medians)")
    parser.add_argument("--full", action="store_true", help="the full sweep: B in 1,15,64,256,1024 x D in 384,1024,3072,4096, plus threads=2")
    parser.add_argument(
        "--torch-threads", type=int, default=1, metavar="N",
        help="torch intra-op threads for the competing paths' conversions (default 1, like tensorb64's threads=1; "
        "0 keeps torch's own default). On a shared machine torch's thread pool turns other load into large outliers.",
    )
    parser.add_argument("--section", choices=("all", "rows", "body"), default="all",
                        help="rows: the per-row base64 tables; body: the whole response body (base64 and float); all: both")
    parser.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)  # tiny run for the CLI test
    parser.add_argument("--json", metavar="PATH", help="write every measurement and the machine as JSON")
    parser.add_argument("--plot", metavar="PATH", help="draw throughput against batch size as a PNG (needs matplotlib); "
                        "the body section's bars go to PATH itself with --section body, else beside it as *_body.png")
    parser.add_argument("--table", metavar="PATH", help="write the table as Markdown")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="cuda: CUDA tensors (issue 14's table: tensorb64 against the pybase64 and numpy paths and the "
                        "plain copy; --json and --smoke apply)")
    args = parser.parse_args(argv)
    if args.device == "cuda":
        from . import _bench_cuda

        return _bench_cuda.main([*(["--json", args.json] if args.json else []), *(["--quick"] if args.smoke else [])])

    torch = _require("torch")
    pybase64 = _require("pybase64")
    orjson = _require("orjson") if args.section != "rows" else None
    if args.section != "rows":
        _require("starlette")
    if args.plot:
        _require("matplotlib")
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    mode = "smoke" if args.smoke else "full" if args.full else "quick"
    cfg = config(mode)
    machine = machine_info(torch, pybase64)
    for line in header_lines(machine):
        print(line)
    if machine["load_1min"] is not None and machine["load_1min"] > 0.5 * (machine["usable_cores"] or 1):
        print(f"warning: load average {machine['load_1min']:.2f} on {machine['usable_cores']} cores: other processes compete for the CPU; "
              "the interleaved ratios stay comparable, absolute times and threads=2 do not")
    print(f"mode: {mode}; µs/call = median of interleaved rounds; spread = IQR/median; GB/s = float32 input bytes (B*D*4) per second;")
    print("tensorb64 × = path time / time of the tensorb64 call it competes with (per-row paths vs encode_rows, batch vs encode)")
    print(flush=True)

    started = time.perf_counter()
    cases = []
    for spec in case_specs(mode) if args.section != "body" else ():
        cases.append(run_case(torch, pybase64, spec, cfg, lambda s: print(s, file=sys.stderr, flush=True)))
        if mode != "smoke":
            last = cases[-1]
            ours = next((r for r in last["results"] if r["path"].startswith("tensorb64 rows") and "us" in r), None)
            print(f"  done {last['input']:>8}->{last['output']:<7} B={last['B']:<4} D={last['D']:<4}" + (f" threads={last['threads']}" if last.get("threads") else "") + (f"  tensorb64 rows {ours['us']:.1f} µs" if ours else ""), file=sys.stderr, flush=True)
    small_calls = measure_small_calls(torch, pybase64, cfg) if args.section != "body" else None
    float_text = measure_float_text(torch, {**cfg, "smoke": mode == "smoke"}, orjson) if args.section != "rows" else None
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    body_cases = run_body_section(torch, pybase64, orjson, {**cfg, "smoke": mode == "smoke"}, log) if args.section != "rows" else []
    elapsed = time.perf_counter() - started

    if cases:
        print(text_table(cases))
    notes = sorted({n for c in cases for n in c["notes"]})
    if notes:
        print()
        for n in notes:
            print("note: " + n)
    for c in cases:
        if c.get("threads"):
            r = {x["path"]: x for x in c["results"]}
            one, many = r.get("tensorb64 rows threads=1", {}), r.get(f"tensorb64 rows threads={c['threads']}", {})
            if "us" in one and "us" in many:
                print(f"threads={c['threads']} at B={c['B']} D={c['D']} {c['input']}: {one['us'] / many['us']:.2f}× the speed of threads=1 ({machine['usable_cores']} usable cores)")
    for section, lines in ((small_calls, small_call_lines), (float_text, float_text_lines)):
        if section is not None:
            print()
            print("\n".join(lines(section)))
    if body_cases:
        print("\nThe response body (µs/call: median of interleaved rounds; minflt/call: minor page faults per call; "
              "× response_body: the path's time over response_body's, same case):")
        for state, description, _ in allocator_states():
            print(f"  allocator {state}: {description}")
        print(body_text_table(body_cases))
        body_notes = sorted({r["skipped"] for c in body_cases for r in c["results"] if "skipped" in r})
        for n in body_notes:
            print("note: " + n)
        targets = body_target_lines(body_cases)
        if targets:
            print("targets (issue 12, one thread, float32):")
            print("\n".join(targets))
    machine["load_1min_after"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(f"\n{len(cases)} cases, {len(body_cases)} body cases in {elapsed:.1f} s; load average before {_load(machine['load_1min'])}, after {_load(machine['load_1min_after'])}")

    errors = [e for c in cases for e in c["errors"]] + [e for c in body_cases for e in c["errors"]]
    report = {"machine": machine, "mode": mode, "config": cfg, "cases": cases, "small_calls": small_calls, "float_text": float_text, "body_cases": body_cases,
              "elapsed_s": elapsed, "errors": errors}
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    if args.table:
        os.makedirs(os.path.dirname(os.path.abspath(args.table)), exist_ok=True)
        with open(args.table, "w", encoding="utf-8") as f:
            command = " ".join(["python -m tensorb64 bench", *(sys.argv[1:] if argv is None else argv)])
            f.write(f"Command: `{command}` (µs/call: median of interleaved rounds; spread: IQR/median; GB/s: float32 input bytes per second; "
                    "tensorb64 ×: the path's time over that of the tensorb64 call it competes with)\n\n")
            f.write("\n".join("    " + line for line in header_lines(machine)) + "\n\n")
            if cases:
                f.write(markdown_table(cases) + "\n\n")
                for n in notes:
                    f.write(f"* {n}\n")
            for section, lines in ((small_calls, small_call_lines), (float_text, float_text_lines)):
                if section is not None:
                    f.write("\n" + "\n".join("    " + line for line in lines(section)) + "\n")
            if body_cases:
                f.write("\n## The response body\n\n")
                for state, description, _ in allocator_states():
                    f.write(f"* allocator {state}: {description}\n")
                f.write("\n" + body_markdown_table(body_cases) + "\n\n")
                f.write("\n".join("    " + line for line in body_target_lines(body_cases)) + "\n")
    if args.plot and cases:
        plot(cases, machine, args.plot)
    if args.plot and body_cases:  # beside the rows' plot when both ran: name_body.png
        root, ext = os.path.splitext(args.plot)
        plot_body(body_cases, machine, root + "_body" + (ext or ".png") if cases else args.plot)
    if errors:
        print(f"\n{len(errors)} path(s) failed their output check: the numbers above omit those cases", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
