"""The binding's input hook: what its entry points hand back for an input they cannot read.

The binding's reader (bindings/reader.cpp) reads numpy arrays, float buffers and plain CPU torch
tensors where they lie. For any other input an entry point hands its whole call to ``fallback``
(registered once, below): an input ``_cuda.route`` does not read on the host goes to the staging
pipeline of that entry point where it has one (_cuda/route.py); anything else is converted once
(``inputs.readable``, which copies other CUDA inputs to the host) and the entry point is called
again with the result. (torch's tensor type is registered with the reader by
``_hosts.torch_tensors``.)
"""

from __future__ import annotations

from .. import _native
from .._cuda import route as _cuda
from .inputs import readable

# The entry points whose CUDA inputs the staging pipeline takes (others get one host copy).
_STAGED = {"encode_rows": _cuda.encode_rows, "json_rows": _cuda.json_rows}


def fallback(entry: str, x, *args, **kwargs):
    """The result of ``_native.<entry>(x, *args, **kwargs)`` for an ``x`` the reader cannot read
    in place (its other arguments already checked)."""
    staged = _STAGED.get(entry)
    if staged is not None and _cuda.route(x) != "host":
        return staged(x, *args, **kwargs)
    return getattr(_native, entry)(readable(x), *args, **kwargs)


def install() -> None:
    """Registers the hook with the binding (once, at import)."""
    _native._set_fallback(fallback)
