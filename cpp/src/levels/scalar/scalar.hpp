// The scalar level's functions, which every other level names where it has no faster one of its
// own: built on every target with the baseline flags. Its number parser is
// detail::parse_number_row_scalar (json/number_parser.hpp), its base64 decoder
// decode_base64_groups_scalar (base64/decode.cpp, declared with the implementation).
#pragma once

#include "dispatch/implementation.hpp"

namespace tensorb64 {

void encode_rows_scalar(const row_job& job) noexcept;
extern const float_text_writers float_text_writers_scalar;

}  // namespace tensorb64
