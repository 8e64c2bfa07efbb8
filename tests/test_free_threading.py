"""Truly parallel calls: every public entry point from 8 Python threads at once.

On a free-threaded CPython (3.13t, 3.14t) the extension declares that it does not need the GIL,
so these calls run in parallel from the first bytecode to the last: the argument parsing, the
name registries, the dispatch's chosen level, the thread pool behind ``threads=``, the input
reader and the output allocation all run concurrently. On a GIL build the same tests exercise the
sections that release the GIL (inputs above the release threshold are used for that).

What is asserted:
  * every entry point, called from 8 threads at once on one shared input and on 8 separate
    inputs, returns exactly what a lone call returns for the same input (computed before);
  * ``threads=`` (the core's pool) under parallel callers: the same bytes;
  * the dispatch level switched (``_set_simd_level``) while other threads encode: every result
    is still the same bytes (every level writes the same bytes; the switch is one atomic store);
  * on a free-threaded build, ``import tensorb64`` leaves the GIL off (no RuntimeWarning).
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import threading

import numpy as np
import pytest

import tensorb64
import tensorb64.openai
from tensorb64 import _native
from tests.support.threads import failures_in_threads

FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
N_THREADS = 8
REPEATS = 6


def rows_input(seed: int, kind: str):
    """Inputs of each reading path: float32 rows above the GIL-release threshold (24 x 1024 float32
    is 96 KiB in, 128 KiB of base64 out), a float16 one, a strided float64 view, a tiny batch (the
    fast path)."""
    rng = np.random.default_rng(seed)
    values = (rng.standard_normal((24, 1024)) * 10.0 ** rng.integers(-3, 4, (24, 1))).astype(np.float32)
    if kind == "float32":
        return values
    if kind == "float16":
        return values.astype(np.float16)
    if kind == "float64-view":
        return np.concatenate([values, values], axis=1).astype(np.float64)[::-1, 1::2]
    if kind == "tiny":
        return values[:3, :16]
    raise AssertionError(kind)


KINDS = ["float32", "float16", "float64-view", "tiny"]


def _body(x):
    body, metadata = tensorb64.encode_binary_body(x, dtype="bfloat16", byteorder="big")
    return body, metadata


# Each public entry point, as a call on a batch of rows, returning something comparable with ==.
# decode* take what the encoders wrote; a new public function must be added here (see
# test_every_entry_point_is_called).
CALLS = {
    "encode": lambda x: tensorb64.encode(x[0]),
    "encode_rows": lambda x: tensorb64.encode_rows(x, dtype="float16"),
    "json_rows": lambda x: tensorb64.json_rows(x, float_format="shortest"),
    "encode_binary_body": lambda x: _body(x),
    "decode": lambda x: tensorb64.decode(tensorb64.encode(x[0])).tobytes(),
    "decode_rows": lambda x: tensorb64.decode_rows(tensorb64.encode_rows(x, byteorder="big"), byteorder="big").tobytes(),
    "decode_binary_body": lambda x: [a.tobytes() for a in tensorb64.decode_binary_body(*_body(x))],
    "embedding_data": lambda x: tensorb64.embedding_data(x, encoding_format="base64", start_index=5),
    "response_body": lambda x: tensorb64.response_body(
        x, model="m", encoding_format="base64", usage={"prompt_tokens": 1, "total_tokens": 1}
    ),
    "response_body float": lambda x: tensorb64.response_body(x, model="m", encoding_format="float"),
    "iter_response_body": lambda x: b"".join(tensorb64.iter_response_body(x, model="m", chunk_size=40_000)),
    "decode_response_body": lambda x: tensorb64.openai.decode_response_body(
        tensorb64.response_body(x, model="m", encoding_format="base64")
    ).tobytes(),
    "decode_response_body float": lambda x: tensorb64.openai.decode_response_body(
        tensorb64.response_body(x, model="m", encoding_format="float", float_format="shortest"), threads=2
    ).tobytes(),
    "decode_response": lambda x: repr(tensorb64.openai.decode_response(tensorb64.response_body(x, model="m"))),
    "simd_level": lambda x: tensorb64.simd_level(),
    "available_simd_levels": lambda x: tensorb64.available_simd_levels(),
}


def in_parallel(check, count: int = N_THREADS) -> list:
    """Runs ``check(i)`` REPEATS times in each of ``count`` threads at once; what went wrong."""
    return failures_in_threads(check, count, REPEATS)


def test_every_entry_point_is_called():
    # embed/aembed are the openai client's request around decode_response_body.
    public = {
        name for name in tensorb64.__all__
        if callable(getattr(tensorb64, name)) and not isinstance(getattr(tensorb64, name), type)
    }
    public |= {name for name in ("decode_response_body", "decode_response") if name in tensorb64.openai.__all__}
    missing = public - {name.split()[0] for name in CALLS}
    assert not missing, f"add these public functions to CALLS: {sorted(missing)}"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(CALLS))
def test_parallel_calls_on_one_shared_input(name, kind):
    call = CALLS[name]
    x = rows_input(1, kind)
    expected = call(x)
    assert in_parallel(lambda i: call(x) == expected) == []


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(CALLS))
def test_parallel_calls_on_separate_inputs(name, kind):
    call = CALLS[name]
    inputs = [rows_input(100 + i, kind) for i in range(N_THREADS)]
    expected = [call(x) for x in inputs]
    assert len({repr(e) for e in expected}) > 1 or name in ("simd_level", "available_simd_levels")
    assert in_parallel(lambda i: call(inputs[i]) == expected[i]) == []


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_threads_argument_under_parallel_callers(threads):
    inputs = [rows_input(200 + i, "float32") for i in range(N_THREADS)]
    expected_rows = [tensorb64.encode_rows(x) for x in inputs]
    expected_body = [tensorb64.response_body(x, model="m", encoding_format="float") for x in inputs]

    def check(i):
        x = inputs[i]
        return (tensorb64.encode_rows(x, threads=threads) == expected_rows[i]
                and tensorb64.response_body(x, model="m", encoding_format="float", threads=threads) == expected_body[i])

    assert in_parallel(check) == []


def test_level_switched_while_others_encode():
    levels = tensorb64.available_simd_levels()
    initial = tensorb64.simd_level()
    x = rows_input(7, "float16")
    expected_rows = tensorb64.encode_rows(x)
    expected_text = tensorb64.json_rows(x)
    stop = threading.Event()

    def switcher():
        k = 0
        while not stop.is_set():
            _native._set_simd_level(levels[k % len(levels)])
            k += 1

    flipping = threading.Thread(target=switcher)
    flipping.start()
    try:
        failures = in_parallel(lambda i: tensorb64.encode_rows(x) == expected_rows and tensorb64.json_rows(x) == expected_text,
                               count=N_THREADS - 1)
    finally:
        stop.set()
        flipping.join()
        _native._set_simd_level(initial)
    assert failures == []
    assert tensorb64.simd_level() == initial


@pytest.mark.skipif(not FREE_THREADED, reason="a GIL build: there is no GIL to keep off")
def test_import_leaves_the_gil_off():
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}  # PYTHON_GIL=0 would force it off
    code = "import sys, tensorb64; print(sys._is_gil_enabled())"
    result = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", code], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False", result.stdout + result.stderr
    assert "RuntimeWarning" not in result.stderr


@pytest.mark.skipif(not FREE_THREADED, reason="a GIL build: the GIL is on")
def test_this_process_runs_without_the_gil():
    assert not sys._is_gil_enabled()
