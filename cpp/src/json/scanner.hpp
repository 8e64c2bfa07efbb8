// The lexical pieces of JSON as Python's json module reads it (json.loads, strict mode):
// whitespace, strings, numbers (with the NaN, Infinity and -Infinity literals Python accepts),
// literals, and skipping a value of any shape. Used by the body reader (body_reader.cpp), which
// needs the structure of a body without building a tree.
//
// Two kinds of function: the validating ones (a failure names the byte and what was expected, in
// the terms of json's own messages) for the structural pass, and the trusting ones (skip_valid_*)
// for a second pass over text the first has validated; those still never read past `end`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "json/whitespace.hpp"

namespace tensorb64 {
namespace json {

// Where the text stopped being JSON and what was expected there (static text).
struct failure {
    const char* at = nullptr;
    const char* expected = nullptr;
};

// A string's contents: from just past its opening quote to its closing quote.
struct string_span {
    const char* begin = nullptr;
    const char* end = nullptr;
    bool escaped = false;  // holds a backslash escape (its text is not its value)
};

// The string at `p` (its opening quote): escapes as json reads them (\" \\ \/ \b \f \n \r \t and
// \uXXXX, lone surrogates included), no raw control character (strict mode), UTF-8 well-formed
// (surrogates allowed, as bytes.decode("utf-8", "surrogatepass") allows them). Returns the byte
// past the closing quote, or nullptr with *f set.
const char* scan_string(const char* p, const char* end, string_span* s, failure* f) noexcept;

// What a number's text is: an integer (no fraction, no exponent), a real, or NaN/±Infinity.
enum class number_kind : std::uint8_t { integer, real, non_finite };

// The number at `p` ('-', a digit, 'N' or 'I'): -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][-+]?[0-9]+)?,
// NaN, Infinity or -Infinity, an integer of at most `max_integer_digits` digits (the sign not
// counted, as Python's int() counts them; 0: any number). Returns the byte past it, or nullptr
// with *f set.
const char* scan_number(const char* p, const char* end, std::size_t max_integer_digits,
                        number_kind* kind, failure* f) noexcept;

// Any JSON value at `p` (no whitespace before it), validated, nested up to max_depth arrays and
// objects, its integers limited as scan_number's. Returns the byte past it, or nullptr with *f set.
inline constexpr std::size_t max_depth = 4096;
const char* skip_value(const char* p, const char* end, std::size_t max_integer_digits,
                       failure* f) noexcept;

// The trusting versions, for text skip_value has accepted: the byte past the value at `p`, or
// past the string whose contents start at `p`; `end` if the text ends first.
const char* skip_valid_value(const char* p, const char* end) noexcept;
const char* skip_valid_string(const char* p, const char* end) noexcept;

// Whether a (validated) string's value is the ASCII `name` of `length` characters.
bool string_equals(const string_span& s, const char* name, std::size_t length) noexcept;

// The characters of a validated string's value, one at a time: escapes resolved (\uXXXX gives the
// UTF-16 code unit), other bytes as they are (a non-ASCII byte is returned as itself).
class unescaper {
public:
    unescaper(const char* begin, const char* end) noexcept : p_(begin), end_(end) {}
    bool done() const noexcept { return p_ >= end_; }
    std::uint32_t next() noexcept;  // only when !done()

private:
    const char* p_;
    const char* end_;
};

// The first byte of [p, end) that is '"', '\\', a control character or not ASCII; end if none.
const char* find_string_special(const char* p, const char* end) noexcept;

// A quick look at the list whose contents start at `p` (just past its '['): up to the first ']',
// the commas counted. `close` is that ']' (nullptr if the text ends first); `nested` says a '[',
// '{' or '"' came before it (then it is not a flat list of numbers, and the count means nothing);
// `blank` says nothing but whitespace came before it (an empty list).
struct list_glance {
    const char* close = nullptr;
    std::size_t commas = 0;
    bool nested = false;
    bool blank = true;
};
list_glance glance_list(const char* p, const char* end) noexcept;

}  // namespace json
}  // namespace tensorb64
