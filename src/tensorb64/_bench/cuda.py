"""The cuda section (`--section cuda`, or `--device cuda`): CUDA tensors to base64 rows, against the pybase64
and numpy paths and the plain copy.

Side by side in one process, interleaved medians (the same `measure` as the CPU bench), each
call complete (its result on the host, the GPU work it waited for included):

  encode_rows     tensorb64.encode_rows(t, dtype=...): the binding hands a CUDA tensor to the
                  staging pipeline (_cuda/route.py): GPU narrowing, chunks overlapped with encoding
  encode_rows, one host copy
                  encode_rows of Route.host_copy(t): the whole tensor through one reused pinned
                  buffer in its own dtype, then encoded (what the overlap and narrowing save)
  response_body   tensorb64.response_body(t, model=...): the whole /v1/embeddings body
  pybase64 path   a = t.to(out).cpu().numpy(); [pybase64.b64encode_as_string(r) for r in a]
  numpy path      c = t.cpu(); [base64.b64encode(c[i].to(out).numpy().tobytes()).decode() ...]
  d2h             t.cpu() alone (the blocking pageable copy)
  base64 on the GPU
                  (float32 output) the text written on the device with torch's own ops
                  (bytes -> 24-bit groups -> 6-bit indices -> the alphabet, one row a line),
                  copied to a reused pinned buffer, one str a row from it: the design where only
                  text crosses the bus, timed beside the pipeline it would replace
and, for float32 with dtype="float16", encode_rows with GPU narrowing and without it, whatever
the size (encode_rows itself narrows from staging.NARROW_FROM bytes of source). A second table
times encode_rows through the pinned staged copy and through t.cpu() around the plain-copy
threshold, which decides between them;
a third times encode_rows over chunk sizes (the pipeline's chunk_bytes) on the multi-chunk cases.
The variants run the entry points' staged paths (_cuda/route.py) with the process's staging
(``staging.default_staging()``: its pool and copier) changed in one setting each, passed down as
the tests pass theirs.
"""

from __future__ import annotations

import base64
import os
import platform
import sys
from dataclasses import replace

import tensorb64
from tensorb64._cuda import route as _cuda
from tensorb64._cuda import staging as _staging
from .allocator import allocator_states
from .timing import measure

NAME = "cuda"
REQUIRES = ("torch",)  # pybase64 is optional here: without it its path and the ratios are left out

CASES = (  # (input dtype, B, D, output dtype)
    ("float32", 1, 384, "float32"),
    ("float32", 64, 3072, "float32"),
    ("float32", 1024, 3072, "float32"),
    ("bfloat16", 64, 3072, "float32"),
    ("bfloat16", 8192, 1024, "float32"),
    ("float32", 64, 3072, "float16"),
    ("float32", 1024, 3072, "float16"),
)
# The targets: encode_rows's speed-up over the pybase64 path (GPU narrowing's over no
# narrowing for the float16 output).
TARGETS = {("float32", 64, 3072, "float32"): 3.0, ("bfloat16", 64, 3072, "float32"): 4.0,
           ("float32", 1024, 3072, "float32"): 3.5, ("float32", 1, 384, "float32"): 1.2}
NARROWING_TARGET = 1.3
THRESHOLD_ROWS = (1, 4, 8, 16, 32, 64)  # float32 rows of 1024: 4 KiB to 256 KiB
CHUNK_CASES = (("float32", 64, 3072), ("float32", 1024, 3072), ("bfloat16", 8192, 1024))  # float32 output
CHUNK_SIZES = (256 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20)


def _encode_rows_with(staging, t, **kwargs):
    """A call of the pipeline's encode_rows with ``staging`` in effect (each variant's own: the
    same few µs of ``forced`` in every variant it is compared with)."""

    def call():
        with _staging.forced(staging):
            return _cuda.route(t).encode_rows(t, **kwargs)

    return call


def _host_copy(t):
    """The tensor through the pinned pool as the entry points copy it (a CPU tensor, in the
    bench's own test, as it is)."""
    route = _cuda.route(t)
    return t if route is None else route.host_copy(t)


class _DeviceBase64:
    """Base64 rows written on the GPU with torch's own ops, for the "base64 on the GPU" path: the
    rows' little-endian float32 bytes, three at a time, to four 6-bit indices, to the alphabet;
    the text copied once into a pinned buffer kept between calls, then one str a row."""

    def __init__(self, torch, device):
        self.torch = torch
        alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        self.alphabet = torch.tensor(list(alphabet), dtype=torch.uint8, device=device)
        self.weights = torch.tensor([1 << 16, 1 << 8, 1], dtype=torch.int32, device=device)
        self.shifts = torch.tensor([18, 12, 6, 0], dtype=torch.int32, device=device)
        self.pinned = None
        # (on a device; the CPU tensors of the bench's own test take a plain buffer and no stream)
        self.on_device = torch.device(device).type == "cuda"

    def text(self, t):
        """[B, 4 * ceil(4 * D / 3)] uint8 on the device: each row's base64 text."""
        torch = self.torch
        b = t.to(torch.float32).contiguous().view(torch.uint8)
        pad = -b.shape[1] % 3
        if pad:
            b = torch.nn.functional.pad(b, (0, pad))
        groups = (b.view(b.shape[0], -1, 3).to(torch.int32) * self.weights).sum(-1, dtype=torch.int32)
        text = self.alphabet[(groups.unsqueeze(-1) >> self.shifts) & 63].view(b.shape[0], -1)
        if pad:
            text[:, -pad:] = ord("=")
        return text

    def rows(self, t) -> list:
        text = self.text(t)
        rows, width = text.shape
        if self.pinned is None or self.pinned.numel() < text.numel():
            self.pinned = self.torch.empty(text.numel(), dtype=self.torch.uint8, pin_memory=self.on_device)
        self.pinned[: text.numel()].copy_(text.view(-1), non_blocking=True)
        if self.on_device:
            self.torch.cuda.current_stream().synchronize()
        view = memoryview(self.pinned.numpy())
        return [str(view[i * width:(i + 1) * width], "ascii") for i in range(rows)]


def _paths(torch, pybase64, t, out: str) -> dict:
    torch_out = getattr(torch, {"fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2"}.get(out, out))

    def narrowing_from(nbytes):
        return _encode_rows_with(replace(_staging.default_staging(), narrow_from=nbytes), t, dtype=out)

    paths = {
        "encode_rows": lambda: tensorb64.encode_rows(t, dtype=out),
        "encode_rows, one host copy": lambda: tensorb64.encode_rows(_host_copy(t), dtype=out),
        "response_body": lambda: tensorb64.response_body(t, model="m", encoding_format="base64", dtype=out),
    }
    if out != "float32" and t.dtype.itemsize > torch_out.itemsize:
        paths["encode_rows, GPU narrowing"] = narrowing_from(0)
        paths["encode_rows, no GPU narrowing"] = narrowing_from(sys.maxsize)
    if pybase64 is not None:
        paths["pybase64 path"] = lambda: [pybase64.b64encode_as_string(r) for r in t.to(torch_out).cpu().numpy()]

    def numpy_path():
        c = t.cpu()
        return [base64.b64encode(c[i].to(torch_out).numpy().tobytes()).decode() for i in range(c.shape[0])]

    paths["numpy path"] = numpy_path
    paths["d2h"] = lambda: t.cpu()
    if out == "float32":
        device_base64 = _DeviceBase64(torch, t.device)
        paths["base64 on the GPU"] = lambda: device_base64.rows(t)
    return paths


def _check(paths: dict, reference_rows, reference_body) -> list:
    """Each path's output against tensorb64's of the tensor's CPU copy (d2h has none)."""
    errors = []
    for name, call in paths.items():
        if name == "d2h":
            continue
        reference, what = (reference_body, "response_body") if name == "response_body" else (reference_rows, "encode_rows")
        if call() != reference:
            errors.append(f"{name}: output differs from tensorb64.{what} of the CPU copy")
    return errors


def _measure_cases(torch, pybase64, cfg, log, device=None) -> dict:
    device = torch.device("cuda", torch.cuda.current_device()) if device is None else device
    cases = []
    for source, B, D, out in CASES:
        g = torch.Generator(device=device).manual_seed(B * D)
        t = (torch.randn(B, D, device=device, generator=g) * 0.05).to(getattr(torch, source))
        torch.cuda.synchronize()
        host = t.cpu()
        paths = _paths(torch, pybase64, t, out)
        errors = _check(paths, tensorb64.encode_rows(host, dtype=out), tensorb64.response_body(host, model="m", encoding_format="base64", dtype=out))
        timed = measure(paths, rounds=cfg["rounds"], sample_s=cfg["sample_s"], budget_s=cfg["budget_s"])
        case = {"input": source, "B": B, "D": D, "output": out, "results": timed, "errors": errors}
        cases.append(case)
        log(f"  done {source}->{out} B={B} D={D}: encode_rows {timed['encode_rows']['us']:.1f} µs")
    threshold = []
    staged = replace(_staging.default_staging(), plain_copy_below=0)
    plain = replace(_staging.default_staging(), plain_copy_below=sys.maxsize)
    for rows in THRESHOLD_ROWS:
        t = torch.randn(rows, 1024, device=device)
        torch.cuda.synchronize()

        timed = measure({"staged": _encode_rows_with(staged, t), "plain copy": _encode_rows_with(plain, t)},
                        rounds=cfg["rounds"], sample_s=cfg["sample_s"], budget_s=cfg["budget_s"] / 2)
        threshold.append({"bytes": rows * 1024 * 4, "results": timed})
    chunks = []
    for source, B, D in CHUNK_CASES:
        t = (torch.randn(B, D, device=device) * 0.05).to(getattr(torch, source))
        torch.cuda.synchronize()
        variants = {size: replace(_staging.default_staging(), chunk_bytes=size) for size in CHUNK_SIZES}
        timed = measure({f"{size >> 10} KiB": _encode_rows_with(s, t) for size, s in variants.items()},
                        rounds=cfg["rounds"], sample_s=cfg["sample_s"], budget_s=cfg["budget_s"])
        chunks.append({"input": source, "B": B, "D": D, "results": timed})
        log(f"  done chunk sizes {source} B={B} D={D}")
    return {"cases": cases, "threshold": threshold, "chunks": chunks}


def machine(torch) -> dict:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    staging = _staging.default_staging()
    return {"gpu": props.name, "gpu_memory_gib": round(props.total_memory / 2**30, 1), "devices": torch.cuda.device_count(),
            "torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
            "cpu_count": os.cpu_count(), "simd_level": tensorb64.simd_level(), "tensorb64": tensorb64.__version__,
            "chunk_bytes": staging.chunk_bytes, "plain_copy_below": staging.plain_copy_below, "pinned_limit": staging.pool.limit}


def lines(report: dict) -> list:
    out = ["| source | shape | output | path | µs/call | spread | × vs pybase64 path |", "|---|---|---|---|---:|---:|---:|"]
    summary = []
    for case in report["cases"]:
        r = case["results"]
        base = r.get("pybase64 path", {}).get("us")
        for name, m in r.items():
            ratio = f"{base / m['us']:.2f}×" if base else ""
            spread = (m["p75"] - m["p25"]) / m["us"] if m["us"] else 0.0
            out.append(f"| {case['input']} | {case['B']}×{case['D']} | {case['output']} | {name} | {m['us']:,.1f} | {spread:.0%} | {ratio} |")
        key = (case["input"], case["B"], case["D"], case["output"])
        if key in TARGETS and base:
            got = base / r["encode_rows"]["us"]
            summary.append(f"target {case['input']} {case['B']}×{case['D']}: encode_rows {got:.2f}× the pybase64 path "
                           f"(target ≥ {TARGETS[key]}×; with one host copy {base / r['encode_rows, one host copy']['us']:.2f}×)")
        if "encode_rows, no GPU narrowing" in r:
            got = r["encode_rows, no GPU narrowing"]["us"] / r["encode_rows, GPU narrowing"]["us"]
            summary.append(f"target {case['input']} {case['B']}×{case['D']} dtype={case['output']}: GPU narrowing {got:.2f}× "
                           f"the speed without it (target ≥ {NARROWING_TARGET}×)")
    out += ["", "Plain copy threshold: encode_rows of float32 rows of 1024 through the pinned staged copy or t.cpu() "
            f"(plain_copy_below = {report['gpu']['plain_copy_below']} bytes):",
            "| bytes | staged µs | plain copy µs |", "|---:|---:|---:|"]
    for row in report["threshold"]:
        r = row["results"]
        out.append(f"| {row['bytes']:,} | {r['staged']['us']:,.1f} | {r['plain copy']['us']:,.1f} |")
    sizes = list(report["chunks"][0]["results"]) if report["chunks"] else []
    out += ["", f"encode_rows µs by chunk size (chunk_bytes = {report['gpu']['chunk_bytes']} bytes now; float32 output):",
            "| source | shape | " + " | ".join(sizes) + " |", "|---|---|" + "---:|" * len(sizes)]
    for row in report["chunks"]:
        out.append(f"| {row['input']} | {row['B']}×{row['D']} | " + " | ".join(f"{row['results'][k]['us']:,.1f}" for k in sizes) + " |")
    return out + [""] + summary


def unavailable(mods: dict):
    """Why this section cannot run here (no CUDA device), or None."""
    torch = mods["torch"]
    if torch.cuda.is_available():
        return None
    return (f"bench --device cuda: no CUDA device (torch.cuda.is_available() is False; torch {torch.__version__}, "
            f"CUDA build {torch.version.cuda})")


def run(mods: dict, cfg: dict, log) -> dict:
    torch = mods["torch"]
    pybase64 = mods.get("pybase64")
    if pybase64 is None:
        log("note: pybase64 is not installed: the pybase64 path and the ratios are left out")
    # Its own rounds (the quick run's, fewer for a smoke run): the GPU session is short.
    cfg = {"rounds": 7, "sample_s": 0.002, "budget_s": 0.2} if cfg["mode"] == "smoke" else {"rounds": 21, "sample_s": 0.003, "budget_s": 1.0}
    # The allocator of a long-running server (glibc's raised thresholds, pinned): every path
    # makes large host outputs (t.cpu()'s tensor, rows of str), and in a fresh process's state
    # each call would fault all their pages in again, timing the VM's page faults, not the paths.
    states = allocator_states()
    state, description, apply = next((s for s in states if s[0] == "raised"), states[0])
    apply()
    report = {"gpu": machine(torch), "cuda_config": cfg, "allocator": f"{state}: {description}"}
    report.update(_measure_cases(torch, pybase64, cfg, log))
    return report


def errors(report: dict) -> list:
    return [e for c in report["cases"] for e in c["errors"]]


def summary(report: dict) -> str:
    return f"{len(report['cases'])} CUDA cases"


def text(report: dict) -> list:
    return [" ".join(f"{k}={v}" for k, v in report["gpu"].items()), f"allocator {report['allocator']}", *lines(report)]


def markdown(report: dict) -> str:
    return f"\n## CUDA inputs\n\nallocator {report['allocator']}\n\n" + "\n".join(lines(report)) + "\n"
