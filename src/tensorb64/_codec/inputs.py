"""What the binding's reader cannot read in place: converted once, explicitly, or refused.

The binding (bindings/reader.cpp, `read_input`) reads numpy arrays (ml_dtypes' bfloat16 and
float8 included), float buffers and plain CPU torch tensors where they lie, checked against their
owner's bounds. Everything else comes here (through the binding's input hook, input_hook.py), to
`readable(x)`, which returns an object the binding can read (a numpy array, a buffer or a plain
CPU tensor), or a tensor on a device with its route (``_cuda.route.OnDevice``: the CUDA room's
decision, asked for here, once), or raises the TypeError / ValueError that names what was wrong
and what is accepted. ``entered(x)`` is the same classification for the entry points written in
Python (``body.batch_rows``, ``encode.encode_binary_body``): a tensor's route decided once, where
the input enters, and passed down with it.
"""

from __future__ import annotations

import functools
import sys

import numpy as np

from .._cuda import route as cuda
from .._formats import ELEMENT_TYPES

ACCEPTED = (
    "a torch.Tensor, a numpy array, an object with a float buffer (memoryview, array.array), "
    "or a list/tuple of numbers"
)
_NUMBER_KINDS = "fiub"


def entered(x) -> tuple:
    """``(x, route)`` where an entry point written in Python takes ``x``: for a torch tensor, the
    plain tensor (a subclass read through ``readable``) and its route (None: read on the host),
    decided here, once; anything else as it is, with None (the binding reads it, or hands it to
    the input hook)."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(x, torch.Tensor):
        return x, None
    if type(x) is torch.Tensor:
        return x, cuda.route(x)
    x = readable(x)
    return (x.tensor, x.route) if isinstance(x, cuda.OnDevice) else (x, None)


def readable(x):
    """An object the binding reads in place, with the values of any accepted input; or, for a
    tensor on a device, that tensor with its route (``cuda.OnDevice``)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return _readable_tensor(x, torch)
    if isinstance(x, np.ndarray):
        return _readable_array(x)
    if isinstance(x, (list, tuple)):
        if x and torch is not None and all(isinstance(item, torch.Tensor) for item in x):
            try:  # rows of tensors: one batch (stacked where they are when they share a device)
                rows = cuda.stacked(x)
            except RuntimeError as e:
                raise ValueError(f"a list of tensors must hold rows of one shape: {e}") from None
            return readable(rows)
        return _readable_array(_array_of_numbers(x, torch))
    if isinstance(x, (str, bytes, bytearray)):
        hint = "" if isinstance(x, str) else " (for raw float32 bytes use numpy.frombuffer(data, '<f4'))"
        raise TypeError(f"{type(x).__name__} is not an array of numbers; expected {ACCEPTED}{hint}")
    try:
        view = memoryview(x)
    except TypeError:
        raise TypeError(f"cannot encode an object of type {type(x).__name__}; expected {ACCEPTED}") from None
    with view:
        raise TypeError(f"a buffer must hold floats (format 'e', 'f' or 'd'), not format {view.format!r}; "
                        "for other numbers pass a numpy array")


# Tensor types that stand for a tensor without holding its data (torch.compile's tracing).
_NO_MEMORY_TENSOR_TYPES = frozenset({"FakeTensor", "FunctionalTensor"})


@functools.cache
def _read_in_place(torch) -> frozenset:
    """The torch dtypes the binding reads in place: those of its table that this torch has
    (uint16/32/64 exist from torch 2.3 on). Made once: every call on a device asks (4 µs of
    getattr a call, a third of the small CUDA call's Python)."""
    return frozenset(getattr(torch, e.torch_name) for e in ELEMENT_TYPES if hasattr(torch, e.torch_name))


def _readable_tensor(t, torch):
    """A plain CPU tensor with the values of `t`, converted only where the binding cannot read it."""
    if type(t).__name__ in _NO_MEMORY_TENSOR_TYPES:
        raise TypeError(f"a {type(t).__name__} cannot be encoded: it has no memory to read (it only traces "
                        "shapes and dtypes); pass a real tensor")
    if type(t) is not torch.Tensor:
        # A subclass's methods may say anything (a __torch_function__ can change dtype or
        # strides): read the plain tensor over the same storage, with torch functions disabled.
        with torch._C.DisableTorchFunctionSubclass():
            t = torch.Tensor.as_subclass(t, torch.Tensor)
    if t.layout != torch.strided or t.is_nested:
        kind = "nested" if t.is_nested else f"layout {t.layout}"
        raise TypeError(f"sparse, nested and other non-strided tensors are not supported ({kind}); pass a dense tensor")
    if t.device.type == "meta":
        raise ValueError("a tensor on the 'meta' device has no data to encode")
    dtype = t.dtype
    if dtype.is_complex:
        raise TypeError(f"complex tensors are not supported ({dtype}); pass the real part or a real dtype")
    if dtype not in _read_in_place(torch):
        unsupported = TypeError(f"tensors of dtype {dtype} are not supported; expected a floating point, integer "
                                "or bool dtype that torch can convert to float32")
        if not dtype.is_floating_point:
            raise unsupported
        try:  # other float8 variants: exactly as tensor.to(torch.float32)
            t = t.to(torch.float32)
        except (RuntimeError, NotImplementedError):  # float4_e2m1fn_x2 and the like: no conversion
            raise unsupported from None
    try:
        t.untyped_storage()
        t.data_ptr()
    except (RuntimeError, NotImplementedError) as e:
        raise TypeError(f"this tensor has no memory to read ({e}): FakeTensors, functional and vmap tensors "
                        "cannot be encoded; pass a real tensor") from None
    # A tensor on a device: the CUDA room's decision, carried on (it crosses the bus in its own
    # dtype: a bf16 tensor moves half the bytes of float32).
    route = cuda.route(t)
    if route is not None:
        return cuda.OnDevice(t, route)
    return t.resolve_neg() if t.is_neg() else t  # (a negative-bit view, x.conj().imag, stores its values negated)


def _readable_array(a: np.ndarray):
    """A numpy array the binding reads (it reads ml_dtypes' types itself)."""
    dt = a.dtype
    if dt.kind == "f":  # long double (and any other width): exactly as torch would take float32
        return a.astype(np.float32)
    if dt.kind == "c":
        raise TypeError(f"complex arrays are not supported ({dt}); pass the real part or a real dtype")
    if dt.fields is not None:
        raise TypeError(f"structured arrays are not supported ({dt}); pass one numeric field")
    if dt.kind in "iub":
        return a  # a numpy scalar type the buffer protocol could not export (e.g. a subclass)
    raise TypeError(f"arrays of dtype {dt} are not supported; expected floats, integers or bool")


def _array_of_numbers(x, torch):
    """A numpy array of a (nested) list or tuple of numbers; TypeError naming the first item that
    is not a number, ValueError for ragged rows."""
    if len(x) == 0:
        return np.empty((0, 0), dtype=np.float32)  # an empty batch: no rows (as torch.empty(0, d))
    try:
        a = np.array(x)
    except (ValueError, TypeError) as e:
        raise ValueError(f"rows of unequal length (ragged nested lists) cannot be encoded: {e}") from None
    if a.dtype.kind not in _NUMBER_KINDS:
        bad = _first_non_number(x)
        if bad is _ALL_NUMBERS:  # ints beyond int64 (2**64): numbers all the same
            return np.array(x, dtype=np.float64)
        raise TypeError(f"a list or tuple must hold only numbers (or lists of numbers), found {bad!r} "
                        f"of type {type(bad).__name__}")
    return a


_ALL_NUMBERS = object()


def _first_non_number(x):
    """The first item of a nested list that is not a number, or _ALL_NUMBERS."""
    for item in x:
        if isinstance(item, (list, tuple)):
            bad = _first_non_number(item)
            if bad is not _ALL_NUMBERS:
                return bad
        elif not isinstance(item, (bool, int, float, np.number, np.bool_)):
            return item
    return _ALL_NUMBERS

