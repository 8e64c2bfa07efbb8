// libFuzzer target for the body reader (tensorb64/body_reader.hpp): any bytes as a response body,
// read from an exact-size heap block into an exact-size result (ASan catches a byte read or written
// too far). The first byte chooses the options (stored type and byte order, widen, a BOM allowed)
// and whether the rest is the body or builds one (built_body: valid bodies of rows of different
// text lengths, which random bytes seldom are), and whether float rows are read to float64 (the
// openai client's reading). Each body is read four times: as a client reads it (one thread), by
// the careful reading alone (json/body_reader_careful.hpp: no row end guessed, every string
// scanned), as a client reads it with 3 threads and the embeddings' spans asked for, and at the
// scalar level (the number parsers and base64 decoder every SIMD level must equal). All four must
// give the same: the same error (status, byte offset, entry, lengths, message),
// or the same layout, the same array bit for bit and the same spans. A guessed row end changing the
// result is the class of bug the reader has had (ca59086 fixed one: a shorter later row refused),
// so a difference traps, with both outcomes printed. The allocator is called once, or (the careful
// reading after a wrong guess of a row's end: body_allocator's contract) a second time for a layout
// of another shape, never more; the careful reading alone calls it once. The corpus's
// second_allocation_* bodies take that path.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "harness.hpp"
#include "json/body_reader_careful.hpp"
#include "tensorb64/body_reader.hpp"

using namespace hardening;

namespace {

struct result_block {
    std::unique_ptr<exact_buffer> block;
    tb::body_layout first;  // the layout of the first call
    int calls = 0;
};

bool same_shape(const tb::body_layout& a, const tb::body_layout& b) {
    return a.rows == b.rows && a.row_length == b.row_length && a.encoding == b.encoding &&
           a.element_size == b.element_size;
}

void* allocate(void* context, const tb::body_layout& layout) {
    auto* r = static_cast<result_block*>(context);
    if (++r->calls == 1) {
        r->first = layout;
    } else if (r->calls > 2 || same_shape(layout, r->first)) {
        __builtin_trap();
    }
    r->block.reset(new exact_buffer(layout.rows * layout.row_length * layout.element_size));
    return r->block->data;
}

bool same_span(const tb::byte_span& a, const tb::byte_span& b) {
    return a.present == b.present && (!a.present || (a.offset == b.offset && a.length == b.length));
}

// Every field a caller sees (DecodeError's reason, pos and row are made of these).
bool same_error(const tb::body_error& a, const tb::body_error& b) {
    return a.status == b.status && a.offset == b.offset && a.entry == b.entry &&
           a.length == b.length && a.found == b.found && a.escaped_text == b.escaped_text &&
           a.base64.status == b.base64.status && a.base64.offset == b.base64.offset &&
           tb::to_string(a) == tb::to_string(b);
}

struct reading {
    tb::body_error error;
    tb::body_layout layout;
    result_block result;
    std::vector<tb::byte_span> spans;
};

std::string describe(const reading& r) {
    if (r.error.status != tb::body_status::ok)
        return tb::to_string(r.error) + " (entry " + std::to_string(r.error.entry) + ")";
    return "ok: " + std::to_string(r.layout.rows) + " x " + std::to_string(r.layout.row_length) +
           ", element size " + std::to_string(r.layout.element_size);
}

// Traps when `r` is not `careful`'s outcome: the same error, or the same layout and array (and
// the same spans where both asked for them).
void expect_same(const char* what, const reading& r, const reading& careful, bool spans) {
    bool same = same_error(r.error, careful.error);
    if (same && r.error.status == tb::body_status::ok) {
        same = same_shape(r.layout, careful.layout) &&
               same_span(r.layout.model, careful.layout.model) &&
               same_span(r.layout.usage, careful.layout.usage) &&
               r.result.block->size == careful.result.block->size &&
               std::memcmp(r.result.block->data, careful.result.block->data,
                           careful.result.block->size) == 0;
        if (same && spans) {
            same = r.spans.size() == careful.spans.size();
            for (std::size_t i = 0; same && i < r.spans.size(); ++i)
                same = same_span(r.spans[i], careful.spans[i]);
        }
    }
    if (!same) {
        std::fprintf(stderr,
                     "fuzz_body: %s differs from the careful reading\n  %s\n  careful: %s\n", what,
                     describe(r).c_str(), describe(careful).c_str());
        __builtin_trap();
    }
}

// The bytes a built body is made from, one at a time (0 once they run out).
struct program {
    const std::uint8_t* p;
    std::size_t n;
    std::size_t at = 0;
    unsigned next() { return at < n ? p[at++] : 0u; }
};

// A body json.loads reads (or one a few bytes off it), built from the input, for what random
// bytes seldom make: two or more well-formed rows of one length whose texts are of different
// lengths, which is where pass 1's guess of a row's end is tried (a float row's ']' searched for
// past three quarters of the first row's text, a base64 row's '"' where the first row's text
// ended). Per row (up to 128 values): values of texts from 1 to 24 bytes (an embedding's values
// among them) and whitespace of 0 to 3 bytes; the index
// before or after the embedding; another key before or after it whose value holds ']' or '"';
// an embedding given twice; now and then a value more or fewer, a row in the other format, an
// escaped base64 character, a repeated index. The envelope's keys in any order. Then up to three
// bytes replaced, inserted or erased anywhere.
std::string built_body(program& in, const tb::body_options& options) {
    static const char* const numbers[] = {
        "0", "1", "-2", "0.5", "1.5", "-0.0", "7e1", "2.5E3", "-1.25e-07", "1e-45", "NaN",
        "Infinity", "-Infinity", "0.10000000149011612", "-0.036621660739183426",
        "4503599627370497.5", "3.4028234663852886e+38", "123456789012345678901",
        "1.0000000000000000000001", "-0.3333333432674408", "65504", "1E+2",
        // an embedding's values, as the writers lay them out
        "0.0123", "-0.25", "-0.0034179688", "0.071875", "-0.11329823", "0.9999999",
        "-0.012337404303252697"};
    static const char* const spaces[] = {"", " ", "\n  ", "\t\r "};
    static const char* const others[] = {"\"]\"", "[1,2]",   "\"a\\\"]\"", "{\"b\":[3]}",
                                         "null",  "[\"]\"]", "\"AAAA\"",   "[[]]"};
    const unsigned rows = 1 + in.next() % 6;
    const bool floats = (in.next() & 1) != 0;
    // 0: empty rows; one body in four has rows long enough for the SIMD levels' row paths
    // (groups of four and eight numbers, 64-byte windows).
    const unsigned length = (in.next() & 3) == 3 ? 9 + in.next() % 120 : in.next() % 9;
    const std::size_t element = tb::dtype_size(options.stored.type);
    const unsigned rotate = in.next() % rows;
    std::string data = "[";
    for (unsigned r = 0; r < rows; ++r) {
        const unsigned flags = in.next();
        const bool odd = (flags & 0x30) == 0x30;  // one in four rows is a little off
        const unsigned index = (flags & 0x80) && odd ? 0 : (r + rotate) % rows;
        unsigned count = length;
        if (odd && (flags & 1)) count = length + 1;
        if (odd && (flags & 2) && count > 0) count = count - 1;
        const bool as_floats = floats != (odd && (flags & 0x40));
        std::string row;
        if (as_floats) {
            row = "[" + std::string(spaces[in.next() & 3]);
            // A long row's separators mostly as the writers lay them out (orjson's ",",
            // json.dumps's ", "), the values mostly an embedding's: the SIMD paths' own rows.
            const bool laid_out = count > 8 && (flags & 8) != 0;
            const char* const layout_comma = (flags & 4) ? ", " : ",";
            constexpr unsigned all_numbers = sizeof numbers / sizeof *numbers;
            for (unsigned v = 0; v < count; ++v) {
                const unsigned b = in.next();
                if (v) {
                    row += laid_out && (b & 0xf0) != 0xf0
                               ? std::string(layout_comma)
                               : std::string(spaces[b >> 6]) + "," + spaces[(b >> 4) & 3];
                }
                const unsigned pick = in.next();
                row += numbers[laid_out && (pick & 0x80) == 0 ? all_numbers - 1 - pick % 7
                                                              : pick % all_numbers];
            }
            row += std::string(spaces[in.next() & 3]) + "]";
        } else {
            std::vector<unsigned char> bytes(count * element);
            for (unsigned char& byte : bytes) byte = static_cast<unsigned char>(in.next());
            std::string text = textbook_base64(bytes.data(), bytes.size());
            if (odd && (flags & 4) && !text.empty()) {  // one character as a \u escape
                const std::size_t at = in.next() % text.size();
                char escape[7];
                std::snprintf(escape, sizeof escape, "\\u%04x",
                              static_cast<unsigned char>(text[at]));
                text.replace(at, 1, escape);
            }
            row = "\"" + text + "\"";
        }
        std::string entry = "{";
        const auto member = [&](const std::string& key, const std::string& value) {
            if (entry.size() > 1) entry += ",";
            entry += spaces[in.next() & 3];
            entry += "\"" + key + "\":";
            entry += spaces[in.next() & 3];
            entry += value;
        };
        const std::string other = others[in.next() % (sizeof others / sizeof *others)];
        if (flags & 8) member("object", other);
        if (odd && (flags & 2)) member("embedding", floats ? "[1]" : "\"AAAA\"");
        if (!(flags & 4)) member("index", std::to_string(index));
        member("embedding", row);
        if (flags & 4) member("index", std::to_string(index));
        if (flags & 0x40) member("extra", other);
        data += (r ? "," : "") + entry + "}";
    }
    data += "]";
    const unsigned envelope = in.next();
    std::string members[] = {"\"object\":\"list\"", "\"data\":" + data, "\"model\":\"m\"",
                             "\"usage\":{\"prompt_tokens\":1,\"total_tokens\":1}"};
    std::string body = "{";
    for (unsigned k = 0; k < 4; ++k) {
        if (k == 3 && (envelope & 4)) continue;  // no usage
        if (k) body += ",";
        body += members[(k + envelope) % 4];
    }
    body += "}";
    for (unsigned edits = in.next() % 4; edits > 0; --edits) {
        const std::size_t at = ((in.next() << 8) | in.next()) % (body.size() + 1);
        const char c = static_cast<char>(in.next());
        switch (in.next() % 3) {
            case 0:
                if (at < body.size()) body[at] = c;
                break;
            case 1: body.insert(at, 1, c); break;
            default:
                if (at < body.size()) body.erase(at, 1);
                break;
        }
    }
    return body;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* input, std::size_t size) {
    if (size < 1) return 0;
    static const tb::dtype stored[] = {tb::dtype::float32, tb::dtype::float16, tb::dtype::bfloat16,
                                       tb::dtype::float8_e4m3fn};
    tb::body_options options;
    options.stored = {stored[input[0] & 3],
                      (input[0] & 4) ? tb::byte_order::big : tb::byte_order::little};
    options.widen = (input[0] & 8) == 0;
    options.allow_bom = (input[0] & 16) != 0;
    options.float_rows_as_double = (input[0] & 64) != 0;
    const std::uint8_t* bytes = input + 1;
    std::size_t n = size - 1;
    std::string built;
    if (input[0] & 32) {  // the rest builds a body (built_body); else it is the body
        program in{bytes, n};
        built = built_body(in, options);
        bytes = reinterpret_cast<const std::uint8_t*>(built.data());
        n = built.size();
    }
    exact_buffer body(n);
    if (n > 0) std::memcpy(body.data, bytes, n);
    const char* text = reinterpret_cast<const char*>(body.data);

    reading one;
    one.error = tb::read_embeddings_body(text, n, options, allocate, &one.result, &one.layout);
    if (one.error.status != tb::body_status::ok) {
        if (one.error.offset > n) __builtin_trap();
    } else {
        const tb::body_layout& l = one.layout;
        if (one.result.calls == 0 ||
            one.result.block->size != l.rows * l.row_length * l.element_size)
            __builtin_trap();
        if (l.model.present && l.model.offset + l.model.length > n) __builtin_trap();
        if (l.usage.present && l.usage.offset + l.usage.length > n) __builtin_trap();
    }

    reading careful;
    careful.error = tb::detail::read_embeddings_body_carefully(
        text, n, options, allocate, &careful.result, &careful.layout, &careful.spans);
    if (careful.error.status == tb::body_status::ok && careful.result.calls != 1) __builtin_trap();
    expect_same("the reading", one, careful, false);

    options.threads = 3;
    reading three;
    three.error = tb::read_embeddings_body(text, n, options, allocate, &three.result, &three.layout,
                                           &three.spans);
    expect_same("the reading with 3 threads and spans", three, careful, true);

    options.threads = 1;
    const tb::simd_level level = tb::active_simd_level();
    tb::force_simd_level(tb::simd_level::scalar);
    reading scalar;
    scalar.error =
        tb::read_embeddings_body(text, n, options, allocate, &scalar.result, &scalar.layout);
    tb::force_simd_level(level);
    expect_same("the reading at the scalar level", scalar, careful, false);
    return 0;
}
