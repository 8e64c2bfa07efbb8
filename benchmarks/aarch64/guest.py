"""The work whose AArch64 instructions benchmarks/aarch64/instructions.py counts: run by it inside
Debian's arm64 CPython under qemu-aarch64 with the insn_count plugin (insn_count.c), never alone.

    guest.py ROWS DIM REPEAT        prints a JSON list: one [work, who, level] per region counted

For each case: the call is made once and its result checked against the embeddings (outside the
count), then REPEAT calls run between the plugin's two markers (close() of two negative
descriptors), in one region. The first region is REPEAT empty calls: the loop's own
instructions, which the host subtracts from every other region. Imports only the wheels it
measures (tensorb64, numpy, orjson, pybase64), from the folder the host installed them into.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import orjson
import pybase64

import tensorb64
from tensorb64 import _native
from tensorb64.openai import decode_response_body, response_body

START, STOP = -1234567, -1234568  # insn_count.c's markers


def _mark(descriptor: int) -> None:
    try:
        os.close(descriptor)
    except OSError:  # EBADF: the plugin saw the syscall, which is all it is for
        pass


def _count(call, repeat: int) -> None:
    _mark(START)
    for _ in range(repeat):
        call()
    _mark(STOP)


def cases(x: np.ndarray) -> list:
    """(work, who, level or None, call, check): every call's result is checked by `check`."""
    rows, dim = x.shape
    f32 = np.float32
    row_bytes = dim * 4
    strings = tensorb64.encode_rows(x)
    body_base64 = response_body(x, model="m", encoding_format="base64")
    bodies = {fmt: response_body(x, model="m", encoding_format="float", float_format=fmt) for fmt in ("shortest", "repr")}
    b64decode, b64encode = pybase64.b64decode, pybase64.b64encode_as_string
    same_array = lambda got: np.array_equal(np.asarray(got).view(np.uint32), x.view(np.uint32))  # noqa: E731

    def pybase64_rows():
        out = np.empty((rows, dim), f32)
        buffer = memoryview(out).cast("B")
        for i, s in enumerate(strings):
            buffer[i * row_bytes:(i + 1) * row_bytes] = b64decode(s, validate=True)
        return out

    def orjson_pybase64():
        data = orjson.loads(body_base64)["data"]
        out = np.empty((len(data), dim), f32)
        buffer = memoryview(out).cast("B")
        for e in data:
            i = e["index"]
            buffer[i * row_bytes:(i + 1) * row_bytes] = b64decode(e["embedding"], validate=True)
        return out

    def orjson_numpy(body):
        return lambda: np.array([e["embedding"] for e in orjson.loads(body)["data"]], dtype=f32)

    option = orjson.OPT_SERIALIZE_NUMPY
    shortest_rows = tensorb64.json_rows(x, float_format="shortest")
    levels = [level for level in ("neon", "scalar") if level in tensorb64.available_simd_levels()]
    listed = []

    def ours(work, call, check):
        for level in levels:
            listed.append((work, "tensorb64", level, call, check))

    # The reading kernels.
    ours("base64 rows decoded", lambda: tensorb64.decode_rows(strings), same_array)
    listed.append(("base64 rows decoded", "pybase64 (into one array)", None, pybase64_rows, same_array))
    ours("base64 body read", lambda: decode_response_body(body_base64), same_array)
    listed.append(("base64 body read", "orjson + pybase64", None, orjson_pybase64, same_array))
    for fmt, body in bodies.items():
        work = f"float body read, {fmt}"
        ours(work, lambda body=body: decode_response_body(body), same_array)
        listed.append((work, "orjson + numpy.array", None, orjson_numpy(body), same_array))
    # The writing kernels.
    same_rows = lambda got: got == shortest_rows  # noqa: E731
    ours("float text written, shortest", lambda: tensorb64.json_rows(x, float_format="shortest"), same_rows)
    listed.append(("float text written, shortest", "orjson (OPT_SERIALIZE_NUMPY, per row)", None,
                   lambda: [orjson.dumps(r, option=option) for r in x],
                   lambda got: same_array(np.array([orjson.loads(g) for g in got], dtype=f32))))
    # json.dumps's text (Starlette's route), and orjson's of the float64 rows vLLM's Cohere route
    # and SGLang's float route hand it: the float32 values as Python floats, made before the count
    # (the routes have them already; only the writing is counted).
    dumps = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
    floats = x.tolist()
    repr_rows = [dumps(r).encode() for r in floats]
    ours("float text written, repr", lambda: tensorb64.json_rows(x, float_format="repr"), lambda got: got == repr_rows)
    listed.append(("float text written, repr", "json.dumps (per row of Python floats)", None,
                   lambda: [dumps(r).encode() for r in floats], lambda got: got == repr_rows))
    x64 = x.astype(np.float64)
    orjson64_rows = [orjson.dumps(r) for r in floats]
    ours("float64 rows written, orjson's text", lambda: tensorb64.json_rows(x64, float_format="orjson"),
         lambda got: got == orjson64_rows)
    listed.append(("float64 rows written, orjson's text", "orjson (per row of Python floats)", None,
                   lambda: [orjson.dumps(r) for r in floats], lambda got: got == orjson64_rows))
    ours("base64 rows encoded", lambda: tensorb64.encode_rows(x), lambda got: got == strings)
    listed.append(("base64 rows encoded", "pybase64", None, lambda: [b64encode(r) for r in x], lambda got: got == strings))
    return listed


def main() -> None:
    rows, dim, repeat = (int(a) for a in sys.argv[1:4])
    x = np.random.default_rng(0).normal(0, 0.05, (rows, dim)).astype(np.float32)
    order = [["(the loop alone)", "", None]]
    _count(lambda: None, repeat)
    for work, who, level, call, check in cases(x):
        if level is not None:
            _native._set_simd_level(level)
        if not check(call()):
            raise SystemExit(f"guest.py: {who} ({level}) gave a wrong result for {work}")
        _count(call, repeat)
        order.append([work, who, level])
    print(json.dumps(order))


if __name__ == "__main__":
    main()
