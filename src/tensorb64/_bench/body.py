"""The body section (`--section body`): the whole /v1/embeddings response body, and float rows
as JSON text.

Float rows as JSON text (issue 11), B=64 D=3072 float32 N(0, 0.05), one thread, per row as each
route makes it: json.dumps of tolist (what JSONResponse does), orjson on the numpy row (vLLM's
float route), and tensorb64.json_rows in each mode.

The body, for base64 and float rows: today's Starlette route (embedding_data or tolist, then
JSONResponse), vLLM's route (per row .to(dtype).numpy().tobytes() + pybase64, or numpy rows for
floats, then orjson.dumps(..., OPT_SERIALIZE_NUMPY)), encode_rows (or tolist) + orjson.dumps,
and tensorb64.openai.response_body; with minor page faults per call, in two glibc allocator
states (allocator.py).
"""

from __future__ import annotations

import json

import numpy as np

import tensorb64
from .allocator import allocator_states
from .report import fmt_us, markdown_table, spread_text, text_table
from .timing import measure, measure_paths, minor_faults_per_call

NAME = "body"
REQUIRES = ("torch", "pybase64", "orjson", "starlette")

BODY_SHAPES = ((1, 384), (64, 384), (64, 3072), (1024, 3072))
BODY_MODEL = "all-MiniLM-L6-v2"
# Above this many values, a float path that runs json.dumps on Python floats (Starlette's) takes
# seconds a call: not timed.
FLOAT_PYTHON_MAX_VALUES = 64 * 3072
BODY_COLUMNS = ("allocator", "format", "B", "D", "path", "µs/call", "spread", "minflt/call", "× response_body")
_RIGHT = {2, 3, 5, 6, 7, 8}


def measure_float_text(torch, cfg, orjson) -> dict:
    """Float rows as JSON text (issue 11), B=64 D=3072 float32 N(0, 0.05), one thread, per row
    as each route makes it: json.dumps of tolist (what JSONResponse does), orjson on the numpy
    row (vLLM's float route), and json_rows in each mode."""
    B, D = (8, 384) if cfg["mode"] == "smoke" else (64, 3072)
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


def float_text_lines(o: dict) -> list:
    return [
        f"Float rows as JSON text, B={o['B']} D={o['D']} float32 N(0, 0.05), one thread (median µs per batch; ns per value):",
        *(f"  {k:<50} {v:10.1f} µs {o['ns_per_value'][k]:8.1f} ns/value" for k, v in o["us"].items()),
        f"  bytes per value (comma included): repr {o['bytes_per_value']['repr']:.2f}, shortest {o['bytes_per_value']['shortest']:.2f}",
        *(f"  => {k}: {v:.2f}" for k, v in o["ratios"].items()),
    ]


# --------------------------------------------------------------------------- the response body


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
        paths["response_body"] = (lambda: response_body(t, model=BODY_MODEL, encoding_format="base64", usage=usage), None)
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


def run_body_section(torch, pybase64, orjson, cfg, log) -> list:
    cases = []
    shapes = ((2, 16), (3, 5)) if cfg["mode"] == "smoke" else BODY_SHAPES
    for state, description, apply in allocator_states():
        apply()
        for encoding_format in ("base64", "float"):
            for B, D in shapes:
                t, reference, paths = body_paths(torch, pybase64, orjson, encoding_format, B, D)
                errors = check_body_outputs(reference, {k: v for k, v in paths.items() if not v[1]}, encoding_format)
                ours = next(n for n in paths if n.startswith("response_body"))
                results = measure_paths(paths, cfg, checked=not errors, ref=ours, ratio_key="vs_response_body",
                                        extra=lambda call, m: {"minflt": minor_faults_per_call(call, m["us"] * 1e-6)})
                for e in errors:
                    log(f"  ERROR body {encoding_format} B={B} D={D} ({state}): {e}")
                case = {"allocator": state, "allocator_state": description, "format": encoding_format, "B": B, "D": D,
                        "body_bytes": len(reference), "results": results, "errors": errors}
                cases.append(case)
                if cfg["mode"] != "smoke":
                    r = {x["path"]: x for x in results}
                    log(f"  done body {state:<6} {encoding_format:<6} B={B:<4} D={D:<4} response_body "
                        + (f"{r[ours]['us']:.1f} µs" if "us" in r[ours] else "not timed"))
    return cases


def body_table_rows(cases):
    for c in cases:
        for r in c["results"]:
            if "us" in r:
                ratio = f"{r['vs_response_body']:.2f}×" if "vs_response_body" in r else ""
                cells = (fmt_us(r["us"]), spread_text(r), f"{r['minflt']:.0f}", ratio)
            elif "skipped" in r:
                cells = ("skipped", "", "", "")
            else:
                cells = ("error", "", "", "")
            yield (c["allocator"], c["format"], str(c["B"]), str(c["D"]), r["path"], *cells)


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


def run(mods: dict, cfg: dict, log) -> dict:
    torch, pybase64, orjson = mods["torch"], mods["pybase64"], mods["orjson"]
    return {"float_text": measure_float_text(torch, cfg, orjson), "body_cases": run_body_section(torch, pybase64, orjson, cfg, log)}


def errors(report: dict) -> list:
    return [e for c in report["body_cases"] for e in c["errors"]]


def summary(report: dict) -> str:
    return f"{len(report['body_cases'])} body cases"


def _states_lines() -> list:
    return [f"allocator {state}: {description}" for state, description, _ in allocator_states()]


def text(report: dict) -> list:
    cases = report["body_cases"]
    lines = ["", *float_text_lines(report["float_text"])]
    lines += ["", "The response body (µs/call: median of interleaved rounds; minflt/call: minor page faults per call; "
              "× response_body: the path's time over response_body's, same case):"]
    lines += ["  " + line for line in _states_lines()]
    lines.append(text_table(BODY_COLUMNS, body_table_rows(cases), _RIGHT))
    lines += ["note: " + n for n in sorted({r["skipped"] for c in cases for r in c["results"] if "skipped" in r})]
    targets = body_target_lines(cases)
    if targets:
        lines += ["targets (issue 12, one thread, float32):", *targets]
    return lines


def markdown(report: dict) -> str:
    cases = report["body_cases"]
    out = "\n" + "\n".join("    " + line for line in float_text_lines(report["float_text"])) + "\n"
    out += "\n## The response body\n\n" + "".join(f"* {line}\n" for line in _states_lines())
    out += "\n" + markdown_table(BODY_COLUMNS, body_table_rows(cases), _RIGHT) + "\n\n"
    return out + "\n".join("    " + line for line in body_target_lines(cases)) + "\n"
