"""`python -m tensorb64 info` and `bench` run, print what they promise and write parseable JSON.

No timing is asserted here: performance is measured by benchmarks/bench.py, never by tests.
"""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

import tensorb64


def run_cli(*args, timeout=300):
    proc = subprocess.run([sys.executable, "-m", "tensorb64", *args], capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"python -m tensorb64 {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_info_names_version_and_simd_levels():
    out = run_cli("info")
    assert f"tensorb64 {tensorb64.__version__}" in out
    assert f"simd_level: {tensorb64.simd_level()}" in out
    assert ", ".join(tensorb64.available_simd_levels()) in out


def test_unknown_command_is_a_usage_error():
    proc = subprocess.run([sys.executable, "-m", "tensorb64", "frobnicate"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "unknown command" in proc.stderr and "bench" in proc.stderr


@pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("torch", "pybase64", "orjson", "starlette", "openai")),
    reason='the benchmark compares against torch, pybase64, orjson, starlette and openai paths, which are not all installed '
    '(pip install "tensorb64[bench]")',
)
def test_smoke_bench_prints_table_and_writes_json(tmp_path):
    from tensorb64._bench.base64_rows import COLUMNS

    json_path = tmp_path / "bench.json"
    table_path = tmp_path / "table.md"
    out = run_cli("bench", "--smoke", "--json", str(json_path), "--table", str(table_path))

    assert f"simd_level={tensorb64.simd_level()}" in out
    header = next(line for line in out.splitlines() if line.startswith("input"))
    assert header.split() == " ".join(COLUMNS).split()
    for path in ("struct", "numpy", "pybase64", "tensorb64 rows", "tensorb64 batch", "memcpy of output size", "vllm f16"):
        assert path in out, f"path {path!r} missing from the table"
    assert "Small calls" in out and "Float rows as JSON text" in out

    report = json.loads(json_path.read_text(encoding="utf-8"))
    assert report["mode"] == "smoke"
    assert report["errors"] == []
    assert set(report["small_calls"]["ratios"]) and all(v > 0 for v in report["small_calls"]["ratios"].values())
    assert report["float_text"]["bytes_per_value"]["shortest"] < report["float_text"]["bytes_per_value"]["repr"]
    assert report["machine"]["simd_level"] == tensorb64.simd_level()
    timed = [r for case in report["cases"] for r in case["results"] if "us" in r]
    assert timed and all(r["us"] > 0 and r["gbps"] > 0 for r in timed)
    assert {"float32", "float16"} <= {case["output"] for case in report["cases"]}
    assert "| " + " | ".join(COLUMNS) + " |" in table_path.read_text(encoding="utf-8")
    # The client section: every body and route, each checked against the embeddings it was written from.
    assert "A response body back to one float32 array" in out
    assert {c["body"] for c in report["client_cases"]} == {"base64", "float shortest", "float repr"}
    assert all(c["errors"] == [] for c in report["client_cases"])
    assert "pybase64 alone over the row strings (floor)" in out and "orjson.loads + numpy.array" in out


# The bench as it runs where there is no `resource` module and no page preparation (Windows): in a
# process whose `resource` import fails (a module of that name ahead of the standard library's on
# PYTHONPATH, inherited by the first-call subprocesses the sections start) and with os_facts'
# Linux-only facts off, as Windows has them. Any import of `resource`, or a figure printed where
# it cannot be measured, fails it.
_NO_RESOURCE_RUN = """
import json, sys
from tensorb64._bench import os_facts
assert os_facts.resource is None and not os_facts.MINOR_FAULTS, "the stand-in resource module was imported"
os_facts.LINUX = os_facts.GLIBC = os_facts.PAGE_PREPARATION = False
from tensorb64._bench import runner
sys.exit(runner.main(["--smoke", "--section", sys.argv[1], "--json", sys.argv[2]]))
"""


@pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("torch", "pybase64", "orjson", "starlette", "openai")),
    reason='the body and client sections compare against torch, pybase64, orjson, starlette and openai paths, which are '
    'not all installed (pip install "tensorb64[bench]")',
)
@pytest.mark.parametrize("section", ["body", "client"])
def test_bench_runs_without_resource_and_page_preparation_and_says_what_it_did_not_measure(tmp_path, section):
    from tensorb64._bench.os_facts import PAGE_PREPARATION_ABSENT

    (tmp_path / "resource.py").write_text('raise ImportError("no resource module here (as on Windows)")\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    json_path = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "-c", _NO_RESOURCE_RUN, section, str(json_path)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    out, report = proc.stdout, json.loads(json_path.read_text(encoding="utf-8"))
    assert report["errors"] == []
    assert "minor page faults are not counted" in out and PAGE_PREPARATION_ABSENT.split(";")[0] in out
    cases = report["body_cases" if section == "body" else "client_cases"]
    timed = [r for c in cases for r in c["results"] if "us" in r]
    assert timed and all(r.get("minflt") is None for r in timed)
    assert {c["allocator"] for c in cases} == {"as found"}  # no mallopt without glibc
    assert not any("unprepared" in r["path"] for c in cases for r in c["results"])
    first_calls = report["body_first_calls" if section == "body" else "client_first_calls"]
    assert len(first_calls) == 1 and first_calls[0]["prepared"] is False
    assert first_calls[0]["first_minflt"] is None and first_calls[0]["later_minflt"] is None
    assert first_calls[0]["first_us"] > 0 and first_calls[0]["output_bytes"] > 0
    assert report["page_floor" if section == "body" else "client_page_floor"] is None
    if section == "body":
        assert report["body_threshold"] == [] and "The threshold" in out


@pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("torch", "pybase64", "orjson", "starlette", "openai", "matplotlib")),
    reason='the benchmark with --plot needs the bench extra, which is not all installed (pip install "tensorb64[bench]")',
)
def test_smoke_bench_draws_a_png(tmp_path):
    png = tmp_path / "throughput.png"
    run_cli("bench", "--smoke", "--plot", str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="bench --device cuda needs torch, which is not installed")
def test_cuda_bench_without_a_cuda_device_says_so():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: ci/gpu_check.sh runs the CUDA bench")
    proc = subprocess.run([sys.executable, "-m", "tensorb64", "bench", "--device", "cuda"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "bench --device cuda: no CUDA device" in proc.stderr


def test_cuda_bench_paths_checks_and_report_run_on_cpu_tensors():
    # The CUDA bench runs only on a GPU machine, in a short prepared session: its paths, output
    # checks and report are run here on CPU tensors, so that a slip in them cannot waste it.
    torch = pytest.importorskip("torch")
    pybase64 = pytest.importorskip("pybase64")
    from tensorb64._bench import cuda as _bench_cuda

    t = torch.randn(4, 96)
    measured = {"us": 2.0, "p25": 1.9, "p75": 2.1}
    cases = []
    for source, B, D, out in _bench_cuda.CASES:
        paths = _bench_cuda._paths(torch, pybase64, t.to(getattr(torch, source)), out)
        host = t.to(getattr(torch, source))
        rows, body = tensorb64.encode_rows(host, dtype=out), tensorb64.response_body(host, model="m", encoding_format="base64", dtype=out)
        assert _bench_cuda._check(paths, rows, body) == []
        assert _bench_cuda._check(paths, rows[:-1], body) != []  # a wrong output is reported
        cases.append({"input": source, "B": B, "D": D, "output": out, "errors": [],
                      "results": {name: measured for name in paths}})
    sizes = {f"{size >> 10} KiB": measured for size in _bench_cuda.CHUNK_SIZES}
    report = {"cases": cases, "gpu": {"plain_copy_below": _bench_cuda._staging.PLAIN_COPY_BELOW, "chunk_bytes": 2 << 20},
              "threshold": [{"bytes": 16384, "results": {"staged": measured, "plain copy": measured}}],
              "chunks": [{"input": s, "B": B, "D": D, "results": sizes} for s, B, D in _bench_cuda.CHUNK_CASES]}
    text = "\n".join(_bench_cuda.lines(report))
    assert "| float32 | 1024×3072 | " + " | ".join(["2.0"] * len(sizes)) + " |" in text
    for key in _bench_cuda.TARGETS:
        assert f"target {key[0]} {key[1]}×{key[2]}: encode_rows" in text
    assert "GPU narrowing 1.00× the speed without it" in text


def test_plotting_and_allocator_control_load_only_when_the_bench_asks():
    # `import tensorb64` loads nothing of the benchmark; the runner loads no section, no plotting
    # and no allocator control until a run selects them.
    code = ("import sys, tensorb64; before = sorted(m for m in sys.modules if m.startswith('tensorb64._bench')); "
            "import tensorb64._bench.runner; "
            "print(before, sorted(m for m in sys.modules if m.startswith(('matplotlib', 'tensorb64._bench.'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[]", "['tensorb64._bench.report',", "'tensorb64._bench.runner']"]


def test_client_bench_routes_read_back_the_embeddings_and_a_wrong_array_is_reported():
    # Every route of the client section on small bodies, as the bench checks them before timing;
    # tensorb64's own routes (decode_response_body; embed for base64 bodies) among them.
    import numpy as np

    mods = {m: pytest.importorskip(m) for m in ("openai", "orjson", "pybase64")}
    from tensorb64 import openai as ours
    from tensorb64._bench import client

    x = np.random.default_rng(5).normal(0, 0.05, (3, 7)).astype(np.float32)
    for kind in client.BODIES:
        paths = client.routes(mods, ours, kind, client._body(kind, x), *x.shape)
        assert client._check(paths, x) == []
        wrong = x.copy()
        # the step taken in float32 (numpy 1.x promotes a float32 scalar with a Python int to
        # float64, whose next value rounds back to the same float32)
        wrong[2, 6] = np.nextafter(wrong[2, 6], np.float32(1))
        assert client._check(paths, wrong) != []
        assert client.DECODER in paths and (client.EMBED in paths) == (kind == "base64")
        if kind == "base64":
            assert "pybase64 alone over the row strings (floor)" in paths
        assert client.THREADED not in paths  # small bodies: threads=2 is timed from 1024x1024 on
        # Large bodies gain the threads=2 route, which reads the same array.
        body = client._body(kind, x)
        large = client.tensorb64_routes(ours, kind, body, None, [], client.THREADED_FROM_VALUES)
        assert np.array_equal(large[client.THREADED](), x) and np.array_equal(large[client.DECODER](), x)


def test_client_bench_measures_the_decoder_and_embed_and_states_the_targets():
    # The rows, ratios and target lines the client section gives, on a small body (quickly timed).
    import numpy as np

    mods = {m: pytest.importorskip(m) for m in ("openai", "orjson", "pybase64")}
    from tensorb64 import openai as api
    from tensorb64._bench import client
    from tensorb64._bench.timing import measure_paths

    x = np.random.default_rng(6).normal(0, 0.05, (3, 7)).astype(np.float32)
    cfg = {"mode": "smoke", "rounds": 3, "sample_s": 0.0005, "budget_s": 0.01}
    for kind in client.BODIES:
        paths = client.routes(mods, api, kind, client._body(kind, x), *x.shape)
        assert client._check(paths, x) == []
        results = measure_paths(paths, cfg, checked=True, ref=client.DECODER, ratio_key="vs_decoder")
        assert {r["path"] for r in results} >= {client.DECODER} | ({client.EMBED} if kind == "base64" else set())
        assert all(r["vs_decoder"] > 0 for r in results if "us" in r)
        case = {"body": kind, "B": 3, "D": 7, "body_bytes": 1, "results": results, "errors": []}
        assert all(row[-1].endswith("×") for row in client.table_rows([case]) if row[-3] != "skipped")
        # The targets are stated for 64x3072: the same rows under that shape give each line.
        targets = "\n".join(client.target_lines([{**case, "B": 64, "D": 3072}]))
        for what in (["decode_response_body / pybase64 floor", "openai parse / decode_response_body", "openai create / embed"]
                     if kind == "base64" else ["orjson + numpy.array / decode_response_body"]):
            assert what in targets


@pytest.mark.needs_source_tree  # benchmarks/
def test_ingest_bench_states_the_targets_from_its_figures():
    # The ingest bench's ratios and target lines from a report's figures (the runs themselves
    # need Ray and Daft: tests/test_ingest.py runs the adapters, benchmarks/ingest_bench.py the bench).
    from benchmarks import ingest_bench as ingest

    def case(route, rows_per_s, engine="ray", fmt="float"):
        return {"width": 3072, "encoding_format": fmt, "route": route, "rows": 100, "rows_per_s": rows_per_s,
                "cpu_s_per_1000": 1000 / rows_per_s, "engine": engine}

    cases = [case("ray identity", 9000), case("ray http stage", 500), case("openai client", 200),
             case("EmbeddingClient", 3000), case("openai client", 1000, fmt="base64"),
             case("EmbeddingClient", 1200, fmt="base64"), case("daft embed_text", 100, "daft"),
             case("tensorb64.daft", 2000, "daft"),
             {"width": 3072, "encoding_format": "float", "route": "server", "server_us_per_request": 90.0, "requests": 7}]
    report = {"ingest": {"cases": cases, "rows": 100, "rounds": 1, "errors": []}}
    lines = "\n".join(ingest.target_lines(report))
    assert "EmbeddingClient / openai client = 1.20x (goal >= 1.5x: MISSED)" in lines  # base64
    assert "EmbeddingClient / openai client = 15.00x (goal >= 10x: met)" in lines  # float
    assert "EmbeddingClient / ray http stage = 6.00x (goal >= 10x: MISSED)" in lines
    assert "tensorb64.daft / daft embed_text = 20.00x (goal >= 10x: met)" in lines
    assert "Ray Data's identity map_batches: 9,000 rows/s" in lines and "90 µs CPU a request" in lines
    rows = {(r[1], r[2]): r for r in ingest.rows_of(report)}
    assert rows[("float", "ray http stage")][-1] == "6.00x" and rows[("float", "EmbeddingClient")][-1] == "1.00x"
    assert rows[("float", "openai client")][-2] == f"{1000 / 200 - 1000 / 9000:+.3f}"  # its CPU over Ray's own


@pytest.mark.needs_source_tree  # benchmarks/
def test_the_transport_bench_checks_and_times_each_transport(tmp_path):
    """benchmarks/ingest_transport_bench.py, smoke-sized: every transport's array checked against
    the table before it is timed, each in both malloc states, with its ratios to the pool."""
    pytest.importorskip("httpx", reason="httpx is not installed here (the test extra installs it)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = tmp_path / "transport.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.ingest_transport_bench", "--smoke", "--widths", "96",
                           "--json", str(out)], cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text())["ingest_transport"]
    routes = ["http.client pool", "httpx.Client"] + (["httpx2.Client"] if importlib.util.find_spec("httpx2") else [])
    from tensorb64._bench.allocator import allocator_states

    states = [name for name, _, _ in allocator_states()]  # ("fresh", "raised" where glibc's)
    assert report["errors"] == []
    assert [(c["encoding_format"], c["allocator"], c["route"]) for c in report["cases"]] == [
        (fmt, state, route) for fmt in ("base64", "float") for state in states for route in routes]
    assert all(c["us"] > 0 and c["cpu_us"] > 0 for c in report["cases"])
    assert {c["vs_pool"] for c in report["cases"] if c["route"] == "http.client pool"} == {1.0}
    assert "httpx.Client" in proc.stdout and "CPU × pool" in proc.stdout


def test_the_patched_clients_targets_are_stated_where_they_can_be_met():
    """A target the floor measured in the same run cannot reach is held to the floor instead; the
    base64 rows the caller keeps (nothing to do) are met within the rows' own spread, at most 5%:
    a patched call 1.5 times slower is not met, however noisy the run."""
    from tensorb64._bench import client

    def case(library, off, on, floor=None, spread=0.02):
        states = {client.OFF: off, client.ON: on, **({client.FLOOR: floor} if floor else {})}
        return {"library": library, "B": 64, "D": 3072, "load": [0.5, 0.6],
                "results": [{"path": f"{library}: {state}", "us": us, "p25": us * (1 - spread / 2),
                             "p75": us * (1 + spread / 2)} for state, us in states.items()]}

    lines = client.patch_target_lines([case("openai create() default", 1600, 1000, floor=960),
                                       case("LangChain embed_documents", 1600, 1000, floor=900),
                                       case(client.BASE64_KEPT, 980, 1000),
                                       case("LlamaIndex get_text_embedding_batch", 1200, 1000, floor=500)])
    text = "\n".join(lines)
    assert "openai create() default 64x3072: patch off / on = 1.60; the target >= 2 is out of reach here " \
           "(off / floor = 1.67): on / floor = 1.04 (target <= 1.1)  met" in text
    assert "LangChain embed_documents 64x3072: patch off / on = 1.60 (target >= 1.5)  met; off / floor = 1.78" in text
    assert f"{client.BASE64_KEPT} 64x3072: patch off / on = 0.98 (target >= 1, less the rows' spread 4%, at most 5%: " \
           ">= 0.96)  met" in text
    assert "LlamaIndex get_text_embedding_batch 64x3072: patch off / on = 1.20 (target >= 1.5)  NOT met" in text
    assert "NOT met" not in text.replace("LlamaIndex get_text_embedding_batch 64x3072: patch off / on = 1.20 "
                                         "(target >= 1.5)  NOT met", "")
    for spread, on, met in ((0.33, 1500, False), (0.33, 1040, True), (0.33, 1060, False), (0.02, 1050, False)):
        line = client.patch_target_lines([case(client.BASE64_KEPT, 1000, on, spread=spread)])[0]
        assert line.endswith("load 0.5-0.6") and ("NOT met" not in line) == met, line


def test_a_route_not_timed_names_the_library_that_is_missing(monkeypatch):
    """LiteLLM missing is said as LiteLLM missing, not as a module LiteLLM's bench imports after it."""
    pytest.importorskip("openai")
    from tensorb64._bench import client

    monkeypatch.setitem(sys.modules, "litellm", None)
    monkeypatch.setitem(sys.modules, "httpx", None)
    monkeypatch.setitem(sys.modules, "langchain_openai", None)
    import openai

    x = client.np.zeros((2, 4), client.np.float32)
    calls, skipped = client._library_calls({"openai": openai}, x, {"base64": b"", "float": b""})
    assert "litellm.embedding() not timed: LiteLLM is not installed (litellm)" in skipped
    assert "LangChain embed_documents not timed: LangChain's openai package is not installed (langchain_openai)" in skipped
    assert not any("httpx" in reason for reason in skipped) and "litellm.embedding() default" not in calls
    error = ImportError("No module named 'jiter'", name="jiter")
    assert client.not_timed("r", "LiteLLM", "litellm", error) == \
        "r not timed: LiteLLM is installed, but importing it failed (No module named 'jiter')"


def test_the_usage_lists_every_section_from_the_runners_table():
    from tensorb64._bench import runner

    out = run_cli("--help")
    for name, (module, what) in runner.SECTIONS.items():
        assert f"{name:<8}{what}" in out and importlib.util.find_spec(f"tensorb64._bench.{module}") is not None
    assert f"--section all|{'|'.join(runner.SECTIONS)}" in out
