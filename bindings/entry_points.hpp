// The tables of the module's functions, one per file of the binding; module.cpp adds them all.
// A new entry point goes in the table of the file whose job it shares (or a new file with its
// own table, listed here and in module.cpp's `tables`).
#pragma once

#include "python_api.hpp"

namespace binding {

extern PyMethodDef
    encode_methods[];  // encode_entry.cpp: encode, encode_rows, _row_bytes, _row_shape
extern PyMethodDef float_text_methods[];  // float_text_entry.cpp: json_rows, _check_finite
extern PyMethodDef float_list_methods[];  // float_list_entry.cpp: _read_float_lists
extern PyMethodDef body_methods[];    // body_entry.cpp: _response_body_base64/_float, _entry_bound
extern PyMethodDef decode_methods[];  // decode_entry.cpp: _decode_into, _decode_rows
extern PyMethodDef body_reader_methods[];  // body_reader_entry.cpp: _decode_response_body
extern PyMethodDef name_methods[];         // names.cpp: _resolve, _check_names
extern PyMethodDef argument_methods[];     // arguments.cpp: _check_threads
extern PyMethodDef reader_methods[];       // reader.cpp: _set_fallback
extern PyMethodDef tensor_methods[];       // tensor_reader.cpp: _register_tensor_type
// output_memory.cpp: _set_page_preparation, _page_preparation_counts (test hooks)
extern PyMethodDef output_memory_methods[];
// module.cpp: simd_level, available_simd_levels, _set_simd_level, _inject_failure
extern PyMethodDef simd_methods[];

}  // namespace binding
