"""A stand-in for torch.Tensor with whatever metadata a test gives it.

_native.encode_tensor reads a tensor only through these methods (is_neg, untyped_storage,
stride, shape, data_ptr; the storage's data_ptr and nbytes), so this is how tests hand it
shapes, strides and addresses that do not match the storage: torch itself refuses to make such
a tensor.
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
    def __init__(self, address: int, shape, strides, storage_address: int, storage_bytes: int, negated: bool = False):
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

    def data_ptr(self) -> int:
        return self._address
