"""Hostile inputs: objects that fail or lie while being read, subclasses, tensors with no data or
no strided layout, odd views of memory, and the private raw-address entry point fed addresses
that do not match the storage they claim. Each must be a clear TypeError/ValueError (or the
caller's own exception, propagated unchanged) or exactly the right bytes; never a crash.

Cases that could kill the interpreter if the guard they test were missing run in a subprocess,
so a regression shows as a failed test naming the signal instead of a dead pytest run.
"""

from __future__ import annotations

import array
import base64
import ctypes
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import tensorb64

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.usefixtures("each_simd_level")


def reference(values) -> str:
    """base64 of the values as little-endian float32: the bytes tensorb64 must produce."""
    return base64.b64encode(np.asarray(values, "<f4").tobytes()).decode()


def run_isolated(code: str) -> str:
    """Runs `code` in a fresh interpreter; fails the test (naming the signal) if it crashes."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, (
        f"subprocess exited with {proc.returncode}"
        + (f" (signal {-proc.returncode})" if proc.returncode < 0 else "")
        + f"\nstdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-4000:]}"
    )
    return proc.stdout


# ---- objects whose conversion to numbers fails -------------------------------------------------


class FloatRaises:
    def __float__(self):
        raise RuntimeError("__float__ refused")


class IndexRaises:
    def __index__(self):
        raise RuntimeError("__index__ refused")

    def __float__(self):
        raise RuntimeError("__float__ refused")


class LenRaises(list):
    def __len__(self):
        raise RuntimeError("__len__ refused")


class ArrayRaises:
    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("__array__ refused")


class ArrayLies:
    """Claims to be an array of floats but hands back strings."""

    def __array__(self, dtype=None, copy=None):
        return np.array(["1.0", "2.0"])


class LenLies(list):
    """A list whose __len__ disagrees with its contents."""

    def __len__(self):
        return 1000


@pytest.mark.parametrize(
    "bad",
    [
        [1.0, FloatRaises()],
        [FloatRaises()],
        [[1.0, 2.0], [3.0, FloatRaises()]],
        (IndexRaises(), 2.0),
        LenRaises([1.0, 2.0]),
        [ArrayRaises()],
        [1.0, ArrayLies()],
    ],
    ids=["float-raises", "only-float-raises", "nested-float-raises", "index-raises", "len-raises", "array-raises-in-list", "array-lies-in-list"],
)
def test_failing_conversions_are_clean_errors(bad):
    # Either our TypeError/ValueError or the object's own exception, propagated unchanged.
    for call in (tensorb64.encode, tensorb64.encode_rows):
        with pytest.raises((TypeError, ValueError, RuntimeError)) as info:
            call(bad)
        if isinstance(info.value, RuntimeError):
            assert "refused" in str(info.value)


def test_len_that_lies_gives_the_true_contents():
    # numpy reads the items through the sequence protocol; whatever it sees must encode exactly.
    try:
        text = tensorb64.encode(LenLies([1.0, 2.0]))
    except (TypeError, ValueError, IndexError):
        return
    assert text == reference(np.array(LenLies([1.0, 2.0])))


@pytest.mark.parametrize("bad", [ArrayRaises(), ArrayLies(), object(), iter([1.0])], ids=["array-raises", "array-lies", "object", "iterator"])
def test_objects_without_a_float_buffer(bad):
    with pytest.raises((TypeError, ValueError)):
        tensorb64.encode(bad)


# ---- subclasses give exactly the values they hold -----------------------------------------------


class MyFloat(float):
    pass


class WeirdFloat(float):
    """A float subclass whose __float__ says something else: numpy uses the float value itself."""

    def __float__(self):
        return 99.0


class MyList(list):
    pass


class MyTuple(tuple):
    pass


def test_list_and_float_subclasses():
    values = [MyFloat(1.5), 2.0, MyFloat(-0.0), MyFloat(float("inf"))]
    assert tensorb64.encode(MyList(values)) == reference([1.5, 2.0, -0.0, float("inf")])
    assert tensorb64.encode(MyTuple(values)) == reference([1.5, 2.0, -0.0, float("inf")])
    rows = MyList([MyList([MyFloat(1.0), 2.0]), MyTuple((3.0, MyFloat(4.0)))])
    assert tensorb64.encode_rows(rows) == [reference([1.0, 2.0]), reference([3.0, 4.0])]
    # Whatever numpy makes of a float subclass is what we encode: same bits as np.asarray.
    odd = [WeirdFloat(1.0), 2.0]
    assert tensorb64.encode(odd) == reference(np.asarray(odd, "<f4"))


class MyArray(np.ndarray):
    pass


def test_ndarray_subclass():
    a = np.arange(12, dtype="<f4").reshape(3, 4).view(MyArray)
    assert tensorb64.encode_rows(a) == [reference(r) for r in np.asarray(a)]
    assert tensorb64.encode(a[:, ::-2]) == reference(np.asarray(a)[:, ::-2].ravel())


class MyTensor(torch.Tensor):
    pass


def test_tensor_subclass():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4).as_subclass(MyTensor)
    plain = t.as_subclass(torch.Tensor)
    assert tensorb64.encode_rows(t) == [reference(r.numpy()) for r in plain]
    assert tensorb64.encode(t) == reference(plain.numpy().ravel())


# ---- buffers ------------------------------------------------------------------------------------


def test_buffer_export_failure():
    class NoBuffer:
        def __buffer__(self, flags):  # used by Python 3.12+; 3.11 ignores it (no buffer at all)
            raise BufferError("no buffer for you")

    with pytest.raises((TypeError, ValueError, BufferError)):
        tensorb64.encode(NoBuffer())
    with pytest.raises((TypeError, ValueError, BufferError)):
        tensorb64.encode_rows([NoBuffer()])


def test_released_memoryview():
    view = memoryview(np.arange(4, dtype="<f4"))
    view.release()
    with pytest.raises((TypeError, ValueError)):
        tensorb64.encode(view)
    with pytest.raises((TypeError, ValueError)):
        tensorb64.encode_rows(view)


def test_ctypes_and_array_buffers():
    floats = (ctypes.c_float * 5)(1.0, 2.0, 3.0, -4.5, 1e30)
    assert tensorb64.encode(floats) == reference([1.0, 2.0, 3.0, -4.5, 1e30])
    doubles = array.array("d", [1.0, 1e300, -2.5])
    assert tensorb64.encode(doubles) == reference([1.0, float("inf"), -2.5])  # cast as torch does
    # A strided memoryview straight to the binding: its strides are honoured.
    base = np.arange(10, dtype="<f4")
    view = memoryview(base)[::-3]
    assert tensorb64.encode(view) == reference(base[::-3])


# ---- tensors with no data, no strided layout, or autograd ----------------------------------------


def test_meta_tensor():
    for t in (torch.empty(4, device="meta"), torch.empty(2, 3, device="meta", dtype=torch.bfloat16)):
        with pytest.raises(ValueError, match="meta"):
            tensorb64.encode(t)
        with pytest.raises(ValueError, match="meta"):
            tensorb64.encode_rows(t)


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_tensor(layout):
    dense = torch.eye(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "sparse CSR support is in beta"
        sparse = dense.to_sparse() if layout == "coo" else dense.to_sparse_csr()
    with pytest.raises(TypeError, match="sparse"):
        tensorb64.encode(sparse)
    with pytest.raises(TypeError, match="sparse"):
        tensorb64.encode_rows(sparse)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
def test_requires_grad(dtype):
    t = torch.linspace(-3, 3, 12, dtype=getattr(torch, dtype)).reshape(3, 4).requires_grad_(True)
    expected = t.detach().to(torch.float32).numpy()
    assert tensorb64.encode_rows(t) == [reference(r) for r in expected]
    assert tensorb64.encode(t) == reference(expected.ravel())
    # A non-leaf tensor in an autograd graph too.
    y = t * 2
    assert tensorb64.encode_rows(y) == [reference(r) for r in (expected * 2)]


def test_tensor_views():
    base = torch.arange(40, dtype=torch.float32).reshape(5, 8)
    for view in (base.t(), base[::2, 1::3], base.flip(0), base[:, :0], base[:0], base.expand(2, 5, 8)[1], base.unsqueeze(1)[:, 0]):
        expected = view.contiguous().numpy()
        assert tensorb64.encode_rows(view) == [reference(r) for r in expected]
        assert tensorb64.encode(view) == reference(expected.ravel())
    # A zero-strided (broadcast) tensor: every row is the same memory.
    row = torch.tensor([1.0, -2.0, 3.5])
    assert tensorb64.encode_rows(row.expand(4, 3)) == [reference([1.0, -2.0, 3.5])] * 4
    assert tensorb64.encode_rows(torch.tensor(7.0).expand(2, 3)) == [reference([7.0] * 3)] * 2


# ---- numpy arrays with odd strides, flags and sizes ----------------------------------------------


@pytest.mark.parametrize("dtype", ["<f4", ">f4", "<f2", ">f8", "<f8"])
def test_negative_stride_views(dtype):
    a = np.linspace(-1, 1, 60).astype(dtype).reshape(6, 10)
    for view in (a[::-1], a[:, ::-1], a[::-2, ::-3], a[::-1, ::-1].T):
        assert tensorb64.encode_rows(view) == [reference(r.astype("<f4")) for r in view]
        assert tensorb64.encode(view) == reference(view.astype("<f4").ravel())


def test_read_only_array():
    a = np.arange(20, dtype="<f4").reshape(4, 5)
    a.setflags(write=False)
    assert tensorb64.encode_rows(a) == [reference(r) for r in a]
    frozen = np.frombuffer(bytes(np.arange(6, dtype="<f4").data), dtype="<f4")  # read-only memory
    assert tensorb64.encode(frozen) == reference(np.arange(6))


@pytest.mark.parametrize("shape", [(0,), (0, 0), (0, 5), (5, 0), (2, 0, 3), (3, 4, 0)])
def test_zero_size_arrays(shape):
    a = np.zeros(shape, "<f4")
    assert tensorb64.encode(a) == ""
    rows = tensorb64.encode_rows(a)
    expected_rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    assert rows == [""] * expected_rows
    assert tensorb64.encode_rows(torch.zeros(shape)) == rows


def test_broadcast_rows():
    row = np.array([1.0, 2.5, -3.0, 1e-40], "<f4")
    for dtype in ("<f4", ">f4", "<f2", "<f8"):
        b = np.broadcast_to(row.astype(dtype), (5, 4))
        assert b.strides[0] == 0
        assert tensorb64.encode_rows(b) == [reference(row.astype(dtype).astype("<f4"))] * 5
    # Zero stride within a row too: one value read over and over.
    scalar = np.broadcast_to(np.float32(6.25), (3, 7))
    assert tensorb64.encode_rows(scalar) == [reference([6.25] * 7)] * 3


def test_unaligned_array():
    raw = np.zeros(4 * 33 + 1, np.uint8)
    a = raw[1:].view("<f4")  # misaligned by one byte
    a[:] = np.arange(33)
    assert not a.flags.aligned
    assert tensorb64.encode(a) == reference(np.arange(33))
    assert tensorb64.encode_rows(a.reshape(3, 11)) == [reference(r) for r in np.arange(33).reshape(3, 11)]


def test_threads_argument():
    a = np.ones((4, 3), "<f4")
    for bad in (0, -1, 1.0, "2", None, True):
        with pytest.raises((TypeError, ValueError)):
            tensorb64.encode_rows(a, threads=bad)
    for huge in (2**40, 2**64):
        with pytest.raises((TypeError, ValueError, OverflowError)):
            tensorb64.encode_rows(a, threads=huge)
    with pytest.raises(ValueError, match="threads must be an int from 1 to 256"):
        tensorb64.encode_rows(a, threads=2**31)
    assert tensorb64.encode_rows(a, threads=256) == [reference([1.0] * 3)] * 4
    assert tensorb64.encode_rows(a, threads=np.int64(2)) == [reference([1.0] * 3)] * 4


# ---- the in-place tensor path, fed shapes and strides that do not match the storage -----------


def test_tensor_path_refuses_what_reaches_outside_the_storage():
    # Every call is made in a subprocess: a missing bounds check would read outside the storage,
    # perhaps an unmapped page. The storage itself (address and size) is trusted: it comes from
    # torch. TensorLike stands in for tensors torch would refuse to make.
    out = run_isolated(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
        import torch
        import tensorb64
        from tests.support.tensor_like import TensorLike, install
        t = torch.arange(10, dtype=torch.float32)
        install()
        p, n = t.data_ptr(), t.untyped_storage().nbytes()

        def call(address, storage_address, storage_bytes, rows, row_length, row_stride, element_stride,
                 dtype="float32", threads=1):
            fake = TensorLike(address, (rows, row_length), (row_stride, element_stride), storage_address, storage_bytes,
                              dtype=dtype)
            try:
                tensorb64.encode_rows(fake, threads=threads)
            except ValueError as e:
                assert "outside its storage" in str(e), e
                return "refused"
            return "accepted"

        lying = [
            (p + 4, p, n, 1, 10, 0, 1, "float32"),            # one element past the end
            (p - 4, p, n, 1, 1, 0, 1, "float32"),             # before the storage
            (p + n, p, n, 1, 1, 0, 1, "float32"),             # at the end
            (p + 2**63, p, n, 1, 1, 0, 1, "float32"),         # far away
            (p, p, n, 1, 2, 0, -1, "float32"),                # negative stride walks off the front
            (p + 36, p, n, 1, 2, 0, 1, "float32"),            # the last element plus one
            (p, p, n, 2, 10, 1, 1, "float32"),                # rows overlapping past the end
            (p, p, n, 11, 1, 1, 1, "float32"),                # too many rows
            (p + 36, p, n, 2, 1, -10, 1, "float32"),          # negative row stride off the front
            (p, p, n, 2**62, 2**62, 2**62, 1, "float32"),     # reach overflows
            (p, p, n, 2, 2**61, 1, 2**61, "float32"),         # element stride overflows
            (p, p, n, 3, 3, -2**63, 1, "float32"),            # most negative stride
            (p, p, n, 1, 6, 0, 1, "float64"),                 # 48 bytes of float64 in 40
            (p, p, n, 1, 21, 0, 1, "float16"),                # 42 bytes of float16 in 40
            (p, p, 0, 1, 1, 0, 1, "float32"),                 # empty storage
            (p, p + 8, n, 1, 1, 0, 1, "float32"),             # address below the storage
        ]
        for *args, dtype in lying:
            for threads in (1, 4):
                assert call(*args, dtype=dtype, threads=threads) == "refused", args

        honest = [
            (p, p, n, 1, 10, 0, 1),
            (p + 36, p, n, 1, 10, 0, -1),
            (p + 36, p, n, 10, 1, -1, 1),
            (p, p, n, 5, 2, 2, 1),
            (p, p, n, 3, 10, 0, 1),                            # zero row stride
            (p + 4, p, n, 1, 9, 0, 1),
            (p, p, n, 1, 5, 0, 2),
            (12345, 0, 0, 0, 4, 1, 1),                         # no rows: the address is never read
            (12345, 0, 0, 4, 0, 1, 1),                         # empty rows: never read either
        ]
        for args in honest:
            assert call(*args) == "accepted", args
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_tensor_path_results_are_exact():
    out = run_isolated(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
        import torch, tensorb64
        from tests.support.tensor_like import TensorLike, install
        t = torch.arange(10, dtype=torch.float32)
        p, n = t.data_ptr(), t.untyped_storage().nbytes()
        install()
        print(tensorb64.encode_rows(TensorLike(p + 36, (2, 5), (-5, -1), p, n)))
        """
    )
    assert out.strip() == str([reference([9, 8, 7, 6, 5]), reference([4, 3, 2, 1, 0])])


def test_many_zero_length_rows():
    out = tensorb64.encode_rows(np.zeros((2**20, 0), "<f4"))
    assert len(out) == 2**20 and out[0] == "" and out[-1] == ""


def test_too_many_rows_is_a_memory_error():
    # 2**40 rows of nothing: a list of 8 TiB of pointers cannot be made. In a subprocess: in a
    # build with assertions the failure is an abort.
    out = run_isolated(
        """
        import numpy as np, tensorb64
        try:
            tensorb64.encode_rows(np.zeros((2**40, 0), "<f4"))
        except MemoryError:
            print("MemoryError")
        except Exception as e:
            print(type(e).__name__, e)
        """
    )
    assert out.strip() == "MemoryError"
