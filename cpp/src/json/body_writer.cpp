// The entries of a /v1/embeddings response's "data" array for base64 rows, written in one pass
// into one caller-provided buffer of exactly computed size: this file lays out each row's JSON
// wrapper, and encode_rows (the same row loop as every other output) fills each row's text in
// place through per-row output pointers.
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "float_text/float_rows.hpp"
#include "tensorb64/tensorb64.hpp"
#include "common/thread_pool.hpp"

namespace tensorb64 {
namespace {

// What json.dumps(..., separators=(",", ":")) writes around each row's index and text, in each
// key order: up to the index, then from the index to the row's text (a base64 row's `"` or a
// float row's `[` follows; the entry ends with `"}` or `}`).
struct entry_layout {
    std::string_view before_index, after_index;
};
constexpr entry_layout openai_layout{"{\"object\":\"embedding\",\"index\":", ",\"embedding\":"};
constexpr entry_layout vllm_layout{"{\"index\":", ",\"object\":\"embedding\",\"embedding\":"};
// Every size below is counted once for both orders.
constexpr std::size_t layout_length =
    openai_layout.before_index.size() + openai_layout.after_index.size();
static_assert(vllm_layout.before_index.size() + vllm_layout.after_index.size() == layout_length,
              "both key orders must write entries of the same length");

constexpr const entry_layout& layout_of(key_order keys) noexcept {
    return keys == key_order::vllm ? vllm_layout : openai_layout;
}

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

// Writes an entry up to its row's text (`{"object":"embedding","index":I,"embedding":` or its
// key order's equivalent); returns the end.
char* write_entry_head(const entry_layout& layout, std::size_t index, char* out) noexcept {
    std::memcpy(out, layout.before_index.data(), layout.before_index.size());
    out = write_decimal(index, out + layout.before_index.size());
    std::memcpy(out, layout.after_index.data(), layout.after_index.size());
    return out + layout.after_index.size();
}

}  // namespace

bool base64_data_size(std::size_t rows, std::size_t row_length, dtype target,
                      std::size_t first_index, std::size_t* size) noexcept {
    if (rows == 0) {
        *size = 0;
        return true;
    }
    std::size_t row_bytes = 0, text = 0, wrapped = 0, all_rows = 0, digits = 0, total = 0;
    constexpr std::size_t wrapper = layout_length + 3;  // and `"`, `"}` around the text
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
                        char* out, unsigned threads, key_order keys) {
    if (!is_output_type(target.type)) {
        throw std::invalid_argument(std::string("cannot convert ") + to_string(source.format.type) +
                                    " to " + to_string(target.type));
    }
    std::size_t size = 0, text = 0;
    if (!base64_data_size(source.rows, source.row_length, target.type, first_index, &size)) {
        throw std::length_error("response body data: its size does not fit in a size_t");
    }
    encoded_size(source.row_length * dtype_size(target.type), &text);  // fits: checked just above
    const entry_layout& layout = layout_of(keys);
    std::vector<char*> outputs(source.rows);
    for (std::size_t r = 0; r < source.rows; ++r) {
        if (r != 0) *out++ = ',';
        out = write_entry_head(layout, first_index + r, out);
        *out++ = '"';
        outputs[r] = out;
        out += text;
        *out++ = '"';
        *out++ = '}';
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
    constexpr std::size_t wrapper = layout_length + 2;  // and `}`, `,`
    if (!float_row_bound(row_length, source, format, &entry) ||
        !add(entry, wrapper + digit_count(first_index + (rows == 0 ? 0 : rows - 1)), &entry) ||
        !multiply(entry, rows, &all)) {
        return false;
    }
    *size = all;
    return true;
}

float_text_result write_float_data(const strided_rows& source, float_format format,
                                   std::size_t first_index, char* out, char** end, unsigned threads,
                                   key_order keys) {
    std::size_t total = 0;
    if (!float_data_bound(source.rows, source.row_length, source.format.type, format, first_index,
                          &total)) {
        throw std::length_error("response body data: its size does not fit in a size_t");
    }
    const std::size_t entry_bound = source.rows == 0 ? 0 : total / source.rows;
    const entry_layout& layout = layout_of(keys);
    // Writes rows [first, first + count) from `at`; returns the end, or where a value was not
    // finite.
    const auto write_rows = [&](std::size_t first, std::size_t count, char* at,
                                float_text_result* bad) -> char* {
        for (std::size_t r = first; r < first + count; ++r) {
            if (r != 0) *at++ = ',';
            at = write_entry_head(layout, first_index + r, at);
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
