// Opt-in exhaustive test of the JSON number parser: every finite float32 bit pattern, written three
// ways — this project's writer in both formats (float_text.hpp: shortest and repr) and orjson's
// float32 layout (the shortest digits, fixed notation for exponents -6..12, otherwise "1.5e-7",
// "1e+20") — in rows of 512, parses back to the same bits through a level's row parser. The one
// exception is orjson's text of 0x15ae43fd (and its negative), 7.038531e-26, which json.loads +
// numpy read as 0x15ae43fe (double rounding; see float_text.hpp's write_shortest_f32): for it the
// expected bits are that reading (strtod, then the cast). And read to float64 (the openai client's
// float rows: parse_number_row_double), the repr texts give back the float32 value widened, and
// orjson's texts the double std::from_chars reads (the correctly rounded one: fast_float).
//
//   number_parser_exhaustive [--level NAME] [--layout NAME] THREADS [FIRST LAST]
//       patterns FIRST <= bits < LAST (default: all 2^32; numbers in C notation); --level: that
//       SIMD level's row parsers (dispatch/implementation.hpp; best: the one this CPU runs),
//       default the scalar ones; --layout:
//       only that layout (shortest, repr, orjson, or repr64 and orjson64: to float64), default all
//   number_parser_exhaustive --print-orjson FIRST LAST STEP
//       prints orjson's text of every STEP-th finite pattern, one a line (for comparing with
//       orjson.dumps(numpy.float32 array, option=OPT_SERIALIZE_NUMPY))
// Prints the rate and the first mismatches; exits non-zero on any.
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dispatch/implementation.hpp"
#include "float_text/float_text.hpp"
#include "float_text_oracle.hpp"
#include "json/number_parser.hpp"
#include "pattern_sweep.hpp"
#include "tensorb64/tensorb64.hpp"

namespace {

std::atomic<std::uint64_t> mismatches{0};
std::atomic<std::uint64_t> checked{0};
std::mutex print_lock;
tensorb64::number_row_parser parser = tensorb64::detail::parse_number_row_scalar;
tensorb64::number_row_double_parser double_parser =
    tensorb64::detail::parse_number_row_double_scalar;
const char* only_layout = nullptr;  // --layout: the one layout checked (all if null)

bool checks(const char* layout) {
    return only_layout == nullptr || std::strcmp(only_layout, layout) == 0;
}

// orjson's text of a finite float32 (the oracle's, float_text_oracle.hpp), then a ','.
char* write_orjson_f32(std::uint32_t b, char* out) {
    float x;
    std::memcpy(&x, &b, 4);
    out = float_text_oracle::expected_orjson_f32(x, out);
    *out++ = ',';
    return out;
}

std::uint32_t expected_orjson(std::uint32_t b, const char* text, const char* text_end) {
    if ((b & 0x7fffffffu) != 0x15ae43fdu) return b;
    const std::string t(text, text_end);
    const float f = static_cast<float>(std::strtod(t.c_str(), nullptr));
    std::uint32_t read;
    std::memcpy(&read, &f, 4);
    return read;
}

void report(const char* layout, std::uint32_t b, const char* text, const char* text_end,
            std::uint32_t got) {
    std::lock_guard<std::mutex> lock(print_lock);
    static int shown = 0;
    if (++shown > 20) return;
    std::fprintf(stderr, "%s text of 0x%08x, %.*s: read 0x%08x\n", layout, b,
                 static_cast<int>(text_end - text), text, got);
}

// One row of the patterns in one layout (its values written with a ',' after each): parsed by
// `parse` (to float32, or to float64 for repr64 and orjson64), each value compared with the
// expected one: the pattern (orjson's exception above); for repr64 the pattern's value widened, for
// orjson64 the text's double.
template <class T>
void check_row(const char* layout,
               tensorb64::detail::number_row (*parse)(const char*, const char*, T*,
                                                      std::size_t) noexcept,
               const std::uint32_t* bits, std::size_t n, std::vector<char>& text, char* text_end,
               std::vector<T>& values) {
    text_end[-1] = ']';
    const tensorb64::detail::number_row row = parse(text.data(), text_end, values.data(), n);
    if (row.end != text_end || row.count != n) {
        ++mismatches;
        report(layout, bits[0], text.data(), text.data() + 40, 0);
        return;
    }
    const char* token = text.data();
    for (std::size_t i = 0; i < n; ++i) {
        const char* token_end = static_cast<const char*>(
            std::memchr(token, i + 1 < n ? ',' : ']', static_cast<std::size_t>(text_end - token)));
        const std::uint32_t pattern = std::strcmp(layout, "orjson") == 0
                                          ? expected_orjson(bits[i], token, token_end)
                                          : bits[i];
        float value;
        std::memcpy(&value, &pattern, 4);
        T expected = value;
        if (std::strcmp(layout, "orjson64") == 0) {
            double read = 0;  // the oracle's reading: from_chars, or strtod where libc++ has none
            float_text_oracle::parse(token, token_end, read);
            expected = static_cast<T>(read);
        }
        if (std::memcmp(&values[i], &expected, sizeof(T)) != 0) {
            ++mismatches;
            const float got = static_cast<float>(values[i]);  // (a float64 shown as float32)
            std::uint32_t got_bits;
            std::memcpy(&got_bits, &got, 4);
            report(layout, bits[i], token, token_end, got_bits);
        }
        token = token_end + 1;
    }
}

void check_range(std::uint64_t first, std::uint64_t last) {
    constexpr std::size_t kRow = 512;
    std::vector<std::uint32_t> bits;
    std::vector<char> text((tensorb64::kReprMaxBytes + 1) * kRow + 64);
    std::vector<float> values(kRow);
    std::vector<double> doubles(kRow);
    std::uint64_t local_checked = 0;
    const auto flush = [&] {
        if (bits.empty()) return;
        std::size_t bad = 0;
        if (checks("shortest")) {
            char* e =
                tensorb64::write_values_f32(bits.data(), bits.size(), true, text.data(), &bad);
            check_row("shortest", parser, bits.data(), bits.size(), text, e, values);
        }
        if (checks("repr")) {
            char* e =
                tensorb64::write_values_f32(bits.data(), bits.size(), false, text.data(), &bad);
            check_row("repr", parser, bits.data(), bits.size(), text, e, values);
        }
        if (checks("repr64")) {
            char* e =
                tensorb64::write_values_f32(bits.data(), bits.size(), false, text.data(), &bad);
            check_row("repr64", double_parser, bits.data(), bits.size(), text, e, doubles);
        }
        if (checks("orjson")) {
            char* e = text.data();
            for (std::uint32_t b : bits) e = write_orjson_f32(b, e);
            check_row("orjson", parser, bits.data(), bits.size(), text, e, values);
        }
        if (checks("orjson64")) {
            char* e = text.data();
            for (std::uint32_t b : bits) e = write_orjson_f32(b, e);
            check_row("orjson64", double_parser, bits.data(), bits.size(), text, e, doubles);
        }
        local_checked += bits.size();
        bits.clear();
    };
    for (std::uint64_t wide = first; wide < last; ++wide) {
        const std::uint32_t b = static_cast<std::uint32_t>(wide);
        if ((b & 0x7f800000u) == 0x7f800000u) continue;
        bits.push_back(b);
        if (bits.size() == kRow) flush();
    }
    flush();
    checked += local_checked;
}

int print_orjson(std::uint64_t first, std::uint64_t last, std::uint64_t step) {
    char text[64];
    for (std::uint64_t wide = first; wide < last; wide += step) {
        const std::uint32_t b = static_cast<std::uint32_t>(wide);
        if ((b & 0x7f800000u) == 0x7f800000u) continue;
        char* e = write_orjson_f32(b, text);
        std::printf("%08x %.*s\n", b, static_cast<int>(e - 1 - text), text);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 5 && std::strcmp(argv[1], "--print-orjson") == 0) {
        return print_orjson(std::strtoull(argv[2], nullptr, 0), std::strtoull(argv[3], nullptr, 0),
                            std::strtoull(argv[4], nullptr, 0));
    }
    std::string level_name = "scalar";
    tensorb64::simd_level level;
    if (pattern_sweep::take_level(argc, argv, &level)) {
        parser = tensorb64::implementation_for(level).parse_number_row;
        double_parser = tensorb64::implementation_for(level).parse_number_row_double;
        level_name = tensorb64::to_string(level);
    }
    if (argc >= 3 && std::strcmp(argv[1], "--layout") == 0) {
        only_layout = argv[2];
        if (!checks("shortest") && !checks("repr") && !checks("orjson") && !checks("repr64") &&
            !checks("orjson64")) {
            std::fprintf(stderr, "unknown layout %s (shortest, repr, orjson, repr64 or orjson64)\n",
                         only_layout);
            return 2;
        }
        argv += 2;
        argc -= 2;
    }
    const pattern_sweep::range r = pattern_sweep::parse_range(argc, argv);
    const unsigned threads = r.threads;
    const std::uint64_t first = r.first, last = r.last;
    const double seconds = pattern_sweep::sweep(r, print_lock, check_range, [](std::uint64_t c) {
        std::printf("  chunk %llu done: %llu checked, %llu mismatches\n",
                    static_cast<unsigned long long>(c),
                    static_cast<unsigned long long>(checked.load()),
                    static_cast<unsigned long long>(mismatches.load()));
    });
    const double rate = static_cast<double>(last - first) / seconds;
    std::printf(
        "number_parser_exhaustive (%s): patterns [0x%llx, 0x%llx): %llu finite, each read back "
        "from %s texts, in %.1f s on %u threads (%.2f M patterns/s; all 2^32 at this rate: %.0f "
        "s); %llu mismatches\n",
        level_name.c_str(), static_cast<unsigned long long>(first),
        static_cast<unsigned long long>(last), static_cast<unsigned long long>(checked.load()),
        only_layout ? only_layout : "shortest, repr, orjson, repr64 and orjson64", seconds, threads,
        rate / 1e6, 4294967296.0 / rate, static_cast<unsigned long long>(mismatches.load()));
    return mismatches == 0 ? 0 : 1;
}
