// The driver shared by the opt-in exhaustive runs over float32 bit patterns
// (float_text_exhaustive, number_parser_exhaustive): `[--level NAME] THREADS [FIRST LAST]` on the
// command line, the range split into chunks of 2^20 patterns taken by THREADS threads in turn, and
// a progress line every 2^28 patterns.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "tensorb64/tensorb64.hpp"

namespace pattern_sweep {

struct range {
    unsigned threads = 0;
    std::uint64_t first = 0, last = std::uint64_t{1} << 32;
};

// Takes a leading `--level NAME` off argv (forcing that level: throws if this CPU cannot run
// it); false where there is none. Exits with status 2 on an unknown name.
inline bool take_level(int& argc, char**& argv, tensorb64::simd_level* level) {
    if (argc < 3 || std::strcmp(argv[1], "--level") != 0) return false;
    if (std::strcmp(argv[2], "best") == 0) {  // the one dispatch runs on this CPU
        *level = tensorb64::available_simd_levels().back();
    } else if (!tensorb64::parse_simd_level(argv[2], level)) {
        std::fprintf(stderr, "unknown SIMD level %s\n", argv[2]);
        std::exit(2);
    }
    tensorb64::force_simd_level(*level);
    argv += 2;
    argc -= 2;
    return true;
}

// THREADS [FIRST LAST] (what is left of argv); exits with status 2 and the usage if malformed.
inline range parse_range(int argc, char** argv) {
    range r;
    if (argc != 2 && argc != 4) {
        std::fprintf(stderr, "usage: %s [--level NAME] THREADS [FIRST LAST]\n", argv[0]);
        std::exit(2);
    }
    r.threads = static_cast<unsigned>(std::strtoul(argv[1], nullptr, 0));
    if (argc == 4) {
        r.first = std::strtoull(argv[2], nullptr, 0);
        r.last = std::strtoull(argv[3], nullptr, 0);
    }
    if (r.threads == 0 || r.first > r.last || r.last > (std::uint64_t{1} << 32)) {
        std::fprintf(stderr, "bad arguments\n");
        std::exit(2);
    }
    return r;
}

// Calls check_range(lo, hi) on every chunk of `r` from r.threads threads, and progress(chunk)
// (under `print_lock`) after every 256th chunk; the seconds it took.
template <class CheckRange, class Progress>
double sweep(const range& r, std::mutex& print_lock, CheckRange check_range, Progress progress) {
    constexpr std::uint64_t chunk = std::uint64_t{1} << 20;
    std::atomic<std::uint64_t> next_chunk{0};
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < r.threads; ++t) {
        pool.emplace_back([&] {
            for (;;) {
                const std::uint64_t c = next_chunk++;
                const std::uint64_t lo = r.first + c * chunk;
                if (lo >= r.last) return;
                check_range(lo, lo + chunk < r.last ? lo + chunk : r.last);
                if (c % 256 == 255) {
                    std::lock_guard<std::mutex> lock(print_lock);
                    progress(c);
                    std::fflush(stdout);
                }
            }
        });
    }
    for (std::thread& t : pool) t.join();
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    return took.count();
}

}  // namespace pattern_sweep
