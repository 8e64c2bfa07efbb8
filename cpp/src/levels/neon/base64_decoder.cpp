// Base64 group decoding with NEON (the neon implementation's decode_base64_groups), as
// aklomp/base64's NEON64 codec decodes: vld4q de-interleaves 64 characters into the first,
// second, third and fourth character of 16 groups, a 128-entry table lookup (tbl and tbx over
// four registers each: lookup128) gives each its 6-bit value or 0x80, and shift-and-insert
// instructions pack each group's four values into three bytes, which vst3q interleaves back.
// The loop is the generic skeleton's (levels/generic/base64_groups.hpp).
//
// Compiled on little-endian AArch64 (no flags needed); to nothing elsewhere.
#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_NEON
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

#include "base64/alphabet.hpp"
#include "dispatch/implementation.hpp"
#include "levels/neon/neon.hpp"
#include "levels/neon/vocabulary.hpp"

namespace tensorb64 {
namespace neon {
namespace {

// Piece k holds character k of each of the 16 groups (vld4q).
inline bool sextets_of(const char* text, text64* values) noexcept;
inline void store_bytes(text64 values, unsigned char* out) noexcept;

#include "levels/generic/base64_groups.hpp"

inline bool sextets_of(const char* text, text64* values) noexcept {
    text64 characters;
    characters.v = vld4q_u8(reinterpret_cast<const std::uint8_t*>(text));
    *values = lookup128(kSextets, characters);
    return !any_high_bit(*values | characters);
}

// a b c d (6 bits each) -> aaaaaabb bbbbcccc ccdddddd.
inline void store_bytes(text64 values, unsigned char* out) noexcept {
    const uint8x16_t a = values.v.val[0], b = values.v.val[1], c = values.v.val[2],
                     d = values.v.val[3];
    uint8x16x3_t bytes;
    bytes.val[0] = vsliq_n_u8(vshrq_n_u8(b, 4), a, 2);
    bytes.val[1] = vsliq_n_u8(vshrq_n_u8(c, 2), b, 4);
    bytes.val[2] = vsliq_n_u8(d, c, 6);
    vst3q_u8(out, bytes);
}

}  // namespace
}  // namespace neon

bool decode_base64_groups_neon(const char* text, std::size_t groups, unsigned char* out) noexcept {
    return neon::decode_groups(text, groups, out);
}

}  // namespace tensorb64

#endif
