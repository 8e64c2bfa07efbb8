// The AVX-512 row encoder (F, DQ, BW, VL and VBMI: Ice Lake, Zen 4 and later).
//
// base64: the encoder of Muła and Lemire ("Base64 encoding and decoding at almost the speed of a
// memory copy", 2019): vpermb spreads 48 input bytes over 64, vpmultishiftqb pulls out the
// 6-bit indices, and a second vpermb looks them up in the 64-character alphabet. Masked loads and
// stores handle the end of a row, so nothing past the input is ever read.
// Conversions: bfloat16 by a 16-bit shift, float16 both ways with the AVX-512F conversions,
// float64 with vcvtpd2ps, float32 -> bfloat16 in integer arithmetic (vcvtneps2bf16 would flush
// subnormals and keep NaN payloads, which torch does not). float8 narrowing stays scalar.
//
// Compiled with the AVX2 flags plus -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vbmi (or
// /arch:AVX512); everything but the entry point has internal linkage.
// Compiled where the build gives levels/avx512/ its flags (x86-64: cpp/CMakeLists.txt); to nothing
// elsewhere.
#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_AVX512
#include <immintrin.h>

#include "base64/row_encoder.hpp"
#include "common/formats.hpp"
#include "common/fp_environment.hpp"
#include "common/scalar_ops.hpp"
#include "levels/avx512/avx512.hpp"

namespace tensorb64 {
namespace {

struct base64_tables {
    __m512i spread;  // vpermb indices: 3-byte group g -> bytes [g1 g0 g2 g1] of dword g
    __m512i shifts;  // vpmultishiftqb bit offsets of the four 6-bit fields in each dword
    __m512i alphabet;
};

inline base64_tables make_tables() noexcept {
    return {
        _mm512_setr_epi32(0x01020001, 0x04050304, 0x07080607, 0x0a0b090a, 0x0d0e0c0d, 0x10110f10,
                          0x13141213, 0x16171516, 0x191a1819, 0x1c1d1b1c, 0x1f201e1f, 0x22232122,
                          0x25262425, 0x28292728, 0x2b2c2a2b, 0x2e2f2d2e),
        _mm512_set1_epi64(0x3036242a1016040a), _mm512_loadu_si512(base64_alphabet)};
}

// 48 input bytes (the low 48 of `in`) -> 64 characters.
inline __m512i encode_48(const base64_tables& t, __m512i in) noexcept {
    const __m512i spread = _mm512_permutexvar_epi8(t.spread, in);
    const __m512i indices = _mm512_multishift_epi64_epi8(t.shifts, spread);
    return _mm512_permutexvar_epi8(indices, t.alphabet);  // vpermb uses the low 6 bits only
}

inline __mmask64 low_bits64(std::size_t count) noexcept {  // count < 64
    return (__mmask64{1} << count) - 1;
}
inline __mmask16 low_bits16(std::size_t count) noexcept {  // count < 16
    return static_cast<__mmask16>((1u << count) - 1);
}

struct avx512_ops : scalar_ops {
    static void base64(const unsigned char* in, std::size_t n, char* out) noexcept {
        const base64_tables t = make_tables();
        // Full 64-byte loads (48 bytes used) while 64 bytes are there to read.
        while (n >= 3 * 48 + 64) {
            for (int k = 0; k < 4; ++k) {
                _mm512_storeu_si512(out + 64 * k, encode_48(t, _mm512_loadu_si512(in + 48 * k)));
            }
            in += 4 * 48;
            out += 4 * 64;
            n -= 4 * 48;
        }
        while (n >= 48) {
            const __m512i v = _mm512_maskz_loadu_epi8(low_bits64(48), in);
            _mm512_storeu_si512(out, encode_48(t, v));
            in += 48;
            out += 64;
            n -= 48;
        }
        // Fewer than 48 bytes: the whole 3-byte groups with masked loads and stores.
        const std::size_t groups = n / 3;
        if (groups != 0) {
            const __m512i v = _mm512_maskz_loadu_epi8(low_bits64(n), in);
            _mm512_mask_storeu_epi8(out, low_bits64(4 * groups), encode_48(t, v));
            in += 3 * groups;
            out += 4 * groups;
            n -= 3 * groups;
        }
        base64_encode_scalar(in, n, out);  // the last 1 or 2 bytes and the padding
    }

    // float16 and bfloat16 to float32 text without a staging buffer: 12 elements widen to 48
    // bytes, exactly what encode_48 takes.
    static bool widen_base64(dtype from, const unsigned char* raw, std::size_t n,
                             char* out) noexcept {
        if (from == dtype::bfloat16) {
            widen_base64_loop(raw, n, out, [](__m256i h) {
                return _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
            });
        } else if (from == dtype::float16) {
            widen_base64_loop(raw, n, out, [](__m256i h) {  // exact, see widen()
                return _mm512_castps_si512(_mm512_cvtph_ps(h));
            });
        } else {
            return false;
        }
        const std::size_t done = n / 12 * 12;
        alignas(64) std::uint32_t rest[12];
        widen(from, raw + 2 * done, n - done, rest);
        base64(reinterpret_cast<const unsigned char*>(rest), (n - done) * 4, out + done / 3 * 16);
        return true;
    }

    template <class Widen>
    static void widen_base64_loop(const unsigned char* raw, std::size_t n, char* out,
                                  Widen widen_16) noexcept {
        const base64_tables t = make_tables();
        for (std::size_t i = 0; i + 12 <= n; i += 12) {
            const __m256i h = _mm256_maskz_loadu_epi16(0x0fff, raw + 2 * i);  // 24 bytes
            _mm512_storeu_si512(out, encode_48(t, widen_16(h)));
            out += 64;
        }
    }

    static void widen(dtype from, const unsigned char* raw, std::size_t n,
                      std::uint32_t* out) noexcept {
        switch (from) {
            case dtype::bfloat16:
                for (std::size_t i = 0; i < n; i += 16) {
                    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : low_bits16(n - i);
                    const __m256i h = _mm256_maskz_loadu_epi16(m, raw + 2 * i);
                    _mm512_mask_storeu_epi32(out + i, m,
                                             _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
                }
                return;
            case dtype::float16:
                // vcvtph2ps is exact, quiets NaNs keeping their payload (as f16_to_f32 does), and
                // does not consult MXCSR.DAZ.
                for (std::size_t i = 0; i < n; i += 16) {
                    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : low_bits16(n - i);
                    const __m256i h = _mm256_maskz_loadu_epi16(m, raw + 2 * i);
                    _mm512_mask_storeu_ps(out + i, m, _mm512_cvtph_ps(h));
                }
                return;
            case dtype::float64:
                // vcvtpd2ps, with the FP environment pinned (fp_environment.hpp): nearest even,
                // +-inf past the float32 range, subnormal results kept, NaNs quieted keeping the
                // top of the payload, all like f64_to_f32.
                for (std::size_t i = 0; i < n; i += 8) {
                    const __mmask8 m =
                        n - i >= 8 ? __mmask8(0xff) : static_cast<__mmask8>((1u << (n - i)) - 1);
                    const __m512d d = _mm512_maskz_loadu_pd(m, raw + 8 * i);
                    _mm256_mask_storeu_ps(out + i, m, _mm512_cvtpd_ps(d));
                }
                return;
            default: scalar_ops::widen(from, raw, n, out); return;
        }
    }

    static void swap_bytes(unsigned char* data, std::size_t n, std::size_t size) noexcept {
        if (size < 2) return;
        const byte_reversal reversal(size);
        const __m512i order = _mm512_broadcast_i32x4(
            _mm_load_si128(reinterpret_cast<const __m128i*>(reversal.order)));
        const std::size_t bytes = n * size;  // 64-byte steps end on element boundaries
        for (std::size_t i = 0; i < bytes; i += 64) {
            const __mmask64 m = bytes - i >= 64 ? ~__mmask64(0) : (__mmask64(1) << (bytes - i)) - 1;
            const __m512i v = _mm512_maskz_loadu_epi8(m, data + i);
            _mm512_mask_storeu_epi8(data + i, m, _mm512_shuffle_epi8(v, order));
        }
    }

    static void narrow(const std::uint32_t* in, std::size_t n, dtype to, std::uint16_t bf16_nan,
                       unsigned char* out) noexcept {
        switch (to) {
            case dtype::float16:
                // vcvtps2ph with an explicit round-to-nearest-even: overflow gives +-inf, NaNs keep
                // sign and top of payload and are quieted, as in f32_to_f16. MXCSR.FTZ is ignored
                // by this instruction; DAZ could only turn a float32 subnormal into a zero of the
                // same sign, which is what rounding it to float16 gives anyway.
                for (std::size_t i = 0; i < n; i += 16) {
                    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : low_bits16(n - i);
                    const __m512 f = _mm512_maskz_loadu_ps(m, in + i);
                    _mm256_mask_storeu_epi16(
                        out + 2 * i, m,
                        _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
                }
                return;
            case dtype::bfloat16: {
                // Integer rounding, as f32_to_bf16: no MXCSR dependence at all.
                const __m512i nan = _mm512_set1_epi32(bf16_nan);
                const __m512i infinity = _mm512_set1_epi32(0x7f800000);
                const __m512i magnitude_mask = _mm512_set1_epi32(0x7fffffff);
                const __m512i one = _mm512_set1_epi32(1);
                const __m512i half_minus_one = _mm512_set1_epi32(0x7fff);
                for (std::size_t i = 0; i < n; i += 16) {
                    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : low_bits16(n - i);
                    const __m512i f = _mm512_maskz_loadu_epi32(m, in + i);
                    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(f, 16), one);
                    __m512i rounded = _mm512_srli_epi32(
                        _mm512_add_epi32(_mm512_add_epi32(f, half_minus_one), odd), 16);
                    const __mmask16 is_nan =
                        _mm512_cmpgt_epu32_mask(_mm512_and_si512(f, magnitude_mask), infinity);
                    rounded = _mm512_mask_mov_epi32(rounded, is_nan, nan);
                    _mm256_mask_storeu_epi16(out + 2 * i, m, _mm512_cvtepi32_epi16(rounded));
                }
                return;
            }
            default: scalar_ops::narrow(in, n, to, bf16_nan, out); return;
        }
    }
};

}  // namespace

void encode_rows_avx512(const row_job& job) noexcept {
    const ieee_fp_environment pinned;
    encode_rows_with<avx512_ops>(job);
}

}  // namespace tensorb64

#endif
