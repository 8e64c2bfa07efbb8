// The AVX2 level (with F16C, FMA and BMI2, the set every x86-64 CPU since Haswell has): its own
// row encoder, float-text writers, number-row parsers and base64 decoder.
#include "levels/avx2/avx2.hpp"
#include "levels/compiled_features.hpp"

namespace tensorb64 {

constexpr implementation avx2_implementation {
    simd_level::avx2, "avx2",
        feature::avx | feature::avx2 | feature::f16c | feature::fma | feature::bmi2,
#if TENSORB64_COMPILES_AVX2
        encode_rows_avx2, &float_text_writers_avx2, parse_number_row_avx2,
        parse_number_row_double_avx2, decode_base64_groups_avx2,
#endif
};

// The folder's flags (cpp/CMakeLists.txt) give the compiler every feature the level requires.
#if TENSORB64_COMPILES_AVX2
static_assert(compiled_with(avx2_implementation.required), "levels/avx2/'s flags");
#endif

}  // namespace tensorb64
