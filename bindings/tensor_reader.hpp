// The reader of torch tensors: a plain CPU torch.Tensor read in place through torch's DLPack
// exchange API or its methods, checked against its storage's bounds; no torch headers. Part of
// the one reader (reader.hpp), which asks it first.
#pragma once

#include "reader.hpp"

namespace binding {

// Whether `x` is exactly the registered tensor type (torch.Tensor, once torch is loaded).
bool is_registered_tensor(PyObject* x);

// Reads a registered tensor in place. False (no error set) for what the Python layer must
// handle: another device, dtype or layout, a negative-bit view, anything that raised. Raises if
// its shape and strides reach outside its storage (a shrunk storage, as FSDP leaves).
bool read_tensor(PyObject* x, input_array& in);

// Replaces *slot's reference with a new one to `value`.
inline void keep(PyObject*& slot, PyObject* value) {
    Py_XINCREF(value);
    Py_XSETREF(slot, value);
}

}  // namespace binding
