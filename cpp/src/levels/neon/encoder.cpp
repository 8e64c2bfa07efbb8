// The NEON row encoder (AArch64, where NEON is baseline: no extra flags).
//
// base64: vld3q de-interleaves 48 bytes into the first, second and third byte of 16 groups, a few
// shifts make the four 6-bit indices, vqtbl4q looks them up in the 64-character alphabet and
// vst4q interleaves the 64 characters back. Conversions: bfloat16 by a 16-bit shift, float16 both
// ways with fcvtl/fcvtn, float64 with fcvtn, float32 -> bfloat16 in integer arithmetic. float8
// narrowing stays scalar.
//
// fcvtn rounds as FPCR.RMode says and flushes under FPCR.FZ: the entry point pins FPCR to IEEE
// defaults for the call (fp_environment.hpp).
// Compiled on little-endian AArch64 (no flags needed); to nothing elsewhere (x86-64, big-endian
// AArch64).
#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_NEON
#include <arm_neon.h>

#include "base64/row_encoder.hpp"
#include "common/formats.hpp"
#include "common/fp_environment.hpp"
#include "common/scalar_ops.hpp"
#include "levels/neon/neon.hpp"

namespace tensorb64 {
namespace {

// What is not here (widen_base64: widening fused into the encoder) comes from scalar_ops.
struct neon_ops : scalar_ops {
    static void base64(const unsigned char* in, std::size_t n, char* out) noexcept {
        const auto* alphabet = reinterpret_cast<const std::uint8_t*>(base64_alphabet);
        uint8x16x4_t table;
        table.val[0] = vld1q_u8(alphabet);
        table.val[1] = vld1q_u8(alphabet + 16);
        table.val[2] = vld1q_u8(alphabet + 32);
        table.val[3] = vld1q_u8(alphabet + 48);
        const uint8x16_t six_bits = vdupq_n_u8(63);
        while (n >= 48) {
            const uint8x16x3_t bytes = vld3q_u8(in);  // reads exactly 48 bytes
            const uint8x16_t a = bytes.val[0], b = bytes.val[1], c = bytes.val[2];
            uint8x16x4_t chars;
            chars.val[0] = vqtbl4q_u8(table, vshrq_n_u8(a, 2));
            chars.val[1] =
                vqtbl4q_u8(table, vandq_u8(vorrq_u8(vshlq_n_u8(a, 4), vshrq_n_u8(b, 4)), six_bits));
            chars.val[2] =
                vqtbl4q_u8(table, vandq_u8(vorrq_u8(vshlq_n_u8(b, 2), vshrq_n_u8(c, 6)), six_bits));
            chars.val[3] = vqtbl4q_u8(table, vandq_u8(c, six_bits));
            vst4q_u8(reinterpret_cast<std::uint8_t*>(out), chars);
            in += 48;
            out += 64;
            n -= 48;
        }
        base64_encode_scalar(in, n, out);  // fewer than 48 bytes; it writes the padding
    }

    static void widen(dtype from, const unsigned char* raw, std::size_t n,
                      std::uint32_t* out) noexcept {
        std::size_t i = 0;
        switch (from) {
            case dtype::bfloat16:
                for (; i + 8 <= n; i += 8) {
                    const uint16x8_t h =
                        vld1q_u16(reinterpret_cast<const std::uint16_t*>(raw + 2 * i));
                    vst1q_u32(out + i, vshll_n_u16(vget_low_u16(h), 16));
                    vst1q_u32(out + i + 4, vshll_high_n_u16(h, 16));
                }
                break;
            case dtype::float16:
                // fcvtl is exact and quiets NaNs keeping the payload, as f16_to_f32 does.
                for (; i + 8 <= n; i += 8) {
                    const float16x8_t h = vreinterpretq_f16_u16(
                        vld1q_u16(reinterpret_cast<const std::uint16_t*>(raw + 2 * i)));
                    vst1q_u32(out + i, vreinterpretq_u32_f32(vcvt_f32_f16(vget_low_f16(h))));
                    vst1q_u32(out + i + 4, vreinterpretq_u32_f32(vcvt_high_f32_f16(h)));
                }
                break;
            case dtype::float64:
                // fcvtn, with the FP environment pinned (fp_environment.hpp): nearest even,
                // +-inf past the float32 range, subnormal results kept, NaNs quieted keeping the
                // top of the payload, like f64_to_f32.
                for (; i + 4 <= n; i += 4) {
                    const auto* p = reinterpret_cast<const double*>(raw + 8 * i);
                    const float32x4_t f =
                        vcvt_high_f32_f64(vcvt_f32_f64(vld1q_f64(p)), vld1q_f64(p + 2));
                    vst1q_u32(out + i, vreinterpretq_u32_f32(f));
                }
                break;
            default: break;
        }
        scalar_ops::widen(from, raw + i * dtype_size(from), n - i, out + i);
    }

    static void swap_bytes(unsigned char* data, std::size_t n, std::size_t size) noexcept {
        const std::size_t bytes = n * size;
        std::size_t i = 0;
        for (; i + 16 <= bytes; i += 16) {  // 16-byte steps end on element boundaries
            const uint8x16_t v = vld1q_u8(data + i);
            switch (size) {
                case 2: vst1q_u8(data + i, vrev16q_u8(v)); break;
                case 4: vst1q_u8(data + i, vrev32q_u8(v)); break;
                case 8: vst1q_u8(data + i, vrev64q_u8(v)); break;
                default: return;  // one-byte elements: nothing to reverse
            }
        }
        scalar_ops::swap_bytes(data + i, (bytes - i) / size, size);
    }

    static void narrow(const std::uint32_t* in, std::size_t n, dtype to, std::uint16_t bf16_nan,
                       unsigned char* out) noexcept {
        std::size_t i = 0;
        switch (to) {
            case dtype::float16:
                // fcvtn: nearest even, overflow to +-inf, NaNs quieted keeping sign and the top of
                // the payload, as f32_to_f16.
                for (; i + 8 <= n; i += 8) {
                    const float32x4_t lo = vreinterpretq_f32_u32(vld1q_u32(in + i));
                    const float32x4_t hi = vreinterpretq_f32_u32(vld1q_u32(in + i + 4));
                    const float16x8_t h = vcvt_high_f16_f32(vcvt_f16_f32(lo), hi);
                    vst1q_u16(reinterpret_cast<std::uint16_t*>(out + 2 * i),
                              vreinterpretq_u16_f16(h));
                }
                break;
            case dtype::bfloat16: {
                // Integer rounding, as f32_to_bf16.
                const uint32x4_t nan = vdupq_n_u32(bf16_nan);
                const uint32x4_t infinity = vdupq_n_u32(0x7f800000u);
                const uint32x4_t magnitude_mask = vdupq_n_u32(0x7fffffffu);
                const uint32x4_t half_minus_one = vdupq_n_u32(0x7fffu);
                const uint32x4_t one = vdupq_n_u32(1);
                for (; i + 8 <= n; i += 8) {
                    uint16x4_t halves[2];
                    for (int h = 0; h < 2; ++h) {
                        const uint32x4_t f = vld1q_u32(in + i + 4 * h);
                        const uint32x4_t odd = vandq_u32(vshrq_n_u32(f, 16), one);
                        const uint32x4_t rounded =
                            vshrq_n_u32(vaddq_u32(vaddq_u32(f, half_minus_one), odd), 16);
                        const uint32x4_t is_nan = vcgtq_u32(vandq_u32(f, magnitude_mask), infinity);
                        halves[h] = vmovn_u32(vbslq_u32(is_nan, nan, rounded));
                    }
                    vst1q_u16(reinterpret_cast<std::uint16_t*>(out + 2 * i),
                              vcombine_u16(halves[0], halves[1]));
                }
                break;
            }
            default: break;
        }
        scalar_ops::narrow(in + i, n - i, to, bf16_nan, out + i * dtype_size(to));
    }
};

}  // namespace

void encode_rows_neon(const row_job& job) noexcept {
    const ieee_fp_environment pinned;
    encode_rows_with<neon_ops>(job);
}

}  // namespace tensorb64

#endif
