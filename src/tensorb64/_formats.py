"""The binding's table of element types, as the Python layer reads it, and the names it resolves.

Both live in the binding (bindings/names.cpp): every name (dtype, byteorder, float_format,
encoding_format) is resolved there, by the entry points and through ``_native._resolve`` by the
functions here, so each kind of bad name has one message everywhere.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

from . import _native


class ElementType(NamedTuple):
    name: str  # the core's name (torch's spelling)
    code: int
    itemsize: int
    torch_name: str  # the attribute of torch naming it
    output_name: Optional[str]  # noqa: UP045  (what dtype= calls it as an output type, if one)


# Every core element type, indexed by code.
ELEMENT_TYPES = tuple(ElementType(*row) for row in _native.ELEMENT_TYPES)


def output_type(dtype) -> ElementType:
    """The element type an output ``dtype`` name stands for; ValueError naming the accepted ones."""
    return ELEMENT_TYPES[_native._resolve("dtype", dtype)]


def byteorder_name(byteorder) -> str:
    """'little' or 'big' for a byteorder argument ('native': this host's order)."""
    return ("little", "big")[_native._resolve("byteorder", byteorder)]

