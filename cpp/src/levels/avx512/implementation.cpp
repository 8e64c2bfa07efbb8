// The AVX-512 level (F, DQ, BW, VL, VBMI and VBMI2 on top of the AVX2 level's, and POPCNT, which
// every such CPU has: Ice Lake, Zen 4 and later): all five functions its own.
#include "levels/avx512/avx512.hpp"
#include "levels/compiled_features.hpp"

namespace tensorb64 {

constexpr implementation avx512_implementation {
    simd_level::avx512, "avx512",
        feature::avx | feature::avx2 | feature::f16c | feature::fma | feature::bmi2 |
            feature::avx512f | feature::avx512bw | feature::avx512vl | feature::avx512dq |
            feature::avx512vbmi | feature::avx512vbmi2 | feature::popcnt,
#if TENSORB64_COMPILES_AVX512
        encode_rows_avx512, &float_text_writers_avx512, parse_number_row_avx512,
        parse_number_row_double_avx512, decode_base64_groups_avx512,
#endif
};

// The folder's flags (cpp/CMakeLists.txt) give the compiler every feature the level requires.
#if TENSORB64_COMPILES_AVX512
static_assert(compiled_with(avx512_implementation.required), "levels/avx512/'s flags");
#endif

}  // namespace tensorb64
