// A whole /v1/embeddings response body into one array (see tensorb64/body_reader.hpp).
//
// Pass 1 (structure) validates the whole body as JSON, as json.loads would, and finds the "data"
// list json.loads would keep (the last, where the key repeats), the number of its entries and the
// length of their rows, where "model" and "usage" are, and up to 64 evenly spaced entries where
// threads can start. It decodes nothing: a base64 row's length follows from its text's length, a
// float row's from its commas. Semantic faults (a missing "index", rows of different lengths) are
// kept, not raised at once, since a later "data" key replaces the list they are in.
//
// Pass 2 (decode) walks the chosen list again, trusting pass 1's validation of the grammar, and
// decodes each entry's embedding straight into the row its "index" names. The decoders check
// what pass 1 did not look at (a base64 row's characters, a float row's numbers). When an entry's
// index comes before its embedding (OpenAI's and vLLM's layout) the row is decoded as soon as it
// is reached, without finding the end of its text first: its length is known from the row
// length, and a text that is not exactly that long fails the decoder (a '"' or '\\' is not in the
// alphabet), which sends it down the careful path.
//
// Pass 1 does not read the text of the base64 rows either: once the first row has given the
// length of a row's text, a later row whose text has a '"' exactly that far on is taken to end
// there (a guess: its text is not looked at). Pass 2 decodes every such row over exactly that text
// with the strict decoder, whose alphabet has no '"', '\\', control or non-ASCII byte: when it
// succeeds, the guess was the string json.loads reads. Likewise a float row after the first is
// taken to end at its first ']' and to hold the first row's number of values: pass 2's number
// parser reads it, accepting only numbers, commas and whitespace up to that ']', and counts them.
// Pass 1 does not even look at the first three quarters of such a row (the first row's length
// scaled: rows of one body are about equally long): it searches for that ']' only from there on,
// and pass 2 checks that each row it reads is at least that long, which makes the ']' found its
// first one.
// An embedding replaced by a later "embedding" key of its entry is decoded by nobody: where pass 1
// guessed its end, pass 2 checks it ends there (a float list shorter than the skip had its end
// guessed at a later ']', taking in the key that replaces it, which pass 1 then never saw).
// When anything fails after a guess, the body is read again from the start with every string
// scanned, which gives the error (or, for a body whose guessed string only looked like a row, the
// result) that no guessing would have: read_embeddings_body_carefully
// (json/body_reader_careful.hpp) is that reading alone, which the tests and the fuzzer compare
// every reading with.
#include "tensorb64/body_reader.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <vector>

#include "common/thread_pool.hpp"
#include "json/body_reader_careful.hpp"
#include "json/number_parser.hpp"
#include "json/scanner.hpp"

namespace tensorb64 {
namespace {

using json::failure;
using json::skip_space;
using json::string_span;

constexpr std::size_t no_index = ~std::size_t{0};

// Text per thread below which splitting the rows costs more than it gains.
constexpr std::size_t bytes_per_thread = std::size_t{256} << 10;

// Entries where a thread can start: up to 64, evenly spaced by ordinal (every `stride`-th entry;
// the stride doubles, keeping every other one, whenever the table fills).
struct checkpoints {
    static constexpr std::size_t capacity = 64;
    const char* at[capacity];
    std::size_t ordinal[capacity];
    std::size_t count = 0;
    std::size_t stride = 1;

    void note(const char* entry, std::size_t n) noexcept {
        if (n % stride != 0) return;
        if (count == capacity) {
            for (std::size_t i = 0; i < capacity / 2; ++i) {
                at[i] = at[2 * i];
                ordinal[i] = ordinal[2 * i];
            }
            count = capacity / 2;
            stride *= 2;
            if (n % stride != 0) return;
        }
        at[count] = entry;
        ordinal[count] = n;
        ++count;
    }
};

body_error make_error(body_status status, const char* body, const char* at,
                      const char* expected) noexcept {
    body_error e;
    e.status = status;
    e.offset = static_cast<std::size_t>(at - body);
    e.expected = expected;
    return e;
}

// What pass 1 found in one "data" list.
struct data_scan {
    const char* begin = nullptr;  // its '['
    const char* end = nullptr;    // past its ']'
    std::size_t rows = 0;
    std::size_t row_length = 0;
    row_encoding encoding = row_encoding::none;
    bool indexes_in_order = true;  // entry k has index k, for every k
    std::size_t max_index = 0;
    const char* max_index_at = nullptr;
    std::size_t max_index_entry = 0;  // the position of the entry holding it
    bool repeated_keys = false;       // some entry repeats "embedding" or "index"
    std::size_t row_skip = 0;         // float rows: the bytes of each pass 1 did not look at
    bool guessed = false;             // pass 1 guessed the end of some row in it
    body_error fault;                 // the first semantic fault (status ok if none)
    checkpoints starts;
};

// What pass 1 found in one entry (the last of each repeated key, as json.loads keeps it).
struct entry_scan {
    enum kind_t : std::uint8_t { text, numbers, other };
    const char* embedding = nullptr;  // its value
    kind_t kind = other;
    string_span string;             // text: the string
    json::list_glance list;         // numbers: the glance at the list (not validated yet)
    const char* index = nullptr;    // its value
    bool index_is_integer = false;  // an integer >= 0 (-0 included, as Python reads it)
    std::size_t index_value = 0;
    bool repeated = false;
};

// The value of a validated integer's text [p, end_of_number): no_index - 1 if it is too large to
// be a row's index in any body.
std::size_t integer_value(const char* p, const char* stop) noexcept {
    if (*p == '-') ++p;
    if (stop - p > 18) return no_index - 1;
    std::size_t v = 0;
    for (; p < stop; ++p) v = v * 10 + static_cast<std::size_t>(*p - '0');
    return v;
}

// Strict base64 through the characters of an escaped string's value, a block at a time (no copy
// of the whole text): checked only (out == nullptr), or decoded into `out`. The offsets of a
// failure count the value's characters. *elements: the number of elements.
decode_result escaped_base64(const string_span& s, const body_options& options, unsigned char* out,
                             std::size_t* elements) noexcept {
    constexpr std::size_t block_chars = 4096;  // whole groups, whole elements of every size
    char block[block_chars];
    const std::size_t out_size = options.widen ? 4 : dtype_size(options.stored.type);
    json::unescaper chars(s.begin, s.end);
    std::size_t done = 0, total = 0;
    for (;;) {
        std::size_t n = 0;
        while (n < block_chars && !chars.done()) {
            const std::uint32_t c = chars.next();
            block[n++] = static_cast<char>(c > 0xff ? 0xff : c);
        }
        const bool last = chars.done();
        decode_result r;
        if (!last) {  // padding may only end the text
            if (const void* pad = std::memchr(block, '=', n)) {
                r.status = decode_status::bad_padding;
                r.offset = done + static_cast<std::size_t>(static_cast<const char*>(pad) - block);
                return r;
            }
        }
        std::size_t count = 0;
        r = decoded_elements(block, n, options.stored.type, &count);
        if (r.status == decode_status::ok) {
            r = out == nullptr ? check_base64(block, n, options.stored.type)
                               : decode_base64(block, n, options.stored, options.widen,
                                               out + total * out_size, count * out_size);
        }
        if (r.status != decode_status::ok) {
            r.offset += r.status == decode_status::not_whole_values ? done / 4 * 3 : done;
            return r;
        }
        total += count;
        done += n;
        if (last) break;
    }
    *elements = total;
    return {};
}

class structure_pass {
public:
    // guess_rows: skip a base64 row's text by the first row's length (see the top of the file).
    structure_pass(const char* body, std::size_t size, const body_options& options, bool guess_rows)
        : body_(body), end_(body + size), options_(options), guess_rows_(guess_rows) {}

    // Validates the body and finds its data list: ok, or the first error.
    body_error run(body_layout* layout, data_scan* data);
    // Whether some row's end was guessed: then an error, here or in pass 2, may be the guess's.
    bool guessed() const noexcept { return guessed_; }

private:
    const char* grammar_error(const failure& f) noexcept {
        error_ = make_error(body_status::malformed_json, body_, f.at, f.expected);
        return nullptr;
    }
    const char* expect_failure(const char* at, const char* expected) noexcept {
        return grammar_error(failure{at, expected});
    }
    const char* skip(const char* p) noexcept {
        failure f;
        const char* q = json::skip_value(p, end_, options_.max_integer_digits, &f);
        return q != nullptr ? q : grammar_error(f);
    }
    const char* scan_data(const char* p, data_scan* d);
    const char* scan_entry(const char* p, entry_scan* e);
    void judge(data_scan* d, const entry_scan& e, const char* entry) noexcept;
    // At the ',' or closing bracket after a member or element: past the ',' (whitespace skipped)
    // with *closed false, or past the bracket with *closed true; nullptr on anything else.
    const char* next_item(const char* p, char close, const char* expected, bool* closed) noexcept {
        p = skip_space(p, end_);
        if (p < end_ && *p == ',') {
            *closed = false;
            return skip_space(p + 1, end_);
        }
        if (p < end_ && *p == close) {
            *closed = true;
            return p + 1;
        }
        return expect_failure(p, expected);
    }
    // After a key: past the ':' and the whitespace around it.
    const char* colon(const char* p) noexcept {
        p = skip_space(p, end_);
        if (p == end_ || *p != ':') return expect_failure(p, "':' after the property name");
        p = skip_space(p + 1, end_);
        if (p == end_) return expect_failure(p, "a value");
        return p;
    }

    void note_guess() noexcept {
        guessed_ = true;
        ++guesses_;
    }

    // The string at `p` (an embedding's opening quote), its end guessed where it can be.
    const char* row_text(const char* p, string_span* s, failure* f) noexcept {
        if (text_length_ != 0 && static_cast<std::size_t>(end_ - p) > text_length_ + 1 &&
            p[text_length_ + 1] == '"') {
            note_guess();
            s->begin = p + 1;
            s->end = p + 1 + text_length_;
            s->escaped = false;
            return s->end + 1;
        }
        return json::scan_string(p, end_, s, f);
    }

    // The list whose contents start at `p`, its end guessed where it can be: at the first ']'
    // from row_skip_ bytes on (memchr: the fastest scan there is), with the first row's length.
    json::list_glance row_list(const char* p) noexcept {
        if (row_length_ != 0 && static_cast<std::size_t>(end_ - p) > row_skip_) {
            const char* from = p + row_skip_;
            if (const void* close = std::memchr(from, ']', static_cast<std::size_t>(end_ - from))) {
                note_guess();
                json::list_glance g;
                g.close = static_cast<const char*>(close);
                g.commas = row_length_ - 1;
                g.blank = false;
                return g;
            }
        }
        return json::glance_list(p, end_);
    }

    const char* body_;
    const char* end_;
    body_options options_;
    body_error error_;
    bool guess_rows_;
    bool guessed_ = false;
    std::size_t guesses_ = 0;      // (scan_data notes whether its list had any)
    std::size_t text_length_ = 0;  // of the current list's rows, when guessing (0: not known)
    std::size_t row_length_ = 0;   // of its float rows, when guessing (0: not known)
    std::size_t row_skip_ = 0;     // bytes of a float row not looked at, when guessing
};

const char* structure_pass::scan_entry(const char* p, entry_scan* e) {
    p = skip_space(p + 1, end_);
    if (p < end_ && *p == '}') return p + 1;
    for (;;) {
        if (p == end_ || *p != '"')
            return expect_failure(p, "a property name enclosed in double quotes");
        string_span key;
        failure f;
        p = json::scan_string(p, end_, &key, &f);
        if (p == nullptr) return grammar_error(f);
        if ((p = colon(p)) == nullptr) return nullptr;
        if (json::string_equals(key, "embedding", 9)) {
            if (e->embedding != nullptr) {
                e->repeated = true;
                // The list it replaces was only glanced at, the string's end perhaps guessed:
                // json.loads would still refuse them, and pass 2 decodes neither. (A guess that
                // was wrong ends elsewhere, which the careful reading reports.)
                if (e->kind == entry_scan::numbers) {
                    const char* past = skip(e->embedding);
                    if (past == nullptr) return nullptr;
                    if (past != e->list.close + 1)
                        return expect_failure(e->embedding, "a list where a row was guessed");
                }
                if (e->kind == entry_scan::text && guessed_) {
                    const char* past = skip(e->embedding);
                    if (past == nullptr) return nullptr;
                    if (past != e->string.end + 1)
                        return expect_failure(e->embedding, "a string where a row was guessed");
                }
            }
            e->embedding = p;
            if (*p == '"') {
                e->kind = entry_scan::text;
                p = row_text(p, &e->string, &f);
                if (p == nullptr) return grammar_error(f);
            } else if (*p == '[' && (e->list = row_list(p + 1)).close != nullptr) {
                e->kind = entry_scan::numbers;
                p = e->list.close + 1;
            } else {
                e->kind = entry_scan::other;
                p = skip(p);
            }
        } else if (json::string_equals(key, "index", 5)) {
            e->repeated = e->repeated || e->index != nullptr;
            e->index = p;
            e->index_is_integer = false;
            if (*p == '-' || (*p >= '0' && *p <= '9')) {
                json::number_kind kind;
                const char* q = json::scan_number(p, end_, options_.max_integer_digits, &kind, &f);
                if (q == nullptr) return grammar_error(f);
                if (kind == json::number_kind::integer) {
                    e->index_value = integer_value(p, q);
                    e->index_is_integer = *p != '-' || e->index_value == 0;
                }
                p = q;
            } else {
                p = skip(p);
            }
        } else {
            p = skip(p);
        }
        if (p == nullptr) return nullptr;
        bool closed;
        if ((p = next_item(p, '}', "',' or '}'", &closed)) == nullptr || closed) return p;
    }
}

void structure_pass::judge(data_scan* d, const entry_scan& e, const char* entry) noexcept {
    if (d->fault.status != body_status::ok) return;
    const auto fault = [&](body_status status, const char* at, const char* expected) {
        d->fault = make_error(status, body_, at, expected);
        d->fault.entry = d->rows;
    };
    if (e.embedding == nullptr)
        return fault(body_status::bad_structure, entry, "an \"embedding\" in each data entry");
    if (e.kind == entry_scan::other) {
        return fault(body_status::bad_structure, e.embedding,
                     "an embedding that is a base64 string or a list of numbers");
    }
    if (e.index == nullptr)
        return fault(body_status::bad_structure, entry, "an \"index\" in each data entry");
    if (!e.index_is_integer)
        return fault(body_status::bad_index, e.index, "an integer index, 0 or more");
    const row_encoding encoding =
        e.kind == entry_scan::text ? row_encoding::base64 : row_encoding::floats;
    std::size_t n = 0;
    if (encoding == row_encoding::base64) {
        const std::size_t length = static_cast<std::size_t>(e.string.end - e.string.begin);
        const decode_result r =
            e.string.escaped ? escaped_base64(e.string, options_, nullptr, &n)
                             : decoded_elements(e.string.begin, length, options_.stored.type, &n);
        if (r.status != decode_status::ok) {
            fault(body_status::bad_base64, e.string.begin, nullptr);
            d->fault.base64 = r;
            d->fault.escaped_text = e.string.escaped;
            d->fault.found = d->fault.offset;  // where the text starts
            if (!e.string.escaped && r.status != decode_status::bad_length &&
                r.status != decode_status::not_whole_values) {
                d->fault.offset += r.offset;
            }
            return;
        }
    } else {
        n = e.list.blank ? 0 : e.list.commas + 1;
    }
    if (d->rows == 0) {
        d->encoding = encoding;
        d->row_length = n;
        if (guess_rows_ && encoding == row_encoding::base64 &&
            !encoded_size(n * dtype_size(options_.stored.type), &text_length_)) {
            text_length_ = 0;
        }
        if (guess_rows_ && encoding == row_encoding::floats) {
            row_length_ = n;
            row_skip_ = static_cast<std::size_t>(e.list.close - (e.embedding + 1)) / 4 * 3;
            d->row_skip = row_skip_;
            // Pass 2 holds every later row to that length, whether or not its end was guessed
            // here (a row too near the body's end is glanced at in full): one shorter is sent to
            // the careful reading, as a wrong guess is.
            if (row_skip_ != 0) note_guess();
        }
    } else if (encoding != d->encoding) {
        return fault(body_status::mixed_formats, e.embedding,
                     d->encoding == row_encoding::base64
                         ? "a base64 string, as the first row is"
                         : "a list of numbers, as the first row is");
    } else if (n != d->row_length) {
        fault(body_status::unequal_rows, e.embedding, nullptr);
        d->fault.length = d->row_length;
        d->fault.found = n;
        return;
    }
    if (e.index_value != d->rows) d->indexes_in_order = false;
    if (d->max_index_at == nullptr || e.index_value > d->max_index) {
        d->max_index = e.index_value;
        d->max_index_at = e.index;
        d->max_index_entry = d->rows;
    }
    d->repeated_keys = d->repeated_keys || e.repeated;
}

const char* structure_pass::scan_data(const char* p, data_scan* d) {
    d->begin = p;
    text_length_ = 0;
    row_length_ = 0;
    row_skip_ = 0;
    p = skip_space(p + 1, end_);
    if (p < end_ && *p == ']') return d->end = p + 1;
    const std::size_t guesses = guesses_;
    for (;;) {
        const char* entry = p;
        if (p < end_ && *p == '{') {
            entry_scan e;
            if ((p = scan_entry(p, &e)) == nullptr) {
                error_.entry = d->rows;
                return nullptr;
            }
            judge(d, e, entry);
        } else {
            if ((p = skip(p)) == nullptr) {
                error_.entry = d->rows;
                return nullptr;
            }
            if (d->fault.status == body_status::ok) {
                d->fault = make_error(body_status::bad_structure, body_, entry,
                                      "an object (a data entry)");
                d->fault.entry = d->rows;
            }
        }
        d->starts.note(entry, d->rows);
        ++d->rows;
        bool closed;
        if ((p = next_item(p, ']', "',' or ']'", &closed)) == nullptr) return nullptr;
        if (closed) {
            d->guessed = guesses_ != guesses;
            return d->end = p;
        }
    }
}

body_error structure_pass::run(body_layout* layout, data_scan* data) {
    const char* p = body_;
    if (options_.allow_bom && end_ - p >= 3 && std::memcmp(p, "\xef\xbb\xbf", 3) == 0) p += 3;
    p = skip_space(p, end_);
    if (p == end_)
        return make_error(body_status::malformed_json, body_, p, "a value (the body is empty)");
    if (*p != '{') {
        if (skip(p) == nullptr) return error_;
        return make_error(body_status::bad_structure, body_, p, "an object (the response body)");
    }
    const char* not_a_list = nullptr;  // the "data" value kept, when it is not a list
    bool have_data = false;
    p = skip_space(p + 1, end_);
    bool closed = p < end_ && *p == '}';
    if (closed) ++p;
    while (!closed) {
        if (p == end_ || *p != '"') {
            expect_failure(p, "a property name enclosed in double quotes");
            return error_;
        }
        string_span key;
        failure f;
        p = json::scan_string(p, end_, &key, &f);
        if (p == nullptr) return make_error(body_status::malformed_json, body_, f.at, f.expected);
        if ((p = colon(p)) == nullptr) return error_;
        const char* value = p;
        if (json::string_equals(key, "data", 4)) {
            // The list it replaces was decoded by nobody: json.loads would still refuse it.
            if (have_data && not_a_list == nullptr) {
                const char* past = skip(data->begin);
                if (past == nullptr) return error_;
                if (past != data->end) {  // only where a guessed row end was wrong
                    expect_failure(data->begin, "a list where rows were guessed");
                    return error_;
                }
            }
            have_data = true;
            not_a_list = nullptr;
            if (*p == '[') {
                *data = data_scan();
                p = scan_data(p, data);
            } else {
                not_a_list = p;
                p = skip(p);
            }
        } else {
            p = skip(p);
            if (p != nullptr) {
                const byte_span span{static_cast<std::size_t>(value - body_),
                                     static_cast<std::size_t>(p - value), true};
                if (json::string_equals(key, "model", 5)) layout->model = span;
                if (json::string_equals(key, "usage", 5)) layout->usage = span;
            }
        }
        if (p == nullptr || (p = next_item(p, '}', "',' or '}'", &closed)) == nullptr)
            return error_;
    }
    const char* close = p - 1;
    p = skip_space(p, end_);
    if (p != end_)
        return make_error(body_status::malformed_json, body_, p,
                          "the end of the body (extra data)");
    if (!have_data) return make_error(body_status::bad_structure, body_, close, "a \"data\" list");
    if (not_a_list != nullptr)
        return make_error(body_status::bad_structure, body_, not_a_list, "a list as \"data\"");
    if (data->fault.status != body_status::ok) return data->fault;
    if (!data->indexes_in_order && data->max_index >= data->rows) {
        body_error e = make_error(body_status::bad_index, body_, data->max_index_at, nullptr);
        e.entry = data->max_index_entry;
        e.found = data->max_index;
        e.length = data->rows;
        return e;
    }
    layout->rows = data->rows;
    layout->row_length = data->row_length;
    layout->encoding = data->encoding;
    if (data->encoding == row_encoding::floats) {
        layout->element_size = options_.float_rows_as_double ? 8 : 4;
    } else {
        layout->element_size = options_.widen ? 4 : dtype_size(options_.stored.type);
    }
    return {};
}

// Pass 2: decodes the entries of a validated data list into the result.
class decode_pass {
public:
    decode_pass(const char* body, std::size_t size, const body_options& options,
                const body_layout& layout, const data_scan& data, unsigned char* out,
                std::atomic<std::uint64_t>* seen, byte_span* embeddings)
        : body_(body),
          end_(body + size),
          options_(options),
          layout_(layout),
          repeated_keys_(data.repeated_keys),
          guessed_(data.guessed),
          row_skip_(data.row_skip),
          out_(out),
          row_bytes_(layout.row_length * layout.element_size),
          seen_(seen),
          embeddings_(embeddings) {
        encoded_size(layout.row_length * dtype_size(options.stored.type), &text_length_);
    }

    // Decodes `count` entries from the one at `p` (its '{', the list's entry `first_entry`); false
    // with *error on the first fault.
    bool run(const char* p, std::size_t first_entry, std::size_t count,
             body_error* error) const noexcept {
        std::size_t reached = 0;
        if (decode_entries(p, count, error, &reached)) return true;
        error->entry = first_entry + reached;
        return false;
    }

private:
    // run's loop; *reached: the entry (counted from `p`'s) it stopped at.
    bool decode_entries(const char* p, std::size_t count, body_error* error,
                        std::size_t* reached) const noexcept;
    const char* decode_row(const char* p, std::size_t index, body_error* error) const noexcept;
    bool end_as_guessed(const char* p) const noexcept;
    const char* fail(body_error* error, body_status status, const char* at,
                     const char* expected) const noexcept {
        *error = make_error(status, body_, at, expected);
        return nullptr;
    }

    const char* body_;
    const char* end_;
    body_options options_;
    body_layout layout_;
    bool repeated_keys_;
    bool guessed_;  // pass 1 guessed a row's end in this list
    std::size_t row_skip_;
    unsigned char* out_;
    std::size_t row_bytes_;
    std::size_t text_length_ = 0;       // of a base64 row without escapes
    std::atomic<std::uint64_t>* seen_;  // a bit per row, where the indexes are not in order
    byte_span* embeddings_;             // where each row's embedding text lies, if asked
};

const char* decode_pass::decode_row(const char* p, std::size_t index,
                                    body_error* error) const noexcept {
    if (index >= layout_.rows)
        return fail(error, body_status::bad_index, p, "an index below the number of rows");
    unsigned char* row = out_ + index * row_bytes_;
    if (layout_.encoding == row_encoding::floats) {
        const detail::number_row r =
            options_.float_rows_as_double
                ? detail::parse_number_row_double(p + 1, end_, reinterpret_cast<double*>(row),
                                                  layout_.row_length)
                : detail::parse_number_row(p + 1, end_, reinterpret_cast<float*>(row),
                                           layout_.row_length);
        if (r.error_at != nullptr)
            return fail(error, body_status::bad_number, r.error_at, r.expected);
        // Shorter than pass 1's skip: the ']' it took for the end may not be this row's.
        if (static_cast<std::size_t>(r.end - 1 - (p + 1)) < row_skip_)
            return fail(error, body_status::malformed_json, p, "a row as long as guessed");
        if (r.count != layout_.row_length) {
            fail(error, body_status::unequal_rows, p, nullptr);
            error->length = layout_.row_length;
            error->found = r.count;
            return nullptr;
        }
        return r.end;
    }
    const char* text = p + 1;
    if (static_cast<std::size_t>(end_ - text) > text_length_ && text[text_length_] == '"' &&
        decode_base64(text, text_length_, options_.stored, options_.widen, row, row_bytes_)
                .status == decode_status::ok) {
        return text + text_length_ + 1;
    }
    // The careful path: an escaped text, or one that is not exactly a row's base64.
    string_span s;
    failure f;
    const char* after = json::scan_string(p, end_, &s, &f);
    if (after == nullptr) return fail(error, body_status::malformed_json, f.at, f.expected);
    std::size_t elements = layout_.row_length;
    decode_result r;
    if (s.escaped) {
        r = escaped_base64(s, options_, row, &elements);
    } else {
        r = decode_base64(s.begin, static_cast<std::size_t>(s.end - s.begin), options_.stored,
                          options_.widen, row, row_bytes_);
    }
    if (r.status == decode_status::ok && elements == layout_.row_length) return after;
    if (r.status == decode_status::ok || r.status == decode_status::wrong_output_size) {
        fail(error, body_status::unequal_rows, p, nullptr);
        error->length = layout_.row_length;
        return nullptr;
    }
    fail(error, body_status::bad_base64, s.begin, nullptr);
    error->base64 = r;
    error->escaped_text = s.escaped;
    error->found = error->offset;
    if (!s.escaped && r.status != decode_status::bad_length &&
        r.status != decode_status::not_whole_values) {
        error->offset += r.offset;
    }
    return nullptr;
}

// Whether the value at `p` ends where pass 1 took it to end, had pass 1 guessed its end (with the
// same test pass 1 makes: row_list's and row_text's).
bool decode_pass::end_as_guessed(const char* p) const noexcept {
    const char* const past = json::skip_valid_value(p, end_);
    if (*p == '[') {
        if (layout_.row_length == 0 || row_skip_ == 0 ||
            static_cast<std::size_t>(end_ - (p + 1)) <= row_skip_) {
            return true;
        }
        const char* from = p + 1 + row_skip_;
        const void* close = std::memchr(from, ']', static_cast<std::size_t>(end_ - from));
        return close == nullptr || close == past - 1;
    }
    if (*p == '"') {
        if (text_length_ == 0 || static_cast<std::size_t>(end_ - p) <= text_length_ + 1 ||
            p[text_length_ + 1] != '"') {
            return true;
        }
        return past == p + text_length_ + 2;
    }
    return true;
}

bool decode_pass::decode_entries(const char* p, std::size_t count, body_error* error,
                                 std::size_t* reached) const noexcept {
    const char* const internal = "a data entry (the body changed while it was read?)";
    for (std::size_t k = 0; k < count; ++k) {
        *reached = k;
        p = skip_space(p, end_);
        if (k != 0) {
            if (p >= end_ || *p != ',')
                return fail(error, body_status::malformed_json, p, internal) != nullptr;
            p = skip_space(p + 1, end_);
        }
        if (p >= end_ || *p != '{')
            return fail(error, body_status::malformed_json, p, internal) != nullptr;
        ++p;
        const char* embedding = nullptr;
        const char* embedding_end = nullptr;  // where decoded
        const char* index_at = nullptr;
        std::size_t index = no_index;
        for (;;) {
            p = skip_space(p, end_);
            if (p >= end_ || *p != '"') break;
            string_span key;
            key.begin = p + 1;
            p = json::skip_valid_string(key.begin, end_);
            key.end = p - 1;
            key.escaped = std::memchr(key.begin, '\\',
                                      static_cast<std::size_t>(key.end - key.begin)) != nullptr;
            p = skip_space(p, end_);
            p = skip_space(p + 1, end_);  // the ':'
            if (p >= end_) break;
            if (json::string_equals(key, "embedding", 9)) {
                // The embedding this key replaces, not decoded: pass 1 may have guessed its end
                // past this key (taking in text it then never read, which nobody would read).
                if (guessed_ && embedding != nullptr && embedding_end == nullptr &&
                    !end_as_guessed(embedding)) {
                    return fail(error, body_status::malformed_json, embedding,
                                "a replaced embedding that ends where its end was guessed") !=
                           nullptr;
                }
                embedding = p;
                if (index != no_index && !repeated_keys_) {
                    if ((p = decode_row(p, index, error)) == nullptr) return false;
                    embedding_end = p;
                } else {
                    p = json::skip_valid_value(p, end_);
                }
            } else if (json::string_equals(key, "index", 5)) {
                index_at = p;
                const char* q = p + (*p == '-');
                while (q < end_ && *q >= '0' && *q <= '9') ++q;
                index = integer_value(p, q);
                p = q;
            } else {
                p = json::skip_valid_value(p, end_);
            }
            p = skip_space(p, end_);
            if (p < end_ && *p == ',') ++p;
        }
        if (p >= end_ || *p != '}' || embedding == nullptr || index_at == nullptr) {
            return fail(error, body_status::malformed_json, p, internal) != nullptr;
        }
        ++p;
        if (embedding_end == nullptr &&
            (embedding_end = decode_row(embedding, index, error)) == nullptr) {
            return false;
        }
        if (seen_ != nullptr) {
            const std::uint64_t bit = std::uint64_t{1} << (index % 64);
            if (seen_[index / 64].fetch_or(bit, std::memory_order_relaxed) & bit) {
                fail(error, body_status::bad_index, index_at, nullptr);
                error->found = index;
                error->length = layout_.rows;
                return false;
            }
        }
        if (embeddings_ != nullptr) {  // after the index check: each row's span written once
            byte_span& span = embeddings_[index];
            span.offset = static_cast<std::size_t>(embedding - body_);
            span.length = static_cast<std::size_t>(embedding_end - embedding);
            span.present = true;
        }
    }
    return true;
}

std::string at_byte(std::size_t offset) { return " at byte " + std::to_string(offset); }

}  // namespace

std::string to_string(const body_error& e) {
    const std::string expected =
        e.expected != nullptr ? std::string(": expected ") + e.expected : std::string();
    switch (e.status) {
        case body_status::ok: return "ok";
        case body_status::malformed_json: return "malformed JSON" + at_byte(e.offset) + expected;
        case body_status::bad_structure:
            return "not an embeddings response" + at_byte(e.offset) + expected;
        case body_status::bad_index:
            if (e.expected != nullptr) return "bad index" + at_byte(e.offset) + expected;
            return "bad index" + at_byte(e.offset) + ": index " + std::to_string(e.found) +
                   " is given twice or is not below the number of rows (" +
                   std::to_string(e.length) + "); the indexes must be each of 0.." +
                   std::to_string(e.length) + "-1 once";
        case body_status::unequal_rows:
            return "rows of different lengths: the embedding" + at_byte(e.offset) + " has " +
                   std::to_string(e.found) + " values, the first row " + std::to_string(e.length);
        case body_status::mixed_formats:
            return "a mix of row formats" + at_byte(e.offset) + expected;
        case body_status::bad_base64:
            return "bad embedding" + at_byte(e.offset) + " (the string that starts" +
                   at_byte(e.found) + "): " + to_string(e.base64) +
                   (e.escaped_text ? " (offsets count the string's unescaped characters)" : "");
        case body_status::bad_number: return "bad number row" + at_byte(e.offset) + expected;
        case body_status::no_output: return "no memory for the result" + expected;
    }
    return "unknown body status";
}

namespace {

// Pass 2 over the rows pass 1 found, split over the threads asked for.
body_error decode_rows(const char* body, std::size_t size, const body_options& options,
                       const body_layout& layout, const data_scan& data, void* out,
                       std::vector<byte_span>* embeddings) {
    body_error error;
    std::unique_ptr<std::atomic<std::uint64_t>[]> seen;
    if (!data.indexes_in_order) {
        const std::size_t words = (layout.rows + 63) / 64;
        seen.reset(new (std::nothrow) std::atomic<std::uint64_t>[words]);
        if (!seen) {
            error.status = body_status::no_output;
            error.expected = "memory for the index check";
            return error;
        }
        for (std::size_t i = 0; i < words; ++i) seen[i].store(0, std::memory_order_relaxed);
    }
    byte_span* spans = nullptr;
    if (embeddings != nullptr) {
        try {
            embeddings->assign(layout.rows, byte_span());
        } catch (const std::bad_alloc&) {
            error.status = body_status::no_output;
            error.expected = "memory for the embeddings' offsets";
            return error;
        }
        spans = embeddings->data();
    }
    const decode_pass pass(body, size, options, layout, data, static_cast<unsigned char*>(out),
                           seen.get(), spans);

    const std::size_t list_bytes = static_cast<std::size_t>(data.end - data.begin);
    const std::size_t parts =
        std::min<std::size_t>({std::max<unsigned>(options.threads, 1), data.starts.count,
                               std::max<std::size_t>(list_bytes / bytes_per_thread, 1)});
    if (parts <= 1) {
        pass.run(data.starts.at[0], 0, layout.rows, &error);
        return error;
    }
    // Part t runs from checkpoint first(t) to the next part's first entry.
    const auto first = [&](std::size_t t) { return t * data.starts.count / parts; };
    body_error errors[checkpoints::capacity];
    run_parts(parts, [&](std::size_t t) {
        const std::size_t from = data.starts.ordinal[first(t)];
        const std::size_t to = t + 1 == parts ? layout.rows : data.starts.ordinal[first(t + 1)];
        pass.run(data.starts.at[first(t)], from, to - from, &errors[t]);
    });
    for (std::size_t t = 0; t < parts; ++t) {  // the error nearest the start of the body
        if (errors[t].status != body_status::ok &&
            (error.status == body_status::ok || errors[t].offset < error.offset)) {
            error = errors[t];
        }
    }
    return error;
}

bool same_shape(const body_layout& a, const body_layout& b) noexcept {
    return a.rows == b.rows && a.row_length == b.row_length && a.encoding == b.encoding &&
           a.element_size == b.element_size;
}

// The reading, with row ends guessed (read_embeddings_body) or not (the careful reading alone:
// read_embeddings_body_carefully). The careful reading is also what a guessed one falls back to.
body_error read_body(const char* body, std::size_t size, const body_options& options,
                     body_allocator allocate, void* context, body_layout* layout,
                     std::vector<byte_span>* embeddings, bool guess) {
    if (embeddings != nullptr) embeddings->clear();
    *layout = body_layout();
    data_scan data;
    body_error error;
    void* out = nullptr;
    body_layout guessed_layout;
    if (guess) {
        structure_pass guessing(body, size, options, true);
        error = guessing.run(layout, &data);
        if (error.status == body_status::ok) {
            out = allocate(context, *layout);
            if (out == nullptr) {
                error.status = body_status::no_output;
                return error;
            }
            if (layout->rows == 0) return error;
            error = decode_rows(body, size, options, *layout, data, out, embeddings);
        }
        if (error.status == body_status::ok || error.status == body_status::no_output ||
            !guessing.guessed()) {
            return error;
        }
        // Something failed after a row's end was guessed: read the body again, every string
        // scanned.
        guessed_layout = *layout;
        *layout = body_layout();
        data = data_scan();
    }
    error = structure_pass(body, size, options, false).run(layout, &data);
    if (error.status != body_status::ok) return error;
    if (out == nullptr || !same_shape(*layout, guessed_layout)) {
        out = allocate(context, *layout);
        if (out == nullptr) {
            error.status = body_status::no_output;
            return error;
        }
    }
    if (layout->rows == 0) return error;
    return decode_rows(body, size, options, *layout, data, out, embeddings);
}

}  // namespace

body_error read_embeddings_body(const char* body, std::size_t size, const body_options& options,
                                body_allocator allocate, void* context, body_layout* layout) {
    return read_body(body, size, options, allocate, context, layout, nullptr, true);
}

body_error read_embeddings_body(const char* body, std::size_t size, const body_options& options,
                                body_allocator allocate, void* context, body_layout* layout,
                                std::vector<byte_span>* embeddings) {
    return read_body(body, size, options, allocate, context, layout, embeddings, true);
}

namespace detail {

body_error read_embeddings_body_carefully(const char* body, std::size_t size,
                                          const body_options& options, body_allocator allocate,
                                          void* context, body_layout* layout,
                                          std::vector<byte_span>* embeddings) {
    return read_body(body, size, options, allocate, context, layout, embeddings, false);
}

}  // namespace detail
}  // namespace tensorb64
