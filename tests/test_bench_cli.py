"""`python -m tensorb64 info` and `bench` run, print what they promise and write parseable JSON.

No timing is asserted here: performance is measured by benchmarks/bench.py, never by tests.
"""

import importlib.util
import json
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
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("pybase64") is None,
    reason='the benchmark compares against torch and pybase64 paths, which are not installed (pip install "tensorb64[bench]")',
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


@pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("torch", "pybase64", "matplotlib")),
    reason='--plot needs torch, pybase64 and matplotlib, which are not all installed (pip install "tensorb64[bench]")',
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
        rows, body = tensorb64.encode_rows(host, dtype=out), tensorb64.response_body(host, model="m", dtype=out)
        assert _bench_cuda._check(paths, rows, body) == []
        assert _bench_cuda._check(paths, rows[:-1], body) != []  # a wrong output is reported
        cases.append({"input": source, "B": B, "D": D, "output": out, "errors": [],
                      "results": {name: measured for name in paths}})
    report = {"cases": cases, "gpu": {"plain_copy_below": _bench_cuda._cuda.PLAIN_COPY_BELOW},
              "threshold": [{"bytes": 16384, "results": {"pinned staged copy": measured, "t.cpu()": measured}}]}
    text = "\n".join(_bench_cuda.lines(report))
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
