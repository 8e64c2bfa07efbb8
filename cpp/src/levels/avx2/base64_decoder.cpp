// Base64 group decoding with AVX2 (the avx2 implementation's decode_base64_groups; Muła's
// vectorised lookup, as in W. Muła and D. Lemire, "Faster Base64 Encoding and Decoding Using AVX2
// Instructions", 2018): 64 characters a step, 32 to a register, classified by their high and low
// nibbles (two pshufb lookups whose AND is non-zero for any byte outside the alphabet, '=' and
// non-ASCII included: AVX2 has no 128-entry lookup), shifted to their 6-bit values by a third
// lookup, merged by two multiply-adds and packed to 24 bytes a register. The loop is the generic
// skeleton's (levels/generic/base64_groups.hpp).
//
// Compiled with the AVX2 flags (cpp/CMakeLists.txt); to nothing elsewhere.
#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_AVX2
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "base64/alphabet.hpp"
#include "dispatch/implementation.hpp"
#include "levels/avx2/avx2.hpp"
#include "levels/avx2/vocabulary.hpp"

namespace tensorb64 {
namespace avx2 {
namespace {

inline bool sextets_of(const char* text, text64* values) noexcept;
inline void store_bytes(text64 values, unsigned char* out) noexcept;

#include "levels/generic/base64_groups.hpp"

inline bool sextets_of(const char* text, text64* values) noexcept {
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
    const text64 in = load(text);
    __m256i invalid = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
        const __m256i high = _mm256_and_si256(_mm256_srli_epi32(in.half[h], 4), slash);
        const __m256i low = _mm256_and_si256(in.half[h], slash);
        invalid = _mm256_or_si256(invalid, _mm256_and_si256(_mm256_shuffle_epi8(lut_low, low),
                                                            _mm256_shuffle_epi8(lut_high, high)));
        const __m256i shift = _mm256_shuffle_epi8(
            lut_shift, _mm256_add_epi8(_mm256_cmpeq_epi8(in.half[h], slash), high));
        values->half[h] = _mm256_add_epi8(in.half[h], shift);
    }
    return _mm256_testz_si256(invalid, invalid) != 0;
}

// Each dword's four values merged into 24 bits (two multiply-adds), packed to the register's first
// 24 bytes; the second register's stored in exactly 24 bytes.
inline void store_bytes(text64 values, unsigned char* out) noexcept {
    const __m256i pack_lanes =
        _mm256_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1, 2, 1, 0, 6, 5, 4,
                         10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    const __m256i pack_both = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);
    __m256i packed[2];
    for (int h = 0; h < 2; ++h) {
        const __m256i pairs = _mm256_maddubs_epi16(values.half[h], _mm256_set1_epi32(0x01400140));
        const __m256i words = _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x00011000));
        packed[h] = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(words, pack_lanes), pack_both);
    }
    // (The first register's last 8 bytes are overwritten by the second's.)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), packed[0]);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 24), _mm256_castsi256_si128(packed[1]));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 40), _mm256_extracti128_si256(packed[1], 1));
}

}  // namespace
}  // namespace avx2

bool decode_base64_groups_avx2(const char* text, std::size_t groups, unsigned char* out) noexcept {
    return avx2::decode_groups(text, groups, out);
}

}  // namespace tensorb64

#endif
