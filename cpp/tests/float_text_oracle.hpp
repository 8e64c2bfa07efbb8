// The reference the float-text tests compare against, written apart from the fast code:
// std::to_chars's shortest scientific text (libstdc++: Ryu) for the digits, and Python's repr
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
    const std::to_chars_result r =
        std::to_chars(sci, sci + sizeof sci, x, std::chars_format::scientific);
    return relayout(sci, r.ptr, out, layout::orjson_f32);
}

// What orjson writes for a Python float: repr's digits.
inline char* expected_orjson_f64(double x, char* out) {
    char sci[64];
    const std::to_chars_result r =
        std::to_chars(sci, sci + sizeof sci, x, std::chars_format::scientific);
    return relayout(sci, r.ptr, out, layout::orjson_f64);
}

inline char* expected_repr(double x, char* out) {
    char sci[64];
    const std::to_chars_result r =
        std::to_chars(sci, sci + sizeof sci, x, std::chars_format::scientific);
    return relayout(sci, r.ptr, out);
}

// to_chars's shortest float32 digits, unless a reader that parses a double and rounds it to float32
// gets another float from them: then the correctly rounded text with one digit more, and so on
// (the rule write_shortest_f32 follows; it applies to a single value, see there).
inline char* expected_shortest_f32(float x, char* out) {
    char sci[64];
    std::to_chars_result r = std::to_chars(sci, sci + sizeof sci, x, std::chars_format::scientific);
    int significant = 0;
    for (const char* p = sci; p < r.ptr && *p != 'e'; ++p) significant += (*p >= '0' && *p <= '9');
    for (;;) {
        double as_double = 0;
        std::from_chars(sci, r.ptr, as_double);
        const float narrowed = static_cast<float>(as_double);
        if (std::memcmp(&narrowed, &x, 4) == 0 || significant >= 9) break;
        r = std::to_chars(sci, sci + sizeof sci, x, std::chars_format::scientific, significant);
        ++significant;
    }
    return relayout(sci, r.ptr, out);
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
