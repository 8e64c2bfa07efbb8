// Base64 group decoding with AVX2 (Muła's vectorised lookup, as in W. Muła and D. Lemire, "Faster
// Base64 Encoding and Decoding Using AVX2 Instructions", 2018): 32 characters at a time, classified
// by their high and low nibbles (two pshufb lookups whose AND is non-zero for any byte outside the
// alphabet, '=' and non-ASCII included), shifted to their 6-bit values by a third lookup, merged
// by two multiply-adds and packed to 24 bytes. Exactly decode_base64_groups_scalar
// (base64/decode.cpp): the same bytes, the same verdict (base64_decoder tests in core_tests compare
// every level with it).
//
// Compiled with the AVX2 flags (cpp/CMakeLists.txt); to nothing elsewhere.
#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_AVX2
#include <immintrin.h>

#include <cstring>

#include "levels/avx2/avx2.hpp"

namespace tensorb64 {
namespace {}  // namespace

bool decode_base64_groups_avx2(const char* text, std::size_t groups, unsigned char* out) noexcept {
    const __m256i lut_low =
        _mm256_setr_epi8(0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x13, 0x1a,
                         0x1b, 0x1b, 0x1b, 0x1a, 0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
                         0x11, 0x11, 0x13, 0x1a, 0x1b, 0x1b, 0x1b, 0x1a);
    const __m256i lut_high =
        _mm256_setr_epi8(0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10, 0x10, 0x10, 0x10,
                         0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08,
                         0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10);
    const __m256i lut_shift =
        _mm256_setr_epi8(0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 19, 4,
                         -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m256i slash =
        _mm256_set1_epi8(0x2f);  // also the nibble mask (bit 5 is ignored by pshufb)
    const __m256i pack_lanes =
        _mm256_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1, 2, 1, 0, 6, 5, 4,
                         10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    const __m256i pack_both = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);
    std::size_t g = 0;
    for (; g + 8 <= groups; g += 8, text += 32, out += 24) {
        const __m256i in = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(text));
        const __m256i high = _mm256_and_si256(_mm256_srli_epi32(in, 4), slash);
        const __m256i low = _mm256_and_si256(in, slash);
        const __m256i class_low = _mm256_shuffle_epi8(lut_low, low);
        const __m256i class_high = _mm256_shuffle_epi8(lut_high, high);
        if (!_mm256_testz_si256(class_low, class_high)) return false;
        const __m256i shift =
            _mm256_shuffle_epi8(lut_shift, _mm256_add_epi8(_mm256_cmpeq_epi8(in, slash), high));
        const __m256i values = _mm256_add_epi8(in, shift);
        const __m256i pairs = _mm256_maddubs_epi16(values, _mm256_set1_epi32(0x01400140));
        const __m256i words = _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x00011000));
        const __m256i packed =
            _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(words, pack_lanes), pack_both);
        alignas(32) unsigned char bytes[32];
        _mm256_store_si256(reinterpret_cast<__m256i*>(bytes), packed);
        std::memcpy(out, bytes, 24);
    }
    return g == groups || decode_base64_groups_scalar(text, groups - g, out);
}

}  // namespace tensorb64

#endif
