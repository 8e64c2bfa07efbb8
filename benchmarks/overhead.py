"""What tensorb64's Python layer costs above the core call, piece by piece, at 1x384 float32.

    python benchmarks/overhead.py [--profile]

Each piece is timed with timeit on the same objects (statement strings, so no lambda call is
counted), best-of and median of repeats, in µs per execution with the empty-loop cost
subtracted. The pieces follow encode_rows -> as_core_array -> _from_tensor / _from_array in
src/tensorb64/__init__.py and _inputs.py; the sum of pieces should be close to the measured
difference between tensorb64.encode_rows and tensorb64._native.encode_rows.
"""

from __future__ import annotations

import cProfile
import pstats
import statistics
import sys
import timeit

import numpy as np
import torch

import tensorb64
from tensorb64 import _inputs, _native
from tensorb64._formats import byteorder_name, numpy_byteorder, output_dtype

NUMBER = 200_000
REPEAT = 9

t = torch.randn(1, 384)
a = t.numpy()
arr = np.random.default_rng(0).standard_normal((1, 384)).astype(np.float32)
native = _native.encode_rows
ns = dict(globals())
F32 = torch.float32
# as_core_array gained a `target` (output dtype) argument; time whichever this install has.
import inspect

TARGET_ARG = ", 'float32'" if len(inspect.signature(_inputs.as_core_array).parameters) > 1 else ""
ns.update(F32=F32, F16=torch.float16, F64=torch.float64, strided=torch.strided, dtype=t.dtype, CORE=_inputs._CORE_FLOATS,
          F8=getattr(_inputs, "_FLOAT8_OUTPUT_NAMES", {}), _f3=lambda x: (x, 1, 2),
          DT={F32: "float32"}, ST=t.untyped_storage(), _f8=lambda *a: None, at=getattr(_native, "encode_rows_at", None),
          AT_ARGS=_inputs.tensor_in_place(t, flatten=False) if hasattr(_inputs, "tensor_in_place") else None)

PIECES = [
    ("whole: tensorb64.encode_rows(t)", "tensorb64.encode_rows(t)"),
    ("whole: _native.encode_rows(t.numpy() precomputed)", "native(a, 'float32', 'little', 'float32', 'little', 1)"),
    ("whole: tensorb64.encode_rows(ndarray)", "tensorb64.encode_rows(arr)"),
    ("whole: _native.encode_rows(ndarray)", "native(arr, 'float32', 'little', 'float32', 'little', 1)"),
    ("whole: as_core_array(t)", f"_inputs.as_core_array(t{TARGET_ARG})"),
    ("whole: as_core_array(ndarray)", f"_inputs.as_core_array(arr{TARGET_ARG})"),
    ("whole: _native.encode_rows_at(*precomputed args)", "at(*AT_ARGS, 'float32', 'little', 1)"),
    ("whole: tensor_in_place(t, flatten=False)", "_inputs.tensor_in_place(t, flatten=False)"),
    ("encode_rows: type(threads) is not int or threads < 1", "type(1) is not int or 1 < 1"),
    ("encode_rows: array.ndim != 2", "a.ndim != 2"),
    ("encode_rows: output_dtype('float32')", "output_dtype('float32')"),
    ("encode_rows: byteorder_name('little')", "byteorder_name('little')"),
    ("tensor_in_place: type(x) is not torch.Tensor", "type(t) is not torch.Tensor"),
    ("tensor_in_place: x.is_cpu", "t.is_cpu"),
    ("tensor_in_place: x.layout != torch.strided", "t.layout != torch.strided"),
    ("tensor_in_place: _TORCH_CORE_DTYPES.get(x.dtype)", "DT.get(t.dtype)"),
    ("tensor_in_place: x.dim()", "t.dim()"),
    ("tensor_in_place: rows, row_length = x.shape", "_r, _l = t.shape"),
    ("tensor_in_place: row_stride, element_stride = x.stride()", "_r, _l = t.stride()"),
    ("tensor_in_place: storage = x.untyped_storage()", "t.untyped_storage()"),
    ("tensor_in_place: storage.data_ptr()", "ST.data_ptr()"),
    ("tensor_in_place: storage.nbytes()", "ST.nbytes()"),
    ("tensor_in_place: x.data_ptr()", "t.data_ptr()"),
    ("tensor_in_place: build the 8-tuple + *unpack into a call", "_f8(*(1, 2, 3, 4, 5, 6, 7, 'float32'))"),
    ("as_core_array: call + tuple unpack of a Python function (def f(x): return x,1,2)", "_a, _b, _c = _f3(t)"),
    ("as_core_array: sys.modules.get('torch')", "sys.modules.get('torch')"),
    ("as_core_array: source in _FLOAT8_OUTPUT_NAMES and source != target", "'float32' in F8 and 'float32' != 'float32'"),
    ("as_core_array: isinstance(x, torch.Tensor)", "isinstance(t, torch.Tensor)"),
    ("as_core_array: isinstance(x, np.ndarray)", "isinstance(arr, np.ndarray)"),
    ("_from_tensor: t.layout != torch.strided", "t.layout != torch.strided"),
    ("_from_tensor: t.device.type != 'cpu'", "t.device.type != 'cpu'"),
    ("_from_tensor: t.requires_grad", "t.requires_grad"),
    ("_from_tensor: t.dtype", "t.dtype"),
    ("_from_tensor: dtype in (torch.float32, torch.float16, torch.float64)", "dtype in (torch.float32, torch.float16, torch.float64)"),
    ("_from_tensor: t.numpy()", "t.numpy()"),
    ("_from_tensor: t.element_size()", "t.element_size()"),
    ("_from_tensor: _CORE_FLOATS[...] + sys.byteorder", "CORE[4], sys.byteorder"),
    ("_from_array: a.dtype, .kind, .itemsize", "dt = arr.dtype; dt.kind == 'f' and dt.itemsize in CORE"),
    ("_from_array: numpy_byteorder(dt)", "numpy_byteorder(arr.dtype)"),
    ("alternative: t.dtype is torch.float32 (one identity test)", "t.dtype is F32"),
    ("alternative: type(t) is torch.Tensor", "type(t) is torch.Tensor"),
    ("alternative: t.is_cpu", "t.is_cpu"),
    ("alternative: np.asarray(t) (via __array__)", "np.asarray(t)"),
    ("alternative: memoryview(t.numpy())", "memoryview(t.numpy())"),
    ("alternative: t.nbytes (instead of untyped_storage())", "t.nbytes"),
    ("alternative: t.storage_offset()", "t.storage_offset()"),
]


def main() -> None:
    base = timeit.Timer("pass", globals=ns).repeat(REPEAT, NUMBER)
    empty = statistics.median(base) / NUMBER * 1e6
    print(f"tensorb64 {tensorb64.__version__} simd={tensorb64.simd_level()}, torch {torch.__version__}, numpy {np.__version__}; "
          f"µs per execution (empty loop {empty * 1000:.0f} ns subtracted), {REPEAT}x{NUMBER}")
    print(f"{'piece':<72} {'median':>8} {'best':>8}")
    for label, stmt in PIECES:
        try:
            runs = [r / NUMBER * 1e6 - empty for r in timeit.Timer(stmt, globals=ns).repeat(REPEAT, NUMBER)]
        except Exception as e:  # a piece of an older or newer layer than this install has
            print(f"{label:<72} n/a ({type(e).__name__})")
            continue
        print(f"{label:<72} {statistics.median(runs):8.3f} {min(runs):8.3f}")
    if "--profile" in sys.argv:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(100_000):
            tensorb64.encode_rows(t)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
