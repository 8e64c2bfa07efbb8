// The AVX-512 level's layout of sixteen texts below 1 from their digits: each text picked out of a
// fixed template by a byte mask and packed by vpcompressb (AVX512_VBMI2). The level's texts of the
// generic writers' groups (levels/generic/float_text_writers.hpp): shortest and repr. Included by
// float_text.cpp.
#pragma once

#include "levels/avx512/float_text_lanes.hpp"

namespace tensorb64 {
namespace {

// The templates every text below 1 is a subsequence of, a slot of 16 bytes (shortest: 8 digits
// after the first) or 32 (repr: 16), as byte indices into the two tables of a vpermt2b: the
// first the digits after the first of 64 / TailDigits values, the second kTemplateBytes with the
// first digits (bytes 0..15) and two exponent digits a value (32..63) put in.
//   fixed:      - 0 . 0 0 0 d1 d2 ... ,          ("-0.000ddd,", zeros and digits as needed)
//   scientific: - d1 . d2 ... e - x1 x2 ,         ("-d.ddde-xx,", the '.' only with n > 1)
namespace text_template {
constexpr int kLead = 64, kMinus = 80, kZero = 81, kPoint = 82, kComma = 83, kE = 84,
              kExponent = 96;
// The byte index of slot byte p for value v (0..15), fixed or scientific, W = TailDigits.
constexpr unsigned char fixed_byte(int w, int v, int p) {
    const int tail = w * (v % (64 / w));
    return static_cast<unsigned char>(p == 0      ? kMinus
                                      : p == 1    ? kZero
                                      : p == 2    ? kPoint
                                      : p < 6     ? kZero
                                      : p == 6    ? kLead + v
                                      : p < 7 + w ? tail + p - 7
                                                  : kComma);
}
constexpr unsigned char scientific_byte(int w, int v, int p) {
    const int tail = w * (v % (64 / w));
    return static_cast<unsigned char>(p == 0       ? kMinus
                                      : p == 1     ? kLead + v
                                      : p == 2     ? kPoint
                                      : p < 3 + w  ? tail + p - 3
                                      : p == 3 + w ? kE
                                      : p == 4 + w ? kMinus
                                      : p == 5 + w ? kExponent + 2 * v
                                      : p == 6 + w ? kExponent + 2 * v + 1
                                                   : kComma);
}
template <int TailDigits>
struct tables {
    static constexpr int kSlot = TailDigits == 8 ? 16 : 32;
    static constexpr int kVectors = 16 * kSlot / 64;  // output vectors for sixteen values
    alignas(64) unsigned char fixed[kVectors][64];
    alignas(64) unsigned char scientific[kVectors][64];
};
template <int TailDigits>
constexpr tables<TailDigits> make_tables() {
    tables<TailDigits> t{};
    constexpr int slot = tables<TailDigits>::kSlot;
    for (int v = 0; v < 16; ++v) {
        for (int p = 0; p < slot; ++p) {
            t.fixed[v * slot / 64][v * slot % 64 + p] = fixed_byte(TailDigits, v, p);
            t.scientific[v * slot / 64][v * slot % 64 + p] = scientific_byte(TailDigits, v, p);
        }
    }
    return t;
}
template <int TailDigits>
constexpr tables<TailDigits> kTables = make_tables<TailDigits>();
}  // namespace text_template
// The second table's fixed part: the punctuation at 16..20.
alignas(64) constexpr unsigned char kTemplateBytes[64] = {0, 0, 0, 0, 0, 0,   0,   0,   0,   0,  0,
                                                          0, 0, 0, 0, 0, '-', '0', '.', ',', 'e'};

// Sixteen texts of values below 1 (m of them real: the rest get no bytes), each followed by a
// ',', from their digits: `tails` the digits after the first as bytes 0..9 in string order,
// TailDigits a value (8 or 16), 64 / TailDigits values a vector; `lead` the first digit, `n` the
// significant digits, e10 the decimal exponent, `sign` 0 or 1 (32-bit lanes). Fixed notation from
// 1e-4 (e10 >= -4), as Python's layout has it and orjson's for every value the caller gives (it
// writes those from 1e-6 or 1e-5 to 1e-4 otherwise: the template holds three zeros after the
// point); below, exponents of two digits at least, or with ShortExponent of as many as they have
// (orjson's). Writes at most 4 (16-byte slots) or 8 (32-byte) 64-byte stores, each at the end of
// the texts before it, or with m < 16 nothing past the texts.
template <int TailDigits, bool ShortExponent>
TENSORB64_ALWAYS_INLINE char* write_texts_x16(const __m512i* tails, __m512i lead, __m512i e10,
                                              __m512i n, __m512i sign, std::size_t m,
                                              char* out) noexcept {
    using table = text_template::tables<TailDigits>;
    constexpr int comma_bit = 7 + TailDigits;  // in both templates
    const __mmask16 scientific = _mm512_cmplt_epi32_mask(e10, c32<(-4)>());
    const __m512i one = c32<(1)>();
    const __m512i exponent = _mm512_sub_epi32(_mm512_setzero_si512(), e10);  // -e10
    // Each value's byte mask over its slot (bit p: slot byte p is in the text). Fixed: '-', "0.",
    // the zeros after the point, the digits (from bit 6), ','.
    const __m512i zeros = _mm512_sub_epi32(exponent, one);
    const __m512i fixed_mask = _mm512_add_epi32(
        _mm512_add_epi32(_mm512_sllv_epi32(c32<(8)>(), zeros), _mm512_sllv_epi32(c32<(64)>(), n)),
        _mm512_add_epi32(sign, c32<((1u << comma_bit) + 6 - 72)>()));
    __m512i masks = fixed_mask;
    const __m128i leads = _mm512_cvtepi32_epi8(_mm512_add_epi32(lead, c32<('0')>()));
    __m512i table2 = _mm512_inserti32x4(_mm512_load_si512(kTemplateBytes), leads, 0);
    const unsigned scientific_bits = scientific;
    if (scientific_bits != 0) {  // rare in embeddings (|x| < 1e-4)
        // Scientific: '-', d1, the '.' and digits 2..n (bits 2..n+1, none for n = 1), "e-xx,".
        const __m512i dot_digits = _mm512_sub_epi32(_mm512_sllv_epi32(c32<(4)>(), n), c32<(4)>());
        const __m512i short_exponent =
            ShortExponent ? _mm512_maskz_mov_epi32(_mm512_cmplt_epi32_mask(exponent, c32<(10)>()),
                                                   c32<(1u << (5 + TailDigits))>())
                          : _mm512_setzero_si512();
        __m512i scientific_mask =
            _mm512_sub_epi32(_mm512_add_epi32(_mm512_add_epi32(dot_digits, sign),
                                              c32<((0x1fu << (3 + TailDigits)) | 2)>()),
                             short_exponent);
        scientific_mask = _mm512_mask_sub_epi32(scientific_mask, _mm512_cmpeq_epi32_mask(n, one),
                                                scientific_mask, c32<(4)>());
        masks = _mm512_mask_mov_epi32(masks, scientific, scientific_mask);
        // The exponent's digits (x1 x2 = -e10 / 10, -e10 % 10) as two ASCII bytes.
        const __m512i tens = _mm512_srli_epi32(_mm512_mullo_epi32(exponent, c32<(205)>()), 11);
        const __m512i exponent_digits =
            _mm512_sub_epi32(_mm512_add_epi32(_mm512_slli_epi32(exponent, 8), c32<(0x3030)>()),
                             _mm512_mullo_epi32(tens, c32<(2559)>()));
        table2 = _mm512_inserti64x4(table2, _mm512_cvtepi32_epi16(exponent_digits), 1);
    }
    masks = _mm512_maskz_mov_epi32(static_cast<__mmask16>((1u << m) - 1), masks);
    alignas(64) std::uint64_t byte_masks[table::kVectors];
    if (table::kSlot == 16) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(byte_masks), _mm512_cvtepi32_epi16(masks));
    } else {
        _mm512_store_si512(byte_masks, masks);
    }
    constexpr int per_vector = 64 / table::kSlot;  // values a vector
    __m512i digits[TailDigits / 4];
    for (int i = 0; i < TailDigits / 4; ++i)
        digits[i] = _mm512_or_si512(tails[i], c32<(0x30303030u)>());
    for (int j = 0; j < table::kVectors; ++j) {
        __m512i index = _mm512_load_si512(text_template::kTables<TailDigits>.fixed[j]);
        if (scientific_bits != 0) {
            // The scientific template for the slots (kSlot / 4 dwords each) whose value needs it.
            const unsigned value_bits =
                (scientific_bits >> (per_vector * j)) & ((1u << per_vector) - 1);
            const __mmask16 slots =
                static_cast<__mmask16>(table::kSlot == 16 ? _pdep_u32(value_bits, 0x1111u) * 0xfu
                                                          : _pdep_u32(value_bits, 0x0101u) * 0xffu);
            index = _mm512_mask_mov_epi32(
                index, slots, _mm512_load_si512(text_template::kTables<TailDigits>.scientific[j]));
        }
        const __m512i text = _mm512_maskz_compress_epi8(
            byte_masks[j],
            _mm512_permutex2var_epi8(digits[j * per_vector * TailDigits / 64], index, table2));
        const std::size_t length = static_cast<std::size_t>(_mm_popcnt_u64(byte_masks[j]));
        if (m == 16) {
            _mm512_storeu_si512(out, text);
        } else {
            _mm512_mask_storeu_epi8(
                out, _bzhi_u64(~std::uint64_t{0}, static_cast<unsigned>(length)), text);
        }
        out += length;
    }
    return out;
}

}  // namespace
}  // namespace tensorb64
