// The NEON level (little-endian AArch64, where NEON is baseline): its own row encoder and
// float-text writers, the scalar number parsers and base64 decoder.
#include "levels/compiled_features.hpp"
#include "levels/neon/neon.hpp"
#include "levels/scalar/scalar.hpp"

namespace tensorb64 {

constexpr implementation neon_implementation {
    simd_level::neon, "neon", feature::neon,
#if TENSORB64_COMPILES_NEON
        encode_rows_neon, &float_text_writers_neon, detail::parse_number_row_scalar,
        detail::parse_number_row_double_scalar, decode_base64_groups_scalar,
#endif
};

#if TENSORB64_COMPILES_NEON
static_assert(compiled_with(neon_implementation.required), "AArch64's baseline");
#endif

}  // namespace tensorb64
