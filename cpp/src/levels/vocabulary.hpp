// The vector vocabulary the SIMD kernels are written over: a small set of types and operations
// that each SIMD level (levels/avx2/, levels/avx512/, levels/neon/) defines in its own
// vocabulary.hpp, in a namespace of its own (tensorb64::avx2, ::avx512, ::neon), with the same
// names and the same meaning, as simdjson's simd8<T> and simd8x64<T> are defined once per
// architecture. A kernel written once over them (levels/generic/) is instantiated in each level's
// files, compiled with that level's flags; what a level does better its own way stays in its
// folder. This file holds the contract every level meets (below), and the scalar bit helpers
// every level shares.
//
// The scalar level has no vocabulary: its kernels are the reference the others are tested
// against, written straight in portable C++.
//
// ---- types ----
//
//   text64      64 bytes (simd8x64): a block of text, four 16-byte pieces or two 32-byte halves.
//               avx512: one zmm; avx2: two ymm; neon: four q registers (uint8x16x4_t, so that
//               vqtbl4q looks up 64 bytes at once).
//   u64x        kLanes64 unsigned 64-bit lanes: 8 (avx512: a zmm), 4 (avx2: a ymm; neon: two q
//               registers). A number parser's group is kLanes64 numbers.
//   f64x        kLanes64 doubles, in the same registers.
//   f32x        kLanes64 floats: what narrow(f64x) gives (avx512: a ymm; avx2, neon: an xmm / q).
//   lane_mask   one truth value per 64-bit lane (avx512: a k register; avx2: a ymm of all-ones or
//               zero lanes; neon: two q registers of the same).
//   u32x        2 * kLanes64 unsigned 32-bit lanes in a u64x's registers (the float32 writers'
//               Schubfach lanes).
//   mask32      one truth value per u32x lane (avx512: a k register; avx2: a ymm of all-ones or
//               zero lanes; neon: two q registers of the same).
//
// ---- operations, and what each costs ----
//
// Costs: instructions on the level's hot path, counted in GCC 12's -O2 code (clang 14's is within
// a few), constants (splats, tables' addresses) hoisted out of the loop as they are there. Where a
// level has no instruction for an operation it is built from others, and its cost says so.
//
//   text64                                              avx512   avx2   neon
//   load(p) / store(p, t)                               1        2      4        (no alignment)
//   load_pieces(p0, p1, p2, p3): 16 bytes from each     4        4      4
//   load_halves(p0, p1): 32 bytes from each             2        2      4
//   splat8(c)                                           (a constant)
//   add8 / sub8 (bytes, wrapping); &, |, ^; and_not(a, b) = a & ~b
//                                                       1        2      4
//   splat_words(v): every 8-byte word v (byte j of the text64 is byte j % 8 of v)
//                                                       1        2      4
//   less8(a, b) / greater8(a, b): byte j 0xff where a's is below / above b's (unsigned), else 0
//                                                       2        4      4
//   pieces_of(m): 16-byte piece k all 0xff where lane k of the lane_mask m is set (k < 4)
//                                                       ~4       2      4
//   eq_bits(t, c): bit j set where byte j == c          2        6      13       (a uint64_t)
//   le_bits(t, c): bit j set where byte j <= c (unsigned)
//                                                       2        8      13
//   high_bits(t): bit j set where byte j >= 0x80        2        4      13
//   any_high_bit(t): whether any byte is >= 0x80        2        3      6
//   shuffle16(table, index): in each 16-byte piece, byte j = table's byte index_j of that piece,
//     or 0 where index_j >= 0x80 (pshufb; indices 16..127 unspecified)
//                                                       1        2      4
//   permute64(table, index): byte j = table's byte index_j (indices 0..63)
//                                                       1        ~28    4
//   lookup128(table, index): byte j = table[index_j], from a 128-byte, 64-byte aligned table
//     (indices >= 128 unspecified)                      1        ~60    12
//   blend(mask, a, b): a's byte where mask's is 0xff, b's where it is 0 (other mask bytes
//     unspecified)                                      2        2      4
//   bytes_of_bits(bits): byte j 0xff where bit j is set, else 0
//                                                       2        ~10    ~10
//   leading_ones_halves(k0, k1): in half h, bytes j < k_h are 0xff, the rest 0 (k_h <= 32)
//                                                       ~8       ~6     ~6       (x86 avx2, neon:
//                                                                                 table loads)
//   blend_below(a, b, k0, k1): in half h, a's bytes j < k_h, b's from k_h on (k_h <= 32)
//                                                       ~6       ~6     ~10
//   zero_below(t, k0, k1): in half h, bytes j < k_h zeroed (k_h <= 32)
//                                                       ~6       ~6     ~10
//   digit_words(t): each byte a digit 0..9; each 8-byte word becomes the integer its bytes spell,
//     the first byte most significant (a little-endian uint64 below 10^8)
//                                                       4        10     36
//   even_words(t) / odd_words(t): words 0, 2, 4, 6 / 1, 3, 5, 7 of the eight 8-byte words, in
//     lanes 0..3 (avx512's lanes 4..7 unspecified)     1        2      2
//   half_columns(t[kLanes64 / 2], columns[4]): word i of each 32-byte half of t[0], t[1], ... into
//     columns[i], half n in lane n (a transpose: one number's window a half, one word a column)
//                                                       ~12      8      8
//   compress_store(out, t, keep): the bytes whose bit is set in `keep`, in order, written from
//     `out`; returns how many. Writes up to 64 bytes at `out` (only the first count are the
//     result): the caller keeps that room.
//                                                       3        ~40    ~40      (avx512: VBMI2)
//
//   u64x, f64x, f32x, lane_mask
//   splat64(v) / load64(p) / store64(p, x)              1        1      2
//   +, -, &, |, ^; shift_left<n>, shift_right<n>        1        1      2
//   shift_left_var(x, counts): lane << its count (a count of 64 or more gives 0)
//                                                       1        1      2
//   mul_low32(a, b): the low 32 bits of each lane times b's, a 64-bit product (vpmuludq)
//                                                       1        1      6
//   mul_low(a, b): the low 64 bits of the 64 x 64-bit product
//                                                       1 (vpmullq)  7  ~16 (mul a lane)
//   mul_wide(a, b, &high, &low): the 128-bit product's halves
//                                                       ~17      ~17    ~24 (umulh, mul a lane)
//   mul_high(a, b): its high half                       ~13      ~13    ~16 (umulh a lane)
//   eq(a, b), greater(a, b) (unsigned): a lane_mask     1        1 / 3  2
//   lane_mask &, |, and_not; select(m, a, b): a where m is set, else b (u64x or f64x)
//                                                       1        1      2
//   mask_bits(m): bit i for lane i                      1        1      ~5
//   mask_of_bits(bits): lane i set where bit i is       1        3      3
//   widen_bytes(bytes): lane i = byte i of a uint64_t (i < kLanes64)
//                                                       2        2      5
//   lookup24(table, index): table[index] per lane, for a 24-entry, 64-byte aligned table of
//     uint64_t or double (index < 24)                   3        1 (vpgatherqq)  ~10
//   leading_zeros(x): per lane (64 for a zero lane)     3        ~10    ~10
//   to_f64(x): each lane correctly rounded to a double (round to nearest: the caller runs under
//     ieee_fp_environment)                              1        4      2
//   with_signs(x, bits): x with its sign bit set in lane i where bit i of `bits` is (f64x)
//                                                       2        2      ~7
//   as_bits(f64x) -> u64x, as_f64(u64x) -> f64x         0        0      0
//   f64x / f64x (correctly rounded)                     1        1      2
//   narrow(f64x) -> f32x (correctly rounded)            1        1      2
//   store32(p, f32x, n) / store64(p, f64x, n): the first n lanes (n <= kLanes64)
//                                                       1        1 or n  1 or n
//
//   u32x, mask32 (the writers' 32-bit lanes; mask32: one truth value per 32-bit lane, a k register
//   on avx512, lanes of all ones or zero on avx2 and neon)
//   splat32, load32, store32x, +, -, &, |, ^, and_not(a, b) = a & ~b, shift_left32<n>,
//   shift_right32<n>, shift_right_signed32<n> (arithmetic), mul_lo32 (the low 32 bits of the
//   product)                                            1        1      2
//   shift_left32_var(x, counts), shift_right32_var(x, counts): lane << or >> its count (a count of
//     32 to 127 gives 0)                                1        1      2 / 4
//   mul_high32(a, b): the high 32 bits of the 64-bit product
//                                                       5        5      6
//   mul_lo16(a, b), shift_right16<n>: the same on each 16-bit half of a lane
//                                                       1        1      2
//   byte_length32(x): the bytes of x up to its highest nonzero one (0 for zero), x below 2^31
//                                                       5        5      6
//   byte_length64(x) (u64x): the same of a 64-bit lane whose every byte is below 128
//                                                       5        ~10    ~14
//   lookup16_32(table, index): table[index] per lane, for a 16-entry, 64-byte aligned table of
//     uint32_t (index < 16)                             1        4      4 (and the table's loads)
//   widen32(x, &first, &second): the lanes zero-extended into two u64x, in the level's order
//     (avx2, avx512: the even lanes, then the odd; neon: the lower half, then the upper);
//     narrow32(first, second): each 64-bit lane's low half, back in that order
//                                                       2        2      4 / 2
//   mul_wide32(a, b, &first, &second): the lanes' 64-bit products, in widen32's order
//                                                       4        4      4
//   zip32(a, b, &first, &second): 64-bit lane i is a's lane i | b's << 32, lanes 0..kLanes64 - 1
//     in first, the rest in second                      2        4      4
//   unzip_low32(first, second): the low halves of first's lanes, then of second's, in value
//     order (zip32(a, b)'s a back)                      1        3      2
//   as_u32(u64x) -> u32x, as_u64(u32x) -> u64x: the same bits (64-bit lane i = 32-bit lanes 2i,
//     2i + 1)                                           0        0      0
//   eq32(a, b), greater32(a, b) (unsigned), greater_signed32(a, b): a mask32
//                                                       1        1 (greater32: 3)  2
//   mask32 &, |, ^, and_not; select32(m, a, b): a where m is set, else b; where32(m, a): a where m
//     is set, else 0                                    1        1      2
//   mask_bits32(m): bit i for lane i                    1        1      ~6
//   any32(m), all32(m): whether any lane, every lane, is set
//                                                       1        2      3
//   store_zip32(p, a, b): zip32(a, b)'s first and second stored at p, one after the other
//                                                       4        6      2
//
//   and for the writers' 64-bit lanes: shift_right_var(x, counts) (u64x: a count of 64 to 127
//   gives 0; avx512, avx2: 1, neon: 4); lane_mask ^ (1, 1, 2)
//
// Where an operation is not in this list, a kernel does not use it in generic code; a level's
// own code (its folder) may use anything its flags allow.
#pragma once

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif

#include <cstdint>

// A kernel's helpers inlined (always) or kept out of line (a rare path that would otherwise swell
// its loop), where the compiler says how.
#if defined(__GNUC__) || defined(__clang__)
#define TENSORB64_ALWAYS_INLINE inline __attribute__((always_inline))
#define TENSORB64_NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define TENSORB64_ALWAYS_INLINE __forceinline
#define TENSORB64_NOINLINE __declspec(noinline)
#else
#define TENSORB64_ALWAYS_INLINE inline
#define TENSORB64_NOINLINE
#endif

namespace tensorb64 {
namespace {

// The index of the lowest set bit of a nonzero value (bsf / rbit + clz: no level requires BMI1).
inline unsigned lowest_bit(std::uint64_t v) noexcept {
#if defined(_MSC_VER) && !defined(__clang__)
    unsigned long index;
    _BitScanForward64(&index, v);
    return static_cast<unsigned>(index);
#else
    return static_cast<unsigned>(__builtin_ctzll(v));
#endif
}

// The number of set bits (SWAR: the x86 levels below avx512 do not require POPCNT).
inline unsigned bit_count(std::uint64_t v) noexcept {
    v -= (v >> 1) & 0x5555555555555555ull;
    v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
    v = (v + (v >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return static_cast<unsigned>((v * 0x0101010101010101ull) >> 56);
}

// A 128-byte table for lookup128 (a byte's value for each ASCII character, say).
struct byte_table128 {
    alignas(64) std::uint8_t bytes[128];
};

// The table behind leading_ones_halves on the levels that load it: the 32 bytes from
// kLeadingOnes.bytes + 32 - k have bytes j < k all ones, the rest zero (k in [0, 32]).
struct leading_ones_table {
    alignas(64) std::uint8_t bytes[64];
};
constexpr leading_ones_table make_leading_ones() {
    leading_ones_table t{};
    for (int j = 0; j < 32; ++j) t.bytes[j] = 0xff;
    return t;
}
constexpr leading_ones_table kLeadingOnes = make_leading_ones();

// compress_store's table on the levels without a compress instruction: for each 8-bit mask, the
// byte indices of its set bits in order, then zeros (a shuffle control for one 8-byte piece).
struct compress_table {
    alignas(64) std::uint8_t index[256][8];
};
constexpr compress_table make_compress_table() {
    compress_table t{};
    for (int m = 0; m < 256; ++m) {
        int k = 0;
        for (int j = 0; j < 8; ++j) {
            if (m >> j & 1) t.index[m][k++] = static_cast<std::uint8_t>(j);
        }
    }
    return t;
}
constexpr compress_table kCompress = make_compress_table();

}  // namespace
}  // namespace tensorb64
