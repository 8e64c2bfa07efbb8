// The NEON level's own functions (defined only where levels/neon/ is compiled: little-endian
// AArch64).
#pragma once

#include "dispatch/implementation.hpp"

namespace tensorb64 {

void encode_rows_neon(const row_job& job) noexcept;
extern const float_text_writers float_text_writers_neon;
detail::number_row parse_number_row_neon(const char* p, const char* end, float* out,
                                         std::size_t capacity) noexcept;
detail::number_row parse_number_row_double_neon(const char* p, const char* end, double* out,
                                                std::size_t capacity) noexcept;
bool decode_base64_groups_neon(const char* text, std::size_t groups, unsigned char* out) noexcept;

}  // namespace tensorb64
