// The portable building blocks of a row encoder: base64 and element conversions over short,
// contiguous, host-ordered blocks. Each SIMD level's ops inherit these (`struct avx2_ops :
// scalar_ops`), replace the ones it can do faster and keep the rest; row_encoder.hpp assembles a
// level's encoder from them. The contract every Ops type keeps (all static, noexcept, no
// allocation):
//   base64(in, n, out)             the base64 text of n bytes: 4 * ceil(n / 3) chars, padded
//   widen(from, raw, n, out)       n host-ordered elements of type `from` to float32 bits, exactly
//                                  as torch widens them (formats.hpp)
//   widen_base64(from, raw, n, out) widen then base64 in one step, or false (nothing written)
//                                  when the level has no fused path for `from`
//   narrow(in, n, to, bf16_nan, out) float32 bits to n elements of output type `to`; a NaN
//                                  becomes `bf16_nan` when `to` is bfloat16 (the caller picks
//                                  torch's pattern for its source, bf16_nan_from)
//   swap_bytes(data, n, size)      reverses the bytes of each of n elements of `size` (2, 4 or
//                                  8) bytes, in place
// Blocks are at most row_encoder.hpp's block_elements long and need no alignment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base64/scalar.hpp"
#include "common/formats.hpp"
#include "common/host.hpp"

namespace tensorb64 {
namespace {

// The byte shuffle that reverses each element of `size` (2, 4 or 8) bytes in a 16-byte lane:
// byte j comes from (j / size) * size + size - 1 - j % size. For the SIMD levels' swap_bytes.
struct byte_reversal {
    alignas(16) std::uint8_t order[16];
    explicit constexpr byte_reversal(std::size_t size) noexcept : order{} {
        for (std::size_t j = 0; j < 16; ++j)
            order[j] = static_cast<std::uint8_t>(j / size * size + size - 1 - j % size);
    }
};

// Copies `n` elements of `size` bytes, `stride` bytes apart, into `out`: the first step of every
// row loop that cannot use the caller's memory as it is (row_encoder.hpp, float_rows.cpp).
inline void gather(const unsigned char* src, std::size_t n, std::ptrdiff_t stride, std::size_t size,
                   unsigned char* out) noexcept {
    if (stride == static_cast<std::ptrdiff_t>(size)) {  // contiguous: one copy, not n
        std::memcpy(out, src, n * size);
    } else {
        for (std::size_t i = 0; i < n; ++i)
            std::memcpy(out + i * size, src + static_cast<std::ptrdiff_t>(i) * stride, size);
    }
}

struct scalar_ops {
    static void base64(const unsigned char* in, std::size_t n, char* out) noexcept {
        base64_encode_scalar(in, n, out);
    }

    // `raw` holds `n` host-ordered elements of type `from`; writes their float32 bits.
    static void widen(dtype from, const unsigned char* raw, std::size_t n,
                      std::uint32_t* out) noexcept {
        switch (from) {
            case dtype::float32: std::memcpy(out, raw, n * 4); return;
            case dtype::float16:
                for (std::size_t i = 0; i < n; ++i)
                    out[i] = f16_to_f32(load<std::uint16_t>(raw, i));
                return;
            case dtype::bfloat16:
                for (std::size_t i = 0; i < n; ++i)
                    out[i] = bf16_to_f32(load<std::uint16_t>(raw, i));
                return;
            case dtype::float64:
                for (std::size_t i = 0; i < n; ++i)
                    out[i] = f64_to_f32(load<std::uint64_t>(raw, i));
                return;
            case dtype::float8_e4m3fn:
                for (std::size_t i = 0; i < n; ++i) out[i] = e4m3fn_to_f32(raw[i]);
                return;
            case dtype::float8_e5m2:
                for (std::size_t i = 0; i < n; ++i) out[i] = e5m2_to_f32(raw[i]);
                return;
            case dtype::int8: return widen_integers<std::int8_t>(raw, n, out);
            case dtype::uint8: return widen_integers<std::uint8_t>(raw, n, out);
            case dtype::int16: return widen_integers<std::int16_t>(raw, n, out);
            case dtype::uint16: return widen_integers<std::uint16_t>(raw, n, out);
            case dtype::int32: return widen_integers<std::int32_t>(raw, n, out);
            case dtype::uint32: return widen_integers<std::uint32_t>(raw, n, out);
            case dtype::int64: return widen_integers<std::int64_t>(raw, n, out);
            case dtype::uint64: return widen_integers<std::uint64_t>(raw, n, out);
            case dtype::bool8:  // torch and numpy store bool as one byte holding 0 or 1
                for (std::size_t i = 0; i < n; ++i) out[i] = raw[i] != 0 ? 0x3f800000u : 0u;
                return;
        }
    }

    template <class Int>
    static void widen_integers(const unsigned char* raw, std::size_t n,
                               std::uint32_t* out) noexcept {
        for (std::size_t i = 0; i < n; ++i) out[i] = integer_to_f32(load<Int>(raw, i));
    }

    // Writes the base64 text of the float32 bits of `n` host-ordered elements of type `from`, as
    // widen followed by base64 would, in one step; returns false, writing nothing, when the
    // level has no such fused path for `from` (the caller then widens and encodes).
    static bool widen_base64(dtype, const unsigned char*, std::size_t, char*) noexcept {
        return false;
    }

    // Writes `n` host-ordered elements of type `to` (not float32) from float32 bits.
    static void narrow(const std::uint32_t* in, std::size_t n, dtype to, std::uint16_t bf16_nan,
                       unsigned char* out) noexcept {
        switch (to) {
            case dtype::float16:
                for (std::size_t i = 0; i < n; ++i) store<std::uint16_t>(out, i, f32_to_f16(in[i]));
                return;
            case dtype::bfloat16:
                for (std::size_t i = 0; i < n; ++i)
                    store<std::uint16_t>(out, i, f32_to_bf16(in[i], bf16_nan));
                return;
            case dtype::float8_e4m3fn:
                for (std::size_t i = 0; i < n; ++i) out[i] = f32_to_e4m3fn(in[i]);
                return;
            case dtype::float8_e5m2:
                for (std::size_t i = 0; i < n; ++i) out[i] = f32_to_e5m2(in[i]);
                return;
            default:
                return;  // float32 needs no narrowing; no other type is a target (is_output_type)
        }
    }

    static void swap_bytes(unsigned char* data, std::size_t n, std::size_t size) noexcept {
        swap_elements(data, n, size);
    }

    template <class T>
    static T load(const unsigned char* p, std::size_t i) noexcept {
        T v;
        std::memcpy(&v, p + i * sizeof(T), sizeof(T));
        return v;
    }
    template <class T>
    static void store(unsigned char* p, std::size_t i, T v) noexcept {
        std::memcpy(p + i * sizeof(T), &v, sizeof(T));
    }
};

}  // namespace
}  // namespace tensorb64
