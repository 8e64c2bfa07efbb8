// The vector vocabulary (levels/vocabulary.hpp: the contract and each operation's cost) on NEON
// (little-endian AArch64, where it is baseline): text64 is four q registers, u64x four 64-bit
// lanes in two. Intrinsics only (MSVC's arm_neon.h has no operators on its vector types). For
// the files of levels/neon/ only; empty elsewhere.
#pragma once

#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_NEON
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

#include "common/integer_math.hpp"
#include "levels/vocabulary.hpp"

namespace tensorb64 {
namespace neon {

constexpr int kLanes64 = 4;

struct text64 {
    uint8x16x4_t v;
};
struct u64x {
    uint64x2_t v[2];
};
struct f64x {
    float64x2_t v[2];
};
struct f32x {
    float32x4_t v;
};
struct lane_mask {
    uint64x2_t v[2];  // each lane all ones or zero
};
struct u32x {
    uint32x4_t v[2];
};
struct mask32 {
    uint32x4_t v[2];  // each lane all ones or zero
};

// ---- text64 ----

inline text64 load(const void* p) noexcept {
    const auto* q = static_cast<const std::uint8_t*>(p);
    text64 t;
    t.v.val[0] = vld1q_u8(q);
    t.v.val[1] = vld1q_u8(q + 16);
    t.v.val[2] = vld1q_u8(q + 32);
    t.v.val[3] = vld1q_u8(q + 48);
    return t;
}
inline void store(void* p, text64 t) noexcept {
    auto* q = static_cast<std::uint8_t*>(p);
    vst1q_u8(q, t.v.val[0]);
    vst1q_u8(q + 16, t.v.val[1]);
    vst1q_u8(q + 32, t.v.val[2]);
    vst1q_u8(q + 48, t.v.val[3]);
}
inline text64 load_pieces(const void* p0, const void* p1, const void* p2, const void* p3) noexcept {
    text64 t;
    t.v.val[0] = vld1q_u8(static_cast<const std::uint8_t*>(p0));
    t.v.val[1] = vld1q_u8(static_cast<const std::uint8_t*>(p1));
    t.v.val[2] = vld1q_u8(static_cast<const std::uint8_t*>(p2));
    t.v.val[3] = vld1q_u8(static_cast<const std::uint8_t*>(p3));
    return t;
}
inline text64 load_halves(const void* p0, const void* p1) noexcept {
    const auto* a = static_cast<const std::uint8_t*>(p0);
    const auto* b = static_cast<const std::uint8_t*>(p1);
    text64 t;
    t.v.val[0] = vld1q_u8(a);
    t.v.val[1] = vld1q_u8(a + 16);
    t.v.val[2] = vld1q_u8(b);
    t.v.val[3] = vld1q_u8(b + 16);
    return t;
}
inline text64 splat8(std::uint8_t c) noexcept {
    const uint8x16_t v = vdupq_n_u8(c);
    text64 t;
    t.v.val[0] = t.v.val[1] = t.v.val[2] = t.v.val[3] = v;
    return t;
}

// The four pieces' results, written out: GCC leaves a loop over uint8x16x4_t's array rolled at
// -O2, through the stack.
#define TENSORB64_EACH_PIECE(r, k, expression) \
    do {                                       \
        {                                      \
            constexpr int k = 0;               \
            (r).v.val[k] = (expression);       \
        }                                      \
        {                                      \
            constexpr int k = 1;               \
            (r).v.val[k] = (expression);       \
        }                                      \
        {                                      \
            constexpr int k = 2;               \
            (r).v.val[k] = (expression);       \
        }                                      \
        {                                      \
            constexpr int k = 3;               \
            (r).v.val[k] = (expression);       \
        }                                      \
    } while (0)

#define TENSORB64_TEXT64_OP(name, intrinsic)                           \
    inline text64 name(text64 a, text64 b) noexcept {                  \
        text64 r;                                                      \
        TENSORB64_EACH_PIECE(r, k, intrinsic(a.v.val[k], b.v.val[k])); \
        return r;                                                      \
    }
TENSORB64_TEXT64_OP(add8, vaddq_u8)
TENSORB64_TEXT64_OP(sub8, vsubq_u8)
TENSORB64_TEXT64_OP(operator&, vandq_u8)
TENSORB64_TEXT64_OP(operator|, vorrq_u8)
TENSORB64_TEXT64_OP(operator^, veorq_u8)
TENSORB64_TEXT64_OP(and_not, vbicq_u8)  // a & ~b
#undef TENSORB64_TEXT64_OP

// A bit for each byte that is 0xff (each byte of `t` all ones or zero), as simdjson's arm64
// to_bitmask: each byte keeps its bit of a repeating 1, 2, ..., 128, and three rounds of pairwise
// adds gather each 8-byte group's bits into one byte.
inline std::uint64_t bits_of_bytes(text64 t) noexcept {
    static const std::uint8_t weights[16] = {1, 2, 4, 8, 16, 32, 64, 128,
                                             1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t bit = vld1q_u8(weights);
    const uint8x16_t s0 = vpaddq_u8(vandq_u8(t.v.val[0], bit), vandq_u8(t.v.val[1], bit));
    const uint8x16_t s1 = vpaddq_u8(vandq_u8(t.v.val[2], bit), vandq_u8(t.v.val[3], bit));
    const uint8x16_t s2 = vpaddq_u8(s0, s1);
    return vgetq_lane_u64(vreinterpretq_u64_u8(vpaddq_u8(s2, s2)), 0);
}
inline std::uint64_t high_bits(text64 t) noexcept {
    text64 m;
    TENSORB64_EACH_PIECE(m, k, vreinterpretq_u8_s8(vshrq_n_s8(vreinterpretq_s8_u8(t.v.val[k]), 7)));
    return bits_of_bytes(m);
}
inline text64 splat_words(std::uint64_t v) noexcept {
    const uint8x16_t w = vreinterpretq_u8_u64(vdupq_n_u64(v));
    text64 t;
    t.v.val[0] = t.v.val[1] = t.v.val[2] = t.v.val[3] = w;
    return t;
}
inline text64 less8(text64 a, text64 b) noexcept {
    text64 r;
    TENSORB64_EACH_PIECE(r, k, vcltq_u8(a.v.val[k], b.v.val[k]));
    return r;
}
inline text64 greater8(text64 a, text64 b) noexcept {
    text64 r;
    TENSORB64_EACH_PIECE(r, k, vcgtq_u8(a.v.val[k], b.v.val[k]));
    return r;
}
inline bool any_high_bit(text64 t) noexcept {
    const uint8x16_t any =
        vorrq_u8(vorrq_u8(t.v.val[0], t.v.val[1]), vorrq_u8(t.v.val[2], t.v.val[3]));
    return vmaxvq_u8(any) >= 0x80;
}
inline std::uint64_t eq_bits(text64 t, std::uint8_t c) noexcept {
    const uint8x16_t v = vdupq_n_u8(c);
    text64 m;
    TENSORB64_EACH_PIECE(m, k, vceqq_u8(t.v.val[k], v));
    return bits_of_bytes(m);
}
inline std::uint64_t le_bits(text64 t, std::uint8_t c) noexcept {
    const uint8x16_t v = vdupq_n_u8(c);
    text64 m;
    TENSORB64_EACH_PIECE(m, k, vcleq_u8(t.v.val[k], v));
    return bits_of_bytes(m);
}

inline text64 shuffle16(text64 table, text64 index) noexcept {
    text64 r;
    TENSORB64_EACH_PIECE(r, k, vqtbl1q_u8(table.v.val[k], index.v.val[k]));
    return r;
}
inline text64 permute64(text64 table, text64 index) noexcept {
    text64 r;
    TENSORB64_EACH_PIECE(r, k, vqtbl4q_u8(table.v, index.v.val[k]));
    return r;
}
// tbl over the table's first 64 bytes (0 for an index past them), then tbx over the rest at the
// index less 64 (which leaves the lanes whose index is below 64, now past 191, as they are).
inline text64 lookup128(const byte_table128& table, text64 index) noexcept {
    const text64 low = load(table.bytes), high = load(table.bytes + 64);
    const uint8x16_t sixty_four = vdupq_n_u8(64);
    text64 r;
    TENSORB64_EACH_PIECE(r, k,
                         vqtbx4q_u8(vqtbl4q_u8(low.v, index.v.val[k]), high.v,
                                    vsubq_u8(index.v.val[k], sixty_four)));
    return r;
}
inline text64 blend(text64 mask, text64 a, text64 b) noexcept {
    text64 r;
    TENSORB64_EACH_PIECE(r, k, vbslq_u8(mask.v.val[k], a.v.val[k], b.v.val[k]));
    return r;
}
// Piece k's bytes take mask bytes 2k and 2k + 1 (tbl), then test their own bit.
inline text64 bytes_of_bits(std::uint64_t bits) noexcept {
    static const std::uint8_t weights[16] = {1, 2, 4, 8, 16, 32, 64, 128,
                                             1, 2, 4, 8, 16, 32, 64, 128};
    static const std::uint8_t spread[4][16] = {{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
                                               {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3},
                                               {4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5},
                                               {6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7}};
    const uint8x16_t bytes = vreinterpretq_u8_u64(vdupq_n_u64(bits));
    const uint8x16_t bit = vld1q_u8(weights);
    text64 r;
    TENSORB64_EACH_PIECE(r, k, vtstq_u8(vqtbl1q_u8(bytes, vld1q_u8(spread[k])), bit));
    return r;
}
inline text64 leading_ones_halves(unsigned k0, unsigned k1) noexcept {
    return load_halves(kLeadingOnes.bytes + 32 - k0, kLeadingOnes.bytes + 32 - k1);
}
inline text64 blend_below(text64 a, text64 b, unsigned k0, unsigned k1) noexcept {
    return blend(leading_ones_halves(k0, k1), a, b);
}
inline text64 zero_below(text64 t, unsigned k0, unsigned k1) noexcept {
    return and_not(t, leading_ones_halves(k0, k1));
}

// Each byte times 10 or 1 (a digit times 10 fits a byte), then pairwise widening adds (uaddlp): the
// pairs in 16-bit lanes; the same by 100 and 1 (9,900 fits 16 bits) for the quads in 32-bit lanes,
// by 10,000 and 1 for the eights in 64-bit lanes. Six instructions a piece (with widening
// multiplies and pairwise adds, nine).
inline uint64x2_t piece_words(uint8x16_t t) noexcept {
    const uint8x16_t ten_one = vreinterpretq_u8_u16(vdupq_n_u16(0x010a));
    const uint16x8_t hundred_one = vreinterpretq_u16_u32(vdupq_n_u32(0x00010064));
    const uint32x4_t ten_thousand_one = vreinterpretq_u32_u64(vdupq_n_u64(0x0000000100002710ull));
    const uint16x8_t pairs = vpaddlq_u8(vmulq_u8(t, ten_one));
    const uint32x4_t quads = vpaddlq_u16(vmulq_u16(pairs, hundred_one));
    return vpaddlq_u32(vmulq_u32(quads, ten_thousand_one));
}
inline text64 digit_words(text64 t) noexcept {
    text64 r;
    TENSORB64_EACH_PIECE(r, k, vreinterpretq_u8_u64(piece_words(t.v.val[k])));
    return r;
}

inline u64x even_words(text64 t) noexcept {
    return {{vuzp1q_u64(vreinterpretq_u64_u8(t.v.val[0]), vreinterpretq_u64_u8(t.v.val[1])),
             vuzp1q_u64(vreinterpretq_u64_u8(t.v.val[2]), vreinterpretq_u64_u8(t.v.val[3]))}};
}
inline u64x odd_words(text64 t) noexcept {
    return {{vuzp2q_u64(vreinterpretq_u64_u8(t.v.val[0]), vreinterpretq_u64_u8(t.v.val[1])),
             vuzp2q_u64(vreinterpretq_u64_u8(t.v.val[2]), vreinterpretq_u64_u8(t.v.val[3]))}};
}
// Half n is pieces 2n and 2n + 1 of its text64: words [0, 1] and [2, 3].
inline void half_columns(const text64* t, u64x columns[4]) noexcept {
    for (int h = 0; h < 2; ++h) {
        const uint64x2_t a0 = vreinterpretq_u64_u8(t[h].v.val[0]);
        const uint64x2_t a1 = vreinterpretq_u64_u8(t[h].v.val[1]);
        const uint64x2_t b0 = vreinterpretq_u64_u8(t[h].v.val[2]);
        const uint64x2_t b1 = vreinterpretq_u64_u8(t[h].v.val[3]);
        columns[0].v[h] = vzip1q_u64(a0, b0);
        columns[1].v[h] = vzip2q_u64(a0, b0);
        columns[2].v[h] = vzip1q_u64(a1, b1);
        columns[3].v[h] = vzip2q_u64(a1, b1);
    }
}

// Eight 8-byte pieces, each packed by tbl from kCompress's control for its byte of `keep`.
inline std::size_t compress_store(char* out, text64 t, std::uint64_t keep) noexcept {
    std::size_t n = 0;
    for (int k = 0; k < 4; ++k) {
        for (int half = 0; half < 2; ++half) {
            const unsigned m = static_cast<unsigned>(keep >> (16 * k + 8 * half)) & 0xffu;
            const uint8x8_t control = vadd_u8(vld1_u8(kCompress.index[m]),
                                              vdup_n_u8(static_cast<std::uint8_t>(8 * half)));
            vst1_u8(reinterpret_cast<std::uint8_t*>(out + n), vqtbl1_u8(t.v.val[k], control));
            n += bit_count(m);
        }
    }
    return n;
}

// ---- u64x, f64x, f32x, lane_mask ----

inline u64x splat64(std::uint64_t v) noexcept { return {{vdupq_n_u64(v), vdupq_n_u64(v)}}; }
inline u64x load64(const std::uint64_t* p) noexcept { return {{vld1q_u64(p), vld1q_u64(p + 2)}}; }
inline void store64(std::uint64_t* p, u64x x) noexcept {
    vst1q_u64(p, x.v[0]);
    vst1q_u64(p + 2, x.v[1]);
}
inline u64x operator+(u64x a, u64x b) noexcept {
    return {{vaddq_u64(a.v[0], b.v[0]), vaddq_u64(a.v[1], b.v[1])}};
}
inline u64x operator-(u64x a, u64x b) noexcept {
    return {{vsubq_u64(a.v[0], b.v[0]), vsubq_u64(a.v[1], b.v[1])}};
}
inline u64x operator&(u64x a, u64x b) noexcept {
    return {{vandq_u64(a.v[0], b.v[0]), vandq_u64(a.v[1], b.v[1])}};
}
inline u64x operator|(u64x a, u64x b) noexcept {
    return {{vorrq_u64(a.v[0], b.v[0]), vorrq_u64(a.v[1], b.v[1])}};
}
inline u64x operator^(u64x a, u64x b) noexcept {
    return {{veorq_u64(a.v[0], b.v[0]), veorq_u64(a.v[1], b.v[1])}};
}
template <int n>
inline u64x shift_left(u64x a) noexcept {
    return {{vshlq_n_u64(a.v[0], n), vshlq_n_u64(a.v[1], n)}};
}
template <int n>
inline u64x shift_right(u64x a) noexcept {
    return {{vshrq_n_u64(a.v[0], n), vshrq_n_u64(a.v[1], n)}};
}
// ushl shifts by the count's low byte taken as signed: counts 64..127 give 0, as required.
inline u64x shift_left_var(u64x a, u64x counts) noexcept {
    return {{vshlq_u64(a.v[0], vreinterpretq_s64_u64(counts.v[0])),
             vshlq_u64(a.v[1], vreinterpretq_s64_u64(counts.v[1]))}};
}
// ushl by the negated counts (a right shift): counts 64..127 give 0, as required.
inline u64x shift_right_var(u64x a, u64x counts) noexcept {
    return {{vshlq_u64(a.v[0], vnegq_s64(vreinterpretq_s64_u64(counts.v[0]))),
             vshlq_u64(a.v[1], vnegq_s64(vreinterpretq_s64_u64(counts.v[1])))}};
}
inline u64x mul_low32(u64x a, u64x b) noexcept {
    return {{vmull_u32(vmovn_u64(a.v[0]), vmovn_u64(b.v[0])),
             vmull_u32(vmovn_u64(a.v[1]), vmovn_u64(b.v[1]))}};
}

// No 64 x 64-bit vector multiply: each lane's in the scalar unit (mul, umulh).
inline uint64x2_t lanes_of(std::uint64_t a, std::uint64_t b) noexcept {
    return vcombine_u64(vcreate_u64(a), vcreate_u64(b));
}
inline u64x mul_low(u64x a, u64x b) noexcept {
    u64x r;
    for (int h = 0; h < 2; ++h) {
        r.v[h] = lanes_of(vgetq_lane_u64(a.v[h], 0) * vgetq_lane_u64(b.v[h], 0),
                          vgetq_lane_u64(a.v[h], 1) * vgetq_lane_u64(b.v[h], 1));
    }
    return r;
}
inline u64x mul_high(u64x a, u64x b) noexcept {
    u64x r;
    for (int h = 0; h < 2; ++h) {
        r.v[h] =
            lanes_of(integer_math::mul_high(vgetq_lane_u64(a.v[h], 0), vgetq_lane_u64(b.v[h], 0)),
                     integer_math::mul_high(vgetq_lane_u64(a.v[h], 1), vgetq_lane_u64(b.v[h], 1)));
    }
    return r;
}
inline void mul_wide(u64x a, u64x b, u64x* high, u64x* low) noexcept {
    for (int h = 0; h < 2; ++h) {
        const std::uint64_t a0 = vgetq_lane_u64(a.v[h], 0), a1 = vgetq_lane_u64(a.v[h], 1);
        const std::uint64_t b0 = vgetq_lane_u64(b.v[h], 0), b1 = vgetq_lane_u64(b.v[h], 1);
        high->v[h] = lanes_of(integer_math::mul_high(a0, b0), integer_math::mul_high(a1, b1));
        low->v[h] = lanes_of(a0 * b0, a1 * b1);
    }
}

inline lane_mask eq(u64x a, u64x b) noexcept {
    return {{vceqq_u64(a.v[0], b.v[0]), vceqq_u64(a.v[1], b.v[1])}};
}
inline lane_mask greater(u64x a, u64x b) noexcept {
    return {{vcgtq_u64(a.v[0], b.v[0]), vcgtq_u64(a.v[1], b.v[1])}};
}
inline lane_mask operator&(lane_mask a, lane_mask b) noexcept {
    return {{vandq_u64(a.v[0], b.v[0]), vandq_u64(a.v[1], b.v[1])}};
}
inline lane_mask operator|(lane_mask a, lane_mask b) noexcept {
    return {{vorrq_u64(a.v[0], b.v[0]), vorrq_u64(a.v[1], b.v[1])}};
}
inline lane_mask operator^(lane_mask a, lane_mask b) noexcept {
    return {{veorq_u64(a.v[0], b.v[0]), veorq_u64(a.v[1], b.v[1])}};
}
inline lane_mask and_not(lane_mask a, lane_mask b) noexcept {
    return {{vbicq_u64(a.v[0], b.v[0]), vbicq_u64(a.v[1], b.v[1])}};
}
inline u64x select(lane_mask m, u64x a, u64x b) noexcept {
    return {{vbslq_u64(m.v[0], a.v[0], b.v[0]), vbslq_u64(m.v[1], a.v[1], b.v[1])}};
}
inline f64x select(lane_mask m, f64x a, f64x b) noexcept {
    return {{vbslq_f64(m.v[0], a.v[0], b.v[0]), vbslq_f64(m.v[1], a.v[1], b.v[1])}};
}
// Each lane keeps its bit (1, 2 | 4, 8), summed across.
inline unsigned mask_bits(lane_mask m) noexcept {
    static const std::uint64_t bit[4] = {1, 2, 4, 8};
    const uint64x2_t both =
        vorrq_u64(vandq_u64(m.v[0], vld1q_u64(bit)), vandq_u64(m.v[1], vld1q_u64(bit + 2)));
    return static_cast<unsigned>(vaddvq_u64(both));
}
inline lane_mask mask_of_bits(unsigned bits) noexcept {
    static const std::uint64_t bit[4] = {1, 2, 4, 8};
    const uint64x2_t all = vdupq_n_u64(bits);
    return {{vtstq_u64(all, vld1q_u64(bit)), vtstq_u64(all, vld1q_u64(bit + 2))}};
}

// The eight bytes widened three times (to 16, 32, then 64 bits).
inline u64x widen_bytes(std::uint64_t bytes) noexcept {
    const uint32x4_t quads = vmovl_u16(vget_low_u16(vmovl_u8(vcreate_u8(bytes))));
    return {{vmovl_u32(vget_low_u32(quads)), vmovl_high_u32(quads)}};
}

// Each lane's index to the scalar unit, its entry loaded there.
inline u64x lookup24(const std::uint64_t* table, u64x index) noexcept {
    return {{lanes_of(table[vgetq_lane_u64(index.v[0], 0)], table[vgetq_lane_u64(index.v[0], 1)]),
             lanes_of(table[vgetq_lane_u64(index.v[1], 0)], table[vgetq_lane_u64(index.v[1], 1)])}};
}
inline f64x lookup24(const double* table, u64x index) noexcept {
    f64x r;
    for (int h = 0; h < 2; ++h) {
        r.v[h] = vcombine_f64(vld1_f64(table + vgetq_lane_u64(index.v[h], 0)),
                              vld1_f64(table + vgetq_lane_u64(index.v[h], 1)));
    }
    return r;
}

inline f64x to_f64(u64x x) noexcept { return {{vcvtq_f64_u64(x.v[0]), vcvtq_f64_u64(x.v[1])}}; }

// No 64-bit clz: the 32-bit halves' counts, the low one's added where the high half is zero.
inline u64x leading_zeros(u64x x) noexcept {
    u64x r;
    const uint64x2_t thirty_two = vdupq_n_u64(32);
    for (int h = 0; h < 2; ++h) {
        const uint64x2_t counts = vreinterpretq_u64_u32(vclzq_u32(vreinterpretq_u32_u64(x.v[h])));
        const uint64x2_t high = vshrq_n_u64(counts, 32);
        const uint64x2_t low = vandq_u64(counts, vdupq_n_u64(0xffffffffu));
        r.v[h] = vaddq_u64(high, vandq_u64(low, vceqq_u64(high, thirty_two)));
    }
    return r;
}

inline f64x with_signs(f64x x, unsigned bits) noexcept {
    const lane_mask m = mask_of_bits(bits);
    const uint64x2_t sign = vdupq_n_u64(0x8000000000000000ull);
    return {
        {vreinterpretq_f64_u64(vorrq_u64(vreinterpretq_u64_f64(x.v[0]), vandq_u64(m.v[0], sign))),
         vreinterpretq_f64_u64(vorrq_u64(vreinterpretq_u64_f64(x.v[1]), vandq_u64(m.v[1], sign)))}};
}
inline u64x as_bits(f64x x) noexcept {
    return {{vreinterpretq_u64_f64(x.v[0]), vreinterpretq_u64_f64(x.v[1])}};
}
inline f64x as_f64(u64x x) noexcept {
    return {{vreinterpretq_f64_u64(x.v[0]), vreinterpretq_f64_u64(x.v[1])}};
}
inline f64x operator/(f64x a, f64x b) noexcept {
    return {{vdivq_f64(a.v[0], b.v[0]), vdivq_f64(a.v[1], b.v[1])}};
}
inline f32x narrow(f64x x) noexcept { return {vcvt_high_f32_f64(vcvt_f32_f64(x.v[0]), x.v[1])}; }
inline void store32(float* p, f32x x, std::size_t n) noexcept {
    if (n >= 4) {
        vst1q_f32(p, x.v);
    } else {
        float lanes[4];
        vst1q_f32(lanes, x.v);
        for (std::size_t i = 0; i < n; ++i) p[i] = lanes[i];
    }
}
inline void store64(double* p, f64x x, std::size_t n) noexcept {
    if (n >= 4) {
        vst1q_f64(p, x.v[0]);
        vst1q_f64(p + 2, x.v[1]);
    } else {
        double lanes[4];
        vst1q_f64(lanes, x.v[0]);
        vst1q_f64(lanes + 2, x.v[1]);
        for (std::size_t i = 0; i < n; ++i) p[i] = lanes[i];
    }
}

inline text64 pieces_of(lane_mask m) noexcept {
    text64 r;
    r.v.val[0] = vreinterpretq_u8_u64(vdupq_laneq_u64(m.v[0], 0));
    r.v.val[1] = vreinterpretq_u8_u64(vdupq_laneq_u64(m.v[0], 1));
    r.v.val[2] = vreinterpretq_u8_u64(vdupq_laneq_u64(m.v[1], 0));
    r.v.val[3] = vreinterpretq_u8_u64(vdupq_laneq_u64(m.v[1], 1));
    return r;
}

// ---- u32x ----

inline u32x splat32(std::uint32_t v) noexcept { return {{vdupq_n_u32(v), vdupq_n_u32(v)}}; }
inline u32x load32(const std::uint32_t* p) noexcept { return {{vld1q_u32(p), vld1q_u32(p + 4)}}; }
inline void store32x(std::uint32_t* p, u32x x) noexcept {
    vst1q_u32(p, x.v[0]);
    vst1q_u32(p + 4, x.v[1]);
}
inline u32x operator+(u32x a, u32x b) noexcept {
    return {{vaddq_u32(a.v[0], b.v[0]), vaddq_u32(a.v[1], b.v[1])}};
}
inline u32x operator-(u32x a, u32x b) noexcept {
    return {{vsubq_u32(a.v[0], b.v[0]), vsubq_u32(a.v[1], b.v[1])}};
}
inline u32x operator&(u32x a, u32x b) noexcept {
    return {{vandq_u32(a.v[0], b.v[0]), vandq_u32(a.v[1], b.v[1])}};
}
inline u32x operator|(u32x a, u32x b) noexcept {
    return {{vorrq_u32(a.v[0], b.v[0]), vorrq_u32(a.v[1], b.v[1])}};
}
template <int n>
inline u32x shift_left32(u32x a) noexcept {
    return {{vshlq_n_u32(a.v[0], n), vshlq_n_u32(a.v[1], n)}};
}
template <int n>
inline u32x shift_right32(u32x a) noexcept {
    return {{vshrq_n_u32(a.v[0], n), vshrq_n_u32(a.v[1], n)}};
}
inline u32x mul_lo32(u32x a, u32x b) noexcept {
    return {{vmulq_u32(a.v[0], b.v[0]), vmulq_u32(a.v[1], b.v[1])}};
}
inline u32x operator^(u32x a, u32x b) noexcept {
    return {{veorq_u32(a.v[0], b.v[0]), veorq_u32(a.v[1], b.v[1])}};
}
inline u32x and_not(u32x a, u32x b) noexcept {
    return {{vbicq_u32(a.v[0], b.v[0]), vbicq_u32(a.v[1], b.v[1])}};
}
template <int n>
inline u32x shift_right_signed32(u32x a) noexcept {
    return {{vreinterpretq_u32_s32(vshrq_n_s32(vreinterpretq_s32_u32(a.v[0]), n)),
             vreinterpretq_u32_s32(vshrq_n_s32(vreinterpretq_s32_u32(a.v[1]), n))}};
}
// ushl shifts by the count's low byte taken as signed: counts 32..127 give 0, as required.
inline u32x shift_left32_var(u32x a, u32x counts) noexcept {
    return {{vshlq_u32(a.v[0], vreinterpretq_s32_u32(counts.v[0])),
             vshlq_u32(a.v[1], vreinterpretq_s32_u32(counts.v[1]))}};
}
// ushl by the negated counts (a right shift): counts 32..127 give 0, as required.
inline u32x shift_right32_var(u32x a, u32x counts) noexcept {
    return {{vshlq_u32(a.v[0], vnegq_s32(vreinterpretq_s32_u32(counts.v[0]))),
             vshlq_u32(a.v[1], vnegq_s32(vreinterpretq_s32_u32(counts.v[1])))}};
}
// umull, umull2 and the high halves taken by uzp2.
inline u32x mul_high32(u32x a, u32x b) noexcept {
    u32x r;
    for (int h = 0; h < 2; ++h) {
        r.v[h] =
            vuzp2q_u32(vreinterpretq_u32_u64(vmull_u32(vget_low_u32(a.v[h]), vget_low_u32(b.v[h]))),
                       vreinterpretq_u32_u64(vmull_high_u32(a.v[h], b.v[h])));
    }
    return r;
}
inline u32x mul_lo16(u32x a, u32x b) noexcept {
    return {{vreinterpretq_u32_u16(
                 vmulq_u16(vreinterpretq_u16_u32(a.v[0]), vreinterpretq_u16_u32(b.v[0]))),
             vreinterpretq_u32_u16(
                 vmulq_u16(vreinterpretq_u16_u32(a.v[1]), vreinterpretq_u16_u32(b.v[1])))}};
}
template <int n>
inline u32x shift_right16(u32x a) noexcept {
    return {{vreinterpretq_u32_u16(vshrq_n_u16(vreinterpretq_u16_u32(a.v[0]), n)),
             vreinterpretq_u32_u16(vshrq_n_u16(vreinterpretq_u16_u32(a.v[1]), n))}};
}
// (39 - clz) / 8: clz of zero is 32.
inline u32x byte_length32(u32x a) noexcept {
    const uint32x4_t bias = vdupq_n_u32(39);
    return {{vshrq_n_u32(vsubq_u32(bias, vclzq_u32(a.v[0])), 3),
             vshrq_n_u32(vsubq_u32(bias, vclzq_u32(a.v[1])), 3)}};
}
// tbl over the table's 64 bytes, each lane's four byte indices 4 index + 0..3 made by one mla.
inline u32x lookup16_32(const std::uint32_t* table, u32x index) noexcept {
    const uint8x16x4_t t = vld1q_u8_x4(reinterpret_cast<const std::uint8_t*>(table));
    const uint32x4_t bytes = vdupq_n_u32(0x03020100u);
    u32x r;
    for (int h = 0; h < 2; ++h) {
        const uint8x16_t at = vreinterpretq_u8_u32(vmlaq_n_u32(bytes, index.v[h], 0x04040404u));
        r.v[h] = vreinterpretq_u32_u8(vqtbl4q_u8(t, at));
    }
    return r;
}
// first: lanes 0..3, second: lanes 4..7.
inline void widen32(u32x a, u64x* first, u64x* second) noexcept {
    first->v[0] = vmovl_u32(vget_low_u32(a.v[0]));
    first->v[1] = vmovl_high_u32(a.v[0]);
    second->v[0] = vmovl_u32(vget_low_u32(a.v[1]));
    second->v[1] = vmovl_high_u32(a.v[1]);
}
inline u32x narrow32(u64x first, u64x second) noexcept {
    return {{vuzp1q_u32(vreinterpretq_u32_u64(first.v[0]), vreinterpretq_u32_u64(first.v[1])),
             vuzp1q_u32(vreinterpretq_u32_u64(second.v[0]), vreinterpretq_u32_u64(second.v[1]))}};
}
inline void mul_wide32(u32x a, u32x b, u64x* first, u64x* second) noexcept {
    first->v[0] = vmull_u32(vget_low_u32(a.v[0]), vget_low_u32(b.v[0]));
    first->v[1] = vmull_high_u32(a.v[0], b.v[0]);
    second->v[0] = vmull_u32(vget_low_u32(a.v[1]), vget_low_u32(b.v[1]));
    second->v[1] = vmull_high_u32(a.v[1], b.v[1]);
}
inline void zip32(u32x a, u32x b, u64x* first, u64x* second) noexcept {
    first->v[0] = vreinterpretq_u64_u32(vzip1q_u32(a.v[0], b.v[0]));
    first->v[1] = vreinterpretq_u64_u32(vzip2q_u32(a.v[0], b.v[0]));
    second->v[0] = vreinterpretq_u64_u32(vzip1q_u32(a.v[1], b.v[1]));
    second->v[1] = vreinterpretq_u64_u32(vzip2q_u32(a.v[1], b.v[1]));
}
inline u32x unzip_low32(u64x first, u64x second) noexcept {
    return {{vuzp1q_u32(vreinterpretq_u32_u64(first.v[0]), vreinterpretq_u32_u64(first.v[1])),
             vuzp1q_u32(vreinterpretq_u32_u64(second.v[0]), vreinterpretq_u32_u64(second.v[1]))}};
}
inline u32x as_u32(u64x a) noexcept {
    return {{vreinterpretq_u32_u64(a.v[0]), vreinterpretq_u32_u64(a.v[1])}};
}
inline u64x as_u64(u32x a) noexcept {
    return {{vreinterpretq_u64_u32(a.v[0]), vreinterpretq_u64_u32(a.v[1])}};
}
// The halves' lengths (byte_length32), the upper one's counted from byte 4 where it has any.
inline u64x byte_length64(u64x a) noexcept {
    const u64x lengths = as_u64(byte_length32(as_u32(a)));
    const u64x high = shift_right<32>(lengths);
    return select(eq(high, splat64(0)), lengths & splat64(0xffffffffu), high + splat64(4));
}

inline mask32 eq32(u32x a, u32x b) noexcept {
    return {{vceqq_u32(a.v[0], b.v[0]), vceqq_u32(a.v[1], b.v[1])}};
}
inline mask32 greater32(u32x a, u32x b) noexcept {
    return {{vcgtq_u32(a.v[0], b.v[0]), vcgtq_u32(a.v[1], b.v[1])}};
}
inline mask32 greater_signed32(u32x a, u32x b) noexcept {
    return {{vcgtq_s32(vreinterpretq_s32_u32(a.v[0]), vreinterpretq_s32_u32(b.v[0])),
             vcgtq_s32(vreinterpretq_s32_u32(a.v[1]), vreinterpretq_s32_u32(b.v[1]))}};
}
inline mask32 operator&(mask32 a, mask32 b) noexcept {
    return {{vandq_u32(a.v[0], b.v[0]), vandq_u32(a.v[1], b.v[1])}};
}
inline mask32 operator|(mask32 a, mask32 b) noexcept {
    return {{vorrq_u32(a.v[0], b.v[0]), vorrq_u32(a.v[1], b.v[1])}};
}
inline mask32 operator^(mask32 a, mask32 b) noexcept {
    return {{veorq_u32(a.v[0], b.v[0]), veorq_u32(a.v[1], b.v[1])}};
}
inline mask32 and_not(mask32 a, mask32 b) noexcept {
    return {{vbicq_u32(a.v[0], b.v[0]), vbicq_u32(a.v[1], b.v[1])}};
}
inline u32x select32(mask32 m, u32x a, u32x b) noexcept {
    return {{vbslq_u32(m.v[0], a.v[0], b.v[0]), vbslq_u32(m.v[1], a.v[1], b.v[1])}};
}
inline u32x where32(mask32 m, u32x a) noexcept {
    return {{vandq_u32(m.v[0], a.v[0]), vandq_u32(m.v[1], a.v[1])}};
}
inline unsigned mask_bits32(mask32 m) noexcept {
    const uint32x4_t bit = {1, 2, 4, 8};
    return vaddvq_u32(vandq_u32(m.v[0], bit)) | vaddvq_u32(vandq_u32(m.v[1], bit)) << 4;
}
inline bool any32(mask32 m) noexcept { return vmaxvq_u32(vorrq_u32(m.v[0], m.v[1])) != 0; }
inline bool all32(mask32 m) noexcept { return vminvq_u32(vandq_u32(m.v[0], m.v[1])) != 0; }
// st2: the lanes of a and b interleaved as they are stored.
inline void store_zip32(std::uint64_t* p, u32x a, u32x b) noexcept {
    auto* q = reinterpret_cast<std::uint32_t*>(p);
    vst2q_u32(q, (uint32x4x2_t{{a.v[0], b.v[0]}}));
    vst2q_u32(q + 8, (uint32x4x2_t{{a.v[1], b.v[1]}}));
}

#undef TENSORB64_EACH_PIECE

}  // namespace neon
}  // namespace tensorb64

#endif
