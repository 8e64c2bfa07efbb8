"""Turning what callers pass (tensors, arrays, buffers, lists) into arrays the core can read.

The result is a numpy array (often a zero-copy view of the caller's memory) plus the core's
name for its element type and the order of its bytes. Nothing is copied or converted that the
core can read as it is: float32, float16, bfloat16 and float64 of either byte order and any
strides go to the core untouched, and the core converts them in its one pass. A CPU tensor of
those types skips even the numpy view (`tensor_source_dtype`).
"""

from __future__ import annotations

import sys

import numpy as np

from ._formats import OUTPUT_DTYPES, numpy_byteorder, widen_to_float32

# numpy dtypes the core reads directly, by kind and size.
_CORE_FLOATS = {2: "float16", 4: "float32", 8: "float64"}
# Extension dtypes (ml_dtypes) with the bits of a core type: their storage type and core name.
EXTENSION_DTYPE_STORAGE = {
    "bfloat16": (np.uint16, "bfloat16"),
    "float8_e4m3fn": (np.uint8, "float8_e4m3fn"),
    "float8_e5m2": (np.uint8, "float8_e5m2"),
}
# float8 inputs are encoded as they are when the output has their type; otherwise the core
# (which widens only float16, bfloat16 and float64) gets them as float32, widened as torch does.
_FLOAT8_OUTPUT_NAMES = {core: name for name, core in OUTPUT_DTYPES.items() if core.startswith("float8")}

ACCEPTED = (
    "a torch.Tensor, a numpy array, an object with a float buffer (memoryview, array.array), "
    "or a list/tuple of numbers"
)


def torch_if_imported():
    """The torch module if it has been imported: a tensor can only exist if it has."""
    return sys.modules.get("torch")


_TORCH_CORE_DTYPES: dict = {}


def tensor_source_dtype(x):
    """The core dtype name of a CPU tensor the core may read where it lies (float32, float16,
    bfloat16 or float64, strided); None for anything else, which takes the general path.

    This is the hot path of a worker answering single requests: a few attribute reads, no numpy
    view. The binding reads the shape, strides and storage itself, and sends back to the general
    path what it cannot read in place (a negative-bit view, a nested tensor).
    """
    torch = sys.modules.get("torch")
    if torch is None or type(x) is not torch.Tensor or not x.is_cpu or x.layout is not torch.strided:
        return None
    if not _TORCH_CORE_DTYPES:
        _TORCH_CORE_DTYPES.update(
            {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float64: "float64"}
        )
    return _TORCH_CORE_DTYPES.get(x.dtype)


def as_numeric(x):
    """`x` itself if it is a torch.Tensor or a numpy array; otherwise a numpy array of its numbers
    (a view of a float buffer, or a new array of a list or tuple). TypeError or ValueError naming
    what is accepted for anything else."""
    torch = torch_if_imported()
    if (torch is not None and isinstance(x, torch.Tensor)) or isinstance(x, np.ndarray):
        return x
    if isinstance(x, (list, tuple)):
        try:
            a = np.array(x)
        except ValueError as e:
            raise ValueError(f"rows of unequal length (ragged nested lists) cannot be encoded: {e}") from None
        if a.dtype.kind not in "fiub":
            raise TypeError(f"a list or tuple must hold only numbers (or lists of numbers), found {a.dtype} content")
        return a
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
    return np.asarray(x)


def _from_tensor(t, torch):
    """A numpy view of a tensor's memory, its core dtype name and its byte order."""
    if t.layout != torch.strided or t.is_nested:
        kind = "nested" if t.is_nested else f"layout {t.layout}"
        raise TypeError(f"sparse, nested and other non-strided tensors are not supported ({kind}); pass a dense tensor")
    if t.device.type != "cpu":
        if t.device.type == "meta":
            raise ValueError("a tensor on the 'meta' device has no data to encode")
        # Cross the bus in the tensor's own dtype: a bf16 tensor moves half the bytes of float32.
        t = t.cpu()
    dtype = t.dtype
    if dtype.is_complex:
        raise TypeError(f"complex tensors are not supported ({dtype}); pass the real part or a real dtype")
    # A negative-bit view (x.conj().imag) stores its values negated: materialise them.
    t = t.detach().resolve_neg()
    if dtype in (torch.float32, torch.float16, torch.float64):
        return t.numpy(), _CORE_FLOATS[t.element_size()], sys.byteorder
    if dtype == torch.bfloat16:
        return t.view(torch.uint16).numpy(), "bfloat16", sys.byteorder
    if dtype == torch.float8_e4m3fn or dtype == torch.float8_e5m2:
        return t.view(torch.uint8).numpy(), str(dtype)[len("torch.") :], sys.byteorder
    # Integers, bool and the other float8 variants: exactly as tensor.to(torch.float32).
    return t.to(torch.float32).numpy(), "float32", sys.byteorder


def _from_array(a: np.ndarray):
    """A numpy array's core dtype name and byte order, converting only what the core cannot read."""
    dt = a.dtype
    kind = dt.kind
    if kind == "f" and dt.itemsize in _CORE_FLOATS:
        return a, _CORE_FLOATS[dt.itemsize], numpy_byteorder(dt)
    if dt.name in EXTENSION_DTYPE_STORAGE:
        storage, core = EXTENSION_DTYPE_STORAGE[dt.name]
        return a.view(storage), core, sys.byteorder
    if kind in "iub" or kind == "f":  # integers, bool, long double: converted as torch would
        return a.astype(np.float32), "float32", sys.byteorder
    if kind == "c":
        raise TypeError(f"complex arrays are not supported ({dt}); pass the real part or a real dtype")
    if dt.fields is not None:
        raise TypeError(f"structured arrays are not supported ({dt}); pass one numeric field")
    raise TypeError(f"arrays of dtype {dt} are not supported; expected floats, integers or bool")


def as_core_array(x, dtype: str):
    """(array, core dtype name, byte order) of any accepted input, ready to be encoded as the
    output `dtype`; TypeError/ValueError naming what is accepted otherwise."""
    x = as_numeric(x)
    torch = torch_if_imported()
    if torch is not None and isinstance(x, torch.Tensor):
        array, source, order = _from_tensor(x, torch)
    else:
        array, source, order = _from_array(x)
    if source in _FLOAT8_OUTPUT_NAMES and _FLOAT8_OUTPUT_NAMES[source] != dtype:
        return widen_to_float32(array, _FLOAT8_OUTPUT_NAMES[source]), "float32", sys.byteorder
    return array, source, order
