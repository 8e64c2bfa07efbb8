// Tests of the JSON number parser (cpp/src/json/number_parser.hpp): the grammar with its error
// positions, Python's extra literals and int rules, overflow and subnormal edges, halfway cases of
// both roundings (to the double, then to float32), 800-digit texts, every SIMD level against the
// scalar one, and random decimal texts against the reference: glibc's strtod (correctly rounded,
// in the "C" locale this program never leaves) then the (float) cast, which is what json.loads +
// numpy do.
//
//   number_parser_tests [RANDOM_TEXTS]     (default 2,000,000 random texts)
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#define TENSORB64_TEST_GUARD_PAGES 1
#endif

#include "check.hpp"
#include "dispatch/implementation.hpp"
#include "float_text/float_text.hpp"
#include "json/number_parser.hpp"
#include "tensorb64/tensorb64.hpp"

namespace {

using tensorb64::detail::number_row;

std::uint32_t bits_of(float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}
std::uint64_t bits_of(double d) {
    std::uint64_t b;
    std::memcpy(&b, &d, 8);
    return b;
}

std::string hex(std::uint32_t b) {
    char s[16];
    std::snprintf(s, sizeof s, "0x%08x", b);
    return s;
}

// Whether a valid number text is an integer (Python makes an int of it).
bool is_integer_text(const std::string& s) { return s.find_first_of(".eE") == std::string::npos; }

// json.loads + numpy.float32 for a valid number text: the double strtod gives (correctly rounded;
// it reads NaN and Infinity too), then the (float) cast; an integer zero has no sign.
std::uint32_t reference_f32(const std::string& s) {
    const double d = std::strtod(s.c_str(), nullptr);
    if (is_integer_text(s) && d == 0) return 0;
    return bits_of(static_cast<float>(d));
}

// The row "[" + text + "]" (the parser starts after the '['), in a buffer of exactly its size:
// to float32 (parse_number_row's) or to float64 (parse_number_row_double's).
template <class T>
struct parsed_row_of {
    number_row row;
    std::vector<T> values;
    std::size_t end_offset = 0;
    std::size_t error_offset = 0;
};
using parsed_row = parsed_row_of<float>;

template <class T>
using row_parser_of = number_row (*)(const char*, const char*, T*, std::size_t) noexcept;
using row_parser = row_parser_of<float>;

template <class T>
parsed_row_of<T> parse_row(const std::string& body, row_parser_of<T> parser,
                           std::size_t capacity = 4096) {
    std::vector<char> buffer(body.begin(), body.end());  // nothing after the text to read
    if (body.empty()) buffer.resize(1);                  // (a non-null pointer)
    parsed_row_of<T> r;
    r.values.assign(capacity, T(-12345));
    const char* begin = buffer.data();
    r.row = parser(begin, begin + body.size(), r.values.data(), capacity);
    if (r.row.end) r.end_offset = static_cast<std::size_t>(r.row.end - begin);
    if (r.row.error_at) r.error_offset = static_cast<std::size_t>(r.row.error_at - begin);
    return r;
}

// One number text as the scalar row parser reads it: its float32 bits, or nothing if refused.
bool parse_one(const std::string& text, std::uint32_t* bits) {
    const parsed_row r = parse_row(text + "]", tensorb64::detail::parse_number_row_scalar, 1);
    if (r.row.end == nullptr || r.row.count != 1) return false;
    *bits = bits_of(r.values[0]);
    return true;
}

void check_value(const std::string& text, std::uint32_t expected, const char* what) {
    std::uint32_t got = 0;
    const bool ok = parse_one(text, &got);
    if (ok && got == expected) {
        ++test_check::passed;
    } else {
        test_check::report_failure(__FILE__, __LINE__,
                                   std::string(what) + ": \"" + text.substr(0, 60) + "\" read " +
                                       (ok ? hex(got) : std::string("as an error")) +
                                       ", expected " + hex(expected));
    }
}

void check_reference(const std::string& text, const char* what) {
    check_value(text, reference_f32(text), what);
}

// ---- the grammar ----

void test_valid_texts() {
    const char* texts[] = {"0",
                           "-0",
                           "1",
                           "-1",
                           "0.5",
                           "-0.0",
                           "1e5",
                           "1E5",
                           "1e+5",
                           "1e-5",
                           "1E-05",
                           "123.456e-7",
                           "10",
                           "100000000000000000000000",
                           "0.000000000000000000000000000001",
                           "1.7976931348623157e308",
                           "4.9e-324",
                           "2.2250738585072014e-308",
                           "9007199254740993",
                           "0.1",
                           "0.30000000000000004",
                           "5e-324",
                           "1e23",
                           "8.589973e9",
                           "0e0",
                           "0e-999999999999999",
                           "0.0e99999999999999999999",
                           "-0e5",
                           "0.012345678",
                           "-0.05123456783592701",
                           "1234567890123456789",
                           "12345678901234567890",
                           "0.00000000000000000000000000000000000001"};
    for (const char* t : texts) check_reference(t, "valid text");
    check_value("-0", 0x00000000u, "-0 is Python's int 0");
    check_value("-0.0", 0x80000000u, "-0.0 keeps its sign");
    check_value("-0e0", 0x80000000u, "-0e0 is a float");
    check_value("NaN", 0x7fc00000u, "NaN");
    check_value("Infinity", 0x7f800000u, "Infinity");
    check_value("-Infinity", 0xff800000u, "-Infinity");
}

struct bad_text {
    const char* body;  // after the row's '['
    std::size_t error_offset;
    const char* expected;
};

void test_invalid_texts() {
    const bad_text cases[] = {
        {"+1]", 0, "a number or ']'"},
        {"01]", 1, "',' or ']'"},
        {".5]", 0, "a number or ']'"},
        {"5.]", 2, "a digit"},
        {"5.e3]", 2, "a digit"},
        {"-]", 1, "a digit"},
        {"-a]", 1, "a digit"},
        {"1e]", 2, "a digit"},
        {"1e+]", 3, "a digit"},
        {"1E-x]", 3, "a digit"},
        {"1.5.3]", 3, "',' or ']'"},
        {"nan]", 0, "a number or ']'"},
        {"NAN]", 0, "a number or ']'"},
        {"-NaN]", 1, "a digit"},
        {"inf]", 0, "a number or ']'"},
        {"Infinit]", 0, "a number or ']'"},
        {"+Infinity]", 0, "a number or ']'"},
        {"-infinity]", 1, "a digit"},
        {"1 2]", 2, "',' or ']'"},
        {"1,]", 2, "a number"},
        {"1,", 2, "a number"},
        {"1", 1, "',' or ']'"},
        {"", 0, "a number or ']'"},
        {"[1]]", 0, "a number or ']'"},
        {"0x10]", 1, "',' or ']'"},
        {"1e5.5]", 3, "',' or ']'"},
        {"\"1\"]", 0, "a number or ']'"},
        {"1\v]", 1, "',' or ']'"},
        {"1,,2]", 2, "a number"},
        {"1 ,\t\n\r 2 x", 9, "',' or ']'"},
        {",1]", 0, "a number or ']'"},
        {"1,2,3", 5, "',' or ']'"},
        {"1.", 2, "a digit"},
        {"-", 1, "a digit"},
        {"1e", 2, "a digit"},
        {"Na", 0, "a number or ']'"},
        {"true]", 0, "a number or ']'"},
        {"null]", 0, "a number or ']'"},
        {"1,-]", 3, "a digit"},
        {"1]", 99, nullptr},  // valid (checked below)
    };
    for (const bad_text& c : cases) {
        const parsed_row r = parse_row(c.body, tensorb64::detail::parse_number_row_scalar);
        if (c.expected == nullptr) {
            CHECK(r.row.end != nullptr && r.row.error_at == nullptr);
            continue;
        }
        const bool ok = r.row.end == nullptr && r.row.error_at != nullptr &&
                        r.error_offset == c.error_offset && r.row.expected != nullptr &&
                        std::strcmp(r.row.expected, c.expected) == 0;
        if (ok) {
            ++test_check::passed;
        } else {
            test_check::report_failure(
                __FILE__, __LINE__,
                std::string("bad row \"") + c.body + "\": got " +
                    (r.row.end ? std::string("success")
                               : "error at " + std::to_string(r.error_offset) + " expecting " +
                                     (r.row.expected ? r.row.expected : "?")));
        }
    }
}

void test_rows() {
    using tensorb64::detail::parse_number_row_scalar;
    {
        const parsed_row r = parse_row(" \t\n\r]rest", parse_number_row_scalar);
        CHECK(r.row.end != nullptr && r.end_offset == 5 && r.row.count == 0);
    }
    {
        const parsed_row r = parse_row(" 1 ,\t-2.5e0\n,\r3 ]  ", parse_number_row_scalar);
        CHECK(r.row.end != nullptr && r.end_offset == 17 && r.row.count == 3);
        CHECK(r.values[0] == 1.0f && r.values[1] == -2.5f && r.values[2] == 3.0f);
    }
    {  // count past capacity: nothing written past it, the whole row still checked
        const parsed_row r = parse_row("1,2,3,4]", parse_number_row_scalar, 2);
        CHECK(r.row.end != nullptr && r.row.count == 4 && r.values.size() == 2);
        CHECK(r.values[0] == 1.0f && r.values[1] == 2.0f);
        const parsed_row bad = parse_row("1,2,3,x]", parse_number_row_scalar, 2);
        CHECK(bad.row.end == nullptr && bad.error_offset == 6 && bad.row.count == 3);
    }
    {  // `end` cuts the text: nothing at or past it is read (the digits after it would be valid)
        const std::string text = "0.1234567890123,2]";
        for (std::size_t cut = 0; cut < text.size(); ++cut) {
            std::vector<char> buffer(text.begin(), text.end());
            float out[4];
            const number_row r = tensorb64::detail::parse_number_row_scalar(
                buffer.data(), buffer.data() + cut, out, 4);
            CHECK(r.end == nullptr && r.error_at == buffer.data() + cut);
        }
    }
    {  // parse_number: the double, the end of the text, nullptr where no number is
        const std::string text = "-12.5e-1,";
        double d = 0;
        const char* end =
            tensorb64::detail::parse_number(text.data(), text.data() + text.size(), &d);
        CHECK(end == text.data() + 8 && d == -1.25);
        const std::string zero = "-0]";
        end = tensorb64::detail::parse_number(zero.data(), zero.data() + zero.size(), &d);
        CHECK(end == zero.data() + 2 && bits_of(d) == 0);
        const std::string leading = "0123";
        end = tensorb64::detail::parse_number(leading.data(), leading.data() + 4, &d);
        CHECK(end == leading.data() + 1 && d == 0);
        for (const char* bad : {"-", "1.", "1e+", ".5", "x", "", "Inf"}) {
            CHECK(tensorb64::detail::parse_number(bad, bad + std::strlen(bad), &d) == nullptr);
        }
        const std::string third = "0.1";
        end = tensorb64::detail::parse_number(third.data(), third.data() + 3, &d);
        CHECK(end == third.data() + 3 && bits_of(d) == bits_of(0.1));
    }
}

// ---- Python's limits, overflow, subnormals, halfway cases ----

void test_python_int_rules() {
    std::uint32_t bits;
    // An integer of more than 4300 digits is refused by Python's int(); one too large for a
    // double by numpy's float(int). A float text of any length is fine.
    CHECK(!parse_one("1" + std::string(4300, '0'), &bits));
    const parsed_row limit =
        parse_row("1" + std::string(4300, '0') + "]", tensorb64::detail::parse_number_row_scalar);
    CHECK(limit.row.error_at != nullptr && limit.error_offset == 0 &&
          std::strstr(limit.row.expected, "4300") != nullptr);
    const parsed_row big =
        parse_row("1" + std::string(400, '0') + "]", tensorb64::detail::parse_number_row_scalar);
    CHECK(big.row.error_at != nullptr && big.error_offset == 0 &&
          std::strstr(big.row.expected, "2^1024") != nullptr);
    check_value("1" + std::string(4300, '0') + ".0", 0x7f800000u, "long float text");
    check_value("1" + std::string(4400, '0') + "e-4400", 0x3f800000u, "long float text");
    check_value("1" + std::string(308, '0'), 0x7f800000u, "10^308 as an int");
    check_value("-1" + std::string(308, '0'), 0xff800000u, "-10^308 as an int");
    // The largest double as an integer, and the integers just below and at 2^1024 - 2^970 (the
    // midpoint between it and 2^1024, which rounds up: float() overflows).
    char max_text[400];
    std::snprintf(max_text, sizeof max_text, "%.0f", DBL_MAX);
    check_value(max_text, 0x7f800000u, "DBL_MAX as an int");
    CHECK(!parse_one("1" + std::string(309, '0'), &bits));  // 10^309 > 2^1024
}

void test_edges() {
    check_value("1e400", 0x7f800000u, "overflow");
    check_value("-1e400", 0xff800000u, "overflow");
    check_value("1e99999999999999999999999", 0x7f800000u, "overflow");
    check_value("1e-400", 0u, "underflow");
    check_value("-1e-400", 0x80000000u, "underflow keeps the sign");
    check_value("3.4028234663852886e38", 0x7f7fffffu, "FLT_MAX");
    // FLT_MAX + half its ulp = 2^128 - 2^103 is a double: a tie, to even = infinity.
    check_value("3.4028235677973366e38", 0x7f800000u, "FLT_MAX + half ulp");
    check_value("3.4028235677973362e38", 0x7f7fffffu, "just below FLT_MAX + half ulp");
    check_value("1.401298464324817e-45", 0x00000001u, "least float32 subnormal");
    check_value("1e-45", 0x00000001u, "least float32 subnormal, shortest");
    check_value("1.1754942e-38", 0x007fffffu, "largest float32 subnormal");
    check_value("1.1754944e-38", 0x00800000u, "least float32 normal");
    // 2^-150, half the least subnormal, exactly: a tie to even (zero); the next double above it
    // rounds up.
    char text[1200];
    std::snprintf(text, sizeof text, "%.1100g", std::ldexp(1.0, -150));
    check_value(text, 0u, "2^-150 exactly");
    std::snprintf(text, sizeof text, "%.17g", std::nextafter(std::ldexp(1.0, -150), 1.0));
    check_value(text, 1u, "just above 2^-150");
    check_value("4.9406564584124654e-324", 0u, "least double subnormal");
    check_value("2.4703282292062328e-324", 0u, "below half the least double subnormal");
    check_reference(
        "2.4703282292062327208828439643411068618252990130716238221279284125033775364"
        "5e-324",
        "half the least double subnormal");
    check_reference(
        "2.47032822920623272088284396434110686182529901307162382212792841250337753645"
        "1e-324",
        "just above half the least double subnormal");
    // The double rounding that the contract asks for: 7.038531e-26 is read as the double nearest
    // it, which lies on the float32 midpoint between 0x15ae43fd and 0x15ae43fe; ties to even give
    // 0x15ae43fe, although the text is nearer 0x15ae43fd (what a direct float32 reader gives).
    check_value("7.038531e-26", 0x15ae43feu, "double rounding");
    CHECK(bits_of(std::strtof("7.038531e-26", nullptr)) == 0x15ae43fdu);
    // Halfway between two doubles, 9007199254740993 = 2^53 + 1 goes to even 2^53; both ties
    // land on a float32 value anyway, so check the doubles via parse_number.
    double d;
    const char* t = "9007199254740993";
    CHECK(tensorb64::detail::parse_number(t, t + std::strlen(t), &d) && d == 9007199254740992.0);
    t = "9007199254740995";
    CHECK(tensorb64::detail::parse_number(t, t + std::strlen(t), &d) && d == 9007199254740996.0);
    t = "9007199254740993.0000000000000000000000000000000000000000000000000000001";
    CHECK(tensorb64::detail::parse_number(t, t + std::strlen(t), &d) && d == 9007199254740994.0);
}

// ---- random texts against the reference ----

// Exact decimal text of a long double (glibc prints it exactly given enough digits).
std::string exact_text(long double x) {
    std::vector<char> text(1300);
    std::snprintf(text.data(), text.size(), "%.1200Lg", x);
    return text.data();
}

// A JSON number text with this many significant digits (the first nonzero), a random point and a
// random exponent around `center`.
std::string random_decimal(std::mt19937_64& rng, int digits, int center, int spread) {
    std::string s;
    if (rng() & 1) s += '-';
    std::string mantissa(static_cast<std::size_t>(digits), '0');
    for (char& c : mantissa) c = static_cast<char>('0' + rng() % 10);
    mantissa[0] = static_cast<char>('1' + rng() % 9);
    if (rng() % 4 == 0) {  // runs of zeros and nines: near the rounding boundaries
        const std::size_t from = 1 + rng() % static_cast<std::size_t>(digits);
        const char fill = (rng() & 1) ? '0' : '9';
        for (std::size_t i = from; i < mantissa.size(); ++i) mantissa[i] = fill;
        if (rng() & 1 && from < mantissa.size())
            mantissa.back() = static_cast<char>('1' + rng() % 9);
    }
    const int point =
        static_cast<int>(rng() % static_cast<unsigned>(digits + 1));  // integer digits
    int exponent = center - point + 1 +
                   static_cast<int>(rng() % static_cast<unsigned>(2 * spread + 1)) - spread;
    if (point == 0) {
        const int zeros = static_cast<int>(rng() % 4);
        s += "0." + std::string(static_cast<std::size_t>(zeros), '0') + mantissa;
        exponent += zeros;
    } else {
        s += mantissa.substr(0, static_cast<std::size_t>(point));
        if (point < digits) s += "." + mantissa.substr(static_cast<std::size_t>(point));
    }
    const unsigned style = rng() % 8;
    if (style == 0 && point == digits && exponent >= 0 && exponent < 40) {
        s += std::string(static_cast<std::size_t>(exponent), '0');  // an integer text
    } else if (style != 1 || exponent != 0) {
        s += (rng() & 1) ? 'e' : 'E';
        if (exponent >= 0 && (rng() & 1)) s += '+';
        s += std::to_string(exponent);
    }
    return s;
}

void test_random(long texts) {
    std::mt19937_64 rng(20261130);
    long mismatches = 0;
    const auto compare = [&](const std::string& text) {
        std::uint32_t got = 0;
        const std::uint32_t expected = reference_f32(text);
        bool ok = parse_one(text, &got);
        if (is_integer_text(text) && std::isinf(std::strtod(text.c_str(), nullptr))) {
            ok = !ok;  // refused, as numpy's float(int) raises
            got = expected;
        }
        if (ok && got == expected) {
            ++test_check::passed;
            return;
        }
        ++mismatches;
        test_check::report_failure(__FILE__, __LINE__,
                                   "random text \"" + text.substr(0, 90) + "\" read " +
                                       (ok ? hex(got) : std::string("as an error")) +
                                       ", expected " + hex(expected));
    };
    const bool exact_midpoints = std::numeric_limits<long double>::digits >= 64;
    for (long i = 0; i < texts; ++i) {
        const unsigned kind = static_cast<unsigned>(i % 10);
        if (kind <= 2) {  // float32 range, up to 25 digits
            compare(random_decimal(rng, 1 + static_cast<int>(rng() % 25), -20, 30));
        } else if (kind == 3) {  // the edges of float32's range
            compare(
                random_decimal(rng, 1 + static_cast<int>(rng() % 20), (rng() & 1) ? 38 : -45, 2));
        } else if (kind == 4) {  // the whole double range and past it
            compare(random_decimal(rng, 1 + static_cast<int>(rng() % 20), 0, 345));
        } else if (kind == 5) {  // long texts, up to 800 digits
            compare(random_decimal(rng, 1 + static_cast<int>(rng() % 800), 0, 330));
        } else if (kind == 6) {  // a random float32's texts: shortest and repr
            const std::uint32_t b = static_cast<std::uint32_t>(rng()) & 0x7f7fffffu;
            char buffer[64];
            char* e = tensorb64::write_shortest_f32(b, buffer);
            compare(std::string(buffer, e));
            e = tensorb64::write_repr(tensorb64::f32_bits_to_f64_bits(b), buffer);
            compare(std::string(buffer, e));
        } else if (exact_midpoints) {
            // Halfway cases: the midpoint between two adjacent float32 values (a double: a tie
            // for the float32 rounding) and between that double and its neighbours (ties for the
            // double rounding), exactly and one unit of the last digit above; also the midpoint
            // between two random adjacent doubles (up to ~770 digits for subnormals).
            double low;
            if (kind == 9) {
                std::uint64_t db = rng() & 0x7fefffffffffffffull;
                if (rng() % 4 == 0) db &= 0x000fffffffffffffull;  // subnormal doubles
                std::memcpy(&low, &db, 8);
            } else {
                std::uint32_t fb = static_cast<std::uint32_t>(rng()) & 0x7f7ffffeu;
                if (rng() % 8 == 0) fb &= 0x00ffffffu;  // subnormal and least normal float32
                float f, g;
                std::memcpy(&f, &fb, 4);
                g = std::nextafter(f, std::numeric_limits<float>::infinity());
                const double mid = (static_cast<double>(f) + static_cast<double>(g)) / 2;
                low = kind == 7 ? mid : (rng() & 1) ? std::nextafter(mid, 0.0) : mid;
            }
            const long double tie = (static_cast<long double>(low) +
                                     static_cast<long double>(std::nextafter(low, 1e308))) /
                                    2;
            std::string text = exact_text(kind == 7 ? static_cast<long double>(low) : tie);
            compare(text);
            const std::size_t e = text.find('e');
            std::string above = text;
            if (above.find('.') == std::string::npos) {
                above.insert(e == std::string::npos ? above.size() : e, ".000001");
            } else {
                above.insert(e == std::string::npos ? above.size() : e, "1");
            }
            compare(above);
        } else {
            compare(random_decimal(rng, 17, -10, 10));
        }
    }
    std::printf("random texts: %ld checked, %ld mismatches\n", texts, mismatches);
}

// ---- every level against the scalar one ----

// One number's text for a row: the kinds a body holds (the writer's layouts of embedding-like
// values, 17-digit texts next to float32 midpoints, exponents, integers, Python's literals, long
// digit strings) and some that are wrong.
std::string random_row_number(std::mt19937_64& rng) {
    char buffer[64];
    const unsigned kind = static_cast<unsigned>(rng() % 20);
    if (kind < 8) {  // the writer's texts of values like an embedding's, or of any float32
        std::uint32_t b = static_cast<std::uint32_t>(rng());
        if (kind < 6) {
            const float x =
                static_cast<float>(static_cast<std::int64_t>(rng() % 2000001) - 1000000) *
                (rng() % 4 == 0 ? 3e-9f : 3e-7f);
            std::memcpy(&b, &x, 4);
        }
        b &= 0xff7fffffu;  // finite
        char* e = (kind & 1) ? tensorb64::write_shortest_f32(b, buffer)
                             : tensorb64::write_repr(tensorb64::f32_bits_to_f64_bits(b), buffer);
        return std::string(buffer, e);
    }
    if (kind < 11) {  // next to a float32 midpoint: 16 to 18 significant digits
        float f = static_cast<float>(static_cast<std::int64_t>(rng() % 2000001) - 1000000) * 3e-7f;
        const float g = std::nextafter(f, 2.0f);
        double mid = (static_cast<double>(f) + static_cast<double>(g)) / 2;
        for (unsigned steps = static_cast<unsigned>(rng() % 5); steps > 0; --steps) {
            mid = std::nextafter(mid, (rng() & 1) ? 2.0 : -2.0);
        }
        std::snprintf(buffer, sizeof buffer, "%.*f", 15 + static_cast<int>(rng() % 6), mid);
        return buffer;
    }
    if (kind < 14) return random_decimal(rng, 1 + static_cast<int>(rng() % 30), -3, 5);
    if (kind == 14) {
        const char* specials[] = {"NaN", "Infinity", "-Infinity", "-0",  "0",     "0.0", "-0.0",
                                  "1",   "12",       "-7",        "0.5", "10.25", "100"};
        return specials[rng() % (sizeof specials / sizeof specials[0])];
    }
    if (kind == 15) return "0." + std::string(20 + rng() % 20, '1');  // past the fast path's limits
    std::string t = random_row_number(rng);
    if (kind == 16 && !t.empty()) {  // one byte wrong
        const char bytes[] = "0123456789.-+eE ,]x\n";
        t[rng() % t.size()] = bytes[rng() % (sizeof bytes - 1)];
    }
    if (kind == 17 && t.size() > 1) t.erase(rng() % t.size(), 1);
    return t;
}

template <class T>
bool same_row(const parsed_row_of<T>& a, const parsed_row_of<T>& b, std::size_t capacity) {
    if ((a.row.end == nullptr) != (b.row.end == nullptr) || a.end_offset != b.end_offset ||
        a.row.count != b.row.count || (a.row.error_at == nullptr) != (b.row.error_at == nullptr) ||
        a.error_offset != b.error_offset) {
        return false;
    }
    if ((a.row.expected == nullptr) != (b.row.expected == nullptr) ||
        (a.row.expected && std::strcmp(a.row.expected, b.row.expected) != 0)) {
        return false;
    }
    const std::size_t n = a.row.count < capacity ? a.row.count : capacity;
    // n == 0 first: an empty row's vectors may hold no storage (data() null), and memcmp must not
    // be handed a null pointer even for zero bytes.
    return n == 0 || std::memcmp(a.values.data(), b.values.data(), n * sizeof(T)) == 0;
}

// A text the SIMD levels' vector paths must send to the scalar parser, or must take at their
// limits: the AVX-512 short path's (four numbers of at most 15 bytes to a vector: lengths 15 and
// 16) and long path's (a 16-byte head and a tail of digits: lengths 16, 17, 32 and 33, the point
// at the head's end, a non-digit in the tail), the AVX2 path's and AVX-512 parse_row's (at most 25
// bytes and 22 digits after the point: lengths 25 and 26, 22 and 23 digits), the shape's edges and
// near misses.
std::string vector_path_edge(std::mt19937_64& rng) {
    const char* const edges[] = {"0.1234567890123",
                                 "1234567890123.4",
                                 "9999999999999.9",
                                 "-0.000000000000",
                                 "-999999999999.99",
                                 "12345678901234.5",
                                 "-1234567890123.4",
                                 "0.00000000000001",
                                 "-0.0000000000001",
                                 "00.5",
                                 "-.5",
                                 "1.",
                                 ".5",
                                 "-",
                                 "--1.0",
                                 "1.5.3",
                                 "+1.5",
                                 "1.5-",
                                 "0.5 ",
                                 " 0.5",
                                 "1e5",
                                 "1.5e-05",
                                 "-1E+2",
                                 "0",
                                 "-0",
                                 "12",
                                 "NaN",
                                 "-Infinity",
                                 "",
                                 "0.5]",
                                 "]",
                                 "0.5\"",
                                 "1.0000000000000000000001",
                                 "0.12345678901234",
                                 "-0.1234567890123",
                                 "0.046278715133666992",
                                 "-0.046278715133666992",
                                 "123456789012345.5",
                                 "12345678901234.56",
                                 "0.123456789012345e5",
                                 "0.1234567890123456.7",
                                 "0.12345678901234567-",
                                 "0.0000000000000000000000000001",
                                 "0.000000000000000000000000000012",
                                 "-0.00000000000000000000000000001",
                                 "99999999999999.99999999",
                                 "0.9999999999999999999",
                                 "1.00000000000000006",
                                 "0.1234567890123456 ",
                                 "0.12345678901234567\t",
                                 "0.1234567890123456789012",
                                 "0.12345678901234567890123",
                                 "-0.1234567890123456789012",
                                 "-0.12345678901234567890123",
                                 "1.23456789012345678901234",
                                 "0.0000000000000000000001",
                                 "0.00000000000000000000001",
                                 "-0.0000000000000000000009",
                                 "0.00000000000000000000009"};
    return edges[rng() % (sizeof edges / sizeof edges[0])];
}

// A text the float64 rows' vector path must decide as the scalar parser does: a double's repr
// (17 digits: w above 2^53), texts next to the midpoint of two doubles (which the lanes' rounding
// decides, or leaves to the scalar parser), exact values: ties between doubles (which only the
// scalar parser's exact step decides: 2^52 + 0.5, 2^53 + 1), doubles themselves (0.5, 1.5) and a
// point a quarter of the way between two (2^54 + 1), 19 and 20 digits (w near 2^64), and integers
// (which the float64 rows refuse above 15 digits).
std::string double_path_edge(std::mt19937_64& rng) {
    char buffer[96];
    const unsigned kind = static_cast<unsigned>(rng() % 6);
    if (kind == 0) {  // a random double of an embedding's range, as json.dumps writes it
        const double x =
            (static_cast<double>(rng() >> 11) * 0x1p-53 * 2 - 1) * (rng() % 4 == 0 ? 1e-3
                                                                    : rng() % 2    ? 1.0
                                                                                   : 1e4);
        char* e = tensorb64::write_repr(bits_of(x), buffer);
        return std::string(buffer, e);
    }
    if (kind == 1) {  // next to the midpoint of two adjacent doubles (exact where long double
                      // is wider than double, as on x86-64 Linux; elsewhere near it)
        const double x = static_cast<double>(rng() >> 11) * 0x1p-53 * (rng() % 2 ? 1.0 : 1000.0);
        long double mid =
            (static_cast<long double>(x) + static_cast<long double>(std::nextafter(x, 2e9))) / 2;
        const int digits = 17 + static_cast<int>(rng() % 6);
        std::snprintf(buffer, sizeof buffer, "%.*Lf", digits, mid);
        std::string t = buffer;
        // Fewer places than the midpoint needs: the text falls just below or above it.
        t.resize(std::min<std::size_t>(t.size(), t.find('.') + 1 + (rng() % 22)));
        if (t.back() == '.') t += '5';
        return t;
    }
    if (kind == 2) {
        const char* const ties[] = {"4503599627370496.5",
                                    "4503599627370497.5",
                                    "9007199254740993.0",
                                    "9007199254740995.0",
                                    "-4503599627370496.5",
                                    "0.5",
                                    "0.25",
                                    "1.5",
                                    "18014398509481985.0",
                                    "2251799813685248.25"};
        return ties[rng() % (sizeof ties / sizeof ties[0])];
    }
    if (kind == 3) {  // 19 or 20 digits, w just below and above 2^64 = 18446744073709551616
        const char* const wide[] = {"0.18446744073709551615",  "0.18446744073709551616",
                                    "1.8446744073709551615",   "0.9999999999999999999",
                                    "-0.12345678901234567890", "9.9999999999999999999",
                                    "184467440737.09551615",   "0.00000000000000000001"};
        return wide[rng() % (sizeof wide / sizeof wide[0])];
    }
    if (kind == 4) {  // integers at the float64 rows' 15-digit limit
        const char* const integers[] = {
            "999999999999999",  "1000000000000000", "-999999999999999", "0", "-0",
            "12345678901234567"};
        return integers[rng() % (sizeof integers / sizeof integers[0])];
    }
    return random_decimal(rng, 15 + static_cast<int>(rng() % 8), -2, 3);
}

// Every level's row parser of one kind (float32 rows: parse_number_row; float64 rows:
// parse_number_row_double) against the scalar level's.
template <class T>
void test_levels(long rows, const char* kind,
                 row_parser_of<T> (*parser_of)(const tensorb64::implementation&),
                 row_parser_of<T> scalar) {
    std::vector<std::pair<const char*, row_parser_of<T>>> levels;
    for (tensorb64::simd_level level : tensorb64::available_simd_levels()) {
        const tensorb64::implementation& k = tensorb64::implementation_for(level);
        CHECK(parser_of(k) != nullptr);
        if (parser_of(k) != nullptr) levels.emplace_back(k.name, parser_of(k));
    }
    CHECK(parser_of(tensorb64::scalar_implementation) == scalar);
    constexpr bool float64 = sizeof(T) == 8;
    long numbers = 0, mismatches = 0;
    // Every level's result on `text` against the scalar level's.
    auto compare = [&](const std::string& text, std::size_t capacity) {
        const parsed_row_of<T> reference = parse_row(text, scalar, capacity);
        for (const auto& level : levels) {
            const parsed_row_of<T> got = parse_row(text, level.second, capacity);
            if (same_row(got, reference, capacity)) {
                ++test_check::passed;
            } else if (++mismatches <= 10) {
                test_check::report_failure(__FILE__, __LINE__,
                                           std::string(kind) + " level " + level.first +
                                               " differs from scalar on \"" + text.substr(0, 200) +
                                               "\" (capacity " + std::to_string(capacity) + ")");
            } else {
                ++test_check::failed;
            }
        }
    };
    auto embedding_like = [](std::mt19937_64& rng, bool shortest, std::string* text) {
        char buffer[64];
        const float x =
            static_cast<float>(static_cast<std::int64_t>(rng() % 2000001) - 1000000) * 3e-7f;
        std::uint32_t b;
        std::memcpy(&b, &x, 4);
        char* e = shortest ? tensorb64::write_shortest_f32(b, buffer)
                           : tensorb64::write_repr(tensorb64::f32_bits_to_f64_bits(b), buffer);
        text->append(buffer, e);
    };
    std::mt19937_64 rng(7);
    for (long r = 0; r < rows; ++r) {
        const std::size_t n = rng() % 4 == 0 ? rng() % 12 : rng() % 100;
        const bool clean = rng() % 2 == 0;  // only the writer's texts, comma-separated
        std::string text = (rng() % 16 == 0) ? " " : "";
        for (std::size_t i = 0; i < n; ++i) {
            // The clean rows in orjson's layout and in json.dumps's (", "); the others with any
            // whitespace around the commas.
            const char* const spaced[] = {", ", ",  ", " ,\n", ",\t"};
            if (i > 0) {
                text += clean ? ((r & 2) ? ", " : ",") : rng() % 16 != 0 ? "," : spaced[rng() % 4];
            }
            if (clean) {
                if (float64 && rng() % 4 == 0) {
                    text += double_path_edge(rng);
                } else {
                    embedding_like(rng, r & 1, &text);
                }
            } else {
                text += random_row_number(rng);
            }
        }
        text += rng() % 32 == 0 ? " ]" : "]";
        if (rng() % 8 == 0) text.resize(rng() % (text.size() + 1));  // cut short
        if (rng() % 4 == 0) text += ",[1,2]";                        // what follows the row
        numbers += static_cast<long>(n);
        compare(text, rng() % 4 == 0 ? rng() % (n + 2) : n);
    }
    // Rows in orjson's layout (the short path's) and json.dumps's (the long path's) with now and
    // then a text of another kind, one of the paths' edges, or another space or a newline around a
    // comma: the AVX-512 paths meet each in full flight.
    for (long r = 0; r < rows / 2; ++r) {
        const bool shortest = r % 2 == 0;
        const char* const comma = shortest ? "," : ", ";
        const std::size_t n = 8 + rng() % 120;
        const unsigned odd_one_in = 1 + static_cast<unsigned>(rng() % 64);
        std::string text;
        for (std::size_t i = 0; i < n; ++i) {
            if (i > 0) {
                const char* const odd_commas[] = {", ", ",\n", ",", ",  ", " , "};
                text += rng() % (4 * odd_one_in) == 0 ? odd_commas[rng() % 5] : comma;
            }
            if (rng() % odd_one_in != 0) {
                embedding_like(rng, shortest, &text);
            } else {
                const unsigned which = static_cast<unsigned>(rng() % (float64 ? 3 : 2));
                text += which == 0   ? vector_path_edge(rng)
                        : which == 1 ? random_row_number(rng)
                                     : double_path_edge(rng);
            }
        }
        text += "]";
        if (rng() % 8 == 0) text.resize(rng() % (text.size() + 1));
        if (rng() % 2 == 0)
            text += rng() & 1 ? ",\"index\":0},{\"embedding\":[1.5,2.5]" : ",1,2,3]";
        numbers += static_cast<long>(n);
        compare(text, rng() % 4 == 0 ? rng() % (n + 2) : n);
    }
    // The AVX-512 paths for numbers below one (-?0\.[0-9]+, a step of eight at a time): rows of
    // such numbers with one other text at each place of their first three steps, at the lanes'
    // limits (16 bytes) and just past them, and near misses of the shape.
    const char* const below_one_edges[] = {"0.12345678901234",
                                           "0.123456789012345",
                                           "-0.1234567890123",
                                           "-0.12345678901234",
                                           "0.0",
                                           "-0.0",
                                           "0.",
                                           "-0.",
                                           "0",
                                           "-0",
                                           "00.5",
                                           "-00.5",
                                           "0.5e1",
                                           "0.5E-1",
                                           "1.5",
                                           "-1.5",
                                           "9.0",
                                           "0.-5",
                                           "0..5",
                                           "-0.-5",
                                           ".5",
                                           "-.5",
                                           "0.5 ",
                                           " 0.5",
                                           "+0.5",
                                           "0x5",
                                           "0.5]",
                                           "-0.00000000000001",
                                           "0.00000000000000",
                                           "0.0000000000000000001"};
    for (const char* edge : below_one_edges) {
        for (int place = 0; place < 24; ++place) {
            for (const bool shortest : {true, false}) {
                std::string text;
                for (int i = 0; i < 40; ++i) {
                    if (i > 0) text += shortest ? "," : ", ";
                    if (i == place) {
                        text += edge;
                    } else {
                        embedding_like(rng, shortest, &text);
                    }
                }
                text += "]";
                numbers += 40;
                compare(text, 40);
            }
        }
    }
    std::printf("%s levels:", kind);
    for (const auto& level : levels) std::printf(" %s", level.first);
    std::printf(" against scalar: %ld rows, %ld numbers, %ld mismatches\n", rows + rows / 2,
                numbers, mismatches);
}

#if defined(TENSORB64_TEST_GUARD_PAGES)
// Rows whose text starts on the first byte after an inaccessible page and ends on the last byte
// before another, at every level: a load before the row's start or at its end faults. (The AVX-512
// level loads each number's 32-byte window ending at its separator, which begins before the row.)
template <class T>
void test_guard_pages(const char* kind,
                      row_parser_of<T> (*parser_of)(const tensorb64::implementation&),
                      row_parser_of<T> scalar) {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    char* const base = static_cast<char*>(
        mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    CHECK(base != MAP_FAILED);
    if (base == MAP_FAILED) return;
    CHECK(mprotect(base, page, PROT_NONE) == 0 && mprotect(base + 2 * page, page, PROT_NONE) == 0);
    char* const first = base + page;
    std::mt19937_64 rng(11);
    std::vector<T> values(page);
    long rows = 0;
    for (tensorb64::simd_level level : tensorb64::available_simd_levels()) {
        const row_parser_of<T> parse = parser_of(tensorb64::implementation_for(level));
        for (int r = 0; r < 300; ++r) {
            std::string text;
            const std::size_t n = 1 + rng() % 40;
            for (std::size_t i = 0; i < n; ++i) {
                if (i > 0) text += r % 2 ? ", " : ",";
                char buffer[64];
                const float x = static_cast<float>(static_cast<std::int64_t>(rng() % 2001) - 1000) *
                                (i % 3 == 0 ? 3e-7f : 1.3e-2f);
                std::uint32_t b;
                std::memcpy(&b, &x, 4);
                char* e = r % 4 < 2
                              ? tensorb64::write_shortest_f32(b, buffer)
                              : tensorb64::write_repr(tensorb64::f32_bits_to_f64_bits(b), buffer);
                text.append(buffer, e);
            }
            text += ']';
            const parsed_row_of<T> reference = parse_row(text, scalar, values.size());
            for (char* const begin : {first, first + page - text.size()}) {
                std::memcpy(begin, text.data(), text.size());
                const number_row got =
                    parse(begin, begin + text.size(), values.data(), values.size());
                CHECK(got.end == begin + text.size() && got.count == n &&
                      std::memcmp(values.data(), reference.values.data(), n * sizeof(T)) == 0);
                // Cut short: the text ends (at the page) inside a number or after a comma.
                const std::size_t cut = 1 + rng() % (text.size() - 1);
                char* const cut_begin = first + page - cut;
                std::memcpy(cut_begin, text.data(), cut);
                const parsed_row_of<T> cut_reference =
                    parse_row(text.substr(0, cut), scalar, values.size());
                const number_row cut_got =
                    parse(cut_begin, cut_begin + cut, values.data(), values.size());
                CHECK(cut_got.end == nullptr && cut_got.error_at != nullptr &&
                      cut_got.error_at - cut_begin ==
                          static_cast<std::ptrdiff_t>(cut_reference.error_offset));
                ++rows;
            }
        }
    }
    munmap(base, 3 * page);
    std::printf("guard pages (%s): %ld rows at both ends of a page, every level\n", kind, rows);
}
#endif

}  // namespace

int main(int argc, char** argv) {
    const long random_texts = argc > 1 ? std::atol(argv[1]) : 2000000;
    test_valid_texts();
    test_invalid_texts();
    test_rows();
    test_python_int_rules();
    test_edges();
    test_random(random_texts);
    test_levels<float>(
        random_texts / 20, "float32",
        [](const tensorb64::implementation& k) { return k.parse_number_row; },
        tensorb64::detail::parse_number_row_scalar);
    test_levels<double>(
        random_texts / 20, "float64",
        [](const tensorb64::implementation& k) { return k.parse_number_row_double; },
        tensorb64::detail::parse_number_row_double_scalar);
#if defined(TENSORB64_TEST_GUARD_PAGES)
    test_guard_pages<float>(
        "float32", [](const tensorb64::implementation& k) { return k.parse_number_row; },
        tensorb64::detail::parse_number_row_scalar);
    test_guard_pages<double>(
        "float64", [](const tensorb64::implementation& k) { return k.parse_number_row_double; },
        tensorb64::detail::parse_number_row_double_scalar);
#endif
    std::printf("%ld passed, %ld failed\n", test_check::passed, test_check::failed);
    return test_check::failed == 0 ? 0 : 1;
}
