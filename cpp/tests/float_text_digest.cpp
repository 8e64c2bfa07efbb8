// Opt-in: every finite float32 bit pattern through a level's float-text block writers (all five:
// shortest, repr and orjson's text of the float32 values, repr and orjson's text of the values
// widened to doubles), in rows of 512 patterns, and a 64-bit digest (FNV-1a) of their texts per
// chunk of 2^20 patterns, printed in chunk order. Two runs over the same range that print the same
// lines wrote the same bytes: the neon level's writers run under qemu-aarch64, where checking
// every text against the oracle (float_text_exhaustive) takes hours, against the scalar level's
// run natively in minutes (cpp/tests/neon_digest.sh does both and compares them).
//
//   float_text_digest [--level NAME] THREADS [FIRST LAST]
//       patterns FIRST <= bits < LAST (default: all 2^32), as pattern_sweep.hpp reads them;
//       --level: that SIMD level's writers (default: the scalar level's)
// Prints "chunk N DIGEST" for each chunk, then a summary line to stderr.
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "dispatch/dispatch.hpp"
#include "dispatch/implementation.hpp"
#include "float_text/float_text.hpp"
#include "pattern_sweep.hpp"

namespace {

const tensorb64::float_text_writers* writers =
    tensorb64::implementation_for(tensorb64::simd_level::scalar).float_text;
std::mutex print_lock;
std::mutex digests_lock;
std::vector<std::uint64_t> digests;  // one a chunk, from the range's first
std::uint64_t first_pattern = 0;

std::uint64_t fnv1a(std::uint64_t h, const char* p, const char* end) {
    for (; p != end; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 0x100000001b3ull;
    return h;
}

// The digest of one row's five texts, folded into h.
std::uint64_t digest_row(std::uint64_t h, const std::uint32_t* bits, std::size_t n) {
    static thread_local std::vector<char> out;
    static thread_local std::vector<std::uint64_t> wide;
    out.resize(n * (tensorb64::kOrjsonF64MaxBytes + 1));
    wide.resize(n);
    for (std::size_t i = 0; i < n; ++i) wide[i] = tensorb64::f32_bits_to_f64_bits(bits[i]);
    std::size_t bad = 0;
    const char* end = writers->f32(bits, n, true, out.data(), &bad);
    h = fnv1a(h, out.data(), end);
    end = writers->f32(bits, n, false, out.data(), &bad);
    h = fnv1a(h, out.data(), end);
    end = writers->orjson_f32(bits, n, out.data(), &bad);
    h = fnv1a(h, out.data(), end);
    end = writers->f64(wide.data(), n, out.data(), &bad);
    h = fnv1a(h, out.data(), end);
    end = writers->orjson_f64(wide.data(), n, out.data(), &bad);
    return fnv1a(h, out.data(), end);
}

void digest_range(std::uint64_t lo, std::uint64_t hi) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    std::vector<std::uint32_t> row;
    row.reserve(512);
    for (std::uint64_t wide = lo; wide < hi; ++wide) {
        const std::uint32_t b = static_cast<std::uint32_t>(wide);
        if ((b & 0x7f800000u) == 0x7f800000u) continue;
        row.push_back(b);
        if (row.size() == 512) {
            h = digest_row(h, row.data(), row.size());
            row.clear();
        }
    }
    if (!row.empty()) h = digest_row(h, row.data(), row.size());
    std::lock_guard<std::mutex> lock(digests_lock);
    digests[(lo - first_pattern) >> 20] = h;
}

}  // namespace

int main(int argc, char** argv) {
    tensorb64::simd_level level = tensorb64::simd_level::scalar;
    if (pattern_sweep::take_level(argc, argv, &level))
        writers = tensorb64::implementation_for(level).float_text;
    const pattern_sweep::range r = pattern_sweep::parse_range(argc, argv);
    first_pattern = r.first;
    digests.assign(((r.last - r.first) >> 20) + 1, 0);
    const double seconds = pattern_sweep::sweep(r, print_lock, digest_range, [](std::uint64_t) {});
    const std::uint64_t chunks = (r.last - r.first + (1u << 20) - 1) >> 20;
    for (std::uint64_t c = 0; c < chunks; ++c)
        std::printf("chunk %llu %016llx\n", static_cast<unsigned long long>(c),
                    static_cast<unsigned long long>(digests[c]));
    std::fprintf(stderr,
                 "float_text_digest (level %s): patterns [0x%llx, 0x%llx), %llu chunks, %.1f s on "
                 "%u threads\n",
                 tensorb64::to_string(level), static_cast<unsigned long long>(r.first),
                 static_cast<unsigned long long>(r.last), static_cast<unsigned long long>(chunks),
                 seconds, r.threads);
    return 0;
}
