// Opt-in exhaustive test of float_text.hpp: every finite float32 bit pattern, in the three formats
// (shortest, repr, orjson), against float_text_oracle.hpp (std::to_chars + the layout written
// out), plus the read-back of each shortest token as a double then rounded to float32, and
// directly as a float32.
//
//   float_text_exhaustive [--level NAME] THREADS [FIRST LAST]
//       patterns FIRST <= bits < LAST (default: all 2^32; numbers in C notation, e.g. 0x80000000);
//       --level: the texts of that SIMD level's float-text block writers
//       (dispatch/implementation.hpp; rows of 512 patterns, tokens split at the commas), not the
//       scalar write_shortest_f32 / write_repr / write_orjson_f32; and its two float64 writers on
//       the values widened to doubles (repr's text again, and orjson's for a double: what vLLM's
//       Cohere rows and SGLang's float route are), five texts a pattern
// Prints the rate and the first mismatches; exits non-zero on any.
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include <string>

#include "dispatch/dispatch.hpp"
#include "dispatch/implementation.hpp"
#include "float_text/float_text.hpp"
#include "float_text_oracle.hpp"
#include "pattern_sweep.hpp"

namespace {

std::atomic<std::uint64_t> mismatches{0};
std::atomic<std::uint64_t> readback_failures{0};
std::atomic<std::uint64_t> checked{0};
std::mutex print_lock;

void report(const char* what, std::uint32_t bits, const char* got, const char* got_end,
            const char* expected, const char* expected_end) {
    std::lock_guard<std::mutex> lock(print_lock);
    static int shown = 0;
    if (++shown > 20) return;
    std::fprintf(stderr, "%s 0x%08x: wrote %.*s; reference: %.*s\n", what, bits,
                 static_cast<int>(got_end - got), got, static_cast<int>(expected_end - expected),
                 expected);
}

// The float-text writer under test: nullptr for the scalar functions themselves.
const tensorb64::float_text_writers* level_writers = nullptr;

// One finite pattern's three texts (shortest, repr, orjson) against the oracle and the read-backs.
void check_texts(std::uint32_t b, const char* got, const char* g, const char* got_repr,
                 const char* g_repr, const char* got_orjson, const char* g_orjson) {
    char expected[64];
    float x;
    std::memcpy(&x, &b, 4);
    char* e = float_text_oracle::expected_shortest_f32(x, expected);
    if (g - got != e - expected ||
        std::memcmp(got, expected, static_cast<std::size_t>(g - got)) != 0) {
        ++mismatches;
        report("shortest", b, got, g, expected, e);
    }
    double as_double = 0;
    float as_float = 0;
    float_text_oracle::parse(got, g, as_double);
    float_text_oracle::parse(got, g, as_float);
    const float via_double = static_cast<float>(as_double);
    std::uint32_t b1, b2;
    std::memcpy(&b1, &via_double, 4);
    std::memcpy(&b2, &as_float, 4);
    if (b1 != b || b2 != b) {
        ++readback_failures;
        char read_back[16];
        const int length = std::snprintf(read_back, sizeof read_back, "0x%08x", b1 != b ? b1 : b2);
        report(
            b1 != b ? "token read as a double, then rounded to float32" : "token read as float32",
            b, got, g, read_back, read_back + length);
    }
    // repr of the value widened to a double
    e = float_text_oracle::expected_repr(static_cast<double>(x), expected);
    if (g_repr - got_repr != e - expected ||
        std::memcmp(got_repr, expected, static_cast<std::size_t>(g_repr - got_repr)) != 0) {
        ++mismatches;
        report("repr", b, got_repr, g_repr, expected, e);
    }
    e = float_text_oracle::expected_orjson_f32(x, expected);
    if (g_orjson - got_orjson != e - expected ||
        std::memcmp(got_orjson, expected, static_cast<std::size_t>(g_orjson - got_orjson)) != 0) {
        ++mismatches;
        report("orjson", b, got_orjson, g_orjson, expected, e);
    }
}

// The texts of the level's two float64 writers on the row widened to doubles against the repr
// and orjson texts the oracle gives each double.
void check_level_row_f64(const std::uint32_t* bits, std::size_t n) {
    static thread_local std::vector<char> repr, orjson;
    static thread_local std::vector<std::uint64_t> wide;
    wide.resize(n);
    for (std::size_t i = 0; i < n; ++i) wide[i] = tensorb64::f32_bits_to_f64_bits(bits[i]);
    repr.resize(n * (tensorb64::kReprMaxBytes + 1));
    orjson.resize(n * (tensorb64::kOrjsonF64MaxBytes + 1));
    std::size_t bad = 0;
    const char* r_end = level_writers->f64(wide.data(), n, repr.data(), &bad);
    const char* o_end = level_writers->orjson_f64(wide.data(), n, orjson.data(), &bad);
    if (r_end == nullptr || o_end == nullptr) {
        ++mismatches;
        report("float64 row refused", bits[0], "", "", "", "");
        return;
    }
    const char* r = repr.data();
    const char* o = orjson.data();
    char expected[64];
    for (std::size_t i = 0; i < n; ++i) {
        const char* r_comma =
            static_cast<const char*>(std::memchr(r, ',', static_cast<std::size_t>(r_end - r)));
        const char* o_comma =
            static_cast<const char*>(std::memchr(o, ',', static_cast<std::size_t>(o_end - o)));
        if (r_comma == nullptr || o_comma == nullptr) {
            ++mismatches;
            report("float64 row ends early", bits[i], "", "", "", "");
            return;
        }
        float x;
        std::memcpy(&x, bits + i, 4);
        const struct {
            const char *got, *got_end;
            char* (*oracle)(double, char*);
            const char* what;
        } texts[] = {{r, r_comma, float_text_oracle::expected_repr, "float64 repr"},
                     {o, o_comma, float_text_oracle::expected_orjson_f64, "float64 orjson"}};
        for (const auto& t : texts) {
            const char* e = t.oracle(static_cast<double>(x), expected);
            if (t.got_end - t.got != e - expected ||
                std::memcmp(t.got, expected, static_cast<std::size_t>(e - expected)) != 0) {
                ++mismatches;
                report(t.what, bits[i], t.got, t.got_end, expected, e);
            }
        }
        r = r_comma + 1;
        o = o_comma + 1;
    }
    if (r != r_end || o != o_end) {
        ++mismatches;
        report("float64 row too long", bits[n - 1], "", "", "", "");
    }
}

// A row of finite patterns through the level's writers, each token checked.
void check_level_row(const std::uint32_t* bits, std::size_t n) {
    static thread_local std::vector<char> shortest, repr, orjson;
    shortest.resize(n * (tensorb64::kShortestF32MaxBytes + 1));
    repr.resize(n * (tensorb64::kReprMaxBytes + 1));
    orjson.resize(n * (tensorb64::kOrjsonF32MaxBytes + 1));
    std::size_t bad = 0;
    const char* s_end = level_writers->f32(bits, n, true, shortest.data(), &bad);
    const char* r_end = level_writers->f32(bits, n, false, repr.data(), &bad);
    const char* o_end = level_writers->orjson_f32(bits, n, orjson.data(), &bad);
    if (s_end == nullptr || r_end == nullptr || o_end == nullptr) {
        ++mismatches;
        report("row refused", bits[0], "", "", "", "");
        return;
    }
    check_level_row_f64(bits, n);
    const char* s = shortest.data();
    const char* r = repr.data();
    const char* o = orjson.data();
    for (std::size_t i = 0; i < n; ++i) {
        const char* s_comma =
            static_cast<const char*>(std::memchr(s, ',', static_cast<std::size_t>(s_end - s)));
        const char* r_comma =
            static_cast<const char*>(std::memchr(r, ',', static_cast<std::size_t>(r_end - r)));
        const char* o_comma =
            static_cast<const char*>(std::memchr(o, ',', static_cast<std::size_t>(o_end - o)));
        if (s_comma == nullptr || r_comma == nullptr || o_comma == nullptr) {
            ++mismatches;
            report("row ends early", bits[i], "", "", "", "");
            return;
        }
        check_texts(bits[i], s, s_comma, r, r_comma, o, o_comma);
        s = s_comma + 1;
        r = r_comma + 1;
        o = o_comma + 1;
    }
    if (s != s_end || r != r_end || o != o_end) {
        ++mismatches;
        report("row too long", bits[n - 1], "", "", "", "");
    }
}

void check_range(std::uint64_t first, std::uint64_t last) {
    char got[64], got_repr[64], got_orjson[64];
    std::uint64_t local_checked = 0;
    std::vector<std::uint32_t> row;
    row.reserve(512);
    for (std::uint64_t wide = first; wide < last; ++wide) {
        const std::uint32_t b = static_cast<std::uint32_t>(wide);
        if ((b & 0x7f800000u) == 0x7f800000u) continue;
        ++local_checked;
        if (level_writers != nullptr) {
            row.push_back(b);
            if (row.size() == 512) {
                check_level_row(row.data(), row.size());
                row.clear();
            }
            continue;
        }
        char* g = tensorb64::write_shortest_f32(b, got);
        char* g_repr = tensorb64::write_repr(tensorb64::f32_bits_to_f64_bits(b), got_repr);
        char* g_orjson = tensorb64::write_orjson_f32(b, got_orjson);
        check_texts(b, got, g, got_repr, g_repr, got_orjson, g_orjson);
    }
    if (!row.empty()) check_level_row(row.data(), row.size());
    checked += local_checked;
}

}  // namespace

int main(int argc, char** argv) {
    std::string level_name = "scalar functions";
    tensorb64::simd_level level;
    if (pattern_sweep::take_level(argc, argv, &level)) {
        level_writers = tensorb64::implementation_for(level).float_text;
        level_name = std::string("level ") + tensorb64::to_string(level) + "'s writer";
    }
    const pattern_sweep::range r = pattern_sweep::parse_range(argc, argv);
    const unsigned threads = r.threads;
    const std::uint64_t first = r.first, last = r.last;
    const double seconds = pattern_sweep::sweep(r, print_lock, check_range, [](std::uint64_t c) {
        std::printf("  chunk %llu done: %llu checked, %llu mismatches, %llu read-back failures\n",
                    static_cast<unsigned long long>(c),
                    static_cast<unsigned long long>(checked.load()),
                    static_cast<unsigned long long>(mismatches.load()),
                    static_cast<unsigned long long>(readback_failures.load()));
    });
    const double rate = static_cast<double>(last - first) / seconds;
    std::printf(
        "float_text_exhaustive (%s): patterns [0x%llx, 0x%llx): %llu finite checked in %s, "
        "%.1f "
        "s on %u "
        "threads (%.2f M patterns/s; all 2^32 at this rate: %.0f s); %llu mismatches, %llu "
        "read-back "
        "failures\n",
        level_name.c_str(), static_cast<unsigned long long>(first),
        static_cast<unsigned long long>(last), static_cast<unsigned long long>(checked.load()),
        level_writers != nullptr ? "five texts (three of the float32, two of the double)"
                                 : "three formats",
        seconds, threads, rate / 1e6, 4294967296.0 / rate,
        static_cast<unsigned long long>(mismatches.load()),
        static_cast<unsigned long long>(readback_failures.load()));
    return mismatches == 0 && readback_failures == 0 ? 0 : 1;
}
