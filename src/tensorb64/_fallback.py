"""What the binding cannot do alone: the one fallback hook, and torch's registration.

The binding's reader (bindings/reader.cpp) reads numpy arrays, float buffers and plain CPU torch
tensors where they lie. For any other input an entry point hands its whole call to ``fallback``
(registered once, below): an input ``_cuda.route`` does not read on the host goes to the staging
pipeline of that entry point where it has one (_cuda.py); anything else is converted once
(``_inputs.readable``, which copies other CUDA inputs to the host) and the entry point is called
again with the result.

The reader learns torch's tensor type and dtypes when torch is loaded: at once if it already is,
otherwise as soon as ``import torch`` has run (``_import_hooks.after_import``). torch is never
imported by tensorb64.
"""

from __future__ import annotations

from . import _cuda, _native
from ._import_hooks import after_import
from ._inputs import readable

# The entry points whose CUDA inputs the staging pipeline takes (others get one host copy).
_STAGED = {"encode_rows": _cuda.encode_rows, "json_rows": _cuda.json_rows}


def fallback(entry: str, x, *args, **kwargs):
    """The result of ``_native.<entry>(x, *args, **kwargs)`` for an ``x`` the reader cannot read
    in place (its other arguments already checked)."""
    staged = _STAGED.get(entry)
    if staged is not None and _cuda.route(x) != "host":
        return staged(x, *args, **kwargs)
    return getattr(_native, entry)(readable(x), *args, **kwargs)


def register_torch(torch) -> bool:
    """Has the reader read ``torch.Tensor`` in place; True where through torch's DLPack exchange
    API (recent torch; 2.13 has it), which gives a tensor's layout in one C call."""
    return _native._register_tensor_type(torch.Tensor, torch, getattr(torch.Tensor, "__dlpack_c_exchange_api__", None))


def install() -> None:
    """Registers the fallback, and torch now or when it is imported (once, at import)."""
    _native._set_fallback(fallback)
    after_import("torch", register_torch)
