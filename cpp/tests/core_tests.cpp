// Tests of the C++ core, through its public API only. Plain C++17, no framework: a failed CHECK
// prints where and what, and the program exits non-zero. Runs natively and, cross-compiled, under
// qemu (s390x: big-endian host; aarch64: the NEON level); see run_cross.sh.
//
// What is covered:
//   * RFC 4648 test vectors, and random bytes of every length 0..300 against a textbook encoder;
//   * float32 golden strings, both byte orders for source and target;
//   * golden conversions: every float16 bit pattern to float32 (against an independent arithmetic
//     reference), float32 -> float16/bfloat16/float8 and float64 -> float32 edge values (goldens
//     taken from torch 2.13's `.to()`);
//   * strides: negative, zero, odd and misaligned element strides, negative row strides, threads;
//   * the differential test: every SIMD level this CPU has equals scalar, for every source dtype x
//     target dtype x source byte order x target byte order, every input misalignment 0..63, with
//     random bits (NaN payloads, subnormals, infinities, rounding ties) from fixed seeds. All
//     lengths 0..2048 for the float32 -> float32 little-endian identity (the hot path); for the
//     other combinations, every length 0..64 plus lengths at and around the vector widths and the
//     768-element block boundaries up to 2048 (see sampled_lengths), to keep the run short;
//   * the same under flush-to-zero, denormals-are-zero and rounding upward (MXCSR on x86, FPCR on
//     aarch64), after which the caller's environment must be as it was;
//   * no read past the input and no write past the output (inputs and outputs that end at a
//     PROT_NONE page, on POSIX hosts), for every level, dtype pair and length 0..200;
//   * the SIMD-level API: unknown and unavailable levels are errors, never a crash;
//   * strict decoding: round trips across the block boundary, what is refused and where, both
//     byte orders, and widening of every float16 and float8 code (float8 against torch goldens).
//   * the response body's data entries: exact sizes (indices of every digit count, up to
//     SIZE_MAX; 0 rows; empty rows; overflow refused), the text against a reference written
//     here, nothing written past the size, threads > 1 equal to 1, conversions refused first.
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

namespace {

using test_check::failed;
using test_check::passed;
using test_check::report_failure;

const tb::dtype all_dtypes[] = {
    tb::dtype::float32,       tb::dtype::float16,     tb::dtype::bfloat16, tb::dtype::float64,
    tb::dtype::float8_e4m3fn, tb::dtype::float8_e5m2, tb::dtype::int8,     tb::dtype::uint8,
    tb::dtype::int16,         tb::dtype::uint16,      tb::dtype::int32,    tb::dtype::uint32,
    tb::dtype::int64,         tb::dtype::uint64,      tb::dtype::bool8};
const tb::byte_order both_orders[] = {tb::byte_order::little, tb::byte_order::big};
// The openai and vllm rows of the layout table.
const tb::response_layout* const both_layouts[] = {tb::find_response_layout("openai"),
                                                   tb::find_response_layout("vllm")};

const char* name(tb::dtype t) {
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
const char* name(tb::byte_order o) { return o == tb::byte_order::little ? "little" : "big"; }

// ---- independent references --------------------------------------------------------------

// The textbook 6-bit-at-a-time encoder.
std::string reference_base64(const std::vector<unsigned char>& in) {
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
void put(std::vector<unsigned char>& out, std::uint64_t value, std::size_t size,
         tb::byte_order order) {
    for (std::size_t b = 0; b < size; ++b) {
        const std::size_t shift = 8 * (order == tb::byte_order::little ? b : size - 1 - b);
        out.push_back(static_cast<unsigned char>(value >> shift));
    }
}

std::vector<unsigned char> serialize(const std::vector<std::uint64_t>& values, std::size_t size,
                                     tb::byte_order order) {
    std::vector<unsigned char> out;
    for (std::uint64_t v : values) put(out, v, size, order);
    return out;
}

// float16 -> float32 bits by arithmetic on doubles, NaNs by the documented rule (quieted).
std::uint32_t reference_f16_to_f32(std::uint16_t h) {
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

std::vector<tb::simd_level> levels() { return tb::available_simd_levels(); }

struct level_guard {  // restores the level in force when it was made
    tb::simd_level saved = tb::active_simd_level();
    ~level_guard() { tb::force_simd_level(saved); }
};

// Encodes `rows` rows; checks that nothing past each output was written.
std::vector<std::string> encode_strided(const void* data, std::size_t rows, std::size_t n,
                                        std::ptrdiff_t row_stride, std::ptrdiff_t element_stride,
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

std::string encode(const std::vector<unsigned char>& bytes, tb::element_format from,
                   tb::element_format to) {
    const std::size_t size = tb::dtype_size(from.type);
    return encode_strided(bytes.data(), 1, bytes.size() / size, 0,
                          static_cast<std::ptrdiff_t>(size), from, to)[0];
}

constexpr tb::element_format le(tb::dtype t) { return {t, tb::byte_order::little}; }
constexpr tb::element_format be(tb::dtype t) { return {t, tb::byte_order::big}; }

// ---- tests ---------------------------------------------------------------------------------

void test_rfc4648() {
    const char* vectors[][2] = {{"", ""},
                                {"f", "Zg=="},
                                {"fo", "Zm8="},
                                {"foo", "Zm9v"},
                                {"foob", "Zm9vYg=="},
                                {"fooba", "Zm9vYmE="},
                                {"foobar", "Zm9vYmFy"}};
    level_guard guard;
    std::mt19937_64 rng(4648);
    for (tb::simd_level level : levels()) {
        tb::force_simd_level(level);
        const std::string ctx = std::string("rfc4648 ") + tb::to_string(level);
        for (auto& v : vectors) {
            const std::vector<unsigned char> bytes(v[0], v[0] + std::strlen(v[0]));
            // float8_e4m3fn to itself copies the raw bytes: the byte-level path.
            CHECK_EQ_STR(encode(bytes, le(tb::dtype::float8_e4m3fn), le(tb::dtype::float8_e4m3fn)),
                         v[1], ctx);
        }
        for (std::size_t n = 0; n <= 300; ++n) {
            std::vector<unsigned char> bytes(n);
            for (auto& b : bytes) b = static_cast<unsigned char>(rng());
            CHECK_EQ_STR(encode(bytes, le(tb::dtype::float8_e5m2), be(tb::dtype::float8_e5m2)),
                         reference_base64(bytes), ctx + " random bytes n=" + std::to_string(n));
        }
    }
}

void test_float32_goldens() {
    struct golden {
        std::vector<std::uint64_t> bits;
        const char* little;
        const char* big;
    };
    const golden goldens[] = {
        {{0x3f800000}, "AACAPw==", "P4AAAA=="},
        {{0x3f800000, 0x40000000}, "AACAPwAAAEA=", "P4AAAEAAAAA="},
        {{0x80000000}, "AAAAgA==", "gAAAAA=="},
        {{0x40490fdb}, "2w9JQA==", "QEkP2w=="},
        {{0x3f800000, 0xc0200000, 0x1}, "AACAPwAAIMABAAAA", "P4AAAMAgAAAAAAAB"},
        {{}, "", ""},
    };
    level_guard guard;
    for (tb::simd_level level : levels()) {
        tb::force_simd_level(level);
        const std::string ctx = std::string("float32 golden ") + tb::to_string(level);
        for (const golden& g : goldens) {
            for (tb::byte_order source : both_orders) {
                const auto bytes = serialize(g.bits, 4, source);
                const tb::element_format from{tb::dtype::float32, source};
                CHECK_EQ_STR(encode(bytes, from, le(tb::dtype::float32)), g.little,
                             ctx + " to little");
                CHECK_EQ_STR(encode(bytes, from, be(tb::dtype::float32)), g.big, ctx + " to big");
            }
        }
    }
}

// f32 bits -> torch 2.13's float16, bfloat16, float8_e4m3fn, float8_e5m2 bits.
struct narrow_golden {
    std::uint32_t f32;
    std::uint16_t f16, bf16;
    std::uint8_t e4m3, e5m2;
};
const narrow_golden narrow_goldens[] = {
    {0x00000000u, 0x0000, 0x0000, 0x00, 0x00}, {0x80000000u, 0x8000, 0x8000, 0x80, 0x80},
    {0x3f800000u, 0x3c00, 0x3f80, 0x38, 0x3c}, {0xbf800000u, 0xbc00, 0xbf80, 0xb8, 0xbc},
    {0x7f800000u, 0x7c00, 0x7f80, 0x7e, 0x7c}, {0xff800000u, 0xfc00, 0xff80, 0xfe, 0xfc},
    {0x7fc00000u, 0x7e00, 0xffff, 0x7f, 0x7f}, {0xffc00000u, 0xfe00, 0xffff, 0xff, 0xff},
    {0x7f800001u, 0x7e00, 0xffff, 0x7f, 0x7f}, {0xff800001u, 0xfe00, 0xffff, 0xff, 0xff},
    {0x7fbfffffu, 0x7fff, 0xffff, 0x7f, 0x7f}, {0x7fffffffu, 0x7fff, 0xffff, 0x7f, 0x7f},
    {0xffffffffu, 0xffff, 0xffff, 0xff, 0xff}, {0x7fa00000u, 0x7f00, 0xffff, 0x7f, 0x7f},
    {0x7fffe000u, 0x7fff, 0xffff, 0x7f, 0x7f}, {0x7f802000u, 0x7e01, 0xffff, 0x7f, 0x7f},
    {0x00000001u, 0x0000, 0x0000, 0x00, 0x00}, {0x807fffffu, 0x8000, 0x8080, 0x80, 0x80},
    {0x00800000u, 0x0000, 0x0080, 0x00, 0x00}, {0x7f7fffffu, 0x7c00, 0x7f80, 0x7e, 0x7c},
    {0xff7fffffu, 0xfc00, 0xff80, 0xfe, 0xfc}, {0x477fe000u, 0x7bff, 0x4780, 0x7e, 0x7c},
    {0x477fefffu, 0x7bff, 0x4780, 0x7e, 0x7c}, {0x477ff000u, 0x7c00, 0x4780, 0x7e, 0x7c},
    {0x477ff001u, 0x7c00, 0x4780, 0x7e, 0x7c}, {0x47800000u, 0x7c00, 0x4780, 0x7e, 0x7c},
    {0xc77ff000u, 0xfc00, 0xc780, 0xfe, 0xfc}, {0x33800000u, 0x0001, 0x3380, 0x00, 0x00},
    {0x33000000u, 0x0000, 0x3300, 0x00, 0x00}, {0x33000001u, 0x0001, 0x3300, 0x00, 0x00},
    {0x33c00000u, 0x0002, 0x33c0, 0x00, 0x00}, {0x38800000u, 0x0400, 0x3880, 0x00, 0x04},
    {0x387fc000u, 0x03ff, 0x3880, 0x00, 0x04}, {0x387fe000u, 0x0400, 0x3880, 0x00, 0x04},
    {0x3f801000u, 0x3c00, 0x3f80, 0x38, 0x3c}, {0x3f803000u, 0x3c02, 0x3f80, 0x38, 0x3c},
    {0x3f801001u, 0x3c01, 0x3f80, 0x38, 0x3c}, {0x3f808000u, 0x3c04, 0x3f80, 0x38, 0x3c},
    {0x3f818000u, 0x3c0c, 0x3f82, 0x38, 0x3c}, {0x3f808001u, 0x3c04, 0x3f81, 0x38, 0x3c},
    {0x7f7f8000u, 0x7c00, 0x7f80, 0x7e, 0x7c}, {0x7f7f7fffu, 0x7c00, 0x7f7f, 0x7e, 0x7c},
    {0x00008000u, 0x0000, 0x0000, 0x00, 0x00}, {0x00018000u, 0x0000, 0x0002, 0x00, 0x00},
    {0x43e00000u, 0x5f00, 0x43e0, 0x7e, 0x5f}, {0x43e80000u, 0x5f40, 0x43e8, 0x7e, 0x5f},
    {0x43f00000u, 0x5f80, 0x43f0, 0x7e, 0x60}, {0x43f80000u, 0x5fc0, 0x43f8, 0x7e, 0x60},
    {0x44000000u, 0x6000, 0x4400, 0x7e, 0x60}, {0xc3f00000u, 0xdf80, 0xc3f0, 0xfe, 0xe0},
    {0x3b000000u, 0x1800, 0x3b00, 0x01, 0x18}, {0x3a800000u, 0x1400, 0x3a80, 0x00, 0x14},
    {0x3a800001u, 0x1400, 0x3a80, 0x01, 0x14}, {0x3c000000u, 0x2000, 0x3c00, 0x04, 0x20},
    {0x3b800000u, 0x1c00, 0x3b80, 0x02, 0x1c}, {0x3bc00000u, 0x1e00, 0x3bc0, 0x03, 0x1e},
    {0x47600000u, 0x7b00, 0x4760, 0x7e, 0x7b}, {0x47700000u, 0x7b80, 0x4770, 0x7e, 0x7c},
    {0x47800000u, 0x7c00, 0x4780, 0x7e, 0x7c}, {0x37800000u, 0x0100, 0x3780, 0x00, 0x01},
    {0x37000000u, 0x0080, 0x3700, 0x00, 0x00}, {0x37000001u, 0x0080, 0x3700, 0x00, 0x01},
    {0x38000000u, 0x0200, 0x3800, 0x00, 0x02}, {0x47680000u, 0x7b40, 0x4768, 0x7e, 0x7b},
    {0x476fffffu, 0x7b80, 0x4770, 0x7e, 0x7b}, {0x3eaaaaabu, 0x3555, 0x3eab, 0x2b, 0x35},
    {0x40490fdbu, 0x4248, 0x4049, 0x45, 0x42}, {0xc2f6e979u, 0xd7b7, 0xc2f7, 0xef, 0xd8},
};

// f64 bits -> torch 2.13's float32 bits.
const std::uint64_t f64_goldens[][2] = {
    {0x0000000000000000ull, 0x00000000u}, {0x8000000000000000ull, 0x80000000u},
    {0x3ff0000000000000ull, 0x3f800000u}, {0xbff0000000000000ull, 0xbf800000u},
    {0x7ff0000000000000ull, 0x7f800000u}, {0xfff0000000000000ull, 0xff800000u},
    {0x47efffffe0000000ull, 0x7f7fffffu}, {0x47effffff0000000ull, 0x7f800000u},
    {0x47efffffefffffffull, 0x7f7fffffu}, {0x47effffff0000001ull, 0x7f800000u},
    {0x48078287f49c4a1dull, 0x7f800000u}, {0xc8078287f49c4a1dull, 0xff800000u},
    {0x36a0000000000000ull, 0x00000001u}, {0x3690000000000000ull, 0x00000000u},
    {0x366244ce242c5561ull, 0x00000000u}, {0x380fffffc0000000ull, 0x007fffffu},
    {0x3810000000000000ull, 0x00800000u}, {0x380fffffe0000000ull, 0x00800000u},
    {0x0000000000000001ull, 0x00000000u}, {0x3ff0000010000000ull, 0x3f800000u},
    {0x3ff0000030000000ull, 0x3f800002u}, {0x3fb999999999999aull, 0x3dcccccdu},
    {0x37b5c72fb1552d83ull, 0x0002b8e6u}, {0x7ff0000000000001ull, 0x7fc00000u},
    {0xfff8000000000000ull, 0xffc00000u}, {0x7ff4000020000000ull, 0x7fe00001u},
    {0x7fffffffffffffffull, 0x7fffffffu}, {0x000fffffffffffffull, 0x00000000u},
    {0x8000000000000001ull, 0x80000000u},
};

void test_golden_conversions(const char* when) {
    level_guard guard;
    std::vector<std::uint64_t> f16_all, f32_of_f16;
    for (std::uint32_t h = 0; h < 65536; ++h) {
        f16_all.push_back(h);
        f32_of_f16.push_back(reference_f16_to_f32(static_cast<std::uint16_t>(h)));
    }
    std::vector<std::uint64_t> f32s, f16s, bf16s, e4m3s, e5m2s, f64s, f32_of_f64;
    for (const narrow_golden& g : narrow_goldens) {
        f32s.push_back(g.f32);
        f16s.push_back(g.f16);
        bf16s.push_back(g.bf16);
        e4m3s.push_back(g.e4m3);
        e5m2s.push_back(g.e5m2);
    }
    for (auto& g : f64_goldens) {
        f64s.push_back(g[0]);
        f32_of_f64.push_back(g[1]);
    }
    // Repeat each table so every value also lands in the vector loops, not just the tails.
    auto repeated = [](const std::vector<std::uint64_t>& v, int times) {
        std::vector<std::uint64_t> out;
        for (int i = 0; i < times; ++i) out.insert(out.end(), v.begin(), v.end());
        return out;
    };
    for (tb::simd_level level : levels()) {
        tb::force_simd_level(level);
        const std::string ctx = std::string(when) + " " + tb::to_string(level);
        for (tb::byte_order order : both_orders) {
            CHECK_EQ_STR(encode(serialize(f16_all, 2, order), {tb::dtype::float16, order},
                                le(tb::dtype::float32)),
                         reference_base64(serialize(f32_of_f16, 4, tb::byte_order::little)),
                         ctx + " every float16 -> float32");
            const auto source = serialize(repeated(f32s, 5), 4, order);
            const tb::element_format from{tb::dtype::float32, order};
            CHECK_EQ_STR(encode(source, from, le(tb::dtype::float16)),
                         reference_base64(serialize(repeated(f16s, 5), 2, tb::byte_order::little)),
                         ctx + " float32 -> float16");
            CHECK_EQ_STR(encode(source, from, be(tb::dtype::bfloat16)),
                         reference_base64(serialize(repeated(bf16s, 5), 2, tb::byte_order::big)),
                         ctx + " float32 -> bfloat16");
            CHECK_EQ_STR(encode(source, from, le(tb::dtype::float8_e4m3fn)),
                         reference_base64(serialize(repeated(e4m3s, 5), 1, tb::byte_order::little)),
                         ctx + " float32 -> float8_e4m3fn");
            CHECK_EQ_STR(encode(source, from, le(tb::dtype::float8_e5m2)),
                         reference_base64(serialize(repeated(e5m2s, 5), 1, tb::byte_order::little)),
                         ctx + " float32 -> float8_e5m2");
            CHECK_EQ_STR(
                encode(serialize(repeated(f64s, 5), 8, order), {tb::dtype::float64, order},
                       be(tb::dtype::float32)),
                reference_base64(serialize(repeated(f32_of_f64, 5), 4, tb::byte_order::big)),
                ctx + " float64 -> float32");
        }
        // bfloat16 widening is a shift that keeps NaNs as they are; float16 NaNs become 0x7fc0 in
        // bfloat16 (formats.hpp).
        CHECK_EQ_STR(encode(serialize({0x3f80, 0x7fa1, 0xffff, 0x0001}, 2, tb::byte_order::little),
                            le(tb::dtype::bfloat16), le(tb::dtype::float32)),
                     reference_base64(serialize({0x3f800000, 0x7fa10000, 0xffff0000, 0x00010000}, 4,
                                                tb::byte_order::little)),
                     ctx + " bfloat16 -> float32");
        CHECK_EQ_STR(
            encode(serialize({0x7c01, 0xfe00, 0x3c00}, 2, tb::byte_order::little),
                   le(tb::dtype::float16), le(tb::dtype::bfloat16)),
            reference_base64(serialize({0x7fc0, 0x7fc0, 0x3f80}, 2, tb::byte_order::little)),
            ctx + " float16 NaN -> bfloat16");
    }
}

void test_strides() {
    level_guard guard;
    std::mt19937_64 rng(77);
    const std::size_t n = 1000;
    std::vector<std::uint64_t> values(n);
    for (auto& v : values) v = rng() & 0xffffffffu;
    const std::string expected = reference_base64(serialize(values, 4, tb::byte_order::little));
    for (tb::simd_level level : levels()) {
        tb::force_simd_level(level);
        const std::string ctx = std::string("strides ") + tb::to_string(level);
        for (std::size_t gap : {0, 1, 3, 4}) {  // bytes between elements: odd ones misalign them
            const std::size_t step = 4 + gap;
            for (bool reversed : {false, true}) {
                std::vector<unsigned char> buffer(1 + n * step);
                for (std::size_t i = 0; i < n; ++i) {
                    std::vector<unsigned char> e;
                    put(e, values[reversed ? n - 1 - i : i], 4, tb::byte_order::little);
                    std::memcpy(buffer.data() + 1 + i * step, e.data(), 4);  // +1: misaligned
                }
                const unsigned char* first = buffer.data() + 1 + (reversed ? (n - 1) * step : 0);
                const std::ptrdiff_t stride = reversed ? -static_cast<std::ptrdiff_t>(step)
                                                       : static_cast<std::ptrdiff_t>(step);
                CHECK_EQ_STR(encode_strided(first, 1, n, 0, stride, le(tb::dtype::float32),
                                            le(tb::dtype::float32))[0],
                             expected, ctx + " stride " + std::to_string(stride));
                // Strided gathering on the conversion path too.
                const auto b = encode_strided(first, 1, n, 0, stride, le(tb::dtype::float32),
                                              le(tb::dtype::bfloat16))[0];
                CHECK(b.size() == (n * 2 + 2) / 3 * 4);
            }
        }
        // Zero element stride: one value repeated. Zero and negative row strides.
        const std::vector<unsigned char> one = serialize({0x3f800000}, 4, tb::byte_order::little);
        const std::string ones = reference_base64(
            serialize(std::vector<std::uint64_t>(n, 0x3f800000), 4, tb::byte_order::little));
        CHECK_EQ_STR(encode_strided(one.data(), 1, n, 0, 0, le(tb::dtype::float32),
                                    le(tb::dtype::float32))[0],
                     ones, ctx + " zero element stride");
        const std::vector<unsigned char> half = serialize({0x3c00}, 2, tb::byte_order::little);
        CHECK_EQ_STR(encode_strided(half.data(), 1, n, 0, 0, le(tb::dtype::float16),
                                    le(tb::dtype::float32))[0],
                     ones, ctx + " zero element stride, float16");
        const auto same =
            encode_strided(one.data(), 3, 1, 0, 4, le(tb::dtype::float32), le(tb::dtype::float32));
        CHECK(same.size() == 3 && same[0] == "AACAPw==" && same[2] == "AACAPw==");

        // Rows: a 64 x 300 float16 matrix read bottom-up (negative row stride), as 2 threads.
        const std::size_t rows = 64, cols = 300;
        std::vector<std::uint64_t> matrix(rows * cols);
        for (auto& v : matrix) v = rng() & 0x7bff;  // finite float16 values
        const auto bytes = serialize(matrix, 2, tb::byte_order::little);
        const unsigned char* last_row = bytes.data() + (rows - 1) * cols * 2;
        for (unsigned threads : {1u, 2u}) {
            const auto out =
                encode_strided(last_row, rows, cols, -static_cast<std::ptrdiff_t>(cols * 2), 2,
                               le(tb::dtype::float16), le(tb::dtype::float32), threads);
            bool all_equal = out.size() == rows;
            for (std::size_t r = 0; r < rows && all_equal; ++r) {
                std::vector<std::uint64_t> row;
                for (std::size_t c = 0; c < cols; ++c) {
                    row.push_back(reference_f16_to_f32(
                        static_cast<std::uint16_t>(matrix[(rows - 1 - r) * cols + c])));
                }
                all_equal = out[r] == reference_base64(serialize(row, 4, tb::byte_order::little));
            }
            CHECK(all_equal);
        }
        // A batch big enough that `threads` really splits it: every row must still be right.
        const std::size_t big_rows = 96, big_cols = 3072;
        std::vector<std::uint64_t> big(big_rows * big_cols);
        for (auto& v : big) v = rng() & 0xffffffffu;
        const auto big_bytes = serialize(big, 4, tb::byte_order::little);
        const auto single = encode_strided(big_bytes.data(), big_rows, big_cols, big_cols * 4, 4,
                                           le(tb::dtype::float32), be(tb::dtype::float16), 1);
        const auto split = encode_strided(big_bytes.data(), big_rows, big_cols, big_cols * 4, 4,
                                          le(tb::dtype::float32), be(tb::dtype::float16), 2);
        CHECK(single == split);
    }
}

// ---- random values with the edge cases each format has ------------------------------------

std::uint64_t random_bits(tb::dtype type, std::mt19937_64& rng) {
    const std::uint64_t r = rng();
    const unsigned pick = static_cast<unsigned>(rng() % 100);
    switch (type) {
        case tb::dtype::float32: {
            static const std::uint32_t specials[] = {
                0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001,
                0xffbfffff, 0x7fa5a5a5, 0x00000001, 0x807fffff, 0x00800000, 0x7f7fffff, 0xff7fffff,
                0x477fe000, 0x477ff000, 0x477fefff, 0x33000000, 0x33000001, 0x387fe000, 0x43e00000,
                0x43e80000, 0x43f00000, 0x47600000, 0x47700000, 0x3a800000, 0x37000000, 0x7f7f8000};
            if (pick < 25) return r & 0xffffffffu;
            if (pick < 40) return specials[r % (sizeof specials / sizeof specials[0])];
            const std::uint32_t sign = static_cast<std::uint32_t>(r >> 63) << 31;
            const std::uint32_t exponent = 127 - 30 + static_cast<std::uint32_t>((r >> 40) % 52);
            std::uint32_t mantissa = static_cast<std::uint32_t>(r) & 0x7fffff;
            if (pick >= 80) {  // exact rounding ties of one of the narrow formats
                static const std::uint32_t ties[] = {0x1000, 0x8000, 0x80000, 0x100000};
                const std::uint32_t tie = ties[(r >> 32) % 4];
                mantissa = (mantissa & ~((tie << 1) - 1)) | tie;
            }
            return sign | (exponent << 23) | mantissa;
        }
        case tb::dtype::float16:
        case tb::dtype::bfloat16: {
            static const std::uint16_t specials[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7c01, 0x7e00,
                                                     0xfdff, 0x0001, 0x03ff, 0x7bff, 0x7f80, 0xff81,
                                                     0x7fc0, 0xffff, 0x0080, 0x007f};
            if (pick < 20) return specials[r % (sizeof specials / sizeof specials[0])];
            return r & 0xffff;
        }
        case tb::dtype::float64: {
            static const std::uint64_t specials[] = {
                0x0000000000000000ull, 0x8000000000000000ull, 0x7ff0000000000000ull,
                0xfff0000000000000ull, 0x7ff0000000000001ull, 0xfff8000000000000ull,
                0x7ff4000020000000ull, 0x47efffffe0000000ull, 0x47effffff0000000ull,
                0x47efffffefffffffull, 0x36a0000000000000ull, 0x3690000000000000ull,
                0x3690000000000001ull, 0x380fffffe0000000ull, 0x3810000000000000ull,
                0x380fffffffffffffull, 0x0000000000000001ull, 0x800fffffffffffffull};
            if (pick < 15) return r;
            if (pick < 30) return specials[r % (sizeof specials / sizeof specials[0])];
            const std::uint64_t sign = (r >> 63) << 63;
            // Exponents from well below float32's subnormals to past its range.
            const std::uint64_t exponent = 1023 - 160 + (rng() % 300);
            std::uint64_t mantissa = r & 0xfffffffffffffull;
            if (pick >= 85) mantissa = (mantissa & ~0x3fffffffull) | 0x10000000ull;  // float32 tie
            return sign | (exponent << 52) | mantissa;
        }
        case tb::dtype::float8_e4m3fn:
        case tb::dtype::float8_e5m2: return r & 0xff;
        // Integers: every bit pattern is a value, and the edges are as likely as any other.
        case tb::dtype::int8:
        case tb::dtype::uint8: return r & 0xff;
        case tb::dtype::int16:
        case tb::dtype::uint16: return r & 0xffff;
        case tb::dtype::int32:
        case tb::dtype::uint32: return r & 0xffffffffu;
        case tb::dtype::int64:
        case tb::dtype::uint64: return r;
        case tb::dtype::bool8: return r & 1;
    }
    return 0;
}

std::vector<std::size_t> sampled_lengths() {
    std::vector<std::size_t> lengths;
    for (std::size_t n = 0; n <= 64; ++n) lengths.push_back(n);
    for (std::size_t edge : {96, 128, 192, 256, 384, 512, 767, 768, 1024, 1536, 2048}) {
        for (std::size_t n = edge - 3; n <= edge + 3 && n <= 2048; ++n) {
            if (n > 64) lengths.push_back(n);
        }
    }
    lengths.push_back(1000);
    lengths.push_back(1789);
    return lengths;
}

struct combo {
    tb::element_format from, to;
};

std::vector<combo> all_combos() {
    std::vector<combo> combos;
    for (tb::dtype from : all_dtypes) {
        for (tb::dtype to : all_dtypes) {
            if (!tb::is_output_type(to)) continue;
            for (tb::byte_order fo : both_orders) {
                for (tb::byte_order to_order : both_orders)
                    combos.push_back({{from, fo}, {to, to_order}});
            }
        }
    }
    return combos;
}

// Every available level against scalar: lengths as described at the top (all of them for the
// float32 identity when `full`), input misalignments 0..max_misalignment, output misaligned too.
void differential(const char* when, bool full, unsigned max_misalignment) {
    const std::vector<tb::simd_level> available = levels();
    if (available.size() < 2) {
        std::printf("  %s: only the scalar level here, nothing to compare\n", when);
        return;
    }
    level_guard guard;
    constexpr std::size_t max_n = 2048;
    const std::vector<std::size_t> sampled = sampled_lengths();
    std::vector<std::size_t> every(max_n + 1);
    for (std::size_t n = 0; n <= max_n; ++n) every[n] = n;

    std::vector<unsigned char> buffer(64 + 64 + max_n * 8 + 64);
    unsigned char* aligned =
        buffer.data() + (64 - reinterpret_cast<std::uintptr_t>(buffer.data()) % 64);
    std::vector<char> actual_out;
    long compared = 0;

    for (const combo& c : all_combos()) {
        std::mt19937_64 rng(1000 + static_cast<unsigned>(c.from.type) * 16 +
                            static_cast<unsigned>(c.to.type));
        std::vector<std::uint64_t> values(max_n);
        for (auto& v : values) v = random_bits(c.from.type, rng);
        const std::size_t size = tb::dtype_size(c.from.type);
        const std::vector<unsigned char> bytes = serialize(values, size, c.from.order);
        const bool identity =
            c.from.type == tb::dtype::float32 && c.to.type == tb::dtype::float32 &&
            c.from.order == tb::byte_order::little && c.to.order == tb::byte_order::little;
        const std::vector<std::size_t>& lengths = identity && full ? every : sampled;
        // The scalar text of each length (scalar does not care about alignment), then each
        // level at each misalignment. Levels are switched per combination, not per encoding:
        // switching runs cpuid, which is slow inside a virtual machine.
        std::vector<std::string> expected(lengths.size());
        tb::force_simd_level(tb::simd_level::scalar);
        for (std::size_t i = 0; i < lengths.size(); ++i) {
            std::size_t length = 0;
            tb::encoded_size(lengths[i] * tb::dtype_size(c.to.type), &length);
            expected[i].assign(length, '\0');
            char* out = &expected[i][0];
            tb::encode_rows(
                {bytes.data(), 1, lengths[i], 0, static_cast<std::ptrdiff_t>(size), c.from}, c.to,
                &out);
        }
        for (tb::simd_level level : available) {
            if (level == tb::simd_level::scalar) continue;
            tb::force_simd_level(level);
            for (unsigned misalignment = 0; misalignment <= max_misalignment; ++misalignment) {
                std::memcpy(aligned + misalignment, bytes.data(), bytes.size());
                const std::size_t out_offset = (misalignment * 7) % 64;
                for (std::size_t i = 0; i < lengths.size(); ++i) {
                    const std::size_t n = lengths[i], length = expected[i].size();
                    actual_out.assign(out_offset + length + 1, '\0');
                    char* out = actual_out.data() + out_offset;
                    tb::encode_rows({aligned + misalignment, 1, n, 0,
                                     static_cast<std::ptrdiff_t>(size), c.from},
                                    c.to, &out);
                    ++compared;
                    if (std::memcmp(out, expected[i].data(), length) == 0 && out[length] == '\0') {
                        test_check::record_pass();
                    } else {
                        report_failure(__FILE__, __LINE__,
                                       std::string(when) + ": " + tb::to_string(level) +
                                           " != scalar for " + name(c.from.type) + "/" +
                                           name(c.from.order) + " -> " + name(c.to.type) + "/" +
                                           name(c.to.order) + ", n=" + std::to_string(n) +
                                           ", misalignment " + std::to_string(misalignment));
                    }
                }
            }
        }
    }
    std::printf("  %s: %ld encodings compared with scalar\n", when, compared);
}

// Integers widen to float32 rounding to nearest even, in integer arithmetic: against goldens
// from numpy's astype(float32) (not the host's conversion: valgrind's emulation of it rounds
// 64-bit integers differently), at the ties and extremes.
template <class Int>
void check_integer_widening(const std::vector<Int>& values,
                            const std::vector<std::uint32_t>& goldens, tb::dtype type) {
    std::vector<unsigned char> bytes(values.size() * sizeof(Int));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    std::vector<unsigned char> expected;
    for (std::uint32_t g : goldens) {
        for (int k = 0; k < 4; ++k) expected.push_back(static_cast<unsigned char>(g >> (8 * k)));
    }
    CHECK_EQ_STR(encode(bytes, {type, tb::host_byte_order}, le(tb::dtype::float32)),
                 reference_base64(expected), tb::to_string(type));
}

void test_integer_sources() {
    using limits64 = std::numeric_limits<std::int64_t>;
    check_integer_widening<std::int64_t>(
        {0, 1, -1, (1LL << 24) + 1, (1LL << 24) + 3, (1LL << 24) + (1LL << 16) + 1, limits64::max(),
         limits64::min(), -((1LL << 40) + (1LL << 16) + 1)},
        {0x00000000u, 0x3f800000u, 0xbf800000u, 0x4b800000u, 0x4b800002u, 0x4b808000u, 0x5f000000u,
         0xdf000000u, 0xd3800001u},
        tb::dtype::int64);
    check_integer_widening<std::uint64_t>(
        {0, 1, ~0ull, (1ull << 63) + (1ull << 39) + 1, (1ull << 63) + (1ull << 39)},
        {0x00000000u, 0x3f800000u, 0x5f800000u, 0x5f000001u, 0x5f000000u}, tb::dtype::uint64);
    check_integer_widening<std::int32_t>(
        {0, -7, 2147483647, -2147483647 - 1, 16777217, 16777219},
        {0x00000000u, 0xc0e00000u, 0x4f000000u, 0xcf000000u, 0x4b800000u, 0x4b800002u},
        tb::dtype::int32);
    check_integer_widening<std::uint32_t>(
        {0, 4294967295u, 16777217u}, {0x00000000u, 0x4f800000u, 0x4b800000u}, tb::dtype::uint32);
    check_integer_widening<std::int16_t>({0, -32768, 32767},
                                         {0x00000000u, 0xc7000000u, 0x46fffe00u}, tb::dtype::int16);
    check_integer_widening<std::uint16_t>({0, 65535}, {0x00000000u, 0x477fff00u},
                                          tb::dtype::uint16);
    check_integer_widening<std::int8_t>({0, -128, 127}, {0x00000000u, 0xc3000000u, 0x42fe0000u},
                                        tb::dtype::int8);
    check_integer_widening<std::uint8_t>({0, 255}, {0x00000000u, 0x437f0000u}, tb::dtype::uint8);
    // bool: any non-zero byte is true, as torch and numpy read it.
    CHECK_EQ_STR(encode({0, 1, 2}, {tb::dtype::bool8, tb::host_byte_order}, le(tb::dtype::float32)),
                 reference_base64({0, 0, 0, 0, 0, 0, 0x80, 0x3f, 0, 0, 0x80, 0x3f}), "bool");
}

// Rows indexed by several dimensions (a permuted 3-D array) equal the same rows copied out.
void test_multi_dimensional_rows() {
    // A [2][3][4] float32 array read as its permutation [3][2][4]: row (i, j) is source row (j, i).
    std::vector<float> data(24);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) * 0.5f - 3.0f;
    const std::size_t shape[] = {3, 2};
    const std::ptrdiff_t strides[] = {4 * 4, 12 * 4};
    tb::strided_rows rows{data.data(), 6, 4, 0, 4, {tb::dtype::float32, tb::host_byte_order}};
    rows.row_dims = 2;
    rows.row_shape = shape;
    rows.row_strides = strides;
    for (unsigned threads : {1u, 2u, 5u}) {
        std::vector<std::string> out(6, std::string(24, '\0'));
        std::vector<char*> outputs;
        for (auto& o : out) outputs.push_back(&o[0]);
        tb::encode_rows(rows, le(tb::dtype::float32), outputs.data(), threads);
        for (std::size_t i = 0; i < 3; ++i) {
            for (std::size_t j = 0; j < 2; ++j) {
                const float* row = data.data() + j * 12 + i * 4;
                std::vector<unsigned char> bytes(16);
                std::memcpy(bytes.data(), row, 16);
                if (tb::host_byte_order == tb::byte_order::big) {
                    for (std::size_t k = 0; k < 16; k += 4)
                        std::reverse(bytes.begin() + k, bytes.begin() + k + 4);
                }
                CHECK_EQ_STR(reference_base64(bytes), out[i * 2 + j], "N-D row");
            }
        }
    }
}

// Float rows: the same text whatever the thread count, and a NaN reported where it is.
void test_float_rows() {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 0.05f);
    const std::size_t n_rows = 9, n = 300;
    std::vector<float> data(n_rows * n);
    for (float& v : data) v = normal(rng);
    const tb::strided_rows rows{data.data(), n_rows,
                                n,           static_cast<std::ptrdiff_t>(n * 4),
                                4,           {tb::dtype::float32, tb::host_byte_order}};
    for (tb::float_format format : {tb::float_format::repr, tb::float_format::shortest}) {
        std::size_t bound = 0;
        CHECK(tb::float_data_bound(n_rows, n, tb::dtype::float32, format, 7, &bound));
        std::string texts[2];  // in each key order
        for (std::size_t keys = 0; keys < 2; ++keys) {
            std::string one(bound, '\0'), three(bound, '\0');
            char* end_one = nullptr;
            char* end_three = nullptr;
            const tb::response_layout& layout = *both_layouts[keys];
            CHECK(tb::write_float_data(rows, format, 7, &one[0], &end_one, 1, layout).finite);
            CHECK(tb::write_float_data(rows, format, 7, &three[0], &end_three, 3, layout).finite);
            one.resize(static_cast<std::size_t>(end_one - one.data()));
            three.resize(static_cast<std::size_t>(end_three - three.data()));
            CHECK_EQ_STR(one, three, "float data, threads 3 against 1");
            CHECK(one.back() == '}');
            texts[keys] = one;
        }
        CHECK(texts[0].rfind("{\"object\":\"embedding\",\"index\":7,\"embedding\":[", 0) == 0);
        // vLLM's order: the same entries, each with "index" moved before "object".
        const std::string openai_head = "{\"object\":\"embedding\",\"index\":";
        std::string moved = texts[0];
        for (std::size_t at = moved.find(openai_head); at != std::string::npos;
             at = moved.find(openai_head, at + 1)) {
            const std::size_t digits = at + openai_head.size();
            const std::size_t comma = moved.find(',', digits);
            moved.replace(at, comma + 1 - at,
                          "{\"index\":" + moved.substr(digits, comma - digits) +
                              ",\"object\":\"embedding\",");
        }
        CHECK(texts[1].rfind("{\"index\":7,\"object\":\"embedding\",\"embedding\":[", 0) == 0);
        CHECK_EQ_STR(texts[1], moved, "float data in vLLM's key order");
    }
    data[4 * n + 17] = std::numeric_limits<float>::quiet_NaN();
    std::vector<std::string> out(n_rows);
    std::vector<char*> outputs;
    std::vector<std::size_t> lengths(n_rows);
    std::size_t bound = 0;
    CHECK(tb::float_row_bound(n, tb::dtype::float32, tb::float_format::repr, &bound));
    for (auto& o : out) {
        o.assign(bound, '\0');
        outputs.push_back(&o[0]);
    }
    for (unsigned threads : {1u, 4u}) {
        const tb::float_text_result bad = tb::write_float_rows(
            rows, tb::float_format::repr, outputs.data(), lengths.data(), threads);
        CHECK(!bad.finite && bad.row == 4 && bad.column == 17);
    }
    const tb::float_text_result found = tb::find_non_finite(rows);
    CHECK(!found.finite && found.row == 4 && found.column == 17);
}

// Float rows through the public API at every SIMD level (TENSORB64_SIMD / force_simd_level switch
// the float-text writer too): the same text as the scalar level for float32, bfloat16, float16
// and float64 sources, strided views, rows of every length 0..70 and beyond a 512-value block, and
// a NaN or infinity reported at its column.
void test_float_rows_levels() {
    level_guard guard;
    std::mt19937_64 rng(12);
    std::normal_distribution<float> normal(0.0f, 0.05f);
    const auto run = [](const tb::strided_rows& rows, tb::float_format format,
                        std::vector<std::string>* texts) {
        std::size_t bound = 0;
        CHECK(tb::float_row_bound(rows.row_length, rows.format.type, format, &bound));
        std::vector<std::string> out(rows.rows, std::string(bound + 16, '\x7f'));
        std::vector<char*> outputs;
        for (auto& o : out) outputs.push_back(&o[0]);
        std::vector<std::size_t> lengths(rows.rows);
        const tb::float_text_result result =
            tb::write_float_rows(rows, format, outputs.data(), lengths.data(), 1);
        for (std::size_t r = 0; r < rows.rows && result.finite; ++r) {
            bool untouched = true;
            for (std::size_t i = bound; i < out[r].size(); ++i) untouched &= out[r][i] == '\x7f';
            CHECK(untouched);
            out[r].resize(lengths[r]);
        }
        *texts = out;
        return result;
    };
    for (const std::size_t n :
         {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{9},
          std::size_t{70}, std::size_t{511}, std::size_t{513}, std::size_t{1100}}) {
        const std::size_t n_rows = 3;
        std::vector<float> f32(n_rows * n * 2);
        for (std::size_t i = 0; i < f32.size(); ++i) {
            f32[i] =
                (i % 5 == 0)
                    ? static_cast<float>(std::ldexp(normal(rng), static_cast<int>(rng() % 80) - 40))
                    : normal(rng);
            if (i % 37 == 0) f32[i] = 0.0f;
            if (i % 41 == 1) {  // a subnormal, made from its bits (FTZ may be on)
                const std::uint32_t b = static_cast<std::uint32_t>(rng() & 0x807fffffu) | 1u;
                std::memcpy(&f32[i], &b, 4);
            }
        }
        // The same values widened (normal ones only: DAZ would flush a subnormal's conversion;
        // those are float64 subnormals here instead).
        std::vector<double> f64(f32.size());
        for (std::size_t i = 0; i < f32.size(); ++i) {
            std::uint32_t b;
            std::memcpy(&b, &f32[i], 4);
            if ((b & 0x7f800000u) != 0) {
                f64[i] = static_cast<double>(f32[i]);
            } else {
                const std::uint64_t tiny =
                    (std::uint64_t{b >> 31} << 63) | (rng() & 0xfffffffffffffull);
                std::memcpy(&f64[i], &tiny, 8);
            }
        }
        for (std::size_t i = 0; i < f64.size(); i += 3) {  // doubles with 53-bit significands
            const std::uint64_t b =
                (rng() & 0x800fffffffffffffull) | (std::uint64_t{1000 + rng() % 40} << 52);
            std::memcpy(&f64[i], &b, 8);
        }
        std::vector<std::uint16_t> halves(f32.size());
        for (auto& h : halves) h = static_cast<std::uint16_t>(rng() & 0x7bff);  // finite
        struct source {
            const void* data;
            tb::dtype type;
            std::size_t size;
        };
        const source sources[] = {{f32.data(), tb::dtype::float32, 4},
                                  {f64.data(), tb::dtype::float64, 8},
                                  {halves.data(), tb::dtype::float16, 2},
                                  {halves.data(), tb::dtype::bfloat16, 2}};
        for (const source& src : sources) {
            // Every other element of each row (a strided view).
            const tb::strided_rows rows{src.data,
                                        n_rows,
                                        n,
                                        static_cast<std::ptrdiff_t>(2 * n * src.size),
                                        static_cast<std::ptrdiff_t>(2 * src.size),
                                        {src.type, tb::host_byte_order}};
            for (tb::float_format format : {tb::float_format::repr, tb::float_format::shortest}) {
                std::vector<std::string> expected;
                tb::force_simd_level(tb::simd_level::scalar);
                CHECK(run(rows, format, &expected).finite);
                for (tb::simd_level level : levels()) {
                    tb::force_simd_level(level);
                    std::vector<std::string> got;
                    CHECK(run(rows, format, &got).finite);
                    for (std::size_t r = 0; r < n_rows; ++r)
                        CHECK_EQ_STR(got[r], expected[r], "float rows, every level equals scalar");
                }
            }
        }
        if (n == 0) continue;
        for (const std::size_t at : {std::size_t{0}, n / 2, n - 1}) {
            std::vector<float> bad = f32;
            bad[2 * (n + at)] = std::numeric_limits<float>::infinity();  // row 1, column at
            const tb::strided_rows rows{bad.data(), n_rows,
                                        n,          static_cast<std::ptrdiff_t>(8 * n),
                                        8,          {tb::dtype::float32, tb::host_byte_order}};
            for (tb::simd_level level : levels()) {
                tb::force_simd_level(level);
                for (tb::float_format format :
                     {tb::float_format::repr, tb::float_format::shortest}) {
                    std::vector<std::string> got;
                    const tb::float_text_result result = run(rows, format, &got);
                    CHECK(!result.finite && result.row == 1 && result.column == at);
                }
            }
        }
    }
}

// row_output::bytes writes exactly the bytes whose base64 row_output::base64 writes, at every
// level, for every conversion and byte order, across block boundaries, into rows laid end to end.
void test_bytes_output() {
    level_guard guard;
    const std::vector<std::size_t> lengths = {0, 1, 2, 3, 5, 47, 48, 49, 767, 768, 769, 1537};
    for (tb::simd_level level : levels()) {
        tb::force_simd_level(level);
        for (const combo& c : all_combos()) {
            std::mt19937_64 rng(7 + static_cast<unsigned>(c.from.type) * 16 +
                                static_cast<unsigned>(c.to.type));
            for (std::size_t n : lengths) {
                std::vector<std::uint64_t> values(2 * n);
                for (auto& v : values) v = random_bits(c.from.type, rng);
                const std::size_t size = tb::dtype_size(c.from.type);
                const std::vector<unsigned char> bytes = serialize(values, size, c.from.order);
                const std::vector<std::string> text =
                    encode_strided(bytes.data(), 2, n, static_cast<std::ptrdiff_t>(n * size),
                                   static_cast<std::ptrdiff_t>(size), c.from, c.to);
                const std::size_t row_bytes = n * tb::dtype_size(c.to.type);
                std::vector<unsigned char> body(2 * row_bytes + 64, 0x7f);
                char* outputs[2] = {reinterpret_cast<char*>(body.data()),
                                    reinterpret_cast<char*>(body.data() + row_bytes)};
                tb::encode_rows({bytes.data(), 2, n, static_cast<std::ptrdiff_t>(n * size),
                                 static_cast<std::ptrdiff_t>(size), c.from},
                                c.to, outputs, 1, tb::row_output::bytes);
                for (int r = 0; r < 2; ++r) {
                    const std::vector<unsigned char> row(body.begin() + r * row_bytes,
                                                         body.begin() + (r + 1) * row_bytes);
                    CHECK_EQ_STR(reference_base64(row), text[r], "bytes output");
                }
                bool untouched = true;
                for (std::size_t i = 2 * row_bytes; i < body.size(); ++i)
                    untouched &= body[i] == 0x7f;
                CHECK(untouched);
            }
        }
    }
}

// A hostile floating-point environment for the scope of the object: flush-to-zero,
// denormals-are-zero and rounding toward +infinity, as a process may have set them.
struct hostile_fp_environment {
#if defined(__x86_64__) || defined(_M_X64)
    static unsigned read() { return _mm_getcsr(); }
    static void write(unsigned v) { _mm_setcsr(v); }
    static constexpr unsigned hostile_bits = 0x8040u | 0x4000u;  // FTZ | DAZ | RC = upward
    unsigned saved = read();
#elif defined(__aarch64__) && defined(__GNUC__)
    static std::uint64_t read() {
        std::uint64_t v;
        __asm__ volatile("mrs %0, fpcr" : "=r"(v));
        return v;
    }
    static void write(std::uint64_t v) { __asm__ volatile("msr fpcr, %0" : : "r"(v)); }
    static constexpr std::uint64_t hostile_bits =
        (1u << 24) | (1u << 19) | (1u << 22);  // FZ | FZ16 | RMode = +inf
    std::uint64_t saved = read();
#else
#endif
#if defined(__x86_64__) || defined(_M_X64) || (defined(__aarch64__) && defined(__GNUC__))
    // `hostile` is read back rather than assumed: valgrind keeps only the bits it emulates.
    decltype(read()) hostile = (write(saved | hostile_bits), read());
    ~hostile_fp_environment() { write(saved); }
    bool still_set() const { return read() == hostile; }
#endif
};

void test_hostile_fp_environment() {
#if defined(__x86_64__) || defined(_M_X64) || (defined(__aarch64__) && defined(__GNUC__))
    const hostile_fp_environment on;
    // The scalar code is integer-only, so it stays the reference even now.
    test_golden_conversions("golden under FTZ/DAZ, rounding upward");
    differential("differential under FTZ/DAZ, rounding upward", false, 7);
    test_float_rows_levels();  // float text: every level equals the integer-only scalar writer
    CHECK(on.still_set());     // the levels gave the caller back its floating-point environment
#else
    std::printf("  FP environment: no FTZ/rounding control known for this architecture, skipped\n");
#endif
}

#if defined(TENSORB64_TEST_GUARD_PAGES)
// A region whose end touches an inaccessible page: reading or writing one byte past the end faults.
struct guarded_region {
    std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    std::size_t size;
    unsigned char* base;
    explicit guarded_region(std::size_t bytes) {
        size = (bytes + page - 1) / page * page;
        base = static_cast<unsigned char*>(
            mmap(nullptr, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (base == MAP_FAILED) throw std::runtime_error("mmap failed");
        if (mprotect(base + size, page, PROT_NONE) != 0)
            throw std::runtime_error("mprotect failed");
    }
    ~guarded_region() { munmap(base, size + page); }
    unsigned char* end() const { return base + size; }
};

void test_no_access_past_the_ends() {
    level_guard guard;
    constexpr std::size_t max_n = 200;
    guarded_region input(max_n * 8), output(max_n * 8 * 2);
    std::mt19937_64 rng(99);
    for (tb::simd_level level : levels()) {
        tb::force_simd_level(level);
        for (const combo& c : all_combos()) {
            const std::size_t size = tb::dtype_size(c.from.type);
            std::vector<std::uint64_t> values(max_n);
            for (auto& v : values) v = random_bits(c.from.type, rng);
            const std::vector<unsigned char> bytes = serialize(values, size, c.from.order);
            for (std::size_t n = 0; n <= max_n; ++n) {
                unsigned char* source = input.end() - n * size;
                std::memcpy(source, bytes.data(), n * size);
                std::size_t length = 0;
                tb::encoded_size(n * tb::dtype_size(c.to.type), &length);
                char* out = reinterpret_cast<char*>(output.end() - length);
                tb::encode_rows({source, 1, n, 0, static_cast<std::ptrdiff_t>(size), c.from}, c.to,
                                &out);
                // Reaching this line is the test: a read or write past either end would have
                // faulted. The text itself is checked by the differential test.
                CHECK(length == 0 || out[length - 1] != '\0');
            }
        }
    }
}
#endif

void test_simd_level_api() {
    const auto available = levels();
    CHECK(!available.empty() && available.front() == tb::simd_level::scalar);
    tb::simd_level parsed;
    CHECK(tb::parse_simd_level("scalar", &parsed) && parsed == tb::simd_level::scalar);
    CHECK(tb::parse_simd_level("avx512", &parsed) && parsed == tb::simd_level::avx512);
    CHECK(!tb::parse_simd_level("sse9", &parsed));
    for (tb::simd_level level :
         {tb::simd_level::avx2, tb::simd_level::avx512, tb::simd_level::neon}) {
        bool has = false;
        for (tb::simd_level a : available) has |= a == level;
        if (has) continue;
        bool threw = false;
        try {
            tb::force_simd_level(level);
        } catch (const std::invalid_argument& e) {
            threw = std::strstr(e.what(), "available: scalar") != nullptr;
        }
        CHECK(threw);
    }
    bool threw = false;
    char* out = nullptr;
    try {
        tb::encode_rows({nullptr, 0, 0, 0, 4, le(tb::dtype::float32)}, le(tb::dtype::float64),
                        &out);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    CHECK(threw);
    CHECK(tb::is_output_type(tb::dtype::float8_e4m3fn));
    CHECK(tb::is_output_type(tb::dtype::bfloat16));
    CHECK(!tb::is_output_type(tb::dtype::int32));  // integers are never written
    CHECK(!tb::is_output_type(tb::dtype::float64));
    std::size_t length = 0;
    CHECK(tb::encoded_size(4, &length) && length == 8);
    CHECK(!tb::encoded_size(SIZE_MAX, &length));
}

// ---- decoding ------------------------------------------------------------------------------

// float32 bits of every float8 code, from torch 2.13: torch.arange(256, dtype=torch.uint8)
// .view(dtype).to(torch.float32) (e4m3fn NaNs widen to sign | 0x7ff00000, e5m2 NaNs are quieted).
const std::uint32_t e4m3fn_goldens[256] = {
    0x00000000u, 0x3b000000u, 0x3b800000u, 0x3bc00000u, 0x3c000000u, 0x3c200000u, 0x3c400000u,
    0x3c600000u, 0x3c800000u, 0x3c900000u, 0x3ca00000u, 0x3cb00000u, 0x3cc00000u, 0x3cd00000u,
    0x3ce00000u, 0x3cf00000u, 0x3d000000u, 0x3d100000u, 0x3d200000u, 0x3d300000u, 0x3d400000u,
    0x3d500000u, 0x3d600000u, 0x3d700000u, 0x3d800000u, 0x3d900000u, 0x3da00000u, 0x3db00000u,
    0x3dc00000u, 0x3dd00000u, 0x3de00000u, 0x3df00000u, 0x3e000000u, 0x3e100000u, 0x3e200000u,
    0x3e300000u, 0x3e400000u, 0x3e500000u, 0x3e600000u, 0x3e700000u, 0x3e800000u, 0x3e900000u,
    0x3ea00000u, 0x3eb00000u, 0x3ec00000u, 0x3ed00000u, 0x3ee00000u, 0x3ef00000u, 0x3f000000u,
    0x3f100000u, 0x3f200000u, 0x3f300000u, 0x3f400000u, 0x3f500000u, 0x3f600000u, 0x3f700000u,
    0x3f800000u, 0x3f900000u, 0x3fa00000u, 0x3fb00000u, 0x3fc00000u, 0x3fd00000u, 0x3fe00000u,
    0x3ff00000u, 0x40000000u, 0x40100000u, 0x40200000u, 0x40300000u, 0x40400000u, 0x40500000u,
    0x40600000u, 0x40700000u, 0x40800000u, 0x40900000u, 0x40a00000u, 0x40b00000u, 0x40c00000u,
    0x40d00000u, 0x40e00000u, 0x40f00000u, 0x41000000u, 0x41100000u, 0x41200000u, 0x41300000u,
    0x41400000u, 0x41500000u, 0x41600000u, 0x41700000u, 0x41800000u, 0x41900000u, 0x41a00000u,
    0x41b00000u, 0x41c00000u, 0x41d00000u, 0x41e00000u, 0x41f00000u, 0x42000000u, 0x42100000u,
    0x42200000u, 0x42300000u, 0x42400000u, 0x42500000u, 0x42600000u, 0x42700000u, 0x42800000u,
    0x42900000u, 0x42a00000u, 0x42b00000u, 0x42c00000u, 0x42d00000u, 0x42e00000u, 0x42f00000u,
    0x43000000u, 0x43100000u, 0x43200000u, 0x43300000u, 0x43400000u, 0x43500000u, 0x43600000u,
    0x43700000u, 0x43800000u, 0x43900000u, 0x43a00000u, 0x43b00000u, 0x43c00000u, 0x43d00000u,
    0x43e00000u, 0x7ff00000u, 0x80000000u, 0xbb000000u, 0xbb800000u, 0xbbc00000u, 0xbc000000u,
    0xbc200000u, 0xbc400000u, 0xbc600000u, 0xbc800000u, 0xbc900000u, 0xbca00000u, 0xbcb00000u,
    0xbcc00000u, 0xbcd00000u, 0xbce00000u, 0xbcf00000u, 0xbd000000u, 0xbd100000u, 0xbd200000u,
    0xbd300000u, 0xbd400000u, 0xbd500000u, 0xbd600000u, 0xbd700000u, 0xbd800000u, 0xbd900000u,
    0xbda00000u, 0xbdb00000u, 0xbdc00000u, 0xbdd00000u, 0xbde00000u, 0xbdf00000u, 0xbe000000u,
    0xbe100000u, 0xbe200000u, 0xbe300000u, 0xbe400000u, 0xbe500000u, 0xbe600000u, 0xbe700000u,
    0xbe800000u, 0xbe900000u, 0xbea00000u, 0xbeb00000u, 0xbec00000u, 0xbed00000u, 0xbee00000u,
    0xbef00000u, 0xbf000000u, 0xbf100000u, 0xbf200000u, 0xbf300000u, 0xbf400000u, 0xbf500000u,
    0xbf600000u, 0xbf700000u, 0xbf800000u, 0xbf900000u, 0xbfa00000u, 0xbfb00000u, 0xbfc00000u,
    0xbfd00000u, 0xbfe00000u, 0xbff00000u, 0xc0000000u, 0xc0100000u, 0xc0200000u, 0xc0300000u,
    0xc0400000u, 0xc0500000u, 0xc0600000u, 0xc0700000u, 0xc0800000u, 0xc0900000u, 0xc0a00000u,
    0xc0b00000u, 0xc0c00000u, 0xc0d00000u, 0xc0e00000u, 0xc0f00000u, 0xc1000000u, 0xc1100000u,
    0xc1200000u, 0xc1300000u, 0xc1400000u, 0xc1500000u, 0xc1600000u, 0xc1700000u, 0xc1800000u,
    0xc1900000u, 0xc1a00000u, 0xc1b00000u, 0xc1c00000u, 0xc1d00000u, 0xc1e00000u, 0xc1f00000u,
    0xc2000000u, 0xc2100000u, 0xc2200000u, 0xc2300000u, 0xc2400000u, 0xc2500000u, 0xc2600000u,
    0xc2700000u, 0xc2800000u, 0xc2900000u, 0xc2a00000u, 0xc2b00000u, 0xc2c00000u, 0xc2d00000u,
    0xc2e00000u, 0xc2f00000u, 0xc3000000u, 0xc3100000u, 0xc3200000u, 0xc3300000u, 0xc3400000u,
    0xc3500000u, 0xc3600000u, 0xc3700000u, 0xc3800000u, 0xc3900000u, 0xc3a00000u, 0xc3b00000u,
    0xc3c00000u, 0xc3d00000u, 0xc3e00000u, 0xfff00000u,
};
const std::uint32_t e5m2_goldens[256] = {
    0x00000000u, 0x37800000u, 0x38000000u, 0x38400000u, 0x38800000u, 0x38a00000u, 0x38c00000u,
    0x38e00000u, 0x39000000u, 0x39200000u, 0x39400000u, 0x39600000u, 0x39800000u, 0x39a00000u,
    0x39c00000u, 0x39e00000u, 0x3a000000u, 0x3a200000u, 0x3a400000u, 0x3a600000u, 0x3a800000u,
    0x3aa00000u, 0x3ac00000u, 0x3ae00000u, 0x3b000000u, 0x3b200000u, 0x3b400000u, 0x3b600000u,
    0x3b800000u, 0x3ba00000u, 0x3bc00000u, 0x3be00000u, 0x3c000000u, 0x3c200000u, 0x3c400000u,
    0x3c600000u, 0x3c800000u, 0x3ca00000u, 0x3cc00000u, 0x3ce00000u, 0x3d000000u, 0x3d200000u,
    0x3d400000u, 0x3d600000u, 0x3d800000u, 0x3da00000u, 0x3dc00000u, 0x3de00000u, 0x3e000000u,
    0x3e200000u, 0x3e400000u, 0x3e600000u, 0x3e800000u, 0x3ea00000u, 0x3ec00000u, 0x3ee00000u,
    0x3f000000u, 0x3f200000u, 0x3f400000u, 0x3f600000u, 0x3f800000u, 0x3fa00000u, 0x3fc00000u,
    0x3fe00000u, 0x40000000u, 0x40200000u, 0x40400000u, 0x40600000u, 0x40800000u, 0x40a00000u,
    0x40c00000u, 0x40e00000u, 0x41000000u, 0x41200000u, 0x41400000u, 0x41600000u, 0x41800000u,
    0x41a00000u, 0x41c00000u, 0x41e00000u, 0x42000000u, 0x42200000u, 0x42400000u, 0x42600000u,
    0x42800000u, 0x42a00000u, 0x42c00000u, 0x42e00000u, 0x43000000u, 0x43200000u, 0x43400000u,
    0x43600000u, 0x43800000u, 0x43a00000u, 0x43c00000u, 0x43e00000u, 0x44000000u, 0x44200000u,
    0x44400000u, 0x44600000u, 0x44800000u, 0x44a00000u, 0x44c00000u, 0x44e00000u, 0x45000000u,
    0x45200000u, 0x45400000u, 0x45600000u, 0x45800000u, 0x45a00000u, 0x45c00000u, 0x45e00000u,
    0x46000000u, 0x46200000u, 0x46400000u, 0x46600000u, 0x46800000u, 0x46a00000u, 0x46c00000u,
    0x46e00000u, 0x47000000u, 0x47200000u, 0x47400000u, 0x47600000u, 0x7f800000u, 0x7fe00000u,
    0x7fc00000u, 0x7fe00000u, 0x80000000u, 0xb7800000u, 0xb8000000u, 0xb8400000u, 0xb8800000u,
    0xb8a00000u, 0xb8c00000u, 0xb8e00000u, 0xb9000000u, 0xb9200000u, 0xb9400000u, 0xb9600000u,
    0xb9800000u, 0xb9a00000u, 0xb9c00000u, 0xb9e00000u, 0xba000000u, 0xba200000u, 0xba400000u,
    0xba600000u, 0xba800000u, 0xbaa00000u, 0xbac00000u, 0xbae00000u, 0xbb000000u, 0xbb200000u,
    0xbb400000u, 0xbb600000u, 0xbb800000u, 0xbba00000u, 0xbbc00000u, 0xbbe00000u, 0xbc000000u,
    0xbc200000u, 0xbc400000u, 0xbc600000u, 0xbc800000u, 0xbca00000u, 0xbcc00000u, 0xbce00000u,
    0xbd000000u, 0xbd200000u, 0xbd400000u, 0xbd600000u, 0xbd800000u, 0xbda00000u, 0xbdc00000u,
    0xbde00000u, 0xbe000000u, 0xbe200000u, 0xbe400000u, 0xbe600000u, 0xbe800000u, 0xbea00000u,
    0xbec00000u, 0xbee00000u, 0xbf000000u, 0xbf200000u, 0xbf400000u, 0xbf600000u, 0xbf800000u,
    0xbfa00000u, 0xbfc00000u, 0xbfe00000u, 0xc0000000u, 0xc0200000u, 0xc0400000u, 0xc0600000u,
    0xc0800000u, 0xc0a00000u, 0xc0c00000u, 0xc0e00000u, 0xc1000000u, 0xc1200000u, 0xc1400000u,
    0xc1600000u, 0xc1800000u, 0xc1a00000u, 0xc1c00000u, 0xc1e00000u, 0xc2000000u, 0xc2200000u,
    0xc2400000u, 0xc2600000u, 0xc2800000u, 0xc2a00000u, 0xc2c00000u, 0xc2e00000u, 0xc3000000u,
    0xc3200000u, 0xc3400000u, 0xc3600000u, 0xc3800000u, 0xc3a00000u, 0xc3c00000u, 0xc3e00000u,
    0xc4000000u, 0xc4200000u, 0xc4400000u, 0xc4600000u, 0xc4800000u, 0xc4a00000u, 0xc4c00000u,
    0xc4e00000u, 0xc5000000u, 0xc5200000u, 0xc5400000u, 0xc5600000u, 0xc5800000u, 0xc5a00000u,
    0xc5c00000u, 0xc5e00000u, 0xc6000000u, 0xc6200000u, 0xc6400000u, 0xc6600000u, 0xc6800000u,
    0xc6a00000u, 0xc6c00000u, 0xc6e00000u, 0xc7000000u, 0xc7200000u, 0xc7400000u, 0xc7600000u,
    0xff800000u, 0xffe00000u, 0xffc00000u, 0xffe00000u,
};

// Decodes `text` as `stored`; the status, and the output as bytes (empty on an error).
tb::decode_result decode_text(const std::string& text, tb::element_format stored, bool widen,
                              std::vector<unsigned char>* out) {
    std::size_t elements = 0;
    tb::decode_result r = tb::decoded_elements(text.data(), text.size(), stored.type, &elements);
    if (r.status != tb::decode_status::ok) return r;
    const std::size_t bytes = elements * (widen ? 4 : tb::dtype_size(stored.type));
    std::vector<unsigned char> buffer(bytes + 16, 0x5a);
    r = tb::decode_base64(text.data(), text.size(), stored, widen, buffer.data() + 1, bytes);
    bool untouched = buffer[0] == 0x5a;  // nothing written outside the output
    for (std::size_t i = bytes + 1; i < buffer.size(); ++i) untouched &= buffer[i] == 0x5a;
    CHECK(untouched);
    out->assign(buffer.begin() + 1, buffer.begin() + 1 + static_cast<std::ptrdiff_t>(bytes));
    return r;
}

// The host-order bytes of float32 bits (how decode leaves them).
std::vector<unsigned char> host_f32(const std::vector<std::uint64_t>& bits) {
    return serialize(bits, 4, tb::host_byte_order);
}

void test_decode() {
    const tb::element_format bytes_format = le(tb::dtype::float8_e4m3fn);
    // Round trips of every length 0..300 and across the block boundary (4096 characters).
    std::mt19937_64 rng(17);
    for (std::size_t n : {0, 1, 2, 3, 4, 5, 299, 300, 3071, 3072, 3073, 3074, 6144, 6145, 9000}) {
        std::vector<unsigned char> data(n), got;
        for (auto& b : data) b = static_cast<unsigned char>(rng());
        const tb::decode_result r = decode_text(reference_base64(data), bytes_format, false, &got);
        CHECK(r.status == tb::decode_status::ok);
        CHECK(got == data);
    }
    for (std::size_t n = 0; n <= 300; ++n) {
        std::vector<unsigned char> data(n), got;
        for (auto& b : data) b = static_cast<unsigned char>(rng());
        CHECK(decode_text(reference_base64(data), bytes_format, false, &got).status ==
              tb::decode_status::ok);
        CHECK(got == data);
    }

    // What is refused, and where (see decode.cpp for how this compares with CPython 3.13).
    using st = tb::decode_status;
    struct refusal {
        const char* text;
        st status;
        std::size_t offset;
    };
    const refusal refusals[] = {
        {"abcd=", st::bad_padding, 4},      {"abcd==", st::bad_padding, 4},
        {"AAAA====", st::bad_padding, 4},   {"ab==AAAA", st::bad_padding, 2},
        {"ab=a", st::bad_padding, 2},       {"AA=A", st::bad_padding, 2},
        {"=AAA", st::bad_padding, 0},       {"a===", st::bad_padding, 1},
        {"abc==", st::bad_padding, 3},      {"ab===", st::bad_padding, 2},
        {"AAAA AAA", st::bad_character, 4}, {"AAA\n", st::bad_character, 3},
        {"AA!A", st::bad_character, 2},     {"AAAA-_AA", st::bad_character, 4},
        {"ab==\n", st::bad_character, 4},   {"AAAAA", st::bad_length, 5},
        {"ab=", st::bad_length, 3},         {"Zg", st::bad_length, 2},
        {"AB==", st::trailing_bits, 1},     {"ab==", st::trailing_bits, 1},
        {"AAB=", st::trailing_bits, 2},     {"AAAAAAB=", st::trailing_bits, 6},
        {"AA!A=", st::bad_character, 2},  // a bad character wins over the length
    };
    for (const refusal& r : refusals) {
        std::vector<unsigned char> got;
        const tb::decode_result result = decode_text(r.text, bytes_format, false, &got);
        if (result.status != r.status || result.offset != r.offset) {
            report_failure(__FILE__, __LINE__,
                           std::string("decode of \"") + r.text + "\": " + tb::to_string(result));
        } else {
            test_check::record_pass();
        }
    }
    {
        std::vector<unsigned char> got;
        CHECK(decode_text("AA==", bytes_format, false, &got).status == st::ok && got.size() == 1);
        CHECK(decode_text("AAE=", bytes_format, false, &got).status == st::ok && got.size() == 2);
        // A bad character in the middle of a long text, past the first block.
        std::string text(8192, 'A');
        text[5000] = '*';
        const tb::decode_result r = decode_text(text, bytes_format, false, &got);
        CHECK(r.status == st::bad_character && r.offset == 5000 && r.character == '*');
        CHECK_EQ_STR(tb::to_string(r),
                     "invalid base64: bad character '*' (0x2a) at offset 5000 (the alphabet is "
                     "A-Z, a-z, 0-9, '+' and '/', with '=' padding)",
                     "bad character message");
        text[5000] = '=';
        CHECK(decode_text(text, bytes_format, false, &got).status == st::bad_padding);
        CHECK(decode_text("AAAAAAA=", le(tb::dtype::float32), false, &got).status ==
              st::not_whole_values);
        std::size_t elements = 0;
        CHECK_EQ_STR(
            tb::to_string(tb::decoded_elements("AAAA", 4, tb::dtype::float16, &elements)),
            "decoded length 3 bytes is not a whole number of float16 values (2 bytes each)",
            "not whole values message");
        unsigned char small[4];
        CHECK(tb::decode_base64("AAAAAA==", 8, bytes_format, false, small, 3).status ==
              st::wrong_output_size);
        CHECK(tb::decode_base64("AAAAAA==", 8, bytes_format, false, small, 4).status == st::ok);
        CHECK(tb::decode_base64(nullptr, 0, le(tb::dtype::float32), true, nullptr, 0).status ==
              st::ok);
    }

    // decode_each: every task decoded as alone, whatever the threads; the lowest failure named.
    {
        const std::string good = "AACAPwAAAEA=";  // 1.0f, 2.0f
        std::vector<std::string> texts(40, good);
        texts[9] = "AACAPwAAAE!=";
        texts[30] = "AACA";
        for (unsigned threads : {1U, 3U, 8U}) {
            std::vector<float> out(texts.size() * 2, -1.0f);
            std::vector<tb::decode_task> tasks;
            for (std::size_t i = 0; i < texts.size(); ++i)
                tasks.push_back({texts[i].data(), texts[i].size(), le(tb::dtype::float32),
                                 out.data() + 2 * i, 8});
            CHECK(tb::decode_each(tasks.data(), tasks.size(), true, false, threads) == 9);
            CHECK(out[0] == 1.0f && out[1] == 2.0f && out[16] == 1.0f && out[17] == 2.0f);
            tasks[9] = {good.data(), good.size(), le(tb::dtype::float32), out.data() + 18, 8};
            tasks[30] = {good.data(), good.size(), le(tb::dtype::float32), out.data() + 60, 8};
            CHECK(tb::decode_each(tasks.data(), tasks.size(), true, false, threads) ==
                  tasks.size());
            CHECK(out[18] == 1.0f && out[19] == 2.0f && out[60] == 1.0f && out[61] == 2.0f);
            CHECK(tb::decode_each(tasks.data(), 0, true, false, threads) == 0);
            const unsigned char raw[8] = {0, 0, 0x80, 0x3f, 0, 0, 0, 0x40};
            tasks[5] = {reinterpret_cast<const char*>(raw), 8, le(tb::dtype::float32), out.data(),
                        8};
            tasks[6] = {reinterpret_cast<const char*>(raw), 7, le(tb::dtype::float32), out.data(),
                        8};
            CHECK(tb::decode_each(tasks.data() + 5, 2, false, false, threads) == 1);
        }
    }

    // Byte orders and widening, against independent references; the output is in host order.
    std::vector<std::uint64_t> f32_bits, f16_all, f16_wide, bf16_sample, bf16_wide, codes, e4_wide,
        e5_wide;
    for (int i = 0; i < 1000; ++i) f32_bits.push_back(static_cast<std::uint32_t>(rng()));
    for (std::uint32_t h = 0; h < 65536; ++h) {
        f16_all.push_back(h);
        f16_wide.push_back(reference_f16_to_f32(static_cast<std::uint16_t>(h)));
        bf16_sample.push_back(h);
        bf16_wide.push_back(std::uint64_t{h} << 16);
    }
    for (std::uint32_t c = 0; c < 256; ++c) {
        codes.push_back(c);
        e4_wide.push_back(e4m3fn_goldens[c]);
        e5_wide.push_back(e5m2_goldens[c]);
    }
    for (tb::byte_order order : both_orders) {
        const std::string ctx = std::string("decode ") + name(order);
        std::vector<unsigned char> got;
        const auto text_of = [&](const std::vector<std::uint64_t>& v, std::size_t size) {
            return reference_base64(serialize(v, size, order));
        };
        CHECK(decode_text(text_of(f32_bits, 4), {tb::dtype::float32, order}, false, &got).status ==
              st::ok);
        CHECK(got == host_f32(f32_bits));
        CHECK(decode_text(text_of(f32_bits, 4), {tb::dtype::float32, order}, true, &got).status ==
              st::ok);
        CHECK(got == host_f32(f32_bits));
        CHECK(decode_text(text_of(f16_all, 2), {tb::dtype::float16, order}, false, &got).status ==
              st::ok);
        CHECK(got == serialize(f16_all, 2, tb::host_byte_order));
        CHECK(decode_text(text_of(f16_all, 2), {tb::dtype::float16, order}, true, &got).status ==
              st::ok);
        CHECK_EQ_STR(reference_base64(got), reference_base64(host_f32(f16_wide)),
                     ctx + " float16 -> float32");
        CHECK(
            decode_text(text_of(bf16_sample, 2), {tb::dtype::bfloat16, order}, true, &got).status ==
            st::ok);
        CHECK_EQ_STR(reference_base64(got), reference_base64(host_f32(bf16_wide)),
                     ctx + " bfloat16 -> float32");
        // float8: every code, repeated across the block boundary
        std::vector<std::uint64_t> many, e4_many, e5_many;
        for (int i = 0; i < 20; ++i) {
            many.insert(many.end(), codes.begin(), codes.end());
            e4_many.insert(e4_many.end(), e4_wide.begin(), e4_wide.end());
            e5_many.insert(e5_many.end(), e5_wide.begin(), e5_wide.end());
        }
        CHECK(decode_text(text_of(many, 1), {tb::dtype::float8_e4m3fn, order}, true, &got).status ==
              st::ok);
        CHECK_EQ_STR(reference_base64(got), reference_base64(host_f32(e4_many)),
                     ctx + " float8_e4m3fn -> float32");
        CHECK(decode_text(text_of(many, 1), {tb::dtype::float8_e5m2, order}, true, &got).status ==
              st::ok);
        CHECK_EQ_STR(reference_base64(got), reference_base64(host_f32(e5_many)),
                     ctx + " float8_e5m2 -> float32");

        // convert_elements: the same conversions from raw bytes (vLLM's binary body).
        const auto raw = serialize(f16_all, 2, order);
        std::vector<unsigned char> wide(f16_all.size() * 4);
        CHECK(tb::convert_elements(raw.data(), raw.size(), {tb::dtype::float16, order}, true,
                                   wide.data(), wide.size())
                  .status == st::ok);
        CHECK(wide == host_f32(f16_wide));
        std::vector<unsigned char> same(raw.size());
        CHECK(tb::convert_elements(raw.data(), raw.size(), {tb::dtype::float16, order}, false,
                                   same.data(), same.size())
                  .status == st::ok);
        CHECK(same == serialize(f16_all, 2, tb::host_byte_order));
        const auto raw8 = serialize(many, 1, order);
        std::vector<unsigned char> wide8(raw8.size() * 4);
        CHECK(tb::convert_elements(raw8.data(), raw8.size(), {tb::dtype::float8_e4m3fn, order},
                                   true, wide8.data(), wide8.size())
                  .status == st::ok);
        CHECK(wide8 == host_f32(e4_many));
        CHECK(tb::convert_elements(raw.data(), 3, {tb::dtype::float16, order}, true, wide.data(), 4)
                  .status == st::not_whole_values);
        CHECK(tb::convert_elements(raw.data(), 4, {tb::dtype::float16, order}, true, wide.data(), 4)
                  .status == st::wrong_output_size);
    }
}
// ---- the response body's data entries ----------------------------------------------------

// The entries as json.dumps writes them, from each row's reference base64, keys in `keys` order.
std::string reference_data(const std::vector<std::string>& texts, std::size_t first_index,
                           std::size_t keys = 0) {
    std::string out;
    for (std::size_t r = 0; r < texts.size(); ++r) {
        if (r != 0) out += ',';
        const std::string index = "\"index\":" + std::to_string(first_index + r);
        const std::string object = "\"object\":\"embedding\"";
        out += "{" + (keys == 1 ? index + "," + object : object + "," + index) +
               ",\"embedding\":\"" + texts[r] + "\"}";
    }
    return out;
}

// Writes the entries of `rows` x `n` float32 values (row r, element i: bits r * 1000003 + i)
// converted to `target`, checking the size, the returned end and the bytes past it.
std::string write_data(std::size_t rows, std::size_t n, std::size_t first_index,
                       tb::element_format target, unsigned threads, std::vector<std::string>* texts,
                       std::size_t keys = 0) {
    std::vector<std::uint64_t> values(rows * n);
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = (i / (n ? n : 1)) * 1000003u + i * 2654435761u;
    const std::vector<unsigned char> bytes = serialize(values, 4, tb::host_byte_order);
    const tb::strided_rows source{
        bytes.data(), rows, n, static_cast<std::ptrdiff_t>(4 * n), 4, le(tb::dtype::float32)};
    std::size_t size = 0;
    CHECK(tb::base64_data_size(rows, n, target.type, first_index, &size));
    constexpr std::size_t slack = 64;
    std::vector<char> buffer(size + slack, '\x7f');
    char* end = tb::write_base64_data(
        {source.data, rows, n, source.row_stride, 4, {tb::dtype::float32, tb::host_byte_order}},
        target, first_index, buffer.data(), threads, *both_layouts[keys]);
    CHECK(end == buffer.data() + size);
    bool untouched = true;
    for (std::size_t i = size; i < buffer.size(); ++i) untouched &= buffer[i] == '\x7f';
    CHECK(untouched);
    if (texts != nullptr) {
        *texts = rows == 0
                     ? std::vector<std::string>{}
                     : encode_strided(bytes.data(), rows, n, static_cast<std::ptrdiff_t>(4 * n), 4,
                                      {tb::dtype::float32, tb::host_byte_order}, target);
    }
    return std::string(buffer.data(), size);
}

// The envelope of each layout, an extra taking a field's place, "data" refused; entries written
// with a leading comma concatenating to the whole.
// head + "|" + tail, as write_body_envelope writes them at body_envelope_sizes.
std::string envelope(const tb::response_layout& layout, const tb::json_member* members,
                     std::size_t count) {
    std::size_t head = 0, tail = 0;
    tb::body_envelope_sizes(layout, members, count, &head, &tail);
    std::string text(head + 1 + tail, '|');
    tb::write_body_envelope(layout, members, count, &text[0], &text[head + 1]);
    return text;
}

void test_body_layout() {
    for (std::size_t i = 0; i < tb::response_layout_count; ++i) {
        const tb::response_layout& layout = tb::response_layouts[i];
        CHECK(tb::find_response_layout(layout.name) == &layout);
        bool each_once = true;
        for (tb::entry_key key :
             {tb::entry_key::object, tb::entry_key::index, tb::entry_key::embedding}) {
            int seen = 0;
            for (tb::entry_key k : layout.entry_keys) seen += k == key;
            each_once &= seen == 1;
        }
        CHECK(each_once);
        int data_fields = 0;
        for (std::size_t f = 0; f < layout.envelope_field_count; ++f)
            data_fields += layout.envelope_fields[f] == "data";
        CHECK(data_fields == 1);
    }
    CHECK(tb::find_response_layout("sglang ") == nullptr);
    const tb::response_layout& openai = *tb::find_response_layout("openai");
    const tb::response_layout& vllm = *tb::find_response_layout("vllm");
    const tb::json_member openai_members[] = {
        {"\"object\"", "\"list\""}, {"\"model\"", "\"m\""}, {"\"usage\"", "{\"prompt_tokens\":1}"}};
    CHECK_EQ_STR(envelope(openai, openai_members, 3),
                 "{\"object\":\"list\",\"data\":[|],\"model\":\"m\","
                 "\"usage\":{\"prompt_tokens\":1}}",
                 "openai");
    const tb::json_member with_extras[] = {openai_members[0],      openai_members[1],
                                           openai_members[2],      {"\"id\"", "7"},
                                           {"\"model\"", "\"n\""}, {"\"x\"", "[]"}};
    CHECK_EQ_STR(envelope(openai, with_extras, 6),
                 "{\"object\":\"list\",\"data\":[|],\"model\":\"n\","
                 "\"usage\":{\"prompt_tokens\":1},"
                 "\"id\":7,\"x\":[]}",
                 "openai with extras, one of them a field");
    // vLLM's fields given in another order still go to their places; an unknown one goes last.
    const tb::json_member vllm_members[] = {{"\"model\"", "\"m\""},     {"\"x\"", "1"},
                                            {"\"usage\"", "{}"},        {"\"created\"", "12"},
                                            {"\"object\"", "\"list\""}, {"\"id\"", "\"embd-1\""}};
    CHECK_EQ_STR(envelope(vllm, vllm_members, 6),
                 "{\"id\":\"embd-1\",\"object\":\"list\",\"created\":12,\"model\":\"m\","
                 "\"data\":[|],"
                 "\"usage\":{},\"x\":1}",
                 "vllm");
    // A field without a member is left out; with no members at all, "data" alone.
    CHECK_EQ_STR(envelope(vllm, vllm_members, 1), "{\"model\":\"m\",\"data\":[|]}",
                 "vllm, model alone");
    CHECK_EQ_STR(envelope(openai, nullptr, 0), "{\"data\":[|]}", "no members");
    const tb::json_member data_member[] = {openai_members[0], {"\"data\"", "[]"}};
    bool threw = false;
    try {
        envelope(openai, data_member, 2);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    CHECK(threw);

    // Rows [0, 2) and [2, 5), the second with its leading comma, concatenate to rows [0, 5).
    std::vector<float> values(5 * 3);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * static_cast<float>(i);
    const tb::strided_rows all{
        values.data(), 5, 3, 12, 4, {tb::dtype::float32, tb::host_byte_order}};
    for (const tb::response_layout* layout : both_layouts) {
        std::size_t whole_size = 0, first_size = 0, rest_size = 0;
        CHECK(tb::base64_data_size(5, 3, tb::dtype::float32, 0, &whole_size));
        CHECK(tb::base64_data_size(2, 3, tb::dtype::float32, 0, &first_size));
        CHECK(tb::base64_data_size(3, 3, tb::dtype::float32, 2, &rest_size, true));
        CHECK(first_size + rest_size == whole_size);
        std::string whole(whole_size, '\0'), parts(whole_size, '\0');
        tb::write_base64_data(all, le(tb::dtype::float32), 0, &whole[0], 1, *layout);
        char* end = tb::write_base64_data(tb::slice_rows(all, 0, 2), le(tb::dtype::float32), 0,
                                          &parts[0], 1, *layout);
        end = tb::write_base64_data(tb::slice_rows(all, 2, 3), le(tb::dtype::float32), 2, end, 1,
                                    *layout, true);
        CHECK(end == parts.data() + whole_size);
        CHECK_EQ_STR(parts, whole, "base64 entries with a leading comma");
        std::size_t bound = 0;
        CHECK(tb::float_data_bound(5, 3, tb::dtype::float32, tb::float_format::repr, 0, &bound));
        std::string float_whole(bound, '\0'), float_parts(2 * bound, '\0');
        char* whole_end = nullptr;
        char* parts_end = nullptr;
        CHECK(tb::write_float_data(all, tb::float_format::repr, 0, &float_whole[0], &whole_end, 1,
                                   *layout)
                  .finite);
        float_whole.resize(static_cast<std::size_t>(whole_end - float_whole.data()));
        CHECK(tb::write_float_data(tb::slice_rows(all, 0, 2), tb::float_format::repr, 0,
                                   &float_parts[0], &parts_end, 1, *layout)
                  .finite);
        CHECK(tb::write_float_data(tb::slice_rows(all, 2, 3), tb::float_format::repr, 2, parts_end,
                                   &parts_end, 2, *layout, true)
                  .finite);
        float_parts.resize(static_cast<std::size_t>(parts_end - float_parts.data()));
        CHECK_EQ_STR(float_parts, float_whole, "float entries with a leading comma");
    }
}

void test_response_body() {
    const tb::element_format f32 = le(tb::dtype::float32);
    std::vector<std::string> texts;
    // Indices of every digit count, and runs crossing each power of ten.
    std::vector<std::size_t> firsts = {0, 1, 7, 8, 9, 10, 98, 99, 100};
    for (std::size_t power = 10; power <= SIZE_MAX / 10; power *= 10) {
        firsts.push_back(power - 2);
        firsts.push_back(power);
    }
    firsts.push_back(SIZE_MAX / 10 * 10 - 1);  // crossing into 20 digits on 64-bit hosts
    firsts.push_back(SIZE_MAX - 4);            // the last index is SIZE_MAX
    for (std::size_t first : firsts) {
        for (std::size_t n :
             {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}}) {
            for (std::size_t keys = 0; keys < 2; ++keys) {
                const std::string got = write_data(5, n, first, f32, 1, &texts, keys);
                CHECK_EQ_STR(got, reference_data(texts, first, keys),
                             "data entries from index " + std::to_string(first));
            }
        }
    }
    // No rows: nothing at all; empty rows: empty strings.
    CHECK_EQ_STR(write_data(0, 384, 5, f32, 1, &texts), "", "no rows");
    CHECK_EQ_STR(write_data(3, 0, 0, f32, 1, &texts),
                 "{\"object\":\"embedding\",\"index\":0,\"embedding\":\"\"},"
                 "{\"object\":\"embedding\",\"index\":1,\"embedding\":\"\"},"
                 "{\"object\":\"embedding\",\"index\":2,\"embedding\":\"\"}",
                 "empty rows");
    CHECK_EQ_STR(write_data(2, 0, 9, f32, 1, &texts, 1),
                 "{\"index\":9,\"object\":\"embedding\",\"embedding\":\"\"},"
                 "{\"index\":10,\"object\":\"embedding\",\"embedding\":\"\"}",
                 "empty rows, vLLM's key order");
    CHECK_EQ_STR(write_data(1, 1, 0, f32, 1, &texts), reference_data(texts, 0), "one value");
    // Conversions and byte orders, across the 768-element block boundary.
    for (tb::dtype to : {tb::dtype::float32, tb::dtype::float16, tb::dtype::bfloat16,
                         tb::dtype::float8_e4m3fn, tb::dtype::float8_e5m2}) {
        for (tb::byte_order order : both_orders) {
            for (std::size_t keys = 0; keys < 2; ++keys) {
                const std::string got = write_data(3, 1000, 41, {to, order}, 1, &texts, keys);
                CHECK_EQ_STR(got, reference_data(texts, 41, keys),
                             std::string("data entries as ") + name(to) + " " + name(order));
            }
        }
    }
    // Threads: 64 rows of 3072 float32 is 1 MiB of text, enough to be split.
    for (unsigned threads : {2u, 3u, 8u}) {
        CHECK_EQ_STR(write_data(64, 3072, 0, f32, threads, nullptr, 1),
                     write_data(64, 3072, 0, f32, 1, nullptr, 1),
                     "threads=" + std::to_string(threads));
    }
    // Exact sizes, and overflow refused.
    std::size_t size = 0;
    CHECK(tb::base64_data_size(0, SIZE_MAX, tb::dtype::float64, SIZE_MAX, &size) && size == 0);
    CHECK(tb::base64_data_size(1, 0, tb::dtype::float32, 0, &size) && size == 47);
    CHECK(tb::base64_data_size(2, 1, tb::dtype::float32, 9, &size) &&
          size == 2 * (46 + 8) + 1 + 2 + 1);  // wrappers, digits of 9 and 10, a comma
    CHECK(tb::base64_data_size(1, 0, tb::dtype::float32, SIZE_MAX, &size));
    size = 12345;
    CHECK(!tb::base64_data_size(2, 0, tb::dtype::float32, SIZE_MAX, &size) && size == 12345);
    CHECK(!tb::base64_data_size(1, SIZE_MAX / 2, tb::dtype::float32, 0, &size));
    CHECK(!tb::base64_data_size(SIZE_MAX / 4, 1, tb::dtype::float32, 0, &size));
    CHECK(!tb::base64_data_size(SIZE_MAX / 60, 0, tb::dtype::float32, 0, &size));
    CHECK(!tb::base64_data_size(2, (SIZE_MAX / 4 * 3 - 100) / 4, tb::dtype::float32, 0, &size));
    // A conversion the core cannot make is refused before anything is written.
    const unsigned char zeros[8] = {};
    char out[8] = {'\x7f'};
    bool threw = false;
    try {
        tb::write_base64_data({zeros, 1, 1, 8, 8, le(tb::dtype::float32)}, le(tb::dtype::float64),
                              0, out);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    CHECK(threw && out[0] == '\x7f');
    threw = false;
    try {  // 2 rows from index SIZE_MAX: the last index does not exist
        tb::write_base64_data({zeros, 2, 0, 0, 4, le(tb::dtype::float32)}, le(tb::dtype::float32),
                              SIZE_MAX, out);
    } catch (const std::length_error&) {
        threw = true;
    }
    CHECK(threw && out[0] == '\x7f');
}

}  // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    std::printf("core_tests: levels available:");
    for (tb::simd_level level : levels()) std::printf(" %s", tb::to_string(level));
    std::printf("; active: %s%s\n", tb::to_string(tb::active_simd_level()),
                quick ? " (--quick)" : "");
    const auto timed = [](const char* what, auto&& test) {
        const auto start = std::chrono::steady_clock::now();
        test();
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
        std::printf("  %-28s %.2f s\n", what, took.count());
    };
    try {
        timed("simd level api", test_simd_level_api);
        timed("rfc 4648", test_rfc4648);
        timed("float32 goldens", test_float32_goldens);
        timed("golden conversions", [] { test_golden_conversions("golden"); });
        timed("strides", test_strides);
#if defined(TENSORB64_TEST_GUARD_PAGES)
        timed("no access past the ends", test_no_access_past_the_ends);
#endif
        timed("differential", [&] { differential("differential", !quick, quick ? 7 : 63); });
        timed("bytes output", test_bytes_output);
        timed("integer sources", test_integer_sources);
        timed("multi-dimensional rows", test_multi_dimensional_rows);
        timed("float rows", test_float_rows);
        timed("float rows, every level", test_float_rows_levels);
        timed("decode", test_decode);
        timed("under FTZ/DAZ, rounding upward", test_hostile_fp_environment);
        timed("response body data", test_response_body);
        timed("response body layouts", test_body_layout);
    } catch (const std::exception& e) {
        report_failure(__FILE__, __LINE__, std::string("exception: ") + e.what());
    }
    std::printf("core_tests: %ld passed, %ld failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
