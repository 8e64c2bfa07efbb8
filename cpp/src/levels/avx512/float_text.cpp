// The AVX-512 level's float-text block writers: the generic writers
// (levels/generic/float_text_*.hpp) over the level's vocabulary, sixteen values a group, with the
// level's own texts and other groups: each group's texts picked out of a fixed template by a byte
// mask and packed by vpcompressb (float_text_templates.hpp; orjson's fixed texts from 1e-6 or 1e-5
// to 1e-4, past the template, by the generic texts), and the groups the sixteen lanes do not take
// by the eight-lane Schubfach in 64-bit lanes (float_text_x8.hpp), which writes float64 groups that
// are not float32 values widened too.
//
// The 64x64 -> 128-bit products are built from vpmuludq's 32x32 -> 64 (AVX-512F); IFMA's 52-bit
// multiplies would need a feature bit (AVX512_IFMA52) the avx512 level does not require. The
// integer-to-float conversions used to find bit lengths round toward zero by their encoding, so
// neither the caller's rounding mode nor FTZ/DAZ changes a digit (core_tests checks under both).
//
// Compiled where the build gives levels/avx512/ its flags (x86-64: cpp/CMakeLists.txt); to nothing
// elsewhere.
#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_AVX512
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "float_text/float_text.hpp"
#include "levels/avx512/avx512.hpp"
#include "levels/avx512/float_text_templates.hpp"
#include "levels/avx512/float_text_x8.hpp"
#include "levels/avx512/vocabulary.hpp"

namespace tensorb64 {
namespace avx512 {
namespace {
// In this order: each uses what the ones before it define.
#include "levels/generic/float_text_shortest.hpp"

#include "levels/generic/float_text_repr.hpp"

#include "levels/generic/float_text_texts.hpp"

#include "levels/generic/float_text_writers.hpp"

struct avx512_policy : generic_policy {
    // Whether any lane's e10 lies from Text's fixed notation's least to -5: orjson's texts the
    // template does not hold.
    template <class Text>
    static bool past_template(u32x e10) noexcept {
        return Text::kFixedMin < -4 &&
               any32(
                   greater_signed32(splat32(static_cast<std::uint32_t>(-4)), e10) &
                   greater_signed32(e10, splat32(static_cast<std::uint32_t>(Text::kFixedMin - 1))));
    }
    // The template's texts: Quads * 4 digits after the first a value, as write_texts_x16 takes
    // them (shortest: values 0..7 and 8..15, eight bytes a value; repr: value 4 j + i at bytes
    // 16 i .. 16 i + 15 of tails[j]).
    template <class Text, int Quads, class Other>
    TENSORB64_ALWAYS_INLINE static char* texts(const decimal_lanes<Quads>& d, u32x raw,
                                               std::size_t m, char* out, Other other) noexcept {
        if (past_template<Text>(d.e10)) return generic_policy::texts<Text>(d, raw, m, out, other);
        __m512i tails[Quads];
        u64x first[2];
        zip32(d.quads[0], d.quads[1], &first[0], &first[1]);
        if constexpr (Quads == 2) {
            tails[0] = first[0].v;
            tails[1] = first[1].v;
        } else {
            u64x second[2];
            zip32(d.quads[2], d.quads[3], &second[0], &second[1]);
            for (int h = 0; h < 2; ++h) {
                tails[2 * h] = _mm512_permutex2var_epi64(
                    first[h].v, _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11), second[h].v);
                tails[2 * h + 1] = _mm512_permutex2var_epi64(
                    first[h].v, _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15), second[h].v);
            }
        }
        return write_texts_x16<4 * Quads, Text::kOrjson>(tails, d.lead.v, d.e10.v, d.n.v,
                                                         _mm512_srli_epi32(raw.v, 31), m, out);
    }
    // The eight-lane Schubfach's, eight values at a time.
    template <class Text>
    static char* other_f32(const std::uint32_t* bits, std::size_t m, char* out) noexcept {
        for (std::size_t h = 0; h < m; h += 8) {
            const std::size_t mh = std::min<std::size_t>(m - h, 8);
            if (Text::kShortest) {
                out = write_shortest_group8<Text::kOrjson>(bits + h, mh, out);
            } else {
                const __m512i wide = _mm512_cvtepu32_epi64(
                    _mm256_maskz_loadu_epi32(static_cast<__mmask8>((1u << mh) - 1), bits + h));
                const __m512i mag32 = _mm512_and_si512(wide, c64<(0x7fffffffu)>());
                out = write_repr_group8(widen_magnitudes(mag32), _mm512_srli_epi64(wide, 31), mh,
                                        out);
            }
        }
        return out;
    }
    template <class Text>
    static char* other_f64(const std::uint64_t* bits, std::size_t m, char* out) noexcept {
        return write_repr_f64_block<Text::kOrjson>(bits, m, out);
    }
};
using writers = block_writers<avx512_policy>;
}  // namespace
}  // namespace avx512

extern const float_text_writers float_text_writers_avx512{
    avx512::writers::f32, avx512::writers::f64, avx512::writers::orjson_f32,
    avx512::writers::orjson_f64};

}  // namespace tensorb64

#endif
