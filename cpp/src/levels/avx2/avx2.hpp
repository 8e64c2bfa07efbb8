// The AVX2 level's own functions (defined only where levels/avx2/ is compiled with its flags).
#pragma once

#include "dispatch/implementation.hpp"

namespace tensorb64 {

void encode_rows_avx2(const row_job& job) noexcept;
extern const float_text_writers float_text_writers_avx2;
detail::number_row parse_number_row_avx2(const char* p, const char* end, float* out,
                                         std::size_t capacity) noexcept;
detail::number_row parse_number_row_double_avx2(const char* p, const char* end, double* out,
                                                std::size_t capacity) noexcept;
bool decode_base64_groups_avx2(const char* text, std::size_t groups, unsigned char* out) noexcept;

}  // namespace tensorb64
