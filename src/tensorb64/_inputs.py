"""Turning what callers pass (tensors, arrays, buffers, lists) into arrays the core can read.

The result is a numpy array (often a zero-copy view of the caller's memory) plus the core's
name for its element type and the order of its bytes. Nothing is copied or converted that the
core can read as it is: float32, float16, bfloat16 and float64 of either byte order and any
strides go to the core untouched, and the core converts them in its one pass.
"""

from __future__ import annotations

import sys

import numpy as np

from ._formats import numpy_byteorder, widen_to_float32

# numpy dtypes the core reads directly, by kind and size.
_CORE_FLOATS = {2: "float16", 4: "float32", 8: "float64"}
# Extension dtypes (ml_dtypes) with the same bits as a core type, by name.
_BITS_AS = {"bfloat16": (np.uint16, "bfloat16"), "float8_e4m3fn": (np.uint8, "float8_e4m3fn"), "float8_e5m2": (np.uint8, "float8_e5m2")}

ACCEPTED = (
    "a torch.Tensor, a numpy array, an object with a float buffer (memoryview, array.array), "
    "or a list/tuple of numbers"
)


def _torch():
    """The torch module if it has been imported (a tensor can only exist if it has)."""
    return sys.modules.get("torch")


def _from_tensor(t, torch):
    """A numpy view of a tensor's memory, its core dtype name and its byte order."""
    if t.layout != torch.strided:
        raise TypeError(f"sparse and other non-strided tensors are not supported (layout {t.layout}); call .to_dense() first")
    if t.device.type != "cpu":
        if t.device.type == "meta":
            raise ValueError("a tensor on the 'meta' device has no data to encode")
        # Cross the bus in the tensor's own dtype: a bf16 tensor moves half the bytes of float32.
        t = t.cpu()
    if t.requires_grad:
        t = t.detach()
    dtype = t.dtype
    if dtype in (torch.float32, torch.float16, torch.float64):
        return t.numpy(), _CORE_FLOATS[t.element_size()], sys.byteorder
    if dtype == torch.bfloat16:
        return t.view(torch.uint16).numpy(), "bfloat16", sys.byteorder
    if dtype == torch.float8_e4m3fn or dtype == torch.float8_e5m2:
        return t.view(torch.uint8).numpy(), str(dtype)[len("torch."):], sys.byteorder
    if dtype.is_complex:
        raise TypeError(f"complex tensors are not supported ({dtype}); pass the real part or a real dtype")
    # Integers, bool and the other float8 variants: exactly as tensor.to(torch.float32).
    return t.to(torch.float32).numpy(), "float32", sys.byteorder


def _from_array(a: np.ndarray):
    """The core dtype name and byte order of a numpy array, converting only what it cannot read."""
    dt = a.dtype
    kind = dt.kind
    if kind == "f" and dt.itemsize in _CORE_FLOATS:
        return a, _CORE_FLOATS[dt.itemsize], numpy_byteorder(dt)
    if dt.name in _BITS_AS:
        storage, core = _BITS_AS[dt.name]
        return a.view(storage), core, sys.byteorder
    if kind in "iub" or kind == "f":  # integers, bool, long double: converted as torch would
        return a.astype(np.float32), "float32", sys.byteorder
    if kind == "c":
        raise TypeError(f"complex arrays are not supported ({dt}); pass the real part or a real dtype")
    if dt.fields is not None:
        raise TypeError(f"structured arrays are not supported ({dt}); pass one numeric field")
    raise TypeError(f"arrays of dtype {dt} are not supported; expected floats, integers or bool")


def _from_sequence(x) -> np.ndarray:
    """A numeric array of a (nested) list or tuple of numbers."""
    try:
        a = np.array(x)
    except ValueError as e:
        raise ValueError(f"rows of unequal length (ragged nested lists) cannot be encoded: {e}") from None
    if a.dtype.kind not in "fiub":
        raise TypeError(f"a list or tuple must hold only numbers (or lists of numbers), found {a.dtype} content")
    return a


# float8 inputs are encoded as they are when the output has their type; otherwise the core
# (which widens only float16, bfloat16 and float64) gets them as float32, widened as torch does.
_FLOAT8_OUTPUT_NAMES = {"float8_e4m3fn": "fp8_e4m3", "float8_e5m2": "fp8_e5m2"}


def as_core_array(x, dtype: str):
    """(array, core dtype name, byte order) of any accepted input, ready to be encoded as the
    output `dtype`; TypeError/ValueError naming what is accepted otherwise."""
    array, source, order = _as_array(x)
    if source in _FLOAT8_OUTPUT_NAMES and _FLOAT8_OUTPUT_NAMES[source] != dtype:
        return widen_to_float32(array, _FLOAT8_OUTPUT_NAMES[source]), "float32", sys.byteorder
    return array, source, order


_TORCH_CORE_DTYPES: dict = {}


def tensor_source_dtype(x):
    """The core dtype name of a CPU tensor the core can read where it lies (float32, float16,
    bfloat16 or float64, strided); None for anything else, which takes the general path.

    This is the hot path of a worker answering single requests: a few attribute reads, no numpy
    view (the binding reads the tensor's shape, strides and storage itself).
    """
    torch = sys.modules.get("torch")
    if torch is None or type(x) is not torch.Tensor or not x.is_cpu or x.layout is not torch.strided:
        return None
    if not _TORCH_CORE_DTYPES:
        _TORCH_CORE_DTYPES.update(
            {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float64: "float64"}
        )
    return _TORCH_CORE_DTYPES.get(x.dtype)


def _as_array(x):
    torch = _torch()
    if torch is not None and isinstance(x, torch.Tensor):
        return _from_tensor(x, torch)
    if isinstance(x, np.ndarray):
        return _from_array(x)
    if isinstance(x, (list, tuple)):
        return _from_array(_from_sequence(x))
    if isinstance(x, (str, bytes, bytearray)):
        raise TypeError(
            f"{type(x).__name__} is not an array of numbers; expected {ACCEPTED}"
            + (" (for raw float32 bytes use numpy.frombuffer(data, '<f4'))" if not isinstance(x, str) else "")
        )
    try:
        view = memoryview(x)
    except TypeError:
        raise TypeError(f"cannot encode an object of type {type(x).__name__}; expected {ACCEPTED}") from None
    with view:
        if view.format.lstrip("@=<>!") not in ("f", "d", "e"):
            raise TypeError(f"a buffer must hold floats (format 'f', 'd' or 'e'), not format {view.format!r}")
        return _from_array(np.asarray(x))
