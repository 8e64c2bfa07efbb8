// The AVX2 row encoder (with F16C, FMA and BMI2, the set every x86-64 CPU since Haswell has).
//
// base64: Muła's vpshufb reshuffle, the two multiply-shifts that spread 24 bits over four 6-bit
// indices, and a class-offset lookup (vpshufb on a 16-entry table) that turns indices into ASCII.
// Conversions: bfloat16 by a 16-bit shift, float16 both ways with F16C, float64 with vcvtpd2ps,
// float32 -> bfloat16 in integer arithmetic. float8 narrowing stays scalar.
//
// Compiled with -mavx2 -mf16c -mfma -mbmi2 (or /arch:AVX2) and nothing else; everything but the
// entry point has internal linkage, so no AVX2 code can be picked up by baseline callers.
// Compiled where the build gives levels/avx2/ its flags (x86-64: cpp/CMakeLists.txt); to nothing
// elsewhere.
#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_AVX2
#include <immintrin.h>

#include "base64/row_encoder.hpp"
#include "common/formats.hpp"
#include "common/fp_environment.hpp"
#include "common/scalar_ops.hpp"
#include "levels/avx2/avx2.hpp"

namespace tensorb64 {
namespace {

// Turns 24 input bytes (the low 12 of each 128-bit lane) into 32 base64 characters.
inline __m256i encode_24(__m256i in) noexcept {
    // Each 3-byte group b0 b1 b2 becomes the 32-bit word [b1 b0 b2 b1] (little-endian lanes),
    // which puts every 6-bit field where one of the two multiply-shifts below can reach it.
    const __m256i spread = _mm256_shuffle_epi8(
        in, _mm256_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10,  //
                             1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10));
    // Fields 0 and 2 are moved down with a high multiply, fields 1 and 3 up with a low one.
    const __m256i high = _mm256_mulhi_epu16(_mm256_and_si256(spread, _mm256_set1_epi32(0x0fc0fc00)),
                                            _mm256_set1_epi32(0x04000040));
    const __m256i low = _mm256_mullo_epi16(_mm256_and_si256(spread, _mm256_set1_epi32(0x003f03f0)),
                                           _mm256_set1_epi32(0x01000010));
    const __m256i indices = _mm256_or_si256(high, low);  // one 6-bit index per byte

    // Class of each index: 0..25 -> 13, 26..51 -> 0, 52..61 -> 1..10, 62 -> 11, 63 -> 12; the
    // table gives the offset from index to ASCII for each class.
    __m256i cls = _mm256_subs_epu8(indices, _mm256_set1_epi8(51));
    const __m256i upper = _mm256_cmpgt_epi8(_mm256_set1_epi8(26), indices);
    cls = _mm256_or_si256(cls, _mm256_and_si256(upper, _mm256_set1_epi8(13)));
    const __m256i offsets =
        _mm256_setr_epi8('a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
                         '0' - 52, '0' - 52, '0' - 52, '0' - 52, '+' - 62, '/' - 63, 'A', 0, 0,  //
                         'a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
                         '0' - 52, '0' - 52, '0' - 52, '0' - 52, '+' - 62, '/' - 63, 'A', 0, 0);
    return _mm256_add_epi8(indices, _mm256_shuffle_epi8(offsets, cls));
}

// 24 bytes from `p` as two 12-byte halves, one per 128-bit lane; reads p[0..27].
inline __m256i load_24(const unsigned char* p) noexcept {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 12));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

inline void store_32(char* p, __m256i v) noexcept {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}

struct avx2_ops : scalar_ops {
    static void base64(const unsigned char* in, std::size_t n, char* out) noexcept {
        // Two groups per iteration; each reads 28 bytes, so stop while that many are left.
        while (n >= 24 + 28) {
            store_32(out, encode_24(load_24(in)));
            store_32(out + 32, encode_24(load_24(in + 24)));
            in += 48;
            out += 64;
            n -= 48;
        }
        while (n >= 28) {
            store_32(out, encode_24(load_24(in)));
            in += 24;
            out += 32;
            n -= 24;
        }
        base64_encode_scalar(in, n, out);  // fewer than 28 bytes; it writes the padding
    }

    // float16 and bfloat16 to float32 text without a staging buffer: 6 elements widen to 24
    // bytes, moved to the low 12 bytes of each lane where encode_24 takes them.
    static bool widen_base64(dtype from, const unsigned char* raw, std::size_t n,
                             char* out) noexcept {
        std::size_t done;
        if (from == dtype::bfloat16) {
            done = widen_base64_loop(raw, n, out, [](__m128i h) {
                return _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
            });
        } else if (from == dtype::float16) {
            done = widen_base64_loop(raw, n, out, [](__m128i h) {  // exact, see widen()
                return _mm256_castps_si256(_mm256_cvtph_ps(h));
            });
        } else {
            return false;
        }
        alignas(32) std::uint32_t rest[8];
        widen(from, raw + 2 * done, n - done, rest);
        base64(reinterpret_cast<const unsigned char*>(rest), (n - done) * 4, out + done / 3 * 16);
        return true;
    }

    // Returns the number of elements done (a multiple of 6; fewer than 8 are left).
    template <class Widen>
    static std::size_t widen_base64_loop(const unsigned char* raw, std::size_t n, char* out,
                                         Widen widen_8) noexcept {
        const __m256i halves = _mm256_setr_epi32(0, 1, 2, 2, 3, 4, 5, 5);
        std::size_t i = 0;
        for (; i + 8 <= n; i += 6) {  // loads 8 elements, uses 6
            const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(raw + 2 * i));
            store_32(out, encode_24(_mm256_permutevar8x32_epi32(widen_8(h), halves)));
            out += 32;
        }
        return i;
    }

    static void widen(dtype from, const unsigned char* raw, std::size_t n,
                      std::uint32_t* out) noexcept {
        std::size_t i = 0;
        switch (from) {
            case dtype::bfloat16:
                for (; i + 8 <= n; i += 8) {
                    const __m128i h =
                        _mm_loadu_si128(reinterpret_cast<const __m128i*>(raw + 2 * i));
                    const __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
                    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), w);
                }
                break;
            case dtype::float16:
                // vcvtph2ps is exact, quiets NaNs keeping their payload (as f16_to_f32 does), and
                // is not affected by MXCSR.DAZ: float16 subnormals come out as the normals they
                // are.
                for (; i + 8 <= n; i += 8) {
                    const __m128i h =
                        _mm_loadu_si128(reinterpret_cast<const __m128i*>(raw + 2 * i));
                    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                                        _mm256_castps_si256(_mm256_cvtph_ps(h)));
                }
                break;
            case dtype::float64:
                // vcvtpd2ps, with the FP environment pinned (fp_environment.hpp): nearest even,
                // +-inf past the float32 range, subnormal results kept, NaNs quieted keeping the
                // top of the payload, all like f64_to_f32.
                for (; i + 4 <= n; i += 4) {
                    const __m256d d = _mm256_loadu_pd(reinterpret_cast<const double*>(raw + 8 * i));
                    _mm_storeu_ps(reinterpret_cast<float*>(out + i), _mm256_cvtpd_ps(d));
                }
                break;
            default: break;
        }
        scalar_ops::widen(from, raw + i * dtype_size(from), n - i, out + i);
    }

    static void swap_bytes(unsigned char* data, std::size_t n, std::size_t size) noexcept {
        if (size < 2) return;
        const byte_reversal reversal(size);
        const __m256i order = _mm256_broadcastsi128_si256(
            _mm_load_si128(reinterpret_cast<const __m128i*>(reversal.order)));
        const std::size_t bytes = n * size;
        std::size_t i = 0;
        for (; i + 32 <= bytes; i += 32) {  // 32-byte steps end on element boundaries
            auto* p = reinterpret_cast<__m256i*>(data + i);
            _mm256_storeu_si256(p, _mm256_shuffle_epi8(_mm256_loadu_si256(p), order));
        }
        scalar_ops::swap_bytes(data + i, (bytes - i) / size, size);
    }

    static void narrow(const std::uint32_t* in, std::size_t n, dtype to, std::uint16_t bf16_nan,
                       unsigned char* out) noexcept {
        std::size_t i = 0;
        switch (to) {
            case dtype::float16:
                // vcvtps2ph with an explicit round-to-nearest-even: overflow gives +-inf, NaNs keep
                // sign and top of payload and are quieted, as in f32_to_f16. MXCSR.FTZ is ignored
                // by this instruction, and DAZ could only turn a float32 subnormal input into a
                // zero of the same sign, which is what rounding it to float16 gives anyway.
                for (; i + 8 <= n; i += 8) {
                    const __m256 f = _mm256_loadu_ps(reinterpret_cast<const float*>(in + i));
                    _mm_storeu_si128(
                        reinterpret_cast<__m128i*>(out + 2 * i),
                        _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
                }
                break;
            case dtype::bfloat16: {
                // Integer rounding (f32_to_bf16): no MXCSR dependence at all.
                const __m256i nan = _mm256_set1_epi32(bf16_nan);
                const __m256i infinity = _mm256_set1_epi32(0x7f800000);
                for (; i + 16 <= n; i += 16) {
                    __m256i halves[2];
                    for (int h = 0; h < 2; ++h) {
                        const __m256i f =
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i + 8 * h));
                        const __m256i odd =
                            _mm256_and_si256(_mm256_srli_epi32(f, 16), _mm256_set1_epi32(1));
                        const __m256i rounded = _mm256_srli_epi32(
                            _mm256_add_epi32(_mm256_add_epi32(f, _mm256_set1_epi32(0x7fff)), odd),
                            16);
                        const __m256i is_nan = _mm256_cmpgt_epi32(
                            _mm256_and_si256(f, _mm256_set1_epi32(0x7fffffff)), infinity);
                        halves[h] = _mm256_blendv_epi8(rounded, nan, is_nan);
                    }
                    // packus works within 128-bit lanes; put the quarters back in order.
                    const __m256i packed = _mm256_permute4x64_epi64(
                        _mm256_packus_epi32(halves[0], halves[1]), _MM_SHUFFLE(3, 1, 2, 0));
                    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i), packed);
                }
                break;
            }
            default: break;
        }
        scalar_ops::narrow(in + i, n - i, to, bf16_nan, out + i * dtype_size(to));
    }
};

}  // namespace

void encode_rows_avx2(const row_job& job) noexcept {
    const ieee_fp_environment pinned;
    encode_rows_with<avx2_ops>(job);
}

}  // namespace tensorb64

#endif
