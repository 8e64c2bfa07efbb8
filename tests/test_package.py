"""The installed package: the native extension is what loaded, and SIMD levels are reported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import tensorb64
from tensorb64 import _native


def test_native_extension_is_loaded_from_the_package():
    path = Path(_native.__file__)
    assert path.suffix in (".so", ".pyd")
    assert path.parent == Path(tensorb64.__file__).parent
    assert tensorb64.__version__ == _native.__version__


def test_simd_levels():
    levels = tensorb64.available_simd_levels()
    assert levels[0] == "scalar"
    assert tensorb64.simd_level() in levels
    assert set(levels) <= {"scalar", "avx2", "avx512", "neon"}


def run_with_env(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )


def test_best_level_is_chosen_by_default():
    result = run_with_env("import tensorb64; print(tensorb64.simd_level())", TENSORB64_SIMD="")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == tensorb64.available_simd_levels()[-1]


@pytest.mark.parametrize("level", tensorb64.available_simd_levels())
def test_environment_variable_forces_a_level(level):
    result = run_with_env("import tensorb64; print(tensorb64.simd_level())", TENSORB64_SIMD=level)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == level


@pytest.mark.parametrize(
    ("level", "error"),
    [
        ("sse9", "is not a known SIMD level (known: scalar, avx2, avx512, neon; available on this CPU: scalar"),
        ("AVX2", "is not a known SIMD level (known: scalar, avx2, avx512, neon; available on this CPU: scalar"),
        # A level this CPU lacks: neon on x86-64, an x86 level on aarch64.
        (next(lv for lv in ("neon", "avx512", "avx2") if lv not in tensorb64.available_simd_levels()),
         "is not a SIMD level this CPU can run; available: scalar"),
    ],
)
def test_unknown_or_unavailable_level_is_a_clear_import_error(level, error):
    if level in tensorb64.available_simd_levels():
        pytest.fail(f"{level} is available here, so it cannot test the unavailable case")
    result = run_with_env("import tensorb64", TENSORB64_SIMD=level)
    assert result.returncode != 0
    assert f"TENSORB64_SIMD={level} {error}" in result.stderr
    assert "Illegal instruction" not in result.stderr


def test_set_simd_level_refuses_unavailable_levels():
    with pytest.raises(ValueError, match="unknown SIMD level 'sse9'"):
        _native._set_simd_level("sse9")
    missing = [lv for lv in ("avx2", "avx512", "neon") if lv not in tensorb64.available_simd_levels()]
    for level in missing:
        with pytest.raises(ValueError, match=f"'{level}' is not available on this CPU; available: scalar"):
            _native._set_simd_level(level)


def test_torch_is_optional():
    code = "import sys; sys.modules['torch'] = None; import tensorb64, numpy; print(tensorb64.encode(numpy.ones(1, 'f4')))"
    result = run_with_env(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "AACAPw=="


@pytest.mark.cuda
def test_cuda_tensors_encode_like_their_cpu_copies():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device on this machine")
    from tests.support.oracles import struct_reference

    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        t = torch.randn(8, 384, device="cuda").to(dtype)
        view = t[:, :100]
        assert tensorb64.encode_rows(view) == [struct_reference(r.float().cpu().tolist()) for r in view]
        assert tensorb64.encode(t, dtype="float16") == tensorb64.encode(t.cpu(), dtype="float16")


def test_type_stub_names_what_the_extension_defines():
    import ast
    import inspect

    stub = ast.parse((Path(tensorb64.__file__).parent / "_native.pyi").read_text())
    stubbed = {
        f.name: [a.arg for a in f.args.posonlyargs + f.args.args + f.args.kwonlyargs]
        for f in stub.body
        if isinstance(f, ast.FunctionDef)
    }
    stubbed_classes = {c.name for c in stub.body if isinstance(c, ast.ClassDef)}
    public = {name: getattr(_native, name) for name in dir(_native) if not name.startswith("__")}
    assert set(stubbed) == {name for name, value in public.items() if callable(value) and not isinstance(value, type)}
    assert stubbed_classes == {name for name, value in public.items() if isinstance(value, type)}
    for name, parameters in stubbed.items():
        assert list(inspect.signature(getattr(_native, name)).parameters) == parameters, name


def test_public_names_exist():
    from tensorb64 import openai

    for module in (tensorb64, openai):
        for name in module.__all__:
            assert hasattr(module, name), (module.__name__, name)
