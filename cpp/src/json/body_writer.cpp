// The /v1/embeddings response body's layout, as data, and the writers of its parts: the
// envelope around the "data" array, the array's entries for base64 and float rows (each written
// in one pass into one caller-provided buffer of exactly computed or bounded size: this file lays
// out each row's entry, and encode_rows or the float-text writer fills each row's text in place),
// and the plan of chunks for a streamed body.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/thread_pool.hpp"
#include "float_text/float_rows.hpp"
#include "tensorb64/tensorb64.hpp"

namespace tensorb64 {
namespace {

constexpr std::string_view openai_fields[] = {"object", "data", "model", "usage"};
constexpr std::string_view vllm_fields[] = {"id", "object", "created", "model", "data", "usage"};
constexpr std::string_view sglang_fields[] = {"data", "model", "object", "usage"};
constexpr std::string_view infinity_fields[] = {"object", "data", "model",
                                                "usage",  "id",   "created"};

// A new server's layout is a row here (and, for the binding, nothing else: its name comes from
// this table).
constexpr response_layout layout_table[] = {
    {"openai",
     {entry_key::object, entry_key::index, entry_key::embedding},
     openai_fields,
     sizeof openai_fields / sizeof openai_fields[0]},
    {"vllm",
     {entry_key::index, entry_key::object, entry_key::embedding},
     vllm_fields,
     sizeof vllm_fields / sizeof vllm_fields[0]},
    {"sglang",
     {entry_key::embedding, entry_key::index, entry_key::object},
     sglang_fields,
     sizeof sglang_fields / sizeof sglang_fields[0]},
    {"infinity",
     {entry_key::object, entry_key::embedding, entry_key::index},
     infinity_fields,
     sizeof infinity_fields / sizeof infinity_fields[0]},
};

}  // namespace

const response_layout* const response_layouts = layout_table;
const std::size_t response_layout_count = sizeof layout_table / sizeof layout_table[0];

namespace {

// Each entry key's text before its value ("index" and "embedding") or with it ("object").
constexpr std::string_view object_member = "\"object\":\"embedding\"";
constexpr std::string_view index_key = "\"index\":";
constexpr std::string_view embedding_key = "\"embedding\":";
// An entry's length but for its index's digits and its row's text: its keys, the commas between
// them and its braces. The same in every layout (each holds the three keys once: checked below).
constexpr std::size_t entry_length =
    object_member.size() + index_key.size() + embedding_key.size() + (entry_key_count - 1) + 2;

// Whether every layout's entries hold each key once, and its envelope "data" once.
constexpr bool layouts_are_well_formed() {
    for (const response_layout& layout : layout_table) {
        for (entry_key wanted : {entry_key::object, entry_key::index, entry_key::embedding}) {
            std::size_t seen = 0;
            for (entry_key key : layout.entry_keys) seen += key == wanted ? 1 : 0;
            if (seen != 1) return false;
        }
        std::size_t data = 0;
        for (std::size_t f = 0; f < layout.envelope_field_count; ++f)
            data += layout.envelope_fields[f] == "data" ? 1 : 0;
        if (data != 1) return false;
    }
    return true;
}
static_assert(layouts_are_well_formed(),
              "each layout's entries hold each key once and its envelope \"data\" once");

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

char* copy(std::string_view text, char* out) noexcept {
    std::memcpy(out, text.data(), text.size());
    return out + text.size();
}

// Writes row `index`'s entry, its keys in `layout`'s order, `write_row(out)` writing the row's
// text where its embedding goes; returns the end, or nullptr where write_row returned nullptr.
template <class WriteRow>
char* write_entry(const response_layout& layout, std::size_t index, char* out,
                  WriteRow&& write_row) {
    *out++ = '{';
    for (std::size_t k = 0; k < entry_key_count; ++k) {
        if (k != 0) *out++ = ',';
        switch (layout.entry_keys[k]) {
            case entry_key::object: out = copy(object_member, out); break;
            case entry_key::index: out = write_decimal(index, copy(index_key, out)); break;
            case entry_key::embedding:
                out = write_row(copy(embedding_key, out));
                if (out == nullptr) return nullptr;
                break;
        }
    }
    *out++ = '}';
    return out;
}

// `"name"`: a field name as JSON text (the layouts' names need no escapes).
bool names_field(std::string_view key, std::string_view name) noexcept {
    return key.size() == name.size() + 2 && key.front() == '"' && key.back() == '"' &&
           key.substr(1, name.size()) == name;
}

// a + b, or SIZE_MAX where that does not fit (a size no chunk can hold).
std::size_t saturating_add(std::size_t a, std::size_t b) noexcept {
    return a > std::numeric_limits<std::size_t>::max() - b ? std::numeric_limits<std::size_t>::max()
                                                           : a + b;
}

}  // namespace

const response_layout* find_response_layout(std::string_view name) noexcept {
    for (std::size_t i = 0; i < response_layout_count; ++i)
        if (name == response_layouts[i].name) return &response_layouts[i];
    return nullptr;
}

namespace {

// The member that gives field `f` its value: the last one naming it, or nullptr.
const json_member* member_of(const response_layout& layout, std::size_t f,
                             const json_member* members, std::size_t member_count) noexcept {
    for (std::size_t m = member_count; m-- > 0;)
        if (names_field(members[m].key, layout.envelope_fields[f])) return &members[m];
    return nullptr;
}

bool names_a_field(const response_layout& layout, std::string_view key) noexcept {
    for (std::size_t f = 0; f < layout.envelope_field_count; ++f)
        if (names_field(key, layout.envelope_fields[f])) return true;
    return false;
}

// Hands each piece of the envelope's text, in order, to `piece(text, in_tail)`.
template <class Piece>
void lay_out_envelope(const response_layout& layout, const json_member* members,
                      std::size_t member_count, Piece&& piece) {
    bool in_tail = false, first = true;
    const auto member = [&](std::string_view key, std::string_view value) {
        piece(first ? std::string_view("{") : std::string_view(","), in_tail);
        first = false;
        piece(key, in_tail);
        piece(":", in_tail);
        piece(value, in_tail);
    };
    for (std::size_t f = 0; f < layout.envelope_field_count; ++f) {
        if (layout.envelope_fields[f] == "data") {
            member("\"data\"", "[");
            in_tail = true;
            piece("]", in_tail);
        } else if (const json_member* given = member_of(layout, f, members, member_count)) {
            member(given->key, given->value);
        }
    }
    for (std::size_t m = 0; m < member_count; ++m)
        if (!names_a_field(layout, members[m].key)) member(members[m].key, members[m].value);
    piece("}", in_tail);
}

}  // namespace

void body_envelope_sizes(const response_layout& layout, const json_member* members,
                         std::size_t member_count, std::size_t* head_size, std::size_t* tail_size) {
    for (std::size_t m = 0; m < member_count; ++m) {
        if (names_field(members[m].key, "data")) {
            throw std::invalid_argument(
                "the envelope cannot set \"data\": the data entries are the embeddings");
        }
    }
    std::size_t sizes[2] = {0, 0};
    bool fits = true;
    lay_out_envelope(layout, members, member_count, [&](std::string_view text, bool in_tail) {
        fits = fits && add(sizes[in_tail], text.size(), &sizes[in_tail]);
    });
    if (!fits) throw std::length_error("the envelope's size does not fit in a size_t");
    *head_size = sizes[0];
    *tail_size = sizes[1];
}

void write_body_envelope(const response_layout& layout, const json_member* members,
                         std::size_t member_count, char* head, char* tail) noexcept {
    char* at[2] = {head, tail};
    lay_out_envelope(layout, members, member_count, [&](std::string_view text, bool in_tail) {
        at[in_tail] = copy(text, at[in_tail]);
    });
}

bool data_entry_bound(std::size_t row_length, std::size_t last_index, const entry_format& format,
                      std::size_t* size) noexcept {
    std::size_t row = 0, entry = 0;
    if (format.base64) {
        // The row's text and its quotes, the entry's fixed text, its index and its comma.
        if (!multiply(row_length, dtype_size(format.target), &row) || !encoded_size(row, &row) ||
            !add(row, 2 + entry_length + 1, &entry) ||
            !add(entry, digit_count(last_index), &entry)) {
            return false;
        }
    } else if (!float_row_bound(row_length, format.source, format.format, &row) ||
               !add(row, entry_length + 1, &entry) ||
               !add(entry, digit_count(last_index), &entry)) {
        return false;
    }
    *size = entry;
    return true;
}

bool base64_data_size(std::size_t rows, std::size_t row_length, dtype target,
                      std::size_t first_index, std::size_t* size, bool leading_comma) noexcept {
    if (rows == 0) {
        *size = 0;
        return true;
    }
    std::size_t row_bytes = 0, text = 0, wrapped = 0, all_rows = 0, digits = 0, total = 0;
    if (rows - 1 > std::numeric_limits<std::size_t>::max() - first_index)
        return false;  // last index
    // Each entry's text, its quotes and its fixed text; every index's digits; a comma between
    // entries and the leading one.
    if (!multiply(row_length, dtype_size(target), &row_bytes) || !encoded_size(row_bytes, &text) ||
        !add(text, 2 + entry_length, &wrapped) || !multiply(wrapped, rows, &all_rows) ||
        !digits_of_range(first_index, first_index + (rows - 1), &digits) ||
        !add(all_rows, digits, &total) || !add(total, rows - 1 + (leading_comma ? 1 : 0), &total)) {
        return false;
    }
    *size = total;
    return true;
}

char* write_base64_data(const strided_rows& source, element_format target, std::size_t first_index,
                        char* out, unsigned threads, const response_layout& layout,
                        bool leading_comma) {
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
        if (r != 0 || leading_comma) *out++ = ',';
        out = write_entry(layout, first_index + r, out, [&](char* at) {
            *at++ = '"';
            outputs[r] = at;
            at += text;
            *at++ = '"';
            return at;
        });
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
    if (!data_entry_bound(row_length, first_index + (rows == 0 ? 0 : rows - 1),
                          {false, dtype::float32, format, source}, &entry) ||
        !multiply(entry, rows, &all)) {
        return false;
    }
    *size = all;
    return true;
}

float_text_result write_float_data(const strided_rows& source, float_format format,
                                   std::size_t first_index, char* out, char** end, unsigned threads,
                                   const response_layout& layout, bool leading_comma) {
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
            if (r != 0 || leading_comma) *at++ = ',';
            std::size_t column = 0;
            at = write_entry(layout, first_index + r, at, [&](char* row_at) {
                return write_float_row(source, r, format, row_at, &column);
            });
            if (at == nullptr) {
                *bad = {false, r, column};
                return nullptr;
            }
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

namespace {

// A piece of head + tail (as one text) from `offset`, at most chunk_size long and ending by
// `limit`; `row` places its empty run of rows.
body_chunk envelope_piece(const body_chunk_rule& rule, std::size_t offset, std::size_t limit,
                          std::size_t row) {
    const std::size_t end = offset + std::min(rule.chunk_size, limit - offset);
    const auto in_head = [&](std::size_t at) { return std::min(at, rule.head_size); };
    const auto in_tail = [&](std::size_t at) {
        return at > rule.head_size ? at - rule.head_size : 0;
    };
    return {in_head(offset), in_head(end), row, row, false, in_tail(offset), in_tail(end)};
}

// The chunk of rows from `start`: after the head (`with_head`), or after a comma (start > 0), or
// after nothing (the head went alone); the tail joined where it fits.
body_chunk rows_chunk(const body_chunk_rule& rule, std::size_t start, bool with_head) {
    const std::size_t prefix = start != 0 ? 1 : with_head ? rule.head_size : 0;
    const std::size_t entry = rule.entry_bound == 0 ? 1 : rule.entry_bound;
    const std::size_t fitting = std::max<std::size_t>(1, (rule.chunk_size - prefix) / entry);
    const std::size_t stop = rule.rows - start <= fitting ? rule.rows : start + fitting;
    // (stop - start) entries: at most chunk_size - prefix bytes of them, or just one.
    const std::size_t entries = stop - start == 1 ? entry : (stop - start) * entry;
    const bool with_tail = stop == rule.rows && saturating_add(saturating_add(prefix, entries),
                                                               rule.tail_size) <= rule.chunk_size;
    return {0, with_head ? rule.head_size : 0, start, stop, start != 0,
            0, with_tail ? rule.tail_size : 0};
}

}  // namespace

bool next_body_chunk(const body_chunk_rule& rule, const body_chunk* previous,
                     body_chunk* next) noexcept {
    const std::size_t chunk_size = rule.chunk_size == 0 ? 1 : rule.chunk_size;
    const body_chunk_rule r{rule.head_size, rule.tail_size, rule.rows, rule.entry_bound,
                            chunk_size};
    if (r.rows == 0) {  // head and tail alone, cut together
        const std::size_t offset =
            previous == nullptr ? 0 : previous->head_end + previous->tail_end;
        if (offset >= r.head_size + r.tail_size) return false;
        *next = envelope_piece(r, offset, r.head_size + r.tail_size, 0);
        return true;
    }
    const bool head_alone = saturating_add(r.head_size, r.entry_bound) > r.chunk_size;
    if (previous == nullptr) {
        *next = head_alone && r.head_size != 0 ? envelope_piece(r, 0, r.head_size, 0)
                                               : rows_chunk(r, 0, !head_alone);
        return true;
    }
    if (previous->row_end > previous->row_begin) {  // a chunk of rows
        if (previous->row_end < r.rows) {
            *next = rows_chunk(r, previous->row_end, false);
            return true;
        }
        if (previous->tail_end == r.tail_size) return false;  // the tail came with it, or is empty
        *next = envelope_piece(r, r.head_size, r.head_size + r.tail_size, r.rows);
        return true;
    }
    if (previous->head_end > previous->head_begin) {  // a piece of the head alone
        *next = previous->head_end < r.head_size
                    ? envelope_piece(r, previous->head_end, r.head_size, 0)
                    : rows_chunk(r, 0, false);
        return true;
    }
    if (previous->tail_end >= r.tail_size) return false;  // the tail's last piece
    *next = envelope_piece(r, r.head_size + previous->tail_end, r.head_size + r.tail_size, r.rows);
    return true;
}

}  // namespace tensorb64
