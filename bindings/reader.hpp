// The one reader: every input of every entry point comes through here. A numpy array or any
// other buffer is read through the buffer protocol (numpy's extension dtypes, ml_dtypes'
// bfloat16 and float8, as their storage type), a plain CPU torch tensor through torch's DLPack
// exchange API or its methods, checked against its storage's bounds. What it cannot read in
// place goes to the Python layer's fallback hook (`_set_fallback`, registered once at import),
// which takes over the call: it converts the input once and calls the entry point again with
// it, or stages a CUDA tensor (src/tensorb64/_codec/input_hook.py).
#pragma once

#include <cstddef>

#include "python_api.hpp"
#include "tensorb64/tensorb64.hpp"

namespace binding {

namespace tb = tensorb64;

// An input as the core reads it: where its elements lie, its shape and byte strides, their
// format, and what keeps the memory alive while it is read.
struct input_array {
    const void* data = nullptr;
    std::size_t ndim = 0;
    std::size_t shape[tb::max_dims] = {};
    std::ptrdiff_t strides[tb::max_dims] = {};
    tb::element_format format{tb::dtype::float32, tb::host_byte_order};

    ref owner;           // what keeps the memory alive: a tensor's storage, or the view read
                         // (a buffer holds its own)
    held_buffer buffer;  // when read through the buffer protocol (released before `owner`)
};

// Reads `x` in place into `in`: true, or false (no error set) when the call must go to the
// fallback; raises when `x` is refused outright (a tensor reaching outside its storage).
bool read_input(PyObject* x, input_array& in);

// Hands the call of entry point `entry` to the fallback hook, with the entry's own arguments
// (vectorcall layout); its result is the entry point's.
PyObject* call_fallback(const char* entry, PyObject* const* args, Py_ssize_t nargs,
                        PyObject* kwnames);

// The rows of an array: all dimensions but the last index rows (a 1-D array is one row, a 0-D
// one a row of one element). Leading dimensions merge where their strides allow (`in`'s shape
// and strides become the row index). MemoryError where the rows cannot be counted (a broadcast
// array of more rows than a size_t holds).
tb::strided_rows rows_of(input_array& in);

// The whole array as one row, when all its dimensions merge into one (a C-contiguous array, or
// any evenly strided one); otherwise its rows, as rows_of gives them.
tb::strided_rows as_one_row(input_array& in);

// Imports numpy's ndarray type, once, at import.
bool init_reader();

}  // namespace binding
