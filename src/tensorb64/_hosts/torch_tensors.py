"""torch's tensor type registered with the binding's reader, which then reads plain CPU tensors
where they lie: at once where torch is imported already, else as soon as ``import torch`` has run
(``import_hooks.after_import``, whose guard keeps a failure of ours out of torch's import). torch
is never imported by tensorb64.
"""

from __future__ import annotations

from .. import _native
from .import_hooks import after_import


def register(torch) -> bool:
    """Has the reader read ``torch.Tensor`` in place; True where through torch's DLPack exchange
    API (recent torch; 2.13 has it), which gives a tensor's layout in one C call."""
    return _native._register_tensor_type(torch.Tensor, torch, getattr(torch.Tensor, "__dlpack_c_exchange_api__", None))


def install() -> None:
    """Registers torch now or when it is imported (once, at import)."""
    after_import("torch", register)
