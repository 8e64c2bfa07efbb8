// Internal: the kernel chosen by dispatch.cpp, and dispatch's pure parts (for the tests).
#pragma once

#include <string_view>
#include <vector>

#include "dispatch/cpu_features.hpp"
#include "dispatch/implementations.hpp"

namespace tensorb64 {

// The entry point of the active SIMD level (chosen on first use; see active_simd_level).
encode_rows_fn active_kernel();

// The active level's float-text block writers (the same choice as active_kernel).
const float_text_writers& active_float_text();

// The active level's JSON number-row parser (the same choice as active_kernel).
number_row_parser active_number_parser();

// The active level's base64 group decoder (the same choice as active_kernel).
decode_groups_fn active_base64_decoder();

// The levels whose table requirements `features` meets, lowest first, whether or not this build
// compiled their kernels (available_simd_levels is these, less the stubs, for this CPU).
std::vector<simd_level> levels_supported_by(cpu_features features);

// The level TENSORB64_SIMD=`value` asks for among `available` (lowest first, never empty): the
// best one when `value` is empty. Throws std::runtime_error naming `value` when it is not a level's
// name (the known names listed), or names a level that is not in `available` (those listed).
simd_level level_for_environment(std::string_view value, const std::vector<simd_level>& available);

}  // namespace tensorb64
