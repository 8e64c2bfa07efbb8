"""Large outputs' pages prepared before they are written (bindings/output_memory.cpp).

Every allocation site of a large output (the response bodies, encode, encode_rows, the binary
body, json_rows, the decoders' arrays, decode_response_body's result) asks for transparent huge
pages and faults its pages in with one MADV_POPULATE_WRITE call, unless the memory is resident
already (reused by the allocator). What is asserted:
  * every site's output is the same bytes prepared, unprepared, and with every madvise call
    refused (on every OS; the preparation itself is Linux's: elsewhere no advice is given) (EINVAL, as a kernel before 5.14 answers MADV_POPULATE_WRITE; ENOMEM, a memory limit;
    EPERM), and a refusal raises nothing and warns nothing (the suite turns warnings into errors);
  * each large output reaches the preparation (its counters move), a small one does not;
  * in a fresh process (glibc's initial thresholds: each large block mapped anew) the refused
    advice is really taken as refused (the counters say so), and where the kernel grants huge
    pages in `madvise` mode a large body makes a fraction of the faults it makes unprepared;
  * nothing is prepared past what is written: a float body, made at its bound, grows the
    process's resident memory by about its text, also when the rows' text shrinks midway;
  * on a free-threaded build, large outputs made from several threads at once are those of a
    lone call.
"""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

import tensorb64
import tensorb64.openai
from tensorb64 import _native
from tests.support.platforms import PAGE_PREPARATION, PEAK_RSS_SOURCE, glibc_only
from tests.support.threads import failures_in_threads

MODEL = "m"
USAGE = {"prompt_tokens": 1, "total_tokens": 1}


def large_input(seed: int = 0, rows: int = 256, width: int = 3072) -> np.ndarray:
    """3 MiB of float32 in: a 4.2 MB base64 body, 13-22 MB of float text, 3 MiB decoded (all
    above the 2 MiB from which outputs are prepared)."""
    return np.random.default_rng(seed).normal(0, 0.05, (rows, width)).astype(np.float32)


def _binary(x):
    return tensorb64.encode_binary_body(x)


# Each allocation site as a call returning bytes (or a list of them): name -> call(x).
SITES = {
    "response_body base64": lambda x: tensorb64.response_body(x, model=MODEL, usage=USAGE, encoding_format="base64"),
    "response_body float repr": lambda x: tensorb64.response_body(x, model=MODEL, usage=USAGE, encoding_format="float"),
    "response_body float shortest": lambda x: tensorb64.response_body(
        x, model=MODEL, usage=USAGE, encoding_format="float", float_format="shortest", threads=2),
    "iter_response_body base64": lambda x: b"".join(tensorb64.iter_response_body(
        x, model=MODEL, encoding_format="base64", chunk_size=3 << 20)),
    "iter_response_body float": lambda x: b"".join(tensorb64.iter_response_body(
        x, model=MODEL, encoding_format="float", chunk_size=5 << 20)),
    "encode": lambda x: tensorb64.encode(x).encode(),
    "encode threads=2": lambda x: tensorb64.encode(x, threads=2).encode(),
    "encode_rows": lambda x: [s.encode() for s in tensorb64.encode_rows(x)],
    "encode_binary_body": lambda x: _binary(x)[0],
    "json_rows": lambda x: tensorb64.json_rows(x),
    "json_rows shortest": lambda x: tensorb64.json_rows(x, float_format="shortest", threads=2),
    "decode": lambda x: tensorb64.decode(tensorb64.encode(x), threads=2).tobytes(),
    "decode_rows": lambda x: tensorb64.decode_rows(tensorb64.encode_rows(x)).tobytes(),
    "decode_binary_body": lambda x: [a.tobytes() for a in tensorb64.decode_binary_body(*_binary(x))],
    "decode_response_body base64": lambda x: tensorb64.openai.decode_response_body(
        tensorb64.response_body(x, model=MODEL, encoding_format="base64")).tobytes(),
    "decode_response_body float": lambda x: tensorb64.openai.decode_response_body(
        tensorb64.response_body(x, model=MODEL, encoding_format="float", float_format="shortest")).tobytes(),
    "decode_response_body out=": lambda x: tensorb64.openai.decode_response_body(
        tensorb64.response_body(x, model=MODEL, encoding_format="base64"), out=np.empty(x.shape, np.float32)).tobytes(),
}


@pytest.fixture
def preparation():
    """Sets the preparation (enabled, fail_with) for a test, and puts it back after."""

    def setting(enabled: bool, fail_with: int = 0):
        _native._set_page_preparation(enabled, fail_with)

    yield setting
    _native._set_page_preparation(True, 0)


def test_every_site_is_listed():
    # the public writers and readers whose outputs can be large
    public = {n for n in tensorb64.__all__ if callable(getattr(tensorb64, n)) and not isinstance(getattr(tensorb64, n), type)}
    public -= {"simd_level", "available_simd_levels", "embedding_data"}  # (nothing large; Python lists)
    public |= {"decode_response_body"}
    assert public <= {name.split()[0] for name in SITES}, sorted(public - {name.split()[0] for name in SITES})


@pytest.mark.parametrize("name", list(SITES))
def test_prepared_outputs_are_the_unprepared_bytes(name, preparation):
    x = large_input(1)
    call = SITES[name]
    preparation(False)
    want = call(x)
    for enabled, fail_with in ((True, 0), (True, errno.EINVAL), (True, errno.ENOMEM), (True, errno.EPERM)):
        preparation(enabled, fail_with)
        before = _native._page_preparation_counts()
        assert call(x) == want, (enabled, fail_with)
        after = _native._page_preparation_counts()
        if not PAGE_PREPARATION:  # no madvise where the OS has none: nothing advised, nothing refused
            assert {k: after[k] - before[k] for k in ("huge_advised", "populated", "refused")} == \
                {"huge_advised": 0, "populated": 0, "refused": 0}, (enabled, fail_with, before, after)
            continue
        # the site reached the preparation (whether its memory was found resident or not)
        assert after["prepared"] > before["prepared"], (enabled, fail_with, before, after)
        if fail_with:
            assert after["populated"] == before["populated"] and after["huge_advised"] == before["huge_advised"]


def test_small_outputs_are_not_prepared():
    x = large_input(2, rows=64)  # 64 x 3072: a 1 MB base64 body, 768 KiB decoded
    before = _native._page_preparation_counts()
    body = SITES["response_body base64"](x)
    tensorb64.encode_rows(x)
    tensorb64.openai.decode_response_body(body)
    tensorb64.response_body(x[:1, :384], model=MODEL, encoding_format="float")
    assert _native._page_preparation_counts() == before


def test_counts_are_kept_without_preparation(preparation):
    preparation(False)
    before = _native._page_preparation_counts()
    for call in SITES.values():
        call(large_input(3, rows=128))
    assert _native._page_preparation_counts() == before


def test_the_hook_checks_its_arguments():
    with pytest.raises(ValueError):
        _native._set_page_preparation(True, -1)
    with pytest.raises(TypeError):
        _native._set_page_preparation(True)
    assert set(_native._page_preparation_counts()) == {"prepared", "resident", "huge_advised", "populated", "refused"}


# ---- in a fresh process: large blocks mapped anew on every call --------------------------------

_FRESH = """
import ctypes, json, resource, sys
import numpy as np
ctypes.CDLL(None).mallopt(-3, 128 << 10)  # glibc's initial thresholds, held: every large block new
ctypes.CDLL(None).mallopt(-1, 128 << 10)
import tensorb64, tensorb64.openai
from tensorb64 import _native
x = np.random.default_rng(4).normal(0, 0.05, (1024, 3072)).astype(np.float32)
def body():
    return tensorb64.response_body(x, model="m", encoding_format="base64")
def faults(call):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    result = call()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, result
body()
out = {}
for name, (enabled, fail_with) in {"unprepared": (False, 0), "prepared": (True, 0), "EINVAL": (True, 22),
                                    "ENOMEM": (True, 12)}.items():
    _native._set_page_preparation(enabled, fail_with)
    before = _native._page_preparation_counts()
    counted, result = faults(body)
    after = _native._page_preparation_counts()
    out[name] = {"faults": counted, "same": result == body(),
                 "counts": {k: after[k] - before[k] for k in after}}
print(json.dumps(out))
"""


def _thp_mode() -> str:
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return "none"
    return text[text.index("[") + 1:text.index("]")]


def _run(script: str) -> dict:
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@glibc_only("the fresh state is glibc's malloc thresholds, held with mallopt; the preparation is Linux's madvise")
@pytest.mark.skipif(bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                    reason="free-threaded CPython allocates objects with mimalloc, which keeps and reuses their memory: "
                           "glibc's thresholds, and so the fresh memory this test needs, do not apply")
def test_in_fresh_memory_refusals_fall_back_and_huge_pages_spare_the_faults():
    got = _run(_FRESH)
    assert all(case["same"] for case in got.values()), got
    assert got["unprepared"]["counts"]["prepared"] == 0
    # fresh memory: never found resident, so the advice was asked for (and, refused, counted so)
    for name in ("prepared", "EINVAL", "ENOMEM"):
        assert got[name]["counts"]["prepared"] >= 1 and got[name]["counts"]["resident"] == 0, (name, got)
    for name in ("EINVAL", "ENOMEM"):
        assert got[name]["counts"]["refused"] >= 2 and got[name]["counts"]["populated"] == 0, (name, got)
        # refused: the pages fault one at a time, as unprepared (16.8 MB: about 4,100)
        assert got[name]["faults"] > 0.8 * got["unprepared"]["faults"], (name, got)
    if got["prepared"]["counts"]["populated"] == 0:
        pytest.skip("this kernel has no MADV_POPULATE_WRITE (before 5.14)")
    if _thp_mode() != "madvise":
        pytest.skip(f"transparent huge pages are {_thp_mode()!r} here, not 'madvise': the faults counted do not change")
    # huge pages: one fault (counted by the populate call as by a write) per 2 MiB, and 4 KiB pages
    # only at the block's ends
    assert got["prepared"]["faults"] < 0.3 * got["unprepared"]["faults"], got


_RESIDENT_GROWTH = PEAK_RSS_SOURCE + """
import ctypes, sys
import numpy as np
import tensorb64
ctypes.CDLL(None).mallopt(-3, 128 << 10)
ctypes.CDLL(None).mallopt(-1, 128 << 10)
x = np.random.default_rng(5).standard_normal((4096, 768), dtype=np.float32)  # (no float64 temporary)
if sys.argv[1] == "shrinking":  # long rows first, then rows of zeros ("0.0", 4 bytes a value)
    x[2048:] = 0
tensorb64.response_body(x[:2], model="m", encoding_format="float")
before = peak_rss_bytes()
body = tensorb64.response_body(x, model="m", encoding_format="float")
after = peak_rss_bytes()
print(len(body), after - before)
"""


@pytest.mark.serial
@glibc_only("mallopt holds glibc's initial malloc thresholds, so that the body is mapped anew and its pages counted")
@pytest.mark.parametrize("rows", ["alike", "shrinking"])
def test_float_body_prepares_no_page_past_its_text(rows):
    """The float body is made at its bound (about 1.5x its text here) and trimmed: what is
    prepared ahead of the writer is only what the text so far predicts, so the peak resident set
    grows by about the text (rows far shorter than those before them: at most one 4 MiB piece and
    a huge page more, given back at the trim)."""
    result = subprocess.run([sys.executable, "-c", _RESIDENT_GROWTH, rows], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    size, grown = map(int, result.stdout.split())
    allowed = 1.02 * size + (1 << 20) if rows == "alike" else size + (6 << 20)
    assert grown <= allowed, (rows, grown, size)


# ---- threads ---------------------------------------------------------------------------------------


def test_large_outputs_from_threads_at_once():
    inputs = [large_input(10 + i, rows=192) for i in range(4)]
    names = ["response_body base64", "response_body float shortest", "encode_rows", "json_rows", "decode",
             "decode_response_body base64"]
    expected = {name: [SITES[name](x) for x in inputs] for name in names}

    def check(i):
        return all(SITES[name](inputs[i]) == expected[name][i] for name in names)

    assert failures_in_threads(check, 4, 2) == []
