// Benchmark of the body reader on float bodies: where the time of read_embeddings_body goes.
// 64 x 3072 N(0, 0.05) float32 rows in an embeddings response, written by this project's writer
// (shortest, with orjson's separators; repr, with json.dumps's ", " and ": "), timed as
//   whole       read_embeddings_body (both passes)
//   glance      pass 1's look at each row alone (json::glance_list over every row)
//   rows        pass 2's row parser alone (parse_number_row over every row)
// Rounds interleaved, medians of this thread's CPU time (POSIX clock_gettime).
//
//   body_reader_bench [ROWS DIM ROUNDS]     (default 64 3072 21)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "float_row_bench.hpp"
#include "json/number_parser.hpp"
#include "json/scanner.hpp"
#include "tensorb64/body_reader.hpp"
#include "tensorb64/tensorb64.hpp"

namespace {

struct body {
    std::string text;
    std::vector<std::size_t> row_starts;  // just past each '['
};

body make_body(const std::vector<std::uint32_t>& bits, std::size_t rows, std::size_t dim,
               bool shortest) {
    const char* const colon = shortest ? ":" : ": ";
    const char* const comma = shortest ? "," : ", ";
    body b;
    b.text = std::string("{\"object\"") + colon + "\"list\"" + comma + "\"data\"" + colon + "[";
    for (std::size_t r = 0; r < rows; ++r) {
        if (r != 0) b.text += comma;
        b.text += std::string("{\"object\"") + colon + "\"embedding\"" + comma + "\"index\"" +
                  colon + std::to_string(r) + comma + "\"embedding\"" + colon;
        b.row_starts.push_back(b.text.size() + 1);
        b.text += float_row_bench::row_text(bits.data() + r * dim, dim, shortest);
        b.text += "}";
    }
    b.text += std::string("]") + comma + "\"model\"" + colon + "\"m\"" + comma + "\"usage\"" +
              colon + "{\"prompt_tokens\"" + colon + "1" + comma + "\"total_tokens\"" + colon +
              "1}}";
    return b;
}

void* give(void* context, const tensorb64::body_layout& layout) {
    auto* out = static_cast<std::vector<float>*>(context);
    return layout.rows * layout.row_length <= out->size() ? out->data() : nullptr;
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t rows = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 64;
    const std::size_t dim = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 3072;
    const int rounds = argc > 3 ? std::atoi(argv[3]) : 21;
    const std::vector<std::uint32_t> bits = float_row_bench::random_rows(rows, dim);
    float_row_bench::print_setup(rows, dim, rounds);
    for (const bool shortest : {true, false}) {
        const body b = make_body(bits, rows, dim, shortest);
        const char* const begin = b.text.data();
        const char* const end = begin + b.text.size();
        std::vector<float> out(rows * dim);
        std::size_t sink = 0;
        const char* const names[] = {"whole", "glance", "rows"};
        std::vector<double> times[3];
        for (int round = 0; round < rounds; ++round) {
            double t0 = float_row_bench::thread_seconds();
            tensorb64::body_layout layout;
            const tensorb64::body_error e =
                tensorb64::read_embeddings_body(begin, b.text.size(), {}, give, &out, &layout);
            times[0].push_back(float_row_bench::thread_seconds() - t0);
            if (e.status != tensorb64::body_status::ok ||
                std::memcmp(out.data(), bits.data(), out.size() * 4) != 0) {
                std::fprintf(stderr, "the body did not read back: %s\n",
                             tensorb64::to_string(e).c_str());
                return 1;
            }
            t0 = float_row_bench::thread_seconds();
            for (const std::size_t start : b.row_starts)
                sink += tensorb64::json::glance_list(begin + start, end).commas;
            times[1].push_back(float_row_bench::thread_seconds() - t0);
            t0 = float_row_bench::thread_seconds();
            for (std::size_t r = 0; r < rows; ++r)
                sink += tensorb64::detail::parse_number_row(begin + b.row_starts[r], end,
                                                            out.data() + r * dim, dim)
                            .count;
            times[2].push_back(float_row_bench::thread_seconds() - t0);
        }
        std::printf("%s (%.2f MB, sink %zu):\n", shortest ? "shortest" : "repr",
                    static_cast<double>(b.text.size()) / 1e6, sink);
        for (int i = 0; i < 3; ++i) {
            std::sort(times[i].begin(), times[i].end());
            const double median = times[i][times[i].size() / 2];
            std::printf("  %-7s %8.3f ms  %6.2f ns a number\n", names[i], median * 1e3,
                        median * 1e9 / static_cast<double>(rows * dim));
        }
    }
    return 0;
}
