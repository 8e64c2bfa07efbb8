// Output sizes: computed exactly, with overflow guards, and checked against the machine's memory
// before anything is allocated (an output larger than the machine would end in the OOM killer
// rather than a MemoryError).
#pragma once

#include <cstddef>

#include "python_api.hpp"
#include "tensorb64/tensorb64.hpp"

namespace binding {

namespace tb = tensorb64;

// rows x per_row bytes of output, or a MemoryError naming the size (and `rows` `unit`) if that
// cannot exist.
std::size_t checked_total(std::size_t rows, std::size_t per_row, const char* what,
                          const char* unit = "rows");

// The length of the base64 text of one row of `source` converted to `target`; MemoryError if
// that does not fit in a size_t.
std::size_t row_text_length(const tb::strided_rows& source, tb::element_format target);

// ValueError if `source`'s elements cannot be written as `target`'s.
void check_convertible(const tb::strided_rows& source, tb::element_format target);

}  // namespace binding
