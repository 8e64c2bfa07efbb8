"""The binding's input hook: what its entry points hand back for an input they cannot read.

The binding's reader (bindings/reader.cpp) reads numpy arrays, float buffers and plain CPU torch
tensors where they lie. For any other input an entry point hands its whole call to ``fallback``
(registered once, below), which has it classified once (``inputs.readable``): a tensor on a device
comes back with its route (the CUDA room's decision), and goes to the staging pipeline of that
entry point where it has one (_cuda/route.py), else to one host copy; anything else comes back
converted; and the entry point is called again with the result. (torch's tensor type is registered with the reader by
``_hosts.torch_tensors``.)
"""

from __future__ import annotations

from .. import _native
from .._cuda import route as cuda
from .inputs import readable

# The entry points whose tensors on a device the staging pipeline takes; the others read one host
# copy.
_STAGED = {"encode_rows": cuda.Route.encode_rows, "json_rows": cuda.Route.json_rows}


def fallback(entry: str, x, *args, **kwargs):
    """The result of ``_native.<entry>(x, *args, **kwargs)`` for an ``x`` the reader cannot read
    in place (its other arguments already checked)."""
    x = readable(x)
    if isinstance(x, cuda.OnDevice):  # (its route decided by readable, once)
        staged = _STAGED.get(entry)
        if staged is not None:
            return staged(x.route, x.tensor, *args, **kwargs)
        x = x.route.host_copy(x.tensor)
    return getattr(_native, entry)(x, *args, **kwargs)


def install() -> None:
    """Registers the hook with the binding (once, at import)."""
    _native._set_fallback(fallback)
