// Tests of float_text.hpp (floats as Python's JSON number text). Plain C++17, the CHECK style of
// core_tests.cpp; exits non-zero on a failure. The reference is float_text_oracle.hpp:
// std::to_chars's shortest digits in a layout written out separately (or, where the library has
// none, its portable fallback, itself checked against std::to_chars/from_chars wherever they
// exist).
//
// What is covered, in both modes (write_shortest_f32, write_repr of the float32 widened) unless
// said:
//   * goldens taken from CPython 3.11's repr (json.dumps's text) and from its float32 round trip;
//   * every float16 and every bfloat16 value, as float32;
//   * the float32 and double nearest each power of ten and their neighbours, each power of two,
//     the layout thresholds (1e-4 and 1e16 with neighbours), max, min normal, subnormals, -0.0;
//   * 2^24 random float32 bit patterns and 2^22 random double bit patterns (write_repr);
//   * for every shortest token tested: read back as a double then rounded to float32, and read
//     directly as float32, it gives the same float (so the "parse as double" reading never
//     differs here), and repr(float(token)) == token;
//   * no byte written at or past kReprMaxBytes / kShortestF32MaxBytes, texts no longer than
//     kReprMaxText / kShortestF32MaxText;
//   * the row writer (write_float_rows, at every SIMD level): n = 0, rows against the concatenated
//     oracle, NaN/inf first, middle and last (the bad index), nothing written past float_row_bound;
//   * the same digits with the FP environment set to round upward (integer arithmetic only).
#include <algorithm>
#include <cfenv>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "check.hpp"
#include "common/formats.hpp"
#include "dispatch/dispatch.hpp"
#include "dispatch/implementation.hpp"
#include "float_text/float_text.hpp"
#include "float_text_oracle.hpp"

namespace tb = tensorb64;
namespace oracle = float_text_oracle;

namespace {

using test_check::failed;
using test_check::passed;
using test_check::report_failure;

std::uint32_t bits_of(float x) {
    std::uint32_t b;
    std::memcpy(&b, &x, 4);
    return b;
}
std::uint64_t bits_of(double x) {
    std::uint64_t b;
    std::memcpy(&b, &x, 8);
    return b;
}
float float_of(std::uint32_t b) {
    float x;
    std::memcpy(&x, &b, 4);
    return x;
}
double double_of(std::uint64_t b) {
    double x;
    std::memcpy(&x, &b, 8);
    return x;
}
bool finite32(std::uint32_t b) { return (b & 0x7f800000u) != 0x7f800000u; }
bool finite64(std::uint64_t b) { return (b & 0x7ff0000000000000ull) != 0x7ff0000000000000ull; }

std::string hex(std::uint64_t b) {
    char s[24];
    std::snprintf(s, sizeof s, "0x%llx", static_cast<unsigned long long>(b));
    return s;
}

constexpr unsigned char kCanary = 0xa5;

// Runs a writer into a canary-filled buffer; flags any byte written at or past `bound`.
template <typename Writer>
std::string guarded(Writer&& write, std::size_t bound, std::size_t max_text, std::uint64_t bits) {
    unsigned char buffer[64];
    std::memset(buffer, kCanary, sizeof buffer);
    char* start = reinterpret_cast<char*>(buffer);
    char* end = write(start);
    bool clean = static_cast<std::size_t>(end - start) <= max_text;
    for (std::size_t i = bound; i < sizeof buffer; ++i) clean = clean && buffer[i] == kCanary;
    if (!clean) report_failure(__FILE__, __LINE__, "wrote past the bound for " + hex(bits));
    return std::string(start, end);
}

std::string repr_of(std::uint64_t b) {
    return guarded([b](char* out) { return tb::write_repr(b, out); }, tb::kReprMaxBytes,
                   tb::kReprMaxText, b);
}
std::string shortest_of(std::uint32_t b) {
    return guarded([b](char* out) { return tb::write_shortest_f32(b, out); },
                   tb::kShortestF32MaxBytes, tb::kShortestF32MaxText, b);
}

// A writer's text of pattern b in `layout` (shortest, repr, orjson) against the oracle's.
void check_text(const char* layout, const std::string& got, const std::string& expected,
                std::uint64_t b, const char* context) {
    if (got != expected) {
        report_failure(__FILE__, __LINE__,
                       std::string(context) + " " + layout + " " + hex(b) + ": got " + got +
                           " expected " + expected);
    } else {
        test_check::record_pass();
    }
}

// The shortest token reads back to the same float32 both ways, and repr(float(token)) == token.
bool reads_back(const std::string& token, std::uint32_t b) {
    double as_double = 0;
    float as_float = 0;
    const char* first = token.data();
    const char* last = first + token.size();
    if (!oracle::parse(first, last, as_double) || !oracle::parse(first, last, as_float))
        return false;
    const float via_double = static_cast<float>(as_double);  // round to nearest even (default env)
    if (bits_of(via_double) != b || bits_of(as_float) != b) return false;
    return repr_of(bits_of(as_double)) == token;
}

long float32_checked = 0;

// The oracle's portable digits and reading (printf/strtod searched: what libc++ builds use) equal
// std::to_chars's shortest text, its fixed-precision text and from_chars, over random float32 and
// double bit patterns, subnormals, and every power of two and of ten with their neighbours. Only
// where the library has floating-point charconv, off Windows (see below): every Linux g++ run.
template <typename Real, typename Bits>
void check_portable_charconv(Bits b) {
    Real x;
    std::memcpy(&x, &b, sizeof x);
    if (!std::isfinite(x)) return;
    char got[64];
    char expected[64];
    const std::string shortest(got, oracle::portable::shortest(x, got));
    CHECK_EQ_STR(shortest, std::string(expected, oracle::shortest_scientific(x, expected)),
                 "portable shortest " + hex(b));
    Real back = 0;
    Real std_back = 0;
    const bool read =
        oracle::portable::parse(shortest.data(), shortest.data() + shortest.size(), back);
    const bool std_read =
        oracle::parse(shortest.data(), shortest.data() + shortest.size(), std_back);
    std::uint64_t back_bits = 0;
    std::uint64_t std_back_bits = 0;
    std::memcpy(&back_bits, &back, sizeof back);
    std::memcpy(&std_back_bits, &std_back, sizeof std_back);
    CHECK_EQ_STR((read ? "read " : "refused ") + hex(back_bits),
                 (std_read ? "read " : "refused ") + hex(std_back_bits),
                 "portable parse " + hex(b));
    const int precision = static_cast<int>(b % 20);
    CHECK_EQ_STR(std::string(got, oracle::portable::with_precision(x, precision, got)),
                 std::string(expected, oracle::scientific_with_precision(x, precision, expected)),
                 "portable precision " + hex(b));
}

void test_portable_charconv(bool quick) {
    if (!oracle::kStdCharconv) {
        std::printf(
            "  (no floating-point std::to_chars here: the portable oracle is the oracle)\n");
        return;
    }
#if defined(_WIN32)
    // The portable oracle serves Apple's libc++ only, whose C library rounds correctly. In a
    // MinGW-w64 program under Wine 8.0, strtod reads some doubles' texts beside a power of two as
    // the power itself where std::from_chars reads the neighbour below (155 of the quick run's 3.2
    // million checks failed): a fact about that C runtime, not about the oracle or the library's
    // own parser.
    std::printf(
        "  (Windows: the portable oracle is not used here, and the C runtime's strtod is not "
        "its reference)\n");
    return;
#endif
    std::mt19937_64 random(20261203);
    const long n = quick ? 1L << 14 : 1L << 18;
    for (long i = 0; i < n; ++i) {
        const std::uint64_t r = random();
        check_portable_charconv<float>(static_cast<std::uint32_t>(r));
        check_portable_charconv<float>(static_cast<std::uint32_t>(r) & 0x807fffffu);  // subnormal
        check_portable_charconv<double>(r);
        check_portable_charconv<double>(r & 0x800fffffffffffffull);
    }
    for (int e = -150; e <= 128; ++e) {
        const float p = std::ldexp(1.0f, e);
        for (const float x : {p, std::nextafter(p, 0.0f), std::nextafter(p, 1e30f)})
            check_portable_charconv<float>(bits_of(x));
    }
    for (int e = -1075; e <= 1024; ++e) {
        const double p = std::ldexp(1.0, e);
        for (const double x : {p, std::nextafter(p, 0.0), std::nextafter(p, 1e300)})
            check_portable_charconv<double>(bits_of(x));
    }
    for (int e = -325; e <= 309; ++e) {
        const double p = std::pow(10.0, e);
        for (const double x : {p, std::nextafter(p, 0.0), std::nextafter(p, 1e300)}) {
            check_portable_charconv<double>(bits_of(x));
            check_portable_charconv<float>(bits_of(static_cast<float>(x)));
        }
    }
}

// Both modes for one finite float32.
void check_float32(std::uint32_t b, const char* context) {
    const float x = float_of(b);
    const std::string shortest = shortest_of(b);
    check_text("shortest", shortest, oracle::expected_shortest_f32(x), b, context);
    if (!reads_back(shortest, b)) {
        report_failure(__FILE__, __LINE__,
                       std::string(context) + " read back " + hex(b) + ": " + shortest);
    }
    // orjson's: the same digits, except the one value write_shortest_f32 gives 8 (orjson: 7).
    const std::string orjson = guarded([b](char* out) { return tb::write_orjson_f32(b, out); },
                                       tb::kOrjsonF32MaxBytes, tb::kOrjsonF32MaxText, b);
    check_text("orjson", orjson, oracle::expected_orjson_f32(x), b, context);
    const std::uint64_t wide = tb::f32_bits_to_f64_bits(b);
    if (wide != bits_of(static_cast<double>(x))) {
        report_failure(__FILE__, __LINE__, std::string(context) + " widening " + hex(b));
    }
    check_text("repr", repr_of(wide), oracle::expected_repr(static_cast<double>(x)), b, context);
    ++float32_checked;
}

void check_float32_and_neighbours(float x, int radius, const char* context) {
    for (const float sign : {1.0f, -1.0f}) {
        const std::uint32_t b = bits_of(sign * x);
        for (int d = -radius; d <= radius; ++d) {
            const std::uint32_t n = b + static_cast<std::uint32_t>(d);
            if (finite32(n) && (n >> 31) == (b >> 31)) check_float32(n, context);
        }
    }
}

void check_double(std::uint64_t b, const char* context) {
    check_text("orjson",
               guarded([b](char* out) { return tb::write_orjson_f64(b, out); },
                       tb::kOrjsonF64MaxBytes, tb::kReprMaxText, b),
               oracle::expected_orjson_f64(double_of(b)), b, context);
    check_text("repr", repr_of(b), oracle::expected_repr(double_of(b)), b, context);
}

void check_double_and_neighbours(double x, int radius, const char* context) {
    for (const double sign : {1.0, -1.0}) {
        const std::uint64_t b = bits_of(sign * x);
        for (int d = -radius; d <= radius; ++d) {
            const std::uint64_t n = b + static_cast<std::uint64_t>(static_cast<std::int64_t>(d));
            if (finite64(n) && (n >> 63) == (b >> 63)) check_double(n, context);
        }
    }
}

// ---- the tests ----

void test_goldens() {
    // From CPython 3.11: repr(x) and, for float32 values, repr(struct.unpack('f', ...)[0]).
    const struct {
        double x;
        const char* repr;
    } doubles[] = {
        {0.0, "0.0"},
        {-0.0, "-0.0"},
        {1.0, "1.0"},
        {-1.0, "-1.0"},
        {0.1, "0.1"},
        {0.3, "0.3"},
        {123.0, "123.0"},
        {123.456, "123.456"},
        {1234567890123456.0, "1234567890123456.0"},
        {9007199254740992.0, "9007199254740992.0"},
        {1e16, "1e+16"},
        {1.5e16, "1.5e+16"},
        {9999999999999998.0, "9999999999999998.0"},
        {1e-4, "0.0001"},
        {9.999999999999999e-05, "9.999999999999999e-05"},
        {1e-5, "1e-05"},
        {1.5e-7, "1.5e-07"},
        {1e22, "1e+22"},
        {1e23, "1e+23"},
        {1.7976931348623157e308, "1.7976931348623157e+308"},
        {2.2250738585072014e-308, "2.2250738585072014e-308"},
        {5e-324, "5e-324"},
        {1e-323, "1e-323"},
        {1e-322, "1e-322"},  // 20 * 2^-1074: Java would write 9.9E-323
        {3.4028234663852886e+38, "3.4028234663852886e+38"},
        {123456789012345680.0, "1.2345678901234568e+17"},
        {0.00012345, "0.00012345"},
        {-0.000123456789012345678, "-0.00012345678901234567"},
    };
    for (const auto& g : doubles) {
        CHECK_EQ_STR(repr_of(bits_of(g.x)), g.repr, "repr golden");
        CHECK_EQ_STR(oracle::expected_repr(g.x), g.repr, "oracle golden");  // the oracle agrees too
    }
    const struct {
        float x;
        const char* shortest;
        const char* repr;
    } floats[] = {
        {0.1f, "0.1", "0.10000000149011612"},
        {-0.1f, "-0.1", "-0.10000000149011612"},
        {0.3f, "0.3", "0.30000001192092896"},
        {1e-5f, "1e-05", "9.999999747378752e-06"},
        {1e-4f, "0.0001", "9.999999747378752e-05"},
        {1e15f, "1000000000000000.0", "999999986991104.0"},
        {1e16f, "1e+16", "1.0000000272564224e+16"},
        {16777216.0f, "16777216.0", "16777216.0"},
        {16777218.0f, "16777218.0", "16777218.0"},
        {3.4028235e38f, "3.4028235e+38", "3.4028234663852886e+38"},
        {1.17549435e-38f, "1.1754944e-38", "1.1754943508222875e-38"},
        {1.4e-45f, "1e-45", "1.401298464324817e-45"},
        {9.8e-45f, "1e-44", "9.80908925027372e-45"},
        {0.0123456789f, "0.012345679", "0.012345679104328156"},
    };
    // The one float32 whose Ryu/orjson/numpy digits (7.038531e-26) a double-first reader takes for
    // its neighbour 0x15ae43fe; its neighbour keeps its own digits.
    CHECK_EQ_STR(shortest_of(0x15ae43fdu), "7.0385307e-26", "double-rounding exception");
    CHECK_EQ_STR(shortest_of(0x95ae43fdu), "-7.0385307e-26", "double-rounding exception");
    CHECK_EQ_STR(shortest_of(0x15ae43feu), "7.0385313e-26", "double-rounding neighbour");
    CHECK_EQ_STR(shortest_of(0x15ae43fcu), "7.03853e-26", "double-rounding neighbour");
    for (const std::uint32_t b : {0x15ae43fcu, 0x15ae43fdu, 0x15ae43feu, 0x95ae43fdu})
        check_float32(b, "exception");
    for (const auto& g : floats) {
        CHECK_EQ_STR(shortest_of(bits_of(g.x)), g.shortest, "shortest golden");
        CHECK_EQ_STR(repr_of(tb::f32_bits_to_f64_bits(bits_of(g.x))), g.repr,
                     "widened repr golden");
    }
}

void test_half_and_bfloat16() {
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        const std::uint32_t from_half = tb::f16_to_f32(static_cast<std::uint16_t>(h));
        if (finite32(from_half)) check_float32(from_half, "float16");
        const std::uint32_t from_bf16 = h << 16;
        if (finite32(from_bf16)) check_float32(from_bf16, "bfloat16");
    }
}

void test_powers_and_thresholds() {
    for (int e = -46; e <= 39; ++e) {
        const std::string text = "1e" + std::to_string(e);
        float x = 0;
        oracle::parse(text.data(), text.data() + text.size(), x);
        if (x != 0 && std::isfinite(x))
            check_float32_and_neighbours(x, 3, "power of ten (float32)");
        for (const char* lead : {"2", "5", "9.999999", "1.0000001", "9.9999999"}) {
            const std::string other = std::string(lead) + "e" + std::to_string(e);
            oracle::parse(other.data(), other.data() + other.size(), x);
            if (x != 0 && std::isfinite(x))
                check_float32_and_neighbours(x, 1, "near a power of ten (float32)");
        }
    }
    for (int e = -325; e <= 309; ++e) {
        const std::string text = "1e" + std::to_string(e);
        double x = 0;
        oracle::parse(text.data(), text.data() + text.size(), x);
        if (x != 0 && std::isfinite(x)) check_double_and_neighbours(x, 3, "power of ten (double)");
        for (const char* lead : {"9.999999999999999", "1.0000000000000002", "5"}) {
            const std::string other = std::string(lead) + "e" + std::to_string(e);
            oracle::parse(other.data(), other.data() + other.size(), x);
            if (x != 0 && std::isfinite(x))
                check_double_and_neighbours(x, 1, "near a power of ten (double)");
        }
    }
    for (int e = -149; e <= 127; ++e)
        check_float32_and_neighbours(std::ldexp(1.0f, e), 2, "power of two");
    for (int e = -1074; e <= 1023; ++e)
        check_double_and_neighbours(std::ldexp(1.0, e), 2, "power of two");
    // Layout thresholds and extremes.
    for (const double x : {1e-4, 1e16, 1e15, 1.0, 1e-5, 9.5e-5, 0.5})
        check_double_and_neighbours(x, 16, "threshold (double)");
    for (const float x : {1e-4f, 1e16f, 1e15f, 1.0f, 1e-5f, 9.5e-5f, 0.5f, 16777216.0f})
        check_float32_and_neighbours(x, 64, "threshold (float32)");
    check_float32_and_neighbours(std::numeric_limits<float>::max(), 64, "max (float32)");
    check_float32_and_neighbours(std::numeric_limits<float>::min(), 64, "min normal (float32)");
    check_double_and_neighbours(std::numeric_limits<double>::max(), 64, "max (double)");
    check_double_and_neighbours(std::numeric_limits<double>::min(), 64, "min normal (double)");
    check_float32(0x80000000u, "-0.0");
    check_float32(0, "0.0");
    check_double(0x8000000000000000ull, "-0.0");
    // Subnormals: the smallest 2^16 and the largest 2^16 of each width, both signs.
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
        for (const std::uint32_t sign : {0u, 0x80000000u}) {
            check_float32(sign | b, "small subnormal (float32)");
            check_float32(sign | (0x7fffffu - b), "large subnormal (float32)");
            check_double((std::uint64_t{sign} << 32) | b, "small subnormal (double)");
            check_double((std::uint64_t{sign} << 32) | (0xfffffffffffffull - b),
                         "large subnormal (double)");
        }
    }
    // Integers around 2^24 and 2^53 (the integer fast path's edges).
    for (std::uint32_t i = 0; i < 4096; ++i) {
        check_float32(bits_of(static_cast<float>(i)), "small integer (float32)");
        check_float32(bits_of(16777216.0f) - 2048 + i, "near 2^24 (float32)");
        check_double(bits_of(9007199254740992.0) - 2048 + i, "near 2^53 (double)");
        check_double(bits_of(static_cast<double>(i) * 1e15), "multiple of 1e15 (double)");
    }
}

void test_random(int log2_count) {
    std::mt19937_64 rng(20261129);
    const std::uint64_t count = std::uint64_t{1} << log2_count;
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::uint32_t b = static_cast<std::uint32_t>(rng());
        if (finite32(b)) check_float32(b, "random float32");
    }
    std::normal_distribution<float> embedding(0.0f, 0.05f);
    for (std::uint64_t i = 0; i < count / 16; ++i)
        check_float32(bits_of(embedding(rng)), "N(0, 0.05)");
    for (std::uint64_t i = 0; i < count / 4; ++i) {
        const std::uint64_t b = rng();
        if (finite64(b)) check_double(b, "random double");
    }
}

// Row writers against the oracle, with a canary after the declared bound.
std::string row_oracle_f32(const std::vector<std::uint32_t>& row, bool shortest) {
    std::string s = "[";
    for (std::size_t i = 0; i < row.size(); ++i) {
        if (i) s += ',';
        const float x = float_of(row[i]);
        s += shortest ? oracle::expected_shortest_f32(x)
                      : oracle::expected_repr(static_cast<double>(x));
    }
    return s + "]";
}

// One row of `n` values of `type` at `values`, host-ordered and contiguous, for write_float_rows.
tb::strided_rows one_row(const void* values, std::size_t n, tb::dtype type) {
    const auto size = static_cast<std::ptrdiff_t>(tb::dtype_size(type));
    return {values, 1, n, 0, size, {type, tb::host_byte_order}};
}

// Row `row` written by write_float_rows (production's row writer) into a buffer of its
// float_row_bound and 64 canary bytes more: its text, and whether the canaries are intact.
struct written_row {
    tb::float_text_result result;
    std::string text;
    bool clean;
};
written_row write_row(const tb::strided_rows& row, tb::float_format format) {
    std::size_t bound = 0;
    CHECK(tb::float_row_bound(row.row_length, row.format.type, format, &bound));
    std::vector<unsigned char> buffer(bound + 64, kCanary);
    char* const out = reinterpret_cast<char*>(buffer.data());
    std::size_t length = 0;
    written_row w{tb::write_float_rows(row, format, &out, &length), "", true};
    if (w.result.finite) w.text.assign(out, length);
    for (std::size_t i = bound; i < buffer.size(); ++i) w.clean = w.clean && buffer[i] == kCanary;
    return w;
}

// The row writer (write_float_rows, at each SIMD level) against the oracle.
void test_rows() {
    const tb::simd_level initial = tb::active_simd_level();
    for (const tb::simd_level level : tb::available_simd_levels()) {
        tb::force_simd_level(level);
        std::mt19937_64 rng(7);
        std::normal_distribution<float> embedding(0.0f, 0.05f);
        for (std::size_t n = 0; n <= 70; ++n) {
            for (const bool shortest : {true, false}) {
                const tb::float_format format =
                    shortest ? tb::float_format::shortest : tb::float_format::repr;
                std::vector<std::uint32_t> row(n);
                for (std::size_t i = 0; i < n; ++i) {
                    // Mostly embeddings, some wide-range values so the longest texts occur.
                    std::uint32_t b = (rng() % 4 == 0) ? static_cast<std::uint32_t>(rng())
                                                       : bits_of(embedding(rng));
                    if (!finite32(b)) b &= 0xbfffffffu;
                    row[i] = b;
                }
                written_row w = write_row(one_row(row.data(), n, tb::dtype::float32), format);
                CHECK(w.result.finite);
                if (!w.result.finite) continue;
                CHECK_EQ_STR(w.text, row_oracle_f32(row, shortest),
                             std::string("row f32 ") + tb::to_string(level));
                CHECK(w.clean);

                // The same values as doubles (repr in both modes).
                std::vector<std::uint64_t> wide(n);
                std::string expected = "[";
                for (std::size_t i = 0; i < n; ++i) {
                    wide[i] = (i % 3 == 0) ? rng() & 0xbfffffffffffffffull
                                           : tb::f32_bits_to_f64_bits(row[i]);
                    if (i) expected += ',';
                    expected += oracle::expected_repr(double_of(wide[i]));
                }
                expected += "]";
                w = write_row(one_row(wide.data(), n, tb::dtype::float64), format);
                CHECK(w.result.finite);
                if (!w.result.finite) continue;
                CHECK_EQ_STR(w.text, expected, std::string("row f64 ") + tb::to_string(level));
                CHECK(w.clean);
            }
        }
        // Non-finite values: first, middle, last; NaN, +inf, -inf; the index of the first.
        const std::uint32_t bad32[] = {0x7fc00000u, 0x7f800000u, 0xff800000u, 0x7f800001u,
                                       0xffffffffu};
        const std::uint64_t bad64[] = {0x7ff8000000000000ull, 0x7ff0000000000000ull,
                                       0xfff0000000000000ull, 0x7ff0000000000001ull};
        for (const std::size_t n : {1u, 2u, 5u, 100u}) {
            for (const std::size_t at : {std::size_t{0}, n / 2, n - 1}) {
                for (const std::uint32_t nonfinite : bad32) {
                    std::vector<std::uint32_t> row(n, bits_of(0.25f));
                    row[at] = nonfinite;
                    if (at + 1 < n) row[n - 1] = 0x7f800000u;  // a later one must not be named
                    for (const tb::float_format format :
                         {tb::float_format::shortest, tb::float_format::repr}) {
                        const written_row w =
                            write_row(one_row(row.data(), n, tb::dtype::float32), format);
                        CHECK(!w.result.finite);
                        CHECK(w.result.row == 0 && w.result.column == at);
                    }
                }
                for (const std::uint64_t nonfinite : bad64) {
                    std::vector<std::uint64_t> row(n, bits_of(0.25));
                    row[at] = nonfinite;
                    const written_row w = write_row(one_row(row.data(), n, tb::dtype::float64),
                                                    tb::float_format::repr);
                    CHECK(!w.result.finite);
                    CHECK(w.result.row == 0 && w.result.column == at);
                }
            }
        }
        // An empty row, with no memory behind it: "[]" and nothing more.
        char empty[4] = {'x', 'x', 'x', 'x'};
        for (const tb::dtype type : {tb::dtype::float32, tb::dtype::float64}) {
            char* out = empty;
            std::size_t length = 0;
            CHECK(tb::write_float_rows(one_row(nullptr, 0, type), tb::float_format::shortest, &out,
                                       &length)
                      .finite);
            CHECK(length == 2 && std::memcmp(empty, "[]xx", 4) == 0);
        }
    }
    tb::force_simd_level(initial);
    std::size_t bytes = 0;
    CHECK(!tb::float_row_bound(SIZE_MAX / 4, tb::dtype::float32, tb::float_format::repr, &bytes));
}

// The digits must not depend on the caller's rounding mode (integer arithmetic only).
void test_rounding_mode() {
    std::mt19937_64 rng(99);
    std::vector<std::uint32_t> values(20000);
    std::vector<std::string> shortest(values.size()), repr(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
        std::uint32_t b = static_cast<std::uint32_t>(rng());
        if (!finite32(b)) b &= 0xbfffffffu;
        values[i] = b;
        shortest[i] = shortest_of(b);
        repr[i] = repr_of(tb::f32_bits_to_f64_bits(b));
    }
    for (const int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO}) {
        const int saved = std::fegetround();
        std::fesetround(mode);
        bool same = true;
        for (std::size_t i = 0; i < values.size(); ++i) {
            same = same && shortest_of(values[i]) == shortest[i];
            same = same && repr_of(tb::f32_bits_to_f64_bits(values[i])) == repr[i];
        }
        std::fesetround(saved);
        CHECK(same);
    }
}

// ---- every SIMD level's float-text block writer equals the scalar one (implementation.hpp) ----

constexpr unsigned char kLevelCanary = 0xa5;

// A level's writer against the scalar one on `values` (all finite): `expected(values, n, out,
// &bad)` and `written(...)` write the same texts, the level's from an offset start (1..3 bytes in:
// the writers must not assume alignment), and the level's keeps within `per_value` bytes a value.
// On a mismatch the failure names the first value that differs, and where the row first differs.
template <class Bits, class Scalar, class Level>
void check_level_writer(const std::vector<Bits>& values, std::size_t per_value,
                        const std::string& what_is_checked, Scalar expected_writer,
                        Level level_writer) {
    const std::size_t bound = values.size() * per_value;
    std::vector<char> expected(bound + 8);
    std::vector<unsigned char> got(bound + 72, kLevelCanary);
    std::size_t bad = 777;
    char* e_end = expected_writer(values.data(), values.size(), expected.data(), &bad);
    const std::size_t offset = 1 + values.size() % 3;
    char* start = reinterpret_cast<char*>(got.data()) + offset;
    char* g_end = level_writer(values.data(), values.size(), start, &bad);
    const bool same =
        g_end != nullptr && bad == 777 && g_end - start == e_end - expected.data() &&
        std::memcmp(start, expected.data(), static_cast<std::size_t>(g_end - start)) == 0;
    if (!same) {
        std::string what = what_is_checked;
        for (Bits v : values) {
            char one_e[64], one_g[64 + 72];
            std::size_t b2 = 0;
            char* ee = expected_writer(&v, 1, one_e, &b2);
            char* ge = level_writer(&v, 1, one_g, &b2);
            if (ge == nullptr || ge - one_g != ee - one_e ||
                std::memcmp(one_g, one_e, static_cast<std::size_t>(ee - one_e)) != 0) {
                what += ": " + hex(v) + " wrote " +
                        (ge ? std::string(one_g, ge) : std::string("nullptr")) + ", scalar " +
                        std::string(one_e, ee);
                break;
            }
        }
        if (g_end != nullptr) {  // where the row first differs (the SIMD paths take groups)
            const std::size_t g_len = static_cast<std::size_t>(g_end - start);
            const std::size_t e_len = static_cast<std::size_t>(e_end - expected.data());
            std::size_t at = 0;
            while (at < g_len && at < e_len && start[at] == expected[at]) ++at;
            const std::size_t from = at > 30 ? at - 30 : 0;
            what += "; first difference at byte " + std::to_string(at) + ": wrote ..." +
                    std::string(start + from, std::min(g_len, at + 30) - from) + "...; scalar ..." +
                    std::string(expected.data() + from, std::min(e_len, at + 30) - from) + "...";
        }
        report_failure(__FILE__, __LINE__, what);
    } else {
        test_check::record_pass();
    }
    bool clean = true;
    for (std::size_t i = 0; i < offset; ++i) clean = clean && got[i] == kLevelCanary;
    for (std::size_t i = offset + bound; i < got.size(); ++i)
        clean = clean && got[i] == kLevelCanary;
    CHECK(clean);
}

// The level's f32 writers against write_values_f32 (both modes) and write_values_orjson_f32.
void check_level_f32(const tb::float_text_writers& w, const char* level,
                     const std::vector<std::uint32_t>& values, const char* context) {
    for (const bool shortest : {true, false}) {
        check_level_writer(
            values, (shortest ? tb::kShortestF32MaxBytes : tb::kReprMaxBytes) + 1,
            std::string(level) + " " + context + (shortest ? " shortest" : " repr"),
            [shortest](const std::uint32_t* v, std::size_t n, char* out, std::size_t* bad) {
                return tb::write_values_f32(v, n, shortest, out, bad);
            },
            [&w, shortest](const std::uint32_t* v, std::size_t n, char* out, std::size_t* bad) {
                return w.f32(v, n, shortest, out, bad);
            });
    }
    check_level_writer(values, tb::kOrjsonF32MaxBytes + 1,
                       std::string(level) + " " + context + " orjson", tb::write_values_orjson_f32,
                       [&w](const std::uint32_t* v, std::size_t n, char* out, std::size_t* bad) {
                           return w.orjson_f32(v, n, out, bad);
                       });
}

// The level's f64 writers against write_values_f64 and write_values_orjson_f64.
void check_level_f64(const tb::float_text_writers& w, const char* level,
                     const std::vector<std::uint64_t>& values, const char* context) {
    check_level_writer(values, tb::kReprMaxBytes + 1, std::string(level) + " " + context + " f64",
                       tb::write_values_f64,
                       [&w](const std::uint64_t* v, std::size_t n, char* out, std::size_t* bad) {
                           return w.f64(v, n, out, bad);
                       });
    check_level_writer(values, tb::kOrjsonF64MaxBytes + 1,
                       std::string(level) + " " + context + " orjson f64",
                       tb::write_values_orjson_f64,
                       [&w](const std::uint64_t* v, std::size_t n, char* out, std::size_t* bad) {
                           return w.orjson_f64(v, n, out, bad);
                       });
}

// Feeds `values` to the checks in blocks of 512 (float_rows.cpp's block size).
void check_level_blocks(const tb::float_text_writers& w, const char* level,
                        const std::vector<std::uint32_t>& all, const char* context) {
    for (std::size_t i = 0; i < all.size(); i += 512) {
        const std::vector<std::uint32_t> block(
            all.begin() + static_cast<std::ptrdiff_t>(i),
            all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), i + 512)));
        check_level_f32(w, level, block, context);
        std::vector<std::uint64_t> wide(block.size());
        for (std::size_t j = 0; j < block.size(); ++j) wide[j] = tb::f32_bits_to_f64_bits(block[j]);
        check_level_f64(w, level, wide, context);
    }
}

void test_levels_equal_scalar(bool quick) {
    for (const tb::simd_level level : tb::available_simd_levels()) {
        const tb::float_text_writers* writers = tb::implementation_for(level).float_text;
        CHECK(writers != nullptr);
        if (writers == nullptr) continue;
        const tb::float_text_writers& w = *writers;
        const char* name = tb::to_string(level);
        // Every float16 and bfloat16 value.
        std::vector<std::uint32_t> half, bf16;
        for (std::uint32_t h = 0; h < 0x10000; ++h) {
            const std::uint32_t from_half = tb::f16_to_f32(static_cast<std::uint16_t>(h));
            if (finite32(from_half)) half.push_back(from_half);
            if (finite32(h << 16)) bf16.push_back(h << 16);
        }
        check_level_blocks(w, name, half, "float16");
        check_level_blocks(w, name, bf16, "bfloat16");
        // Special values: zeros, subnormals, the extremes, powers of ten and their neighbours,
        // the one exception of write_shortest_f32, integers around 2^24.
        std::vector<std::uint32_t> special = {0u,          0x80000000u, 1u,          0x80000001u,
                                              0x007fffffu, 0x00800000u, 0x7f7fffffu, 0xff7fffffu,
                                              0x15ae43fdu, 0x95ae43fdu, 0x15ae43feu, 0x4b800000u,
                                              0x4b7fffffu, 0x4b800001u, 0x3f800000u, 0x3f800001u};
        for (int e = -46; e <= 39; ++e) {
            const float x = std::pow(10.0f, static_cast<float>(e));
            if (!(x > 0) || !std::isfinite(x)) continue;
            for (int d = -3; d <= 3; ++d)
                special.push_back(bits_of(x) + static_cast<std::uint32_t>(d));
        }
        for (std::uint32_t e = 1; e < 255; ++e) {  // every power of two and its neighbours
            for (std::uint32_t f : {0u, 1u, 0x7fffffu}) special.push_back((e << 23) | f);
        }
        for (std::uint32_t& b : special)
            if (!finite32(b)) b &= 0xbfffffffu;
        check_level_blocks(w, name, special, "special values");
        // Random patterns (2^22; 2^20 with --quick) and embeddings.
        std::mt19937_64 rng(2024);
        std::normal_distribution<float> embedding(0.0f, 0.05f);
        std::vector<std::uint32_t> random(std::size_t{1} << (quick ? 20 : 22));
        for (std::size_t i = 0; i < random.size(); ++i) {
            std::uint32_t b =
                (i % 4 == 0) ? bits_of(embedding(rng)) : static_cast<std::uint32_t>(rng());
            if (!finite32(b)) b &= 0xbfffffffu;
            random[i] = b;
        }
        check_level_blocks(w, name, random, "random float32");
        // Rows of doubles one bit off float32 values (one of the 29 bits a float32 leaves zero
        // set, or added, the same bit in every value of the row): the float64 writers take groups
        // of float32 values widened their own way, and these are not.
        for (int bit = 0; bit < 29; ++bit) {
            std::vector<std::uint64_t> near_widened(37);
            for (std::size_t i = 0; i < near_widened.size(); ++i) {
                const std::uint64_t widened = tb::f32_bits_to_f64_bits(bits_of(embedding(rng)));
                near_widened[i] = i % 2 ? widened ^ (std::uint64_t{1} << bit)
                                        : widened + (std::uint64_t{1} << bit);
            }
            check_level_f64(w, name, near_widened, "doubles next to float32 values");
        }
        std::vector<std::uint64_t> random64(std::size_t{1} << 16);
        for (std::uint64_t& b : random64) {
            b = rng();
            if ((b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull) b &= 0xbfffffffffffffffull;
        }
        for (std::size_t i = 0; i < random64.size(); i += 509)
            check_level_f64(
                w, name,
                std::vector<std::uint64_t>(random64.begin() + static_cast<std::ptrdiff_t>(i),
                                           random64.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                                  random64.size(), i + 509))),
                "random float64");
        // The SIMD writers take groups of sixteen values, two groups together, through a path of
        // their own when every value of a group qualifies (zeros and normal values below 1;
        // repr: down to about 1e-10; orjson: none from 1e-6 to 1e-4) and choose the notation
        // per value there: rows of embedding values with one value that sends its group
        // elsewhere, or takes a rarer branch, at each position of two groups and a tail.
        {
            std::vector<std::uint32_t> odd_ones = {0u,          0x80000000u,   1u,
                                                   0x007fffffu, 0x00800000u,   0x00800001u,
                                                   0x3f800000u, 0x3f7fffffu,   0xbf7fffffu,
                                                   0x15ae43fdu, 0x95ae43fdu,   0x15ae43feu,
                                                   0x3e000000u, 0x38800000u,   0x4b800000u,
                                                   0x7f7fffffu, bits_of(1.5f), bits_of(-123.25f)};
            for (const float x :
                 {1e-4f, 1e-5f, 1e-6f, 1e-7f, 9.5e-8f, 1e-10f, 1.5e-10f, 1e-11f, 2e-38f}) {
                for (int d = -1; d <= 1; ++d) {
                    odd_ones.push_back(bits_of(x) + static_cast<std::uint32_t>(d));
                    odd_ones.push_back((bits_of(x) + static_cast<std::uint32_t>(d)) | 0x80000000u);
                }
            }
            std::vector<std::uint32_t> row(16 * 2 + 13);
            for (const std::uint32_t odd : odd_ones) {
                for (std::size_t at = 0; at < row.size(); ++at) {
                    for (std::uint32_t& b : row) b = bits_of(embedding(rng));
                    row[at] = odd;
                    check_level_f32(w, name, row, "group paths");
                }
            }
            // Rows of values from 1e-12 to 1 (scientific and fixed notation mixed in a group,
            // exponents of one and two digits, few digits and many).
            std::uniform_real_distribution<float> exponent(-12.0f, 0.0f);
            for (int r = 0; r < 64; ++r) {
                for (std::uint32_t& b : row) {
                    const float x = std::pow(10.0f, exponent(rng));
                    b = r % 2 ? bits_of(x) : bits_of(std::round(x * 1e4f) / 1e4f);
                    if (rng() % 2) b |= 0x80000000u;
                }
                check_level_f32(w, name, row, "values from 1e-12 to 1");
            }
        }
        // Rows of every length 0..70, and a NaN or infinity at every position of them (the first
        // one named, a later one too).
        const std::uint32_t bad32[] = {0x7fc00000u, 0x7f800000u, 0xff800000u, 0xffffffffu};
        for (std::size_t n = 0; n <= 70; ++n) {
            std::vector<std::uint32_t> row(n);
            for (std::uint32_t& b : row) b = bits_of(embedding(rng));
            check_level_f32(w, name, row, "row");
            std::vector<std::uint64_t> wide(n);
            for (std::size_t j = 0; j < n; ++j) wide[j] = tb::f32_bits_to_f64_bits(row[j]);
            check_level_f64(w, name, wide, "row");
            std::vector<char> out(n * (tb::kReprMaxBytes + 1) + 72);
            for (std::size_t at = 0; at < n; ++at) {
                std::vector<std::uint32_t> with_bad = row;
                with_bad[at] = bad32[at % 4];
                if (at + 2 < n) with_bad[n - 1] = 0x7f800000u;
                for (const bool shortest : {true, false}) {
                    std::size_t bad = 999999;
                    CHECK(w.f32(with_bad.data(), n, shortest, out.data(), &bad) == nullptr);
                    CHECK(bad == at);
                }
                std::size_t bad_orjson = 999999;
                CHECK(w.orjson_f32(with_bad.data(), n, out.data(), &bad_orjson) == nullptr);
                CHECK(bad_orjson == at);
                std::vector<std::uint64_t> wide_bad = wide;
                wide_bad[at] = at % 2 ? 0x7ff8000000000000ull : 0xfff0000000000000ull;
                std::size_t bad = 999999;
                CHECK(w.f64(wide_bad.data(), n, out.data(), &bad) == nullptr);
                CHECK(bad == at);
                bad = 999999;
                CHECK(w.orjson_f64(wide_bad.data(), n, out.data(), &bad) == nullptr);
                CHECK(bad == at);
            }
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    const auto timed = [](const char* what, auto&& test) {
        const auto start = std::chrono::steady_clock::now();
        test();
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
        std::printf("  %-28s %.2f s\n", what, took.count());
    };
    timed("goldens", test_goldens);
    timed("float16 and bfloat16", test_half_and_bfloat16);
    timed("powers, thresholds, edges", test_powers_and_thresholds);
    timed("random bit patterns", [&] { test_random(quick ? 18 : 24); });
    timed("rows", test_rows);
    timed("rounding mode", test_rounding_mode);
    timed("portable oracle", [&] { test_portable_charconv(quick); });
    timed("every level equals scalar", [&] { test_levels_equal_scalar(quick); });
    std::printf("float_text_tests: %ld float32 values in both modes; %ld passed, %ld failed\n",
                float32_checked, passed, failed);
    return failed == 0 ? 0 : 1;
}
