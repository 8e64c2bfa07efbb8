// The JSON number parser of the body reader: a row of numbers read straight into float32, each
// exactly as a Python client reads it — json.loads (the text correctly rounded to a double, or an
// int for a text without '.' and exponent), then numpy's cast to float32 (nearest, ties to even,
// of that double; numpy casts a Python int through a double too). That double rounding is the
// reference, not a direct correctly rounded float32: the two differ on some texts (see
// tests/float_text_double_rounding_scan.cpp).
//
// What json.loads accepts, and so what is accepted here: the JSON grammar
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? (no '+', no leading zeros, no ".5" or "5."), any
// number of digits and any exponent (1e400 is inf, 1e-400 is 0.0), and Python's three extra
// literals NaN, Infinity and -Infinity. Where json.loads or numpy refuse what the grammar allows,
// so does this parser: an integer text of more than 4300 digits (Python's default int limit) and
// one too large for a double (numpy's float(int) raises OverflowError). An integer text keeps no
// sign on zero ("-0" is Python's int 0, hence +0.0; "-0.0" is -0.0).
//
// Levels: parse_number_row_scalar and parse_number_row_double_scalar are portable and use integer
// arithmetic only (the caller's rounding mode and FTZ/DAZ cannot change a bit); each SIMD level's
// row parsers (dispatch/implementation.hpp) give exactly their results. parse_number_row and
// parse_number_row_double run the active level's.
#pragma once

#include <cstddef>

namespace tensorb64 {
namespace detail {

// What reading one row gave.
struct number_row {
    const char* end = nullptr;  // just past the closing ']' on success
    std::size_t count = 0;      // numbers read (may exceed `capacity`: nothing past it written)
    const char* error_at = nullptr;  // on failure: the unexpected byte (`end` if the text ended)
    const char* expected = nullptr;  // on failure: a static string saying what was expected there
};

// `p` points just past a row's '['. Reads `number (ws* ',' ws* number)* ws* ']'` (JSON whitespace:
// space, \t, \n, \r), or an empty `ws* ']'`; writes each value to out[i] for i < capacity. Never
// reads at or past `end`. On failure, error_at and expected say where and what; count is then the
// numbers read before it, held in out[0, min(count, capacity)); the rest of out[0, capacity) may
// have been written.
number_row parse_number_row(const char* p, const char* end, float* out,
                            std::size_t capacity) noexcept;

// The number (or NaN / Infinity / -Infinity) at `p`, as the double json.loads makes of it (an
// integer text through Python's float(int)); returns the end of its text, or nullptr if there is
// no valid JSON number at `p` (what follows a valid number is the caller's to check: "01" reads
// "0"). Never reads at or past `end`.
const char* parse_number(const char* p, const char* end, double* out) noexcept;

// The scalar level's row parser (parse_number_row's contract); the reference for the SIMD levels.
number_row parse_number_row_scalar(const char* p, const char* end, float* out,
                                   std::size_t capacity) noexcept;

// The same from where a row's scalar loop stands after '[' (count == 0) or after a ',' (count: the
// numbers before it): for the SIMD levels, which hand a row's rest to it where their fast path
// stops.
number_row parse_number_row_scalar_from(const char* p, const char* end, float* out,
                                        std::size_t capacity, std::size_t count) noexcept;

// parse_number_row's contract, each value kept as the double json.loads gives (parse_number's),
// not cast to float32: for a client that hands Python floats on (the openai client's float rows,
// which turn an int into a float only where float() keeps its value: so an integer text of more
// than 15 digits, which may not, is refused here). Runs the active level's.
number_row parse_number_row_double(const char* p, const char* end, double* out,
                                   std::size_t capacity) noexcept;

// The scalar level's float64 row parser (parse_number_row_double's contract): the same
// digits-to-double step the float32 rows take on their way; the reference for the SIMD levels.
number_row parse_number_row_double_scalar(const char* p, const char* end, double* out,
                                          std::size_t capacity) noexcept;

// Its loop from after '[' (count == 0) or after a ',' (count: the numbers before it), as
// parse_number_row_scalar_from.
number_row parse_number_row_double_scalar_from(const char* p, const char* end, double* out,
                                               std::size_t capacity, std::size_t count) noexcept;

// One number at `p` as the float64 rows read it, for the SIMD levels' lanes that leave the fast
// path: returns the end of its text, or nullptr with *error_at and *expected set.
const char* parse_one_double(const char* p, const char* end, double* out, const char** error_at,
                             const char** expected) noexcept;

// One number at `p` as float32 (the row's rule), for the SIMD levels' lanes that leave the fast
// path: returns the end of its text, or nullptr with *error_at and *expected set.
const char* parse_one_float32(const char* p, const char* end, float* out, const char** error_at,
                              const char** expected) noexcept;

}  // namespace detail
}  // namespace tensorb64
