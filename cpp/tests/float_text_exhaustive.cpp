// Opt-in exhaustive test of float_text.hpp: every finite float32 bit pattern, both modes, against
// float_text_oracle.hpp (std::to_chars + the layout written out), plus the read-back of each
// shortest token as a double then rounded to float32, and directly as a float32.
//
//   float_text_exhaustive THREADS [FIRST LAST]     patterns FIRST <= bits < LAST (default: all
//                                                  2^32; numbers in C notation, e.g. 0x80000000)
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

#include "float_text.hpp"
#include "float_text_oracle.hpp"

namespace {

std::atomic<std::uint64_t> next_chunk{0};
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

void check_range(std::uint64_t first, std::uint64_t last) {
    char got[64], expected[64];
    std::uint64_t local_checked = 0;
    for (std::uint64_t wide = first; wide < last; ++wide) {
        const std::uint32_t b = static_cast<std::uint32_t>(wide);
        if ((b & 0x7f800000u) == 0x7f800000u) continue;
        float x;
        std::memcpy(&x, &b, 4);
        // shortest
        char* g = tensorb64::write_shortest_f32(b, got);
        char* e = float_text_oracle::expected_shortest_f32(x, expected);
        if (g - got != e - expected ||
            std::memcmp(got, expected, static_cast<std::size_t>(g - got)) != 0) {
            ++mismatches;
            report("shortest", b, got, g, expected, e);
        }
        double as_double = 0;
        float as_float = 0;
        std::from_chars(got, g, as_double);
        std::from_chars(got, g, as_float);
        const float via_double = static_cast<float>(as_double);
        std::uint32_t b1, b2;
        std::memcpy(&b1, &via_double, 4);
        std::memcpy(&b2, &as_float, 4);
        if (b1 != b || b2 != b) {
            ++readback_failures;
            char read_back[16];
            const int length =
                std::snprintf(read_back, sizeof read_back, "0x%08x", b1 != b ? b1 : b2);
            report(b1 != b ? "token read as a double, then rounded to float32"
                           : "token read as float32",
                   b, got, g, read_back, read_back + length);
        }
        // repr of the value widened to a double
        g = tensorb64::write_repr(tensorb64::f32_bits_to_f64_bits(b), got);
        e = float_text_oracle::expected_repr(static_cast<double>(x), expected);
        if (g - got != e - expected ||
            std::memcmp(got, expected, static_cast<std::size_t>(g - got)) != 0) {
            ++mismatches;
            report("repr", b, got, g, expected, e);
        }
        ++local_checked;
    }
    checked += local_checked;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2 && argc != 4) {
        std::fprintf(stderr, "usage: %s THREADS [FIRST LAST]\n", argv[0]);
        return 2;
    }
    const unsigned threads = static_cast<unsigned>(std::strtoul(argv[1], nullptr, 0));
    const std::uint64_t first = argc == 4 ? std::strtoull(argv[2], nullptr, 0) : 0;
    const std::uint64_t last =
        argc == 4 ? std::strtoull(argv[3], nullptr, 0) : (std::uint64_t{1} << 32);
    if (threads == 0 || first > last || last > (std::uint64_t{1} << 32)) {
        std::fprintf(stderr, "bad arguments\n");
        return 2;
    }
    constexpr std::uint64_t chunk = std::uint64_t{1} << 20;
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back([&] {
            for (;;) {
                const std::uint64_t c = next_chunk++;
                const std::uint64_t lo = first + c * chunk;
                if (lo >= last) return;
                check_range(lo, lo + chunk < last ? lo + chunk : last);
                if (c % 256 == 255) {  // progress every 2^28 patterns
                    std::lock_guard<std::mutex> lock(print_lock);
                    std::printf(
                        "  chunk %llu done: %llu checked, %llu mismatches, %llu read-back "
                        "failures\n",
                        static_cast<unsigned long long>(c),
                        static_cast<unsigned long long>(checked.load()),
                        static_cast<unsigned long long>(mismatches.load()),
                        static_cast<unsigned long long>(readback_failures.load()));
                    std::fflush(stdout);
                }
            }
        });
    }
    for (std::thread& t : pool) t.join();
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    const double rate = static_cast<double>(last - first) / took.count();
    std::printf(
        "float_text_exhaustive: patterns [0x%llx, 0x%llx): %llu finite checked in both modes, %.1f "
        "s on %u "
        "threads (%.2f M patterns/s; all 2^32 at this rate: %.0f s); %llu mismatches, %llu "
        "read-back "
        "failures\n",
        static_cast<unsigned long long>(first), static_cast<unsigned long long>(last),
        static_cast<unsigned long long>(checked.load()), took.count(), threads, rate / 1e6,
        4294967296.0 / rate, static_cast<unsigned long long>(mismatches.load()),
        static_cast<unsigned long long>(readback_failures.load()));
    return mismatches == 0 && readback_failures == 0 ? 0 : 1;
}
