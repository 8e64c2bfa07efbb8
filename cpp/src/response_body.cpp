// The entries of a /v1/embeddings response's "data" array for base64 rows, written in one pass
// into one caller-provided buffer of exactly computed size: this file lays out each row's JSON
// wrapper, and encode_rows (the same row loop as every other output) fills each row's text in
// place through per-row output pointers.
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "float_rows.hpp"
#include "tensorb64/tensorb64.hpp"
#include "thread_pool.hpp"

namespace tensorb64 {
namespace {

// What json.dumps(..., separators=(",", ":")) writes around each row's text.
constexpr char entry_prefix[] = "{\"object\":\"embedding\",\"index\":";
constexpr char entry_middle[] = ",\"embedding\":\"";
constexpr char entry_suffix[] = "\"}";
constexpr char float_entry_middle[] = ",\"embedding\":";  // the row's `[...]` follows, then `}`
constexpr std::size_t prefix_length = sizeof entry_prefix - 1;
constexpr std::size_t middle_length = sizeof entry_middle - 1;
constexpr std::size_t suffix_length = sizeof entry_suffix - 1;

bool add(std::size_t a, std::size_t b, std::size_t* sum) noexcept {
    if (a > std::numeric_limits<std::size_t>::max() - b) return false;
    *sum = a + b;
    return true;
}

bool multiply(std::size_t a, std::size_t b, std::size_t* product) noexcept {
    if (a != 0 && b > std::numeric_limits<std::size_t>::max() / a) return false;
    *product = a * b;
    return true;
}

// The number of decimal digits of `value`.
std::size_t digit_count(std::size_t value) noexcept {
    std::size_t digits = 1;
    for (; value >= 10; value /= 10) ++digits;
    return digits;
}

// The total number of decimal digits of the integers first .. last (first <= last), counted by
// runs of equal digit count. False if it does not fit in a size_t.
bool digits_of_range(std::size_t first, std::size_t last, std::size_t* total) noexcept {
    std::size_t sum = 0;
    std::size_t low = first;
    for (std::size_t digits = digit_count(first);; ++digits) {
        // The largest number of `digits` digits, or SIZE_MAX when no larger power of ten fits.
        std::size_t high = std::numeric_limits<std::size_t>::max();
        std::size_t power = 1;
        bool fits = true;
        for (std::size_t d = 0; d < digits && fits; ++d) fits = multiply(power, 10, &power);
        if (fits) high = power - 1;
        const std::size_t end = last < high ? last : high;
        std::size_t run = 0;
        if (!multiply(end - low + 1, digits, &run) || !add(sum, run, &sum)) return false;
        if (end == last) break;
        low = end + 1;
    }
    *total = sum;
    return true;
}

// Writes `value` in decimal at `out`; returns the end.
char* write_decimal(std::size_t value, char* out) noexcept {
    char digits[24];
    std::size_t n = 0;
    do {
        digits[n++] = static_cast<char>('0' + value % 10);
        value /= 10;
    } while (value != 0);
    for (std::size_t i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
    return out + n;
}

}  // namespace

bool base64_data_size(std::size_t rows, std::size_t row_length, dtype target,
                      std::size_t first_index, std::size_t* size) noexcept {
    if (rows == 0) {
        *size = 0;
        return true;
    }
    std::size_t row_bytes = 0, text = 0, wrapped = 0, all_rows = 0, digits = 0, total = 0;
    constexpr std::size_t wrapper = prefix_length + middle_length + suffix_length;
    if (rows - 1 > std::numeric_limits<std::size_t>::max() - first_index)
        return false;  // last index
    if (!multiply(row_length, dtype_size(target), &row_bytes) || !encoded_size(row_bytes, &text) ||
        !add(text, wrapper, &wrapped) || !multiply(wrapped, rows, &all_rows) ||
        !digits_of_range(first_index, first_index + (rows - 1), &digits) ||
        !add(all_rows, digits, &total) || !add(total, rows - 1, &total)) {  // rows - 1 commas
        return false;
    }
    *size = total;
    return true;
}

char* write_base64_data(const strided_rows& source, element_format target, std::size_t first_index,
                        char* out, unsigned threads) {
    if (!is_output_type(target.type)) {
        throw std::invalid_argument(std::string("cannot convert ") + to_string(source.format.type) +
                                    " to " + to_string(target.type));
    }
    std::size_t size = 0, text = 0;
    if (!base64_data_size(source.rows, source.row_length, target.type, first_index, &size)) {
        throw std::length_error("response body data: its size does not fit in a size_t");
    }
    encoded_size(source.row_length * dtype_size(target.type), &text);  // fits: checked just above
    std::vector<char*> outputs(source.rows);
    for (std::size_t r = 0; r < source.rows; ++r) {
        if (r != 0) *out++ = ',';
        std::memcpy(out, entry_prefix, prefix_length);
        out = write_decimal(first_index + r, out + prefix_length);
        std::memcpy(out, entry_middle, middle_length);
        out += middle_length;
        outputs[r] = out;
        out += text;
        std::memcpy(out, entry_suffix, suffix_length);
        out += suffix_length;
    }
    encode_rows(source, target, outputs.data(), threads);
    return out;
}

bool float_data_bound(std::size_t rows, std::size_t row_length, dtype source, float_format format,
                      std::size_t first_index, std::size_t* size) noexcept {
    std::size_t entry = 0, all = 0;
    // Every entry bounded by the widest index's digits, so that each thread's share of the rows
    // can start at a known offset.
    if (rows != 0 && rows - 1 > std::numeric_limits<std::size_t>::max() - first_index) return false;
    const std::size_t wrapper =
        prefix_length + (sizeof float_entry_middle - 1) + 1 + 1;  // `}` and `,`
    if (!float_row_bound(row_length, source, format, &entry) ||
        !add(entry, wrapper + digit_count(first_index + (rows == 0 ? 0 : rows - 1)), &entry) ||
        !multiply(entry, rows, &all)) {
        return false;
    }
    *size = all;
    return true;
}

float_text_result write_float_data(const strided_rows& source, float_format format,
                                   std::size_t first_index, char* out, char** end,
                                   unsigned threads) {
    std::size_t total = 0;
    if (!float_data_bound(source.rows, source.row_length, source.format.type, format, first_index,
                          &total)) {
        throw std::length_error("response body data: its size does not fit in a size_t");
    }
    const std::size_t entry_bound = source.rows == 0 ? 0 : total / source.rows;
    // Writes rows [first, first + count) from `at`; returns the end, or where a value was not
    // finite.
    const auto write_rows = [&](std::size_t first, std::size_t count, char* at,
                                float_text_result* bad) -> char* {
        for (std::size_t r = first; r < first + count; ++r) {
            if (r != 0) *at++ = ',';
            std::memcpy(at, entry_prefix, prefix_length);
            at = write_decimal(first_index + r, at + prefix_length);
            std::memcpy(at, float_entry_middle, sizeof float_entry_middle - 1);
            at += sizeof float_entry_middle - 1;
            std::size_t column = 0;
            at = write_float_row(source, r, format, at, &column);
            if (at == nullptr) {
                *bad = {false, r, column};
                return nullptr;
            }
            *at++ = '}';
        }
        return at;
    };
    // Contiguous runs of rows, one per thread; each writes from its own share of the bound, and
    // the shares are then moved together. ~20 ns a value: a thread pays off from a few rows.
    const std::size_t parts = row_parts(threads, source.rows);
    std::vector<char*> starts(parts, out), ends(parts, out);
    std::vector<float_text_result> results(parts, float_text_result{true, 0, 0});
    run_row_parts(source.rows, parts, [&](std::size_t part, std::size_t first, std::size_t count) {
        starts[part] = out + first * entry_bound;
        ends[part] = write_rows(first, count, starts[part], &results[part]);
    });
    char* at = out;
    for (std::size_t part = 0; part < parts; ++part) {
        if (!results[part].finite) return results[part];  // the lowest row that failed
        const std::size_t length = static_cast<std::size_t>(ends[part] - starts[part]);
        if (starts[part] != at) std::memmove(at, starts[part], length);
        at += length;
    }
    *end = at;
    return {true, 0, 0};
}

}  // namespace tensorb64
