// tensorb64: reading a whole /v1/embeddings response body into one [rows, row_length] array.
//
// The reverse of what response_body writes, for any writer: a structural pass over the JSON finds
// the number of rows and their length (validating the whole body as Python's json.loads would),
// the caller's allocator gives the result once, and a second pass decodes each entry's embedding
// straight into its row (by its "index"): base64 rows through the strict decoder of
// tensorb64.hpp, float rows through the number parser. No tree, no per-row or per-value
// allocation: memory is the result plus a few hundred bytes (and, only where the indexes are not
// in order, one bit per row to check they are each 0..rows-1 once).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tensorb64/tensorb64.hpp"

namespace tensorb64 {

// How the rows of a body are written.
enum class row_encoding : std::uint8_t {
    none,    // no rows ("data": [])
    base64,  // each embedding a base64 string
    floats,  // each embedding a list of numbers
};

// A part of the body, by byte offset; `present` is false where the body has no such part.
struct byte_span {
    std::size_t offset = 0;
    std::size_t length = 0;
    bool present = false;
};

// What the structural pass found: the result's shape and element size, and where the top-level
// "model" and "usage" values are (their JSON text, the last of each where a key repeats, as
// json.loads keeps the last), so a caller reads them without parsing the body again.
struct body_layout {
    std::size_t rows = 0;
    std::size_t row_length = 0;
    row_encoding encoding = row_encoding::none;
    std::size_t element_size =
        4;  // bytes of one result element (float32, float64 or the stored type)
    byte_span model;
    byte_span usage;
};

struct body_options {
    element_format stored{dtype::float32, byte_order::little};  // how base64 rows were encoded
    bool widen = true;     // base64 rows to float32 (else the stored elements); float rows: float32
    unsigned threads = 1;  // split the rows of a large body over this many threads
    bool allow_bom = false;  // skip a leading UTF-8 BOM (json.loads does for bytes, not for str)
    // Float rows as float64, each value the Python float a client makes of json.loads's value
    // (the double; for an integer text float(int), and an error for one of more than 15 digits,
    // which the openai client may keep as an int), instead of that double rounded to float32.
    bool float_rows_as_double = false;
    // An integer text with more digits than this (the sign not counted) is refused, as Python's
    // int() refuses it past sys.get_int_max_str_digits(), which json.loads obeys; 0: no limit.
    // Float rows hold no such integer in any case: one of over 309 digits is past a double.
    std::size_t max_integer_digits = 4300;
};

// Why a body could not be read.
enum class body_status : std::uint8_t {
    ok,
    malformed_json,  // not JSON as json.loads reads it (offset: where; expected: what)
    bad_structure,   // JSON, but not an embeddings response: no "data" list, an entry without
                     // an "embedding" or "index", an embedding neither a string nor numbers
    bad_index,       // an index that is not an integer in 0..rows-1, or one given twice
    unequal_rows,    // rows of different lengths (length: the first row's, found: this one's)
    mixed_formats,   // base64 rows and float rows in one body
    bad_base64,      // a row's text is not strict base64 of whole elements (detail: why)
    bad_number,      // a float row's text is not a list of JSON numbers
    no_output,       // the allocator returned null (it says why itself)
};

struct body_error {
    body_status status = body_status::ok;
    std::size_t offset = 0;             // byte offset in the body
    const char* expected = nullptr;     // what was expected there (static text)
    std::size_t length = 0, found = 0;  // unequal_rows: the lengths; bad_index: the index, the rows
    decode_result base64;       // bad_base64: the decoder's finding, offsets within the text
    bool escaped_text = false;  // bad_base64: the offsets count the text's unescaped characters
    // The position in the "data" list of the entry at fault (json.loads(body)["data"][entry]),
    // where the fault lies in one; no_entry elsewhere.
    static constexpr std::size_t no_entry = ~std::size_t{0};
    std::size_t entry = no_entry;
};

// The message for an error: what, at which byte offset, and what was expected there.
std::string to_string(const body_error& error);

// Gives the result's memory: layout.rows * layout.row_length elements of layout.element_size bytes,
// rows contiguous, aligned for the elements; nullptr to stop (read_embeddings_body then returns
// no_output). Called once, after the whole body has been validated as JSON, from the calling
// thread; called again (the first memory no longer used) only when a row's guessed end was wrong
// and the careful reading found a result of another shape (body_reader.cpp says when).
using body_allocator = void* (*)(void* context, const body_layout& layout);

// Reads `body` (`size` bytes of UTF-8): the rows of its "data" entries, each placed by its "index",
// into the memory `allocate` gives. Every body that Python's json.loads accepts (NaN and Infinity
// literals, any whitespace and key order, escaped keys and strings, duplicate keys, of which the
// last counts) whose "data" is a list of entries each with an integer "index" and an "embedding"
// (a base64 string, or a list of numbers) reads to exactly what json.loads and numpy give, in
// float32 (float text correctly rounded to the double, then to float32). Everything else is an
// error naming the byte offset; nothing outside [body, body + size) is ever read. On an error after
// the allocation the result holds unspecified values. `layout` is filled as far as the body was
// read.
body_error read_embeddings_body(const char* body, std::size_t size, const body_options& options,
                                body_allocator allocate, void* context, body_layout* layout);

// The same, and where each row's embedding value lies: (*embeddings)[i] is the JSON text of the
// embedding that row i was read from (resized to layout->rows). For a caller that builds the
// rest of the response itself (the body with those values cut out is small to parse).
body_error read_embeddings_body(const char* body, std::size_t size, const body_options& options,
                                body_allocator allocate, void* context, body_layout* layout,
                                std::vector<byte_span>* embeddings);

// One row of float text, `[` numbers `]` as write_float_rows writes a row (JSON whitespace
// allowed), read to the doubles json.loads gives: true if it holds exactly `count` numbers, written
// to out[0, count). For a caller that hands the text's numbers on as Python floats. Never reads at
// or past text + size.
bool read_float_row_double(const char* text, std::size_t size, double* out,
                           std::size_t count) noexcept;

}  // namespace tensorb64
