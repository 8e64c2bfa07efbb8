// Names: the one table of element types, and the one resolver of every name a caller passes
// (dtype, byteorder, float_format, encoding_format, layout). Every entry point resolves through
// it, and so does the Python layer (`_native._resolve`): one message per kind of bad name,
// everywhere.
#pragma once

#include <cstddef>

#include "python_api.hpp"
#include "tensorb64/tensorb64.hpp"

namespace binding {

namespace tb = tensorb64;

// One core element type: its name is tb::to_string(type), its size tb::dtype_size(type).
struct element_type {
    tb::dtype type;
    const char* torch_name;   // the attribute of torch naming its dtype
    const char* output_name;  // what dtype= calls it as an output type (vLLM's embed_dtype names),
                              // null where it is not one
};

// Every core element type, in the order of their codes.
extern const element_type element_types[];
extern const std::size_t element_type_count;

// The kinds of names a caller passes.
enum class name_kind { dtype, byteorder, float_format, encoding_format, layout };
inline constexpr int name_kind_count = static_cast<int>(name_kind::layout) + 1;  // the last, + 1

// The code of `name` (a core dtype, 0/1 for little/big, the core's float_format, 0/1 for
// float/base64, the row of the core's response_layouts), or ValueError "unknown <kind> <name>;
// expected 'a', 'b' or 'c'".
int resolve(name_kind kind, PyObject* name);

// The resolver with each kind's default where `name` is null (an argument not given).
tb::dtype output_dtype(PyObject* name);                      // float32
tb::byte_order byte_order(PyObject* name);                   // little
tb::float_format float_format(PyObject* name);               // repr
const tb::response_layout& response_layout(PyObject* name);  // openai

// Interns every name, once, at import (so that a call site's literal matches by pointer).
bool intern_names();

// ELEMENT_TYPES: ((name, code, itemsize, torch_name, output_name or None), ...) in code order.
PyObject* element_types_tuple();

}  // namespace binding
