// The NEON level (little-endian AArch64, where NEON is baseline): all five functions its own.
#include "levels/compiled_features.hpp"
#include "levels/neon/neon.hpp"

namespace tensorb64 {

constexpr implementation neon_implementation {
    simd_level::neon, "neon", feature::neon,
#if TENSORB64_COMPILES_NEON
        encode_rows_neon, &float_text_writers_neon, parse_number_row_neon,
        parse_number_row_double_neon, decode_base64_groups_neon,
#endif
};

#if TENSORB64_COMPILES_NEON
static_assert(compiled_with(neon_implementation.required), "AArch64's baseline");
#endif

}  // namespace tensorb64
