// Base64 group decoding with AVX-512 VBMI (the avx512 implementation's decode_base64_groups; W.
// Muła and D. Lemire, "Base64 encoding and decoding at almost the speed of a memory copy", 2019):
// 64 characters a step, looked up in a 128-entry table by one vpermi2b (lookup128: 0x80 for any
// character outside the alphabet, '=' included; non-ASCII bytes caught by their own high bit),
// merged by two multiply-adds and packed to 48 bytes by a vpermb. The loop is the generic
// skeleton's (levels/generic/base64_groups.hpp).
//
// Compiled with the AVX-512 flags (cpp/CMakeLists.txt); to nothing elsewhere.
#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_AVX512
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "base64/alphabet.hpp"
#include "dispatch/implementation.hpp"
#include "levels/avx512/avx512.hpp"
#include "levels/avx512/vocabulary.hpp"

namespace tensorb64 {
namespace avx512 {
namespace {

inline bool sextets_of(const char* text, text64* values) noexcept;
inline void store_bytes(text64 values, unsigned char* out) noexcept;

#include "levels/generic/base64_groups.hpp"

inline bool sextets_of(const char* text, text64* values) noexcept {
    const text64 in = load(text);
    *values = lookup128(kSextets, in);
    return !any_high_bit(*values | in);
}

// Output byte 3g + k comes from byte 2 - k of dword g, once each dword holds its group's 24 bits.
struct pack_table {
    alignas(64) unsigned char index[64];
};
constexpr pack_table make_pack() {
    pack_table t{};
    for (int g = 0; g < 16; ++g) {
        for (int k = 0; k < 3; ++k) t.index[3 * g + k] = static_cast<unsigned char>(4 * g + 2 - k);
    }
    return t;
}
constexpr pack_table kPack = make_pack();

inline void store_bytes(text64 values, unsigned char* out) noexcept {
    const __m512i pairs = _mm512_maddubs_epi16(values.v, _mm512_set1_epi32(0x01400140));
    const __m512i words = _mm512_madd_epi16(pairs, _mm512_set1_epi32(0x00011000));
    _mm512_mask_storeu_epi8(out, (__mmask64{1} << 48) - 1,
                            _mm512_permutexvar_epi8(_mm512_load_si512(kPack.index), words));
}

}  // namespace
}  // namespace avx512

bool decode_base64_groups_avx512(const char* text, std::size_t groups,
                                 unsigned char* out) noexcept {
    return avx512::decode_groups(text, groups, out);
}

}  // namespace tensorb64

#endif
