// Benchmark of the JSON number parser: ns a number for rows of N(0, 0.05) float32 values written
// by this project's writer (shortest: orjson's / vLLM's digits; repr: json.dumps's), B rows of D,
// read by a scan with std::from_chars(double) then a (float) cast (libstdc++'s fast_float), by the
// scalar row parser, and by each SIMD level's; then the same rows read to float64 (the openai
// client's float rows: parse_number_row_double), by from_chars, the scalar level and each SIMD
// level. Rounds interleaved, medians of this thread's CPU time (POSIX clock_gettime).
//
//   number_parser_bench [ROWS DIM ROUNDS]     (default 64 3072 15)
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dispatch/implementation.hpp"
#include "float_row_bench.hpp"
#include "float_text/float_text.hpp"
#include "json/number_parser.hpp"
#include "tensorb64/tensorb64.hpp"

namespace {

template <class T>
using row_parser_of = tensorb64::detail::number_row (*)(const char*, const char*, T*,
                                                        std::size_t) noexcept;

// The baseline: the same row grammar (no whitespace), each number by std::from_chars.
template <class T>
tensorb64::detail::number_row from_chars_row(const char* p, const char* end, T* out,
                                             std::size_t capacity) noexcept {
    tensorb64::detail::number_row row;
    std::size_t count = 0;
    for (;;) {
        double d;
        const std::from_chars_result r = std::from_chars(p, end, d);
        if (r.ec != std::errc()) {
            row.error_at = r.ptr;
            row.expected = "a number";
            return row;
        }
        if (count < capacity) out[count] = static_cast<T>(d);
        ++count;
        p = r.ptr;
        if (p != end && *p == ',') {
            ++p;
            continue;
        }
        if (p != end && *p == ']') {
            row.end = p + 1;
            row.count = count;
            return row;
        }
        row.error_at = p;
        row.expected = "',' or ']'";
        return row;
    }
}

struct body {
    std::string text;
    std::vector<std::size_t> row_starts;  // just past each '['
};

body make_body(const std::vector<std::uint32_t>& bits, std::size_t rows, std::size_t dim,
               bool shortest) {
    // Each row as production writes it (write_float_rows: json.dumps's layout for repr).
    body b;
    for (std::size_t r = 0; r < rows; ++r) {
        b.row_starts.push_back(b.text.size() + 1);
        b.text += float_row_bench::row_text(bits.data() + r * dim, dim, shortest);
        b.text += ',';
    }
    return b;
}

template <class T>
double seconds_for(const body& b, std::size_t dim, row_parser_of<T> parse, std::vector<T>& out) {
    const double t0 = float_row_bench::thread_seconds();
    const char* end = b.text.data() + b.text.size();
    for (std::size_t r = 0; r < b.row_starts.size(); ++r) {
        const tensorb64::detail::number_row row =
            parse(b.text.data() + b.row_starts[r], end, out.data() + r * dim, dim);
        if (row.end == nullptr || row.count != dim) {
            std::fprintf(stderr, "row %zu did not parse\n", r);
            std::exit(1);
        }
    }
    return float_row_bench::thread_seconds() - t0;
}

// Times each parser over both layouts' rows and prints ns a number; false where one read a value
// other than the reference (float32 rows: the values written; float64 rows: from_chars's doubles,
// the texts' correctly rounded ones, which for the repr texts are the float32 values widened).
template <class T>
bool time_layouts(const char* to, row_parser_of<T> scalar,
                  row_parser_of<T> tensorb64::implementation::*level_parser,
                  const std::vector<std::uint32_t>& bits, std::size_t rows, std::size_t dim,
                  int rounds) {
    // from_chars, the scalar level, and each SIMD level with a parser of its own.
    std::vector<std::pair<std::string, row_parser_of<T>>> parsers = {
        {"from_chars", from_chars_row<T>}, {"scalar", scalar}};
    for (tensorb64::simd_level level : tensorb64::available_simd_levels()) {
        const tensorb64::implementation& k = tensorb64::implementation_for(level);
        if (k.*level_parser != scalar) parsers.emplace_back(k.name, k.*level_parser);
    }
    for (const bool shortest : {true, false}) {
        const body b = make_body(bits, rows, dim, shortest);
        std::vector<std::vector<double>> times(parsers.size());
        std::vector<T> out(rows * dim), reference(rows * dim);
        if constexpr (sizeof(T) == 4) {
            std::memcpy(reference.data(), bits.data(), bits.size() * 4);
        } else {
            seconds_for(b, dim, from_chars_row<T>, reference);
        }
        for (int round = 0; round < rounds; ++round) {
            for (std::size_t i = 0; i < parsers.size(); ++i) {
                times[i].push_back(seconds_for(b, dim, parsers[i].second, out));
                if (std::memcmp(out.data(), reference.data(), out.size() * sizeof(T)) != 0) {
                    std::fprintf(stderr, "%s read the values wrong\n", parsers[i].first.c_str());
                    return false;
                }
            }
        }
        std::printf("%s to %s (%.1f bytes a value, %.2f MB):\n", shortest ? "shortest" : "repr", to,
                    static_cast<double>(b.text.size()) / static_cast<double>(rows * dim),
                    static_cast<double>(b.text.size()) / 1e6);
        double baseline = 0;
        for (std::size_t i = 0; i < parsers.size(); ++i) {
            std::sort(times[i].begin(), times[i].end());
            const double median = times[i][times[i].size() / 2];
            if (i == 0) baseline = median;
            std::printf("  %-10s %8.3f ms  %6.2f ns a number  %5.2fx from_chars\n",
                        parsers[i].first.c_str(), median * 1e3,
                        median * 1e9 / static_cast<double>(rows * dim), baseline / median);
        }
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t rows = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 64;
    const std::size_t dim = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 3072;
    const int rounds = argc > 3 ? std::atoi(argv[3]) : 15;
    const std::vector<std::uint32_t> bits = float_row_bench::random_rows(rows, dim);
    float_row_bench::print_setup(rows, dim, rounds);
    // Then the float64 rows (the openai client's): the same texts, each value the double of its
    // text.
    return time_layouts<float>("float32", tensorb64::detail::parse_number_row_scalar,
                               &tensorb64::implementation::parse_number_row, bits, rows, dim,
                               rounds) &&
                   time_layouts<double>(
                       "float64", tensorb64::detail::parse_number_row_double_scalar,
                       &tensorb64::implementation::parse_number_row_double, bits, rows, dim, rounds)
               ? 0
               : 1;
}
