"""What the binding cannot do alone: the one fallback hook, and torch's registration.

The binding's reader (bindings/reader.cpp) reads numpy arrays, float buffers and plain CPU torch
tensors where they lie. For any other input an entry point hands its whole call to ``fallback``
(registered once, below): a CUDA tensor goes to the staging pipeline of that entry point where it
has one (_cuda.py); anything else is converted once (``_inputs.readable``) and the entry point is
called again with the result. CUDA tensors are recognised here and nowhere else
(``_cuda.on_device``).

The reader learns torch's tensor type and dtypes when torch is loaded: at once if it already is,
otherwise as soon as ``import torch`` has run (a finder on ``sys.meta_path`` wraps its loader).
torch is never imported by tensorb64.
"""

from __future__ import annotations

import importlib.abc
import sys

from . import _cuda, _native
from ._inputs import readable

# The entry points whose CUDA inputs the staging pipeline takes (others get one host copy).
_STAGED = {"encode_rows": _cuda.encode_rows, "json_rows": _cuda.json_rows}


def fallback(entry: str, x, *args, **kwargs):
    """The result of ``_native.<entry>(x, *args, **kwargs)`` for an ``x`` the reader cannot read
    in place (its other arguments already checked)."""
    staged = _STAGED.get(entry) if _cuda.on_device(x) else None
    if staged is not None:
        return staged(x, *args, **kwargs)
    return getattr(_native, entry)(readable(x), *args, **kwargs)


def register_torch(torch) -> bool:
    """Has the reader read ``torch.Tensor`` in place; True where through torch's DLPack exchange
    API (recent torch; 2.13 has it), which gives a tensor's layout in one C call."""
    return _native._register_tensor_type(torch.Tensor, torch, getattr(torch.Tensor, "__dlpack_c_exchange_api__", None))


class _TorchImportWatcher(importlib.abc.MetaPathFinder):
    """Registers torch as soon as ``import torch`` has run: the spec the other finders give, with
    its loader's exec_module followed by ``register_torch``."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None) if finder is not self else None
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_register(module):
            exec_module(module)
            register_torch(module)
            if self in sys.meta_path:
                sys.meta_path.remove(self)

        spec.loader.exec_module = exec_and_register
        return spec


def install() -> None:
    """Registers the fallback, and torch now or when it is imported (once, at import)."""
    _native._set_fallback(fallback)
    torch = sys.modules.get("torch")
    if torch is not None:
        register_torch(torch)
    elif "torch" not in sys.modules:  # (None there: torch is blocked)
        sys.meta_path.insert(0, _TorchImportWatcher())
