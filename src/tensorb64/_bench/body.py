"""The body section (`--section body`): the whole /v1/embeddings response body, and float rows
as JSON text.

Float rows as JSON text, B=64 D=3072 float32 N(0, 0.05), one thread, per row as each
route makes it: json.dumps of tolist (what JSONResponse does), orjson on the numpy row (vLLM's
float route), and tensorb64.json_rows in each mode.

The body, for base64 and float rows: today's Starlette route (embedding_data or tolist, then
JSONResponse), vLLM's route (per row .to(dtype).numpy().tobytes() + pybase64, or numpy rows for
floats, then orjson.dumps(..., OPT_SERIALIZE_NUMPY)), encode_rows (or tolist) + orjson.dumps,
and tensorb64.openai.response_body; with minor page faults per call, in two glibc allocator
states (allocator.py). The large case (1024x3072) also with the package's page preparation off,
and its float bodies written into memory already faulted in (the target's reference: the
writer's own time).

The memory of large outputs (allocator.py): the first call of a fresh process for the
large base64 body against its later calls; the threshold sweep (base64 bodies of 64 KiB to
4 MiB, prepared against unprepared, in both states); the kernel's own page costs (zeroing,
MADV_POPULATE_WRITE, huge pages), the floor each target is read against.
"""

from __future__ import annotations

import json

import numpy as np

import tensorb64
from . import os_facts
from .allocator import (
    allocator_states,
    first_call_lines,
    first_call_of_a_process,
    page_floor,
    page_floor_lines,
    unprepared,
    zeroing_us,
)
from .report import fmt_us, markdown_table, spread_text, text_table
from .timing import measure, measure_paths, minor_faults_per_call

NAME = "body"
REQUIRES = ("torch", "pybase64", "orjson", "starlette")

BODY_SHAPES = ((1, 384), (64, 384), (64, 3072), (1024, 3072))
# The large case: its bodies (16.8 MB base64, 38-66 MB float text) are fresh memory in any
# allocator state but the reused one, and are also timed with the package's page preparation off
# and, for float text, written into memory already faulted in (the floor the target is set from).
LARGE_SHAPE = (1024, 3072)
UNPREPARED = ", pages unprepared"
INTO_FAULTED = " into memory already faulted in"
BODY_MODEL = "all-MiniLM-L6-v2"
# Above this many values, a float path that runs json.dumps on Python floats (Starlette's) takes
# seconds a call: not timed.
FLOAT_PYTHON_MAX_VALUES = 64 * 3072
BODY_COLUMNS = ("allocator", "format", "B", "D", "path", "µs/call", "spread", "minflt/call", "× response_body")
_RIGHT = {2, 3, 5, 6, 7, 8}


def measure_float_text(torch, cfg, orjson) -> dict:
    """Float rows as JSON text, B=64 D=3072 float32 N(0, 0.05), one thread, per row as each route
    makes it: json.dumps of tolist (what JSONResponse does), orjson on the numpy row (vLLM's float
    route), and json_rows in each mode. The targets, printed beside each ratio: repr at least 40x
    json.dumps's route; shortest at least 6x and repr at least 4x orjson."""
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
        ratios["orjson / shortest (target >= 6)"] = orj / us["tensorb64.json_rows(shortest)"]
        ratios["orjson / repr (target >= 4)"] = orj / us["tensorb64.json_rows(repr)"]
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


def body_paths(torch, pybase64, orjson, encoding_format, B, D, large=LARGE_SHAPE):
    """(the input tensor, response_body's bytes, {name: (zero-arg call, skip reason or None)})
    for one case; the case `large` also with the page preparation off and written into memory
    already faulted in."""
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
        if (B, D) == large and os_facts.PAGE_PREPARATION:
            paths["response_body" + UNPREPARED] = (unprepared(paths["response_body"][0]), None)
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
        if (B, D) == large:
            for mode in ("repr", "shortest"):
                name = f"response_body ({mode})"
                if os_facts.PAGE_PREPARATION:
                    paths[name + UNPREPARED] = (unprepared(paths[name][0]), None)
                paths[name + INTO_FAULTED] = (_into_faulted(t, usage, mode), None)
    reference = response_body(t, model=BODY_MODEL, usage=usage, encoding_format=encoding_format)
    return t, reference, paths


def _into_faulted(t, usage, float_format):
    """A call writing response_body's float body into one buffer made once (a bytearray at the
    body's bound, its pages faulted in by the first call and reused by every later one): the
    writer's own time, in memory already faulted in. Checked against response_body's bytes here."""
    from tensorb64 import _native
    from tensorb64._codec.body import Body
    from tensorb64.openai import response_body

    body = Body(t, model=BODY_MODEL, usage=usage, encoding_format="float", float_format=float_format)
    rows, width = body.rows.shape
    bound = len(body.head) + len(body.tail) + rows * _native._entry_bound(width, max(rows - 1, 0), None, float_format)
    buffer = bytearray(bound)

    def call():
        return _native._response_body_float_into(buffer, body.rows, float_format, body.head, body.tail, 0, 1, "openai",
                                                 False)

    want = response_body(t, model=BODY_MODEL, usage=usage, encoding_format="float", float_format=float_format)
    if buffer[:call()] != want:
        raise AssertionError(f"the {float_format} body written into a buffer differs from response_body's")
    return call


def check_body_outputs(reference: bytes, paths: dict, encoding_format: str) -> list:
    """Problems found comparing each path's body with response_body's (empty when all agree):
    base64 bodies byte for byte; float bodies byte for byte where they write repr (Starlette),
    value for value (as float32) where orjson or the shortest mode writes other digits."""
    problems = []
    want = json.loads(reference)
    want_rows = None
    for name, (call, _skip) in paths.items():
        if name.startswith("encode_rows alone") or name.endswith(INTO_FAULTED):  # (no body; checked when made)
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
    large = shapes[-1]
    for state, description, apply in allocator_states():
        apply()
        for encoding_format in ("base64", "float"):
            for B, D in shapes:
                t, reference, paths = body_paths(torch, pybase64, orjson, encoding_format, B, D, large)
                errors = check_body_outputs(reference, {k: v for k, v in paths.items() if not v[1]}, encoding_format)
                ours = next(n for n in paths if n.startswith("response_body"))
                results = measure_paths(paths, cfg, checked=not errors, ref=ours, ratio_key="vs_response_body",
                                        extra=lambda call, m: {"minflt": minor_faults_per_call(call, m["us"] * 1e-6)})
                for e in errors:
                    log(f"  ERROR body {encoding_format} B={B} D={D} ({state}): {e}")
                case = {"allocator": state, "allocator_state": description, "format": encoding_format, "B": B, "D": D,
                        "body_bytes": len(reference), "results": results, "errors": errors}
                if encoding_format == "float" and (B, D) == large:
                    case["text_bytes"] = {"repr": len(reference), "shortest": len(paths["response_body (shortest)"][0]())}
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
                cells = (fmt_us(r["us"]), spread_text(r), "n/a" if r.get("minflt") is None else f"{r['minflt']:.0f}", ratio)
            elif "skipped" in r:
                cells = ("skipped", "", "", "")
            else:
                cells = ("error", "", "", "")
            yield (c["allocator"], c["format"], str(c["B"]), str(c["D"]), r["path"], *cells)


def body_target_lines(cases, floor: dict | None = None) -> list:
    """The body's targets (one thread, float32), each ratio with its own, as measured, per allocator state;
    beside the large float bodies', the ratio the kernel's page zeroing alone sets (`floor`:
    allocator.page_floor's, the same run)."""
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
            if us(c, "response_body" + UNPREPARED) is not None:  # (Linux only: os_facts)
                checks.append(("response_body unprepared / prepared", us(c, "response_body" + UNPREPARED) / rb, "", None))
        elif key == ("float", 1024, 3072):
            for mode in ("repr", "shortest"):
                ours, faulted = us(c, f"response_body ({mode})"), us(c, f"response_body ({mode}){INTO_FAULTED}")
                checks.append((f"response_body ({mode}) / the same{INTO_FAULTED}", ours / faulted, "<=", 1.2))
                if us(c, f"response_body ({mode}){UNPREPARED}") is not None:  # (Linux only: os_facts)
                    checks.append((f"response_body ({mode}) unprepared / the same{INTO_FAULTED}",
                                   us(c, f"response_body ({mode}){UNPREPARED}") / faulted, "", None))
                zeroing = zeroing_us(floor, c.get("text_bytes", {}).get(mode))
                if zeroing is not None:
                    checks.append((f"(the floor: the same + the kernel zeroing its {c['text_bytes'][mode] / 2**20:.0f} MiB "
                                   "in huge pages) / the same", (faulted + zeroing) / faulted, "", None))
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


# The first call of a process (allocator.first_call_of_a_process): the base64 body of the large
# case, response_body's first call against its later ones, with the page preparation and without.
_FIRST_CALL_SETUP = """
import numpy
from tensorb64.openai import response_body
x = numpy.random.default_rng(0).normal(0, 0.05, ({B}, {D})).astype(numpy.float32)
usage = {{"prompt_tokens": 1, "total_tokens": 1}}
response_body(x[:1], model="m", usage=usage, encoding_format="base64")
def call():
    return response_body(x, model="m", usage=usage, encoding_format="base64")
"""


def measure_first_calls(cfg, log) -> list:
    """[{what, prepared, first_us, later_us, ratio, ...}]: the large base64 body's first call in a
    fresh process against its later calls, prepared and unprepared (processes alternated)."""
    B, D = (64, 384) if cfg["mode"] == "smoke" else LARGE_SHAPE
    runs = 1 if cfg["mode"] == "smoke" else 5 if cfg["mode"] == "quick" else 9
    setup = _FIRST_CALL_SETUP.format(B=B, D=D)
    out = []
    for prepared in (True, False) if os_facts.PAGE_PREPARATION else (False,):
        got = first_call_of_a_process(setup, runs=runs, prepared=prepared)
        out.append({"what": f"response_body base64 {B}x{D}", "B": B, "D": D, **got})
        log(f"  done body first call ({'prepared' if prepared else 'unprepared'}): {got['ratio']:.2f}x a later call")
    return out


# The threshold sweep: base64 bodies of 64 KiB to 4 MiB (B rows of 3072 float32), the fastest
# writer's, where a fixed cost shows most.
THRESHOLD_ROWS = (4, 16, 64, 128, 256)


def measure_threshold(cfg, log) -> list:
    """[{state, B, D, bytes, unprepared_us, prepared_us, ratio}]: base64 bodies from 64 KiB to 4 MiB
    in each allocator state, written unprepared and prepared (the threshold lowered to 64 KiB for
    the call), interleaved: where preparing pays, and what it costs where memory is reused. Empty
    where there is no page preparation (os_facts.PAGE_PREPARATION)."""
    if not os_facts.PAGE_PREPARATION:
        return []
    from tensorb64 import _native
    from tensorb64.openai import response_body

    def prepared_from_64k(call):
        def run():
            _native._set_page_preparation(True, 0, 64 << 10)
            try:
                return call()
            finally:
                _native._set_page_preparation(True, 0)

        return run

    D = 3072
    rows = (1, 2) if cfg["mode"] == "smoke" else THRESHOLD_ROWS
    out = []
    for state, _, apply in allocator_states():
        apply()
        for B in rows:
            x = np.random.default_rng(B).normal(0, 0.05, (B, D)).astype(np.float32)

            def body(x=x):
                return response_body(x, model=BODY_MODEL, encoding_format="base64")

            s = measure({"unprepared": unprepared(body), "prepared": prepared_from_64k(body)}, rounds=cfg["rounds"],
                        sample_s=cfg["sample_s"], budget_s=cfg["budget_s"])
            out.append({"state": state, "B": B, "D": D, "bytes": len(body()), "unprepared_us": s["unprepared"]["us"],
                        "prepared_us": s["prepared"]["us"], "ratio": s["prepared"]["us"] / s["unprepared"]["us"]})
    log(f"  done body threshold sweep ({len(out)} cases)")
    return out


def threshold_lines(sweep: list) -> list:
    lines = ["The threshold (base64 bodies, prepared from 64 KiB against unprepared, interleaved; the package prepares "
             "outputs from 2 MiB):"]
    if not os_facts.PAGE_PREPARATION:
        return lines + [f"  not measured: {os_facts.PAGE_PREPARATION_ABSENT}"]
    for c in sweep:
        lines.append(f"  {c['state']:<8} {c['B']:>4}x{c['D']} ({c['bytes'] / 2**20:5.2f} MiB): unprepared "
                     f"{fmt_us(c['unprepared_us'])} µs, prepared {fmt_us(c['prepared_us'])} µs: {c['ratio']:.3f}x")
    return lines


def run(mods: dict, cfg: dict, log) -> dict:
    torch, pybase64, orjson = mods["torch"], mods["pybase64"], mods["orjson"]
    smoke = cfg["mode"] == "smoke"
    return {"float_text": measure_float_text(torch, cfg, orjson), "body_cases": run_body_section(torch, pybase64, orjson, cfg, log),
            "body_first_calls": measure_first_calls(cfg, log), "body_threshold": measure_threshold(cfg, log),
            "page_floor": page_floor(size_mib=4 if smoke else 64, rounds=1 if smoke else 7)}


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
    lines += ["note: " + n for n in os_facts.absent_lines()]
    targets = body_target_lines(cases, report.get("page_floor"))
    if targets:
        lines += ["targets (one thread, float32):", *targets]
    return lines + ["", *first_call_lines(report.get("body_first_calls", []), report.get("page_floor")), "", *threshold_lines(report.get("body_threshold", [])),
                    "", *page_floor_lines(report.get("page_floor"))]


def markdown(report: dict) -> str:
    cases = report["body_cases"]
    out = "\n" + "\n".join("    " + line for line in float_text_lines(report["float_text"])) + "\n"
    out += "\n## The response body\n\n" + "".join(f"* {line}\n" for line in _states_lines())
    out += "\n" + markdown_table(BODY_COLUMNS, body_table_rows(cases), _RIGHT) + "\n\n"
    out += "\n".join("    " + line for line in body_target_lines(cases, report.get("page_floor"))) + "\n"
    extra = [*first_call_lines(report.get("body_first_calls", []), report.get("page_floor")), "", *threshold_lines(report.get("body_threshold", [])), "",
             *page_floor_lines(report.get("page_floor"))]
    return out + "\n" + "\n".join("    " + line for line in extra) + "\n"
