// Internal: the implementation chosen by dispatch.cpp, and dispatch's pure parts (for the tests).
#pragma once

#include <string_view>
#include <vector>

#include "dispatch/cpu_features.hpp"
#include "dispatch/implementation.hpp"

namespace tensorb64 {

// The active level's implementation (chosen on first use; see active_simd_level): built, and
// runnable on this CPU.
const implementation& active_implementation();

// The levels whose required features `features` has, lowest first, whether or not this build
// compiled them (available_simd_levels is these, less the levels not built, for this CPU).
std::vector<simd_level> levels_supported_by(cpu_features features);

// The level TENSORB64_SIMD=`value` asks for among `available` (lowest first, never empty): the
// best one when `value` is empty. Throws std::runtime_error naming `value` when it is not a level's
// name (the known names listed), or names a level that is not in `available` (those listed).
simd_level level_for_environment(std::string_view value, const std::vector<simd_level>& available);

}  // namespace tensorb64
