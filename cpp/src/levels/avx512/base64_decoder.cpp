// Base64 group decoding with AVX-512 VBMI (W. Muła and D. Lemire, "Base64 encoding and decoding at
// almost the speed of a memory copy", 2019): 64 characters at a time, looked up in a 128-entry
// table by one vpermi2b (0x80 for any character outside the alphabet, '=' included; non-ASCII
// bytes caught by their own high bit), merged by two multiply-adds and packed to 48 bytes by a
// vpermb. Exactly decode_base64_groups_scalar (base64/decode.cpp): the same bytes, the same
// verdict.
//
// Compiled with the AVX-512 flags (cpp/CMakeLists.txt); to nothing elsewhere.
#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_AVX512
#include <immintrin.h>

#include "levels/avx512/avx512.hpp"

namespace tensorb64 {
namespace {

struct tables {
    alignas(64) unsigned char lookup[128];  // ASCII -> 6-bit value, 0x80 where not in the alphabet
    alignas(64) unsigned char pack[64];     // output byte 3g+k <- byte 2-k of dword g
    constexpr tables() : lookup(), pack() {
        const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for (int i = 0; i < 128; ++i) lookup[i] = 0x80;
        for (int i = 0; i < 64; ++i)
            lookup[static_cast<unsigned char>(alphabet[i])] = static_cast<unsigned char>(i);
        for (int g = 0; g < 16; ++g) {
            for (int k = 0; k < 3; ++k) pack[3 * g + k] = static_cast<unsigned char>(4 * g + 2 - k);
        }
    }
};
constexpr tables table;

}  // namespace

bool decode_base64_groups_avx512(const char* text, std::size_t groups,
                                 unsigned char* out) noexcept {
    const __m512i lookup_low = _mm512_load_si512(table.lookup);
    const __m512i lookup_high = _mm512_load_si512(table.lookup + 64);
    const __m512i pack = _mm512_load_si512(table.pack);
    std::size_t g = 0;
    for (; g + 16 <= groups; g += 16, text += 64, out += 48) {
        const __m512i in = _mm512_loadu_si512(text);
        const __m512i values = _mm512_permutex2var_epi8(lookup_low, in, lookup_high);
        if (_mm512_movepi8_mask(_mm512_or_si512(values, in)) != 0) return false;
        const __m512i pairs = _mm512_maddubs_epi16(values, _mm512_set1_epi32(0x01400140));
        const __m512i words = _mm512_madd_epi16(pairs, _mm512_set1_epi32(0x00011000));
        _mm512_mask_storeu_epi8(out, (__mmask64{1} << 48) - 1,
                                _mm512_permutexvar_epi8(pack, words));
    }
    return g == groups || decode_base64_groups_scalar(text, groups - g, out);
}

}  // namespace tensorb64

#endif
