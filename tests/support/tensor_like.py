"""A stand-in for torch.Tensor with whatever metadata a test gives it.

The binding's reader reads a CPU tensor only through these attributes and methods (dtype,
is_cpu, is_neg, shape, stride, untyped_storage, storage_offset; the storage's data_ptr and nbytes), so
this is how tests hand it shapes, strides and addresses that do not match the storage: torch
itself refuses to make such a tensor. `install()` makes the binding read TensorLike as it reads
torch.Tensor (for a subprocess only: it replaces torch's registration).
"""

from __future__ import annotations


class StorageLike:
    def __init__(self, address: int, nbytes: int):
        self._address = address
        self._nbytes = nbytes

    def data_ptr(self) -> int:
        return self._address

    def nbytes(self) -> int:
        return self._nbytes


class TensorLike:
    is_cpu = True

    def __init__(self, address: int, shape, strides, storage_address: int, storage_bytes: int, negated: bool = False,
                 dtype: str = "float32"):
        self.dtype = dtype
        self.shape = tuple(shape)
        self._strides = tuple(strides)
        self._address = address
        self._storage = StorageLike(storage_address, storage_bytes)
        self._negated = negated

    def is_neg(self) -> bool:
        return self._negated

    def untyped_storage(self) -> StorageLike:
        return self._storage

    def stride(self) -> tuple:
        return self._strides

    def storage_offset(self) -> int:
        """In whole elements, as torch counts it (negative if the address lies before the storage)."""
        size = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}.get(self.dtype, 1)
        return (self._address - self._storage.data_ptr()) // size


def install() -> None:
    """Makes the binding read TensorLike objects in place, their dtype named by torch's name for it."""
    from types import SimpleNamespace

    from tensorb64 import _native

    names = [torch_name for _, _, _, torch_name, _ in _native.ELEMENT_TYPES]
    _native._register_tensor_type(TensorLike, SimpleNamespace(**{name: name for name in names}), None)
