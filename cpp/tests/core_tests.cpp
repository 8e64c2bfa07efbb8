// Tests of the C++ core, through its public API only. Plain C++17, no framework: a failed CHECK
// prints where and what, and the program exits non-zero. Runs natively and, cross-compiled, under
// qemu (s390x: big-endian host; aarch64: the NEON kernel); see run_cross.sh.
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
//   * the response body's data entries: exact sizes (indices of every digit count, up to
//     SIZE_MAX; 0 rows; empty rows; overflow refused), the text against a reference written
//     here, nothing written past the size, threads > 1 equal to 1, conversions refused first.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

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

long passed = 0;
long failed = 0;
int reported = 0;

void report_failure(const char* file, int line, const std::string& what) {
    ++failed;
    if (++reported <= 30) std::fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what.c_str());
    if (reported == 30) std::fprintf(stderr, "(further failures not shown)\n");
}

#define CHECK(cond)                                                      \
    do {                                                                 \
        if (cond) {                                                      \
            ++passed;                                                    \
        } else {                                                         \
            report_failure(__FILE__, __LINE__, "CHECK(" #cond ")");     \
        }                                                                \
    } while (0)

#define CHECK_EQ_STR(actual, expected, context)                                               \
    do {                                                                                      \
        const std::string a_ = (actual);                                                      \
        const std::string e_ = (expected);                                                    \
        if (a_ == e_) {                                                                       \
            ++passed;                                                                         \
        } else {                                                                              \
            std::size_t at_ = 0;                                                              \
            while (at_ < a_.size() && at_ < e_.size() && a_[at_] == e_[at_]) ++at_;           \
            report_failure(__FILE__, __LINE__,                                                \
                           std::string(context) + ": got \"" + a_.substr(0, 80) +             \
                               "\" expected \"" + e_.substr(0, 80) + "\" (first difference " \
                               "at char " + std::to_string(at_) + " of " +                    \
                               std::to_string(e_.size()) + ")");                              \
        }                                                                                     \
    } while (0)

const tb::dtype all_dtypes[] = {tb::dtype::float32,  tb::dtype::float16,
                                tb::dtype::bfloat16, tb::dtype::float64,
                                tb::dtype::float8_e4m3fn, tb::dtype::float8_e5m2};
const tb::byte_order both_orders[] = {tb::byte_order::little, tb::byte_order::big};

const char* name(tb::dtype t) {
    switch (t) {
        case tb::dtype::float32: return "float32";
        case tb::dtype::float16: return "float16";
        case tb::dtype::bfloat16: return "bfloat16";
        case tb::dtype::float64: return "float64";
        case tb::dtype::float8_e4m3fn: return "float8_e4m3fn";
        case tb::dtype::float8_e5m2: return "float8_e5m2";
    }
    return "?";
}
const char* name(tb::byte_order o) { return o == tb::byte_order::little ? "little" : "big"; }

// ---- independent references --------------------------------------------------------------

// The textbook 6-bit-at-a-time encoder.
std::string reference_base64(const std::vector<unsigned char>& in) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
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
void put(std::vector<unsigned char>& out, std::uint64_t value, std::size_t size, tb::byte_order order) {
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
    const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24)
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
    return encode_strided(bytes.data(), 1, bytes.size() / size, 0, static_cast<std::ptrdiff_t>(size),
                          from, to)[0];
}

constexpr tb::element_format le(tb::dtype t) { return {t, tb::byte_order::little}; }
constexpr tb::element_format be(tb::dtype t) { return {t, tb::byte_order::big}; }

// ---- tests ---------------------------------------------------------------------------------

void test_rfc4648() {
    const char* vectors[][2] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                {"foo", "Zm9v"},  {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
                                {"foobar", "Zm9vYmFy"}};
    level_guard guard;
    std::mt19937_64 rng(4648);
    for (tb::simd_level level : levels()) {
        tb::force_simd_level(level);
        const std::string ctx = std::string("rfc4648 ") + tb::to_string(level);
        for (auto& v : vectors) {
            const std::vector<unsigned char> bytes(v[0], v[0] + std::strlen(v[0]));
            // float8_e4m3fn to itself copies the raw bytes: the byte-level kernel.
            CHECK_EQ_STR(encode(bytes, le(tb::dtype::float8_e4m3fn), le(tb::dtype::float8_e4m3fn)), v[1], ctx);
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
                CHECK_EQ_STR(encode(bytes, from, le(tb::dtype::float32)), g.little, ctx + " to little");
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
            CHECK_EQ_STR(encode(serialize(f16_all, 2, order), {tb::dtype::float16, order}, le(tb::dtype::float32)),
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
            CHECK_EQ_STR(encode(serialize(repeated(f64s, 5), 8, order), {tb::dtype::float64, order},
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
        CHECK_EQ_STR(encode(serialize({0x7c01, 0xfe00, 0x3c00}, 2, tb::byte_order::little),
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
        const std::string ones = reference_base64(serialize(std::vector<std::uint64_t>(n, 0x3f800000), 4,
                                                            tb::byte_order::little));
        CHECK_EQ_STR(encode_strided(one.data(), 1, n, 0, 0, le(tb::dtype::float32), le(tb::dtype::float32))[0],
                     ones, ctx + " zero element stride");
        const std::vector<unsigned char> half = serialize({0x3c00}, 2, tb::byte_order::little);
        CHECK_EQ_STR(encode_strided(half.data(), 1, n, 0, 0, le(tb::dtype::float16), le(tb::dtype::float32))[0],
                     ones, ctx + " zero element stride, float16");
        const auto same = encode_strided(one.data(), 3, 1, 0, 4, le(tb::dtype::float32), le(tb::dtype::float32));
        CHECK(same.size() == 3 && same[0] == "AACAPw==" && same[2] == "AACAPw==");

        // Rows: a 64 x 300 float16 matrix read bottom-up (negative row stride), as 2 threads.
        const std::size_t rows = 64, cols = 300;
        std::vector<std::uint64_t> matrix(rows * cols);
        for (auto& v : matrix) v = rng() & 0x7bff;  // finite float16 values
        const auto bytes = serialize(matrix, 2, tb::byte_order::little);
        const unsigned char* last_row = bytes.data() + (rows - 1) * cols * 2;
        for (unsigned threads : {1u, 2u}) {
            const auto out = encode_strided(last_row, rows, cols, -static_cast<std::ptrdiff_t>(cols * 2), 2,
                                            le(tb::dtype::float16), le(tb::dtype::float32), threads);
            bool all_equal = out.size() == rows;
            for (std::size_t r = 0; r < rows && all_equal; ++r) {
                std::vector<std::uint64_t> row;
                for (std::size_t c = 0; c < cols; ++c) {
                    row.push_back(reference_f16_to_f32(static_cast<std::uint16_t>(matrix[(rows - 1 - r) * cols + c])));
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
        case tb::dtype::float8_e5m2:
            return r & 0xff;
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
            if (!tb::can_convert(from, to)) continue;
            for (tb::byte_order fo : both_orders) {
                for (tb::byte_order to_order : both_orders) combos.push_back({{from, fo}, {to, to_order}});
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
    unsigned char* aligned = buffer.data() + (64 - reinterpret_cast<std::uintptr_t>(buffer.data()) % 64);
    std::vector<char> actual_out;
    long compared = 0;

    for (const combo& c : all_combos()) {
        std::mt19937_64 rng(1000 + static_cast<unsigned>(c.from.type) * 16 + static_cast<unsigned>(c.to.type));
        std::vector<std::uint64_t> values(max_n);
        for (auto& v : values) v = random_bits(c.from.type, rng);
        const std::size_t size = tb::dtype_size(c.from.type);
        const std::vector<unsigned char> bytes = serialize(values, size, c.from.order);
        const bool identity = c.from.type == tb::dtype::float32 && c.to.type == tb::dtype::float32 &&
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
            tb::encode_rows({bytes.data(), 1, lengths[i], 0, static_cast<std::ptrdiff_t>(size), c.from},
                            c.to, &out);
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
                    tb::encode_rows({aligned + misalignment, 1, n, 0, static_cast<std::ptrdiff_t>(size), c.from},
                                    c.to, &out);
                    ++compared;
                    if (std::memcmp(out, expected[i].data(), length) == 0 && out[length] == '\0') {
                        ++passed;
                    } else {
                        report_failure(__FILE__, __LINE__,
                                       std::string(when) + ": " + tb::to_string(level) + " != scalar for " +
                                           name(c.from.type) + "/" + name(c.from.order) + " -> " +
                                           name(c.to.type) + "/" + name(c.to.order) + ", n=" +
                                           std::to_string(n) + ", misalignment " + std::to_string(misalignment));
                    }
                }
            }
        }
    }
    std::printf("  %s: %ld encodings compared with scalar\n", when, compared);
}

// row_output::bytes writes exactly the bytes whose base64 row_output::base64 writes, at every
// level, for every conversion and byte order, across block boundaries, into rows laid end to end.
void test_bytes_output() {
    level_guard guard;
    const std::vector<std::size_t> lengths = {0, 1, 2, 3, 5, 47, 48, 49, 767, 768, 769, 1537};
    for (tb::simd_level level : levels()) {
        tb::force_simd_level(level);
        for (const combo& c : all_combos()) {
            std::mt19937_64 rng(7 + static_cast<unsigned>(c.from.type) * 16 + static_cast<unsigned>(c.to.type));
            for (std::size_t n : lengths) {
                std::vector<std::uint64_t> values(2 * n);
                for (auto& v : values) v = random_bits(c.from.type, rng);
                const std::size_t size = tb::dtype_size(c.from.type);
                const std::vector<unsigned char> bytes = serialize(values, size, c.from.order);
                const std::vector<std::string> text = encode_strided(
                    bytes.data(), 2, n, static_cast<std::ptrdiff_t>(n * size), static_cast<std::ptrdiff_t>(size), c.from, c.to);
                const std::size_t row_bytes = n * tb::dtype_size(c.to.type);
                std::vector<unsigned char> body(2 * row_bytes + 64, 0x7f);
                char* outputs[2] = {reinterpret_cast<char*>(body.data()), reinterpret_cast<char*>(body.data() + row_bytes)};
                tb::encode_rows({bytes.data(), 2, n, static_cast<std::ptrdiff_t>(n * size), static_cast<std::ptrdiff_t>(size), c.from},
                                c.to, outputs, 1, tb::row_output::bytes);
                for (int r = 0; r < 2; ++r) {
                    const std::vector<unsigned char> row(body.begin() + r * row_bytes, body.begin() + (r + 1) * row_bytes);
                    CHECK_EQ_STR(reference_base64(row), text[r], "bytes output");
                }
                bool untouched = true;
                for (std::size_t i = 2 * row_bytes; i < body.size(); ++i) untouched &= body[i] == 0x7f;
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
    static constexpr std::uint64_t hostile_bits = (1u << 24) | (1u << 19) | (1u << 22);  // FZ | FZ16 | RMode = +inf
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
    CHECK(on.still_set());  // the kernels gave the caller back its floating-point environment
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
        if (mprotect(base + size, page, PROT_NONE) != 0) throw std::runtime_error("mprotect failed");
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
                tb::encode_rows({source, 1, n, 0, static_cast<std::ptrdiff_t>(size), c.from}, c.to, &out);
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
    for (tb::simd_level level : {tb::simd_level::avx2, tb::simd_level::avx512, tb::simd_level::neon}) {
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
        tb::encode_rows({nullptr, 0, 0, 0, 4, le(tb::dtype::float32)}, le(tb::dtype::float64), &out);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    CHECK(threw);
    CHECK(!tb::can_convert(tb::dtype::float8_e4m3fn, tb::dtype::float32));
    std::size_t length = 0;
    CHECK(tb::encoded_size(4, &length) && length == 8);
    CHECK(!tb::encoded_size(SIZE_MAX, &length));
}


// ---- the response body's data entries ----------------------------------------------------

// The entries as json.dumps writes them, from each row's reference base64.
std::string reference_data(const std::vector<std::string>& texts, std::size_t first_index) {
    std::string out;
    for (std::size_t r = 0; r < texts.size(); ++r) {
        if (r != 0) out += ',';
        out += "{\"object\":\"embedding\",\"index\":" + std::to_string(first_index + r) +
               ",\"embedding\":\"" + texts[r] + "\"}";
    }
    return out;
}

// Writes the entries of `rows` x `n` float32 values (row r, element i: bits r * 1000003 + i)
// converted to `target`, checking the size, the returned end and the bytes past it.
std::string write_data(std::size_t rows, std::size_t n, std::size_t first_index,
                       tb::element_format target, unsigned threads, std::vector<std::string>* texts) {
    std::vector<std::uint64_t> values(rows * n);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = (i / (n ? n : 1)) * 1000003u + i * 2654435761u;
    const std::vector<unsigned char> bytes = serialize(values, 4, tb::host_byte_order);
    const tb::strided_rows source{bytes.data(), rows, n, static_cast<std::ptrdiff_t>(4 * n), 4, le(tb::dtype::float32)};
    std::size_t size = 0;
    CHECK(tb::base64_data_size(rows, n, target.type, first_index, &size));
    constexpr std::size_t slack = 64;
    std::vector<char> buffer(size + slack, '\x7f');
    char* end = tb::write_base64_data({source.data, rows, n, source.row_stride, 4, {tb::dtype::float32, tb::host_byte_order}},
                                      target, first_index, buffer.data(), threads);
    CHECK(end == buffer.data() + size);
    bool untouched = true;
    for (std::size_t i = size; i < buffer.size(); ++i) untouched &= buffer[i] == '\x7f';
    CHECK(untouched);
    if (texts != nullptr) {
        *texts = rows == 0 ? std::vector<std::string>{}
                           : encode_strided(bytes.data(), rows, n, static_cast<std::ptrdiff_t>(4 * n), 4,
                                            {tb::dtype::float32, tb::host_byte_order}, target);
    }
    return std::string(buffer.data(), size);
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
        for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}}) {
            const std::string got = write_data(5, n, first, f32, 1, &texts);
            CHECK_EQ_STR(got, reference_data(texts, first), "data entries from index " + std::to_string(first));
        }
    }
    // No rows: nothing at all; empty rows: empty strings.
    CHECK_EQ_STR(write_data(0, 384, 5, f32, 1, &texts), "", "no rows");
    CHECK_EQ_STR(write_data(3, 0, 0, f32, 1, &texts),
                 "{\"object\":\"embedding\",\"index\":0,\"embedding\":\"\"},"
                 "{\"object\":\"embedding\",\"index\":1,\"embedding\":\"\"},"
                 "{\"object\":\"embedding\",\"index\":2,\"embedding\":\"\"}",
                 "empty rows");
    CHECK_EQ_STR(write_data(1, 1, 0, f32, 1, &texts), reference_data(texts, 0), "one value");
    // Conversions and byte orders, across the 768-element block boundary.
    for (tb::dtype to : {tb::dtype::float32, tb::dtype::float16, tb::dtype::bfloat16, tb::dtype::float8_e4m3fn, tb::dtype::float8_e5m2}) {
        for (tb::byte_order order : both_orders) {
            const std::string got = write_data(3, 1000, 41, {to, order}, 1, &texts);
            CHECK_EQ_STR(got, reference_data(texts, 41), std::string("data entries as ") + name(to) + " " + name(order));
        }
    }
    // Threads: 64 rows of 3072 float32 is 1 MiB of text, enough to be split.
    for (unsigned threads : {2u, 3u, 8u}) {
        CHECK_EQ_STR(write_data(64, 3072, 0, f32, threads, nullptr), write_data(64, 3072, 0, f32, 1, nullptr),
                     "threads=" + std::to_string(threads));
    }
    // Exact sizes, and overflow refused.
    std::size_t size = 0;
    CHECK(tb::base64_data_size(0, SIZE_MAX, tb::dtype::float64, SIZE_MAX, &size) && size == 0);
    CHECK(tb::base64_data_size(1, 0, tb::dtype::float32, 0, &size) && size == 47);
    CHECK(tb::base64_data_size(2, 1, tb::dtype::float32, 9, &size) && size == 2 * (46 + 8) + 1 + 2 + 1);  // wrappers, digits of 9 and 10, a comma
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
        tb::write_base64_data({zeros, 1, 1, 8, 8, le(tb::dtype::float8_e4m3fn)}, le(tb::dtype::float32), 0, out);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    CHECK(threw && out[0] == '\x7f');
    threw = false;
    try {  // 2 rows from index SIZE_MAX: the last index does not exist
        tb::write_base64_data({zeros, 2, 0, 0, 4, le(tb::dtype::float32)}, le(tb::dtype::float32), SIZE_MAX, out);
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
    std::printf("; active: %s%s\n", tb::to_string(tb::active_simd_level()), quick ? " (--quick)" : "");
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
        timed("under FTZ/DAZ, rounding upward", test_hostile_fp_environment);
        timed("response body data", test_response_body);
    } catch (const std::exception& e) {
        report_failure(__FILE__, __LINE__, std::string("exception: ") + e.what());
    }
    std::printf("core_tests: %ld passed, %ld failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
