// What the core's tests share (core_tests.cpp runs them; core_*_tests.cpp hold them, one
// subsystem a file): the includes, the independent references, the calls into the core.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "tensorb64/tensorb64.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#define TENSORB64_TEST_GUARD_PAGES 1
#endif
#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#endif

namespace tb = tensorb64;

namespace core_tests {

using test_check::failed;
using test_check::passed;
using test_check::report_failure;

inline const tb::dtype all_dtypes[] = {
    tb::dtype::float32,       tb::dtype::float16,     tb::dtype::bfloat16, tb::dtype::float64,
    tb::dtype::float8_e4m3fn, tb::dtype::float8_e5m2, tb::dtype::int8,     tb::dtype::uint8,
    tb::dtype::int16,         tb::dtype::uint16,      tb::dtype::int32,    tb::dtype::uint32,
    tb::dtype::int64,         tb::dtype::uint64,      tb::dtype::bool8};
inline const tb::byte_order both_orders[] = {tb::byte_order::little, tb::byte_order::big};
// The openai and vllm rows of the layout table.
inline const tb::response_layout* const both_layouts[] = {tb::find_response_layout("openai"),
                                                          tb::find_response_layout("vllm")};

inline const char* name(tb::dtype t) {
    switch (t) {
        case tb::dtype::float32: return "float32";
        case tb::dtype::float16: return "float16";
        case tb::dtype::bfloat16: return "bfloat16";
        case tb::dtype::float64: return "float64";
        case tb::dtype::float8_e4m3fn: return "float8_e4m3fn";
        case tb::dtype::float8_e5m2: return "float8_e5m2";
        case tb::dtype::int8: return "int8";
        case tb::dtype::uint8: return "uint8";
        case tb::dtype::int16: return "int16";
        case tb::dtype::uint16: return "uint16";
        case tb::dtype::int32: return "int32";
        case tb::dtype::uint32: return "uint32";
        case tb::dtype::int64: return "int64";
        case tb::dtype::uint64: return "uint64";
        case tb::dtype::bool8: return "bool8";
    }
    return "?";
}
inline const char* name(tb::byte_order o) { return o == tb::byte_order::little ? "little" : "big"; }

// ---- independent references --------------------------------------------------------------

// The textbook 6-bit-at-a-time encoder.
inline std::string reference_base64(const std::vector<unsigned char>& in) {
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::size_t i = 0;
    for (; i + 3 <= in.size(); i += 3) {
        const unsigned v = (unsigned{in[i]} << 16) | (unsigned{in[i + 1]} << 8) | in[i + 2];
        for (int s = 18; s >= 0; s -= 6) out += alphabet[(v >> s) & 63];
    }
    const std::size_t rest = in.size() - i;
    if (rest != 0) {
        const unsigned v = (unsigned{in[i]} << 16) | (rest == 2 ? unsigned{in[i + 1]} << 8 : 0u);
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += rest == 2 ? alphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

// Appends the `size` low bytes of `value` in the given byte order (independent of the host's).
inline void put(std::vector<unsigned char>& out, std::uint64_t value, std::size_t size,
                tb::byte_order order) {
    for (std::size_t b = 0; b < size; ++b) {
        const std::size_t shift = 8 * (order == tb::byte_order::little ? b : size - 1 - b);
        out.push_back(static_cast<unsigned char>(value >> shift));
    }
}

inline std::vector<unsigned char> serialize(const std::vector<std::uint64_t>& values,
                                            std::size_t size, tb::byte_order order) {
    std::vector<unsigned char> out;
    for (std::uint64_t v : values) put(out, v, size, order);
    return out;
}

// float16 -> float32 bits by arithmetic on doubles, NaNs by the documented rule (quieted).
inline std::uint32_t reference_f16_to_f32(std::uint16_t h) {
    const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
    const unsigned exponent = (h >> 10) & 31, mantissa = h & 0x3ff;
    if (exponent == 31) return sign | 0x7f800000u | (mantissa ? 0x400000u | (mantissa << 13) : 0u);
    const double magnitude = exponent == 0
                                 ? std::ldexp(mantissa, -24)
                                 : std::ldexp(1024 + mantissa, static_cast<int>(exponent) - 25);
    const float f = static_cast<float>(magnitude);  // exact: every float16 is a float32
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return sign | bits;
}

// ---- calling the core --------------------------------------------------------------------

inline std::vector<tb::simd_level> levels() { return tb::available_simd_levels(); }

struct level_guard {  // restores the level in force when it was made
    tb::simd_level saved = tb::active_simd_level();
    ~level_guard() { tb::force_simd_level(saved); }
};

// Encodes `rows` rows; checks that nothing past each output was written.
inline std::vector<std::string> encode_strided(const void* data, std::size_t rows, std::size_t n,
                                               std::ptrdiff_t row_stride,
                                               std::ptrdiff_t element_stride,
                                               tb::element_format from, tb::element_format to,
                                               unsigned threads = 1) {
    std::size_t length = 0;
    tb::encoded_size(n * tb::dtype_size(to.type), &length);
    constexpr std::size_t slack = 64;
    std::vector<std::vector<char>> buffers(rows, std::vector<char>(length + slack, '\x7f'));
    std::vector<char*> outputs;
    for (auto& b : buffers) outputs.push_back(b.data());
    tb::encode_rows({data, rows, n, row_stride, element_stride, from}, to, outputs.data(), threads);
    std::vector<std::string> result;
    for (auto& b : buffers) {
        bool untouched = true;
        for (std::size_t i = length; i < b.size(); ++i) untouched &= b[i] == '\x7f';
        CHECK(untouched);
        result.emplace_back(b.data(), length);
    }
    return result;
}

inline std::string encode(const std::vector<unsigned char>& bytes, tb::element_format from,
                          tb::element_format to) {
    const std::size_t size = tb::dtype_size(from.type);
    return encode_strided(bytes.data(), 1, bytes.size() / size, 0,
                          static_cast<std::ptrdiff_t>(size), from, to)[0];
}

constexpr tb::element_format le(tb::dtype t) { return {t, tb::byte_order::little}; }
constexpr tb::element_format be(tb::dtype t) { return {t, tb::byte_order::big}; }

// The tests, one subsystem a file.
void test_rfc4648();  // core_encode_tests.cpp
void test_float32_goldens();
void test_golden_conversions(const char* when);
void test_strides();
void differential(const char* when, bool full, unsigned max_misalignment);  // core_levels_tests.cpp
void test_integer_sources();
void test_multi_dimensional_rows();
void test_float_rows();
void test_float_rows_levels();
void test_bytes_output();
void test_hostile_fp_environment();
void test_no_access_past_the_ends();
void test_simd_level_api();
void test_decode();       // core_decode_tests.cpp
void test_body_layout();  // core_body_tests.cpp
void test_response_body();

}  // namespace core_tests
