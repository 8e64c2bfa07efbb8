// The NEON level's own functions (defined only where levels/neon/ is compiled: little-endian
// AArch64).
#pragma once

#include "dispatch/implementation.hpp"

namespace tensorb64 {

void encode_rows_neon(const row_job& job) noexcept;
extern const float_text_writers float_text_writers_neon;

}  // namespace tensorb64
