// What the float-text entry points share.
#pragma once

#include <cstddef>

#include "tensorb64/tensorb64.hpp"

namespace binding {

// Raises the ValueError for the row (counted from first_row) that has a NaN or an infinity.
[[noreturn]] void refuse_non_finite(const tensorb64::float_text_result& result,
                                    std::size_t first_row = 0);

}  // namespace binding
