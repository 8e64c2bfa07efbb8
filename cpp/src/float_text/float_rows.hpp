// Internal: one row as JSON number text (float_rows.cpp), for the row writers and the response
// body.
#pragma once

#include <cstddef>

#include "tensorb64/tensorb64.hpp"

namespace tensorb64 {

// The most bytes one value's text takes, commas and scratch included (see float_text.hpp).
std::size_t float_value_bound(dtype source, float_format format) noexcept;

// Writes row `r` of `source` as `[v,v,...]` at `out`; returns the end, or nullptr with *column
// set at the first NaN or infinity.
char* write_float_row(const strided_rows& source, std::size_t r, float_format format, char* out,
                      std::size_t* column) noexcept;

}  // namespace tensorb64
