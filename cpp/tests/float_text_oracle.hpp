// The reference the float-text tests compare against, written apart from the fast code:
// std::to_chars's shortest scientific text (libstdc++: Ryu) for the digits (or, where the standard
// library has no floating-point to_chars/from_chars, the C library's correctly rounded printf and
// strtod searched for the same digits: see `charconv` below), and Python's repr
// layout spelled out in the plainest way (CPython's format_float_short with mode 'r'), and
// orjson's (3.13: fixed notation for 1e-6 <= |x| < 1e13 as float32, 1e-5 <= |x| < 1e16 as a
// double; otherwise "d.ddde-7", "1e+13": exponents unpadded, their sign always written).
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

namespace float_text_oracle {

// The oracle's own digits where the standard library's are missing. libc++ (Apple's, and Debian's
// 14) never defines __cpp_lib_to_chars: its floating-point from_chars came in release 20, and
// Apple's availability rules put to_chars at macOS 13.3 and from_chars at 26, after the wheels'
// 11.0 / 10.13. libstdc++ 11+ and MSVC's library define it once both exist. So the macro alone
// decides, and the fallback is compared with std::to_chars/from_chars wherever both build
// (float_text_tests' charconv test).
namespace portable {

// The C library's reading (strtod/strtof: correctly rounded in glibc and in macOS's libc, which
// this serves; not in a MinGW-w64 program under Wine 8.0, see float_text_tests). Tokens here are
// whole numbers in the "C" locale; false where nothing was read.
inline bool parse(const char* first, const char* last, double& x) {
    const std::string token(first, last);
    char* end = nullptr;
    x = std::strtod(token.c_str(), &end);
    return end == token.c_str() + token.size() && !token.empty();
}
inline bool parse(const char* first, const char* last, float& x) {
    const std::string token(first, last);
    char* end = nullptr;
    x = std::strtof(token.c_str(), &end);
    return end == token.c_str() + token.size() && !token.empty();
}

// The sign, significant digits and decimal exponent of printf's "%.*e" text of x, written back as
// to_chars writes scientific text: "-d.ddde-05" (no trailing zeros of the digits when
// `strip_zeros`; the exponent's sign always, at least two digits: printf's width varies by C
// library, msvcrt's three). Returns the end.
struct decimal {
    bool negative = false;
    char digits[40] = {};
    int n = 0;
    int e10 = 0;
};
inline decimal printf_decimal(double x, int precision) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*e", precision, x);
    decimal d;
    const char* p = text;
    if (*p == '-') {
        d.negative = true;
        ++p;
    }
    for (; *p && *p != 'e'; ++p)
        if (*p != '.') d.digits[d.n++] = *p;
    d.e10 = std::atoi(p + 1);
    return d;
}
inline char* write_scientific(const decimal& d, bool strip_zeros, char* out) {
    int n = d.n;
    while (strip_zeros && n > 1 && d.digits[n - 1] == '0') --n;
    if (d.negative) *out++ = '-';
    *out++ = d.digits[0];
    if (n > 1) *out++ = '.';
    for (int i = 1; i < n; ++i) *out++ = d.digits[i];
    return out +
           std::snprintf(out, 8, "e%c%02d", d.e10 < 0 ? '-' : '+', d.e10 < 0 ? -d.e10 : d.e10);
}
// The digit string one unit up or down in its last place, with its carry or borrow: 9.99e4 + 1
// unit is 1.00e5; 1.00e5 - 1 unit is 9.99e4 (the same number of digits, the step below a power of
// ten being ten times finer).
inline decimal step(decimal d, int direction) {
    int i = d.n - 1;
    if (direction > 0) {
        while (i >= 0 && d.digits[i] == '9') d.digits[i--] = '0';
        if (i >= 0) {
            ++d.digits[i];
        } else {
            d.digits[0] = '1';
            ++d.e10;
        }
    } else {
        while (i > 0 && d.digits[i] == '0') d.digits[i--] = '9';
        --d.digits[i];  // the leading digit is never 0 (x is not), so a borrow stops at it
        if (d.digits[0] == '0') {
            for (int j = 0; j < d.n; ++j) d.digits[j] = '9';
            --d.e10;
        }
    }
    return d;
}

// The fewest significant digits that read back as x (as Real: float or double), and of those the
// nearest x, as to_chars's shortest form is defined. At each length the nearest digit string is
// printf's correctly rounded one; where it does not read back but the interval of texts that do
// lies beyond x on its other side (a power of two, whose interval below is half the one above),
// the string one unit beyond x is the only other of that length that can.
template <typename Real>
char* shortest(Real x, char* out) {
    if (x == 0) return write_scientific(printf_decimal(static_cast<double>(x), 0), true, out);
    const int max_precision = sizeof(Real) == 4 ? 8 : 16;
    for (int precision = 0;; ++precision) {
        const decimal nearest = printf_decimal(static_cast<double>(x), precision);
        char text[64];
        Real back = 0;
        parse(text, write_scientific(nearest, false, text), back);
        if (back == x || precision == max_precision) return write_scientific(nearest, true, out);
        char beyond_text[64];
        // Below x (positive) or above it (negative): the magnitude one unit up; else down.
        const decimal beyond = step(nearest, (back < x) != nearest.negative ? 1 : -1);
        parse(beyond_text, write_scientific(beyond, false, beyond_text), back);
        if (back == x) return write_scientific(beyond, true, out);
    }
}

// to_chars(x, scientific, precision): printf's "%.*e", correctly rounded.
inline char* with_precision(double x, int precision, char* out) {
    return write_scientific(printf_decimal(x, precision), false, out);
}

}  // namespace portable

#if defined(__cpp_lib_to_chars)
inline constexpr bool kStdCharconv = true;
template <typename Real>
char* shortest_scientific(Real x, char* out) {
    return std::to_chars(out, out + 64, x, std::chars_format::scientific).ptr;
}
inline char* scientific_with_precision(double x, int precision, char* out) {
    return std::to_chars(out, out + 64, x, std::chars_format::scientific, precision).ptr;
}
template <typename Real>
bool parse(const char* first, const char* last, Real& x) {
    const std::from_chars_result r = std::from_chars(first, last, x);
    return r.ec == std::errc() && r.ptr == last;
}
#else
inline constexpr bool kStdCharconv = false;
template <typename Real>
char* shortest_scientific(Real x, char* out) {
    return portable::shortest(x, out);
}
inline char* scientific_with_precision(double x, int precision, char* out) {
    return portable::with_precision(x, precision, out);
}
template <typename Real>
bool parse(const char* first, const char* last, Real& x) {
    return portable::parse(first, last, x);
}
#endif

// The digits d1..dn (no leading or trailing zeros) of the value d1.d2...dn * 10^e10, laid out
// as Python's repr and orjson do: fixed notation for fixed_min <= e10 <= fixed_max, else
// "d.ddde<sign><exponent>" with the exponent at least `exponent_digits` digits (Python: 2,
// orjson: 1). Writes at `out`, returns the end.
inline char* layout_digits(bool negative, const char* digits, int n, int e10, int fixed_min,
                           int fixed_max, int exponent_digits, char* out) {
    if (negative) *out++ = '-';
    if (e10 >= fixed_min && e10 <= fixed_max) {
        if (e10 < 0) {
            *out++ = '0';
            *out++ = '.';
            for (int i = 0; i < -e10 - 1; ++i) *out++ = '0';
            for (int i = 0; i < n; ++i) *out++ = digits[i];
        } else if (n <= e10 + 1) {
            for (int i = 0; i < n; ++i) *out++ = digits[i];
            for (int i = n; i < e10 + 1; ++i) *out++ = '0';
            *out++ = '.';
            *out++ = '0';
        } else {
            for (int i = 0; i < n; ++i) {
                if (i == e10 + 1) *out++ = '.';
                *out++ = digits[i];
            }
        }
        return out;
    }
    *out++ = digits[0];
    if (n > 1) {
        *out++ = '.';
        for (int i = 1; i < n; ++i) *out++ = digits[i];
    }
    *out++ = 'e';
    *out++ = e10 < 0 ? '-' : '+';
    char exponent[8];
    const int length =
        std::snprintf(exponent, sizeof exponent, "%0*d", exponent_digits, e10 < 0 ? -e10 : e10);
    for (int i = 0; i < length; ++i) *out++ = exponent[i];
    return out;
}

// to_chars's scientific text ("-1.2345e-05", "5e-324", "0e+00") in a layout: Python's, or
// orjson's with fixed notation for fixed_min <= e10 <= fixed_max.
enum class layout { python, orjson_f32, orjson_f64 };

inline char* relayout(const char* sci, const char* sci_end, char* out, layout to = layout::python) {
    bool negative = false;
    if (*sci == '-') {
        negative = true;
        ++sci;
    }
    char digits[32];
    int n = 0;
    const char* p = sci;
    for (; p < sci_end && *p != 'e'; ++p)
        if (*p != '.') digits[n++] = *p;
    int e10 = 0;
    const bool negative_exponent = p + 1 < sci_end && p[1] == '-';
    for (const char* e = p + 2; e < sci_end; ++e) e10 = e10 * 10 + (*e - '0');
    if (negative_exponent) e10 = -e10;
    if (n == 1 && digits[0] == '0') {
        if (negative) *out++ = '-';
        std::memcpy(out, "0.0", 3);
        return out + 3;
    }
    while (n > 1 && digits[n - 1] == '0') --n;  // to_chars writes none, but be sure
    if (to == layout::orjson_f32) return layout_digits(negative, digits, n, e10, -6, 12, 1, out);
    if (to == layout::orjson_f64) return layout_digits(negative, digits, n, e10, -5, 15, 1, out);
    return layout_digits(negative, digits, n, e10, -4, 15, 2, out);
}

// What orjson writes for a float32 (numpy's, OPT_SERIALIZE_NUMPY): its shortest digits as a
// reader parsing straight to float32 needs them (to_chars's for float, with no exception).
inline char* expected_orjson_f32(float x, char* out) {
    char sci[64];
    return relayout(sci, shortest_scientific(x, sci), out, layout::orjson_f32);
}

// What orjson writes for a Python float: repr's digits.
inline char* expected_orjson_f64(double x, char* out) {
    char sci[64];
    return relayout(sci, shortest_scientific(x, sci), out, layout::orjson_f64);
}

inline char* expected_repr(double x, char* out) {
    char sci[64];
    return relayout(sci, shortest_scientific(x, sci), out);
}

// to_chars's shortest float32 digits, unless a reader that parses a double and rounds it to float32
// gets another float from them: then the correctly rounded text with one digit more, and so on
// (the rule write_shortest_f32 follows; it applies to a single value, see there).
inline char* expected_shortest_f32(float x, char* out) {
    char sci[64];
    char* end = shortest_scientific(x, sci);
    int significant = 0;
    for (const char* p = sci; p < end && *p != 'e'; ++p) significant += (*p >= '0' && *p <= '9');
    for (;;) {
        double as_double = 0;
        parse(sci, end, as_double);
        const float narrowed = static_cast<float>(as_double);
        if (std::memcmp(&narrowed, &x, 4) == 0 || significant >= 9) break;
        end = scientific_with_precision(x, significant, sci);
        ++significant;
    }
    return relayout(sci, end, out);
}

inline std::string expected_repr(double x) {
    char buf[64];
    return std::string(buf, expected_repr(x, buf));
}
inline std::string expected_shortest_f32(float x) {
    char buf[64];
    return std::string(buf, expected_shortest_f32(x, buf));
}
inline std::string expected_orjson_f32(float x) {
    char buf[64];
    return std::string(buf, expected_orjson_f32(x, buf));
}
inline std::string expected_orjson_f64(double x) {
    char buf[64];
    return std::string(buf, expected_orjson_f64(x, buf));
}

}  // namespace float_text_oracle
