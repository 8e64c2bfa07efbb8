// The scalar JSON number parser (number_parser.hpp), and the slow paths every level shares.
//
// A number's text is read once: the grammar checked, its first 19 significant digits gathered in
// a 64-bit integer w (eight at a time where eight digits follow: SWAR), its decimal exponent q.
// Then, in integer arithmetic only:
//  1. w * 10^q rounded to a double by Eisel-Lemire (D. Lemire, "Number Parsing at a Gigabyte per
//     Second", 2021): w times a 128-bit floor of 10^q (number_parser_pow10.hpp). Exact for
//     0 <= q <= 27 (the table entry is exact), otherwise the product is known to within 4 units of
//     its last 64 bits, and it is decided unless those 4 units could cross a rounding boundary
//     (about 1 in 2^70 of inexact inputs). Texts with more than 19 significant digits: the value
//     lies strictly between w * 10^q and (w + 1) * 10^q; decided when both round alike.
//  2. An exact value w / 5^-q * 2^q (0.5, 2.5, 1.0, and every exact tie), which Eisel-Lemire
//     leaves undecided by construction, by one integer division.
//  3. Anything still undecided: the exact decimal (up to 800 digits and a flag for nonzero ones
//     beyond, enough to decide every halfway case), shifted by powers of two until the binary
//     point is found, then rounded — the algorithm of Go's strconv (decimal.go). Slow, always
//     right, and rare.
//  4. The double rounded to float32 (nearest, ties to even), again in integers.
// Integer arithmetic only, so that the caller's rounding mode and FTZ/DAZ cannot change a bit.
#include "json/number_parser.hpp"
#include "tensorb64/body_reader.hpp"

#include <cstdint>
#include <cstring>

#include "common/host.hpp"
#include "common/integer_math.hpp"
#include "dispatch/dispatch.hpp"
#include "json/number_parser_pow10.hpp"
#include "json/whitespace.hpp"

namespace tensorb64 {
namespace detail {
namespace {

using integer_math::leading_zeros;
using integer_math::mul_high;
using json::skip_space;

constexpr std::uint64_t kInfinityBits = 0x7ff0000000000000ull;
constexpr std::uint64_t kNanBits = 0x7ff8000000000000ull;  // Python's float('nan')
constexpr std::uint64_t kUndecided = ~0ull;                // no double magnitude has these bits
constexpr int kPythonIntMaxDigits = 4300;  // sys.get_int_max_str_digits()'s default (3.11+)

constexpr const char* kExpectDigit = "a digit";
constexpr const char* kExpectNumber = "a number";

inline bool is_digit(char c) noexcept { return static_cast<unsigned char>(c - '0') < 10; }

// ---- eight digits at a time (SWAR) ----

inline std::uint64_t load_chars8(const char* p) noexcept {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    return host_byte_order == byte_order::big ? byteswap(v) : v;  // first character lowest
}

// Whether all 8 characters are '0'..'9': each byte's high nibble is 3, and adding 6 keeps it so.
inline bool is_eight_digits(std::uint64_t chars) noexcept {
    return ((chars & 0xf0f0f0f0f0f0f0f0ull) |
            (((chars + 0x0606060606060606ull) & 0xf0f0f0f0f0f0f0f0ull) >> 4)) ==
           0x3333333333333333ull;
}

// Their value: pairs, then quads, then the eight, each a multiply that adds neighbouring lanes.
inline std::uint32_t eight_digits_value(std::uint64_t chars) noexcept {
    std::uint64_t v = chars - 0x3030303030303030ull;
    v = (v * 10) + (v >> 8);  // byte pairs: 10 * d[2i] + d[2i+1] in the even bytes
    v = (((v & 0x000000ff000000ffull) * (100 + (1000000ull << 32))) +
         (((v >> 16) & 0x000000ff000000ffull) * (1 + (10000ull << 32)))) >>
        32;
    return static_cast<std::uint32_t>(v);
}

// ---- the text ----

// A number's text, read: value = w * 10^q, or strictly between that and (w + 1) * 10^q when
// `truncated`.
struct decimal_text {
    std::uint64_t w = 0;
    std::int64_t q = 0;
    bool negative = false;
    bool truncated = false;     // nonzero digits after the 19th significant one
    bool integer = true;        // no fraction, no exponent: Python makes an int of it
    std::uint64_t special = 0;  // NaN / Infinity: the double's bits (then nothing else is set)
};

// Compares the literal at p with `word` (without reading past `end`).
inline bool literal_at(const char* p, const char* end, const char* word, std::size_t n) noexcept {
    return static_cast<std::size_t>(end - p) >= n && std::memcmp(p, word, n) == 0;
}

// Reads the number at p; returns the end of its text, or nullptr with *error_at / *expected.
inline const char* read_number_text(const char* p, const char* end, decimal_text* d,
                                    const char** error_at, const char** expected) noexcept {
    const char* const start = p;
    if (p == end) {
        *error_at = p;
        *expected = kExpectNumber;
        return nullptr;
    }
    if (*p == '-') {
        d->negative = true;
        ++p;
    }
    if (p == end || !is_digit(*p)) {
        // Python's json also takes NaN, Infinity and -Infinity.
        d->integer = false;
        if (p != end && *p == 'I' && literal_at(p, end, "Infinity", 8)) {
            d->special = kInfinityBits;
            return p + 8;
        }
        if (!d->negative && p != end && *p == 'N' && literal_at(p, end, "NaN", 3)) {
            d->special = kNanBits;
            return p + 3;
        }
        *error_at = p;
        *expected = d->negative ? kExpectDigit : kExpectNumber;
        return nullptr;
    }
    std::uint64_t w = 0;
    int significant = 0;  // digits in w from its first nonzero one
    std::int64_t q = 0;
    bool truncated = false;
    if (*p == '0') {
        ++p;
    } else {
        const char* const integer_start = p;
        do {
            const unsigned digit = static_cast<unsigned>(*p - '0');
            if (significant < 19) {
                w = w * 10 + digit;
                ++significant;
            } else {
                truncated |= digit != 0;
                ++q;
            }
            ++p;
        } while (p != end && is_digit(*p));
        if (p - integer_start > kPythonIntMaxDigits &&
            (p == end || (*p != '.' && *p != 'e' && *p != 'E'))) {
            *error_at = start;
            *expected = "an integer of at most 4300 digits (Python's int limit)";
            return nullptr;
        }
    }
    if (p != end && *p == '.') {
        d->integer = false;
        ++p;
        if (p == end || !is_digit(*p)) {
            *error_at = p;
            *expected = kExpectDigit;
            return nullptr;
        }
        while (significant <= 11 && end - p >= 8) {
            const std::uint64_t chars = load_chars8(p);
            if (!is_eight_digits(chars)) break;
            w = w * 100000000 + eight_digits_value(chars);
            significant = w == 0             ? 0
                          : significant == 0 ? integer_math::decimal_length(w)
                                             : significant + 8;
            q -= 8;
            p += 8;
        }
        while (p != end && is_digit(*p)) {
            const unsigned digit = static_cast<unsigned>(*p - '0');
            if (significant < 19) {
                w = w * 10 + digit;
                significant += w != 0;
                --q;
            } else {
                truncated |= digit != 0;
            }
            ++p;
        }
    }
    if (p != end && (*p == 'e' || *p == 'E')) {
        d->integer = false;
        ++p;
        bool negative_exponent = false;
        if (p != end && (*p == '+' || *p == '-')) {
            negative_exponent = *p == '-';
            ++p;
        }
        if (p == end || !is_digit(*p)) {
            *error_at = p;
            *expected = kExpectDigit;
            return nullptr;
        }
        std::int64_t exponent = 0;
        do {
            // Past 10^7 the value is 0 or inf whatever the digits (at most ~10^7 of them fit in
            // any plausible body, and they cannot move q that far back).
            if (exponent < 100000000) exponent = exponent * 10 + (*p - '0');
            ++p;
        } while (p != end && is_digit(*p));
        q += negative_exponent ? -exponent : exponent;
    }
    d->w = w;
    d->q = q;
    d->truncated = truncated;
    if (d->integer && w == 0) d->negative = false;  // Python's int has no -0
    return p;
}

// ---- Eisel-Lemire ----

// The double nearest X / 2^127 * 2^e (2^127 <= X = xh * 2^64 + xl < 2^128), ties to even; when
// !exact, X is a floor of the true value, which lies in [X, X + 4) and on no tie or representable
// value: kUndecided if that range may hold a rounding boundary. Magnitude bits (inf on overflow).
inline std::uint64_t round_to_double(std::uint64_t xh, std::uint64_t xl, int e,
                                     bool exact) noexcept {
    const int subnormal_shift = e < -1022 ? -1022 - e : 0;  // mantissa bits lost below 2^-1022
    if (subnormal_shift > 53) return 0;                     // under half the least subnormal
    const int round_index = 10 + subnormal_shift;           // the round bit, in xh
    std::uint64_t m = round_index == 63 ? 0 : xh >> (round_index + 1);
    const std::uint64_t round_bit = (xh >> round_index) & 1;
    const std::uint64_t below_mask = (std::uint64_t{1} << round_index) - 1;
    const std::uint64_t below = xh & below_mask;
    if (exact) {
        m += round_bit & static_cast<std::uint64_t>((below | xl) != 0 || (m & 1) != 0);
    } else {
        if (below == below_mask && xl >= ~std::uint64_t{0} - 3) return kUndecided;
        m += round_bit;  // the true value is above X: a set round bit means above halfway
    }
    if (subnormal_shift > 0) return m;  // m == 2^52 (rounded up) is the least normal's bits
    if (e > 1023) return kInfinityBits;
    // m == 2^53 (rounded up) carries into the exponent field (into inf at the top).
    return (static_cast<std::uint64_t>(e + 1023) << 52) + (m - (std::uint64_t{1} << 52));
}

// w * 10^q (w != 0) rounded to a double, or kUndecided.
inline std::uint64_t eisel_lemire(std::uint64_t w, std::int64_t q) noexcept {
    if (q < kPow10QMin) return 0;  // w < 2^64: below half the least subnormal
    if (q > kPow10QMax) return kInfinityBits;
    const int lz = leading_zeros(w);
    const std::uint64_t normalized = w << lz;
    const std::uint64_t* t = kPow10Mantissa[q - kPow10QMin];
    std::uint64_t xh = mul_high(normalized, t[0]);
    std::uint64_t xl = normalized * t[0];
    const std::uint64_t low_product_high = mul_high(normalized, t[1]);
    xl += low_product_high;
    xh += xl < low_product_high;
    // value = X * 2^(64 - lz + floor(q log2 10) - 127)   (X = normalized * T / 2^64)
    int e = 64 - lz + static_cast<int>((q * 217706) >> 16);
    if ((xh >> 63) == 0) {
        xh = (xh << 1) | (xl >> 63);
        xl <<= 1;
        --e;
    }
    return round_to_double(xh, xl, e, q >= 0 && q <= 27);
}

constexpr std::uint64_t kPow5[28] = {1ull,
                                     5ull,
                                     25ull,
                                     125ull,
                                     625ull,
                                     3125ull,
                                     15625ull,
                                     78125ull,
                                     390625ull,
                                     1953125ull,
                                     9765625ull,
                                     48828125ull,
                                     244140625ull,
                                     1220703125ull,
                                     6103515625ull,
                                     30517578125ull,
                                     152587890625ull,
                                     762939453125ull,
                                     3814697265625ull,
                                     19073486328125ull,
                                     95367431640625ull,
                                     476837158203125ull,
                                     2384185791015625ull,
                                     11920928955078125ull,
                                     59604644775390625ull,
                                     298023223876953125ull,
                                     1490116119384765625ull,
                                     7450580596923828125ull};

// ---- the exact decimal (Go's strconv/decimal.go algorithm) ----

class exact_decimal {
public:
    // The digits of a number text that read_number_text accepted (not a special).
    exact_decimal(const char* p, const char* end) noexcept {
        if (*p == '-') ++p;
        bool seen_point = false;
        bool seen_nonzero = false;
        std::int64_t point = 0;  // the decimal point's place, counted in significant digits
        for (; p != end; ++p) {
            const char c = *p;
            if (c == '.') {
                seen_point = true;
                continue;
            }
            if (!is_digit(c)) break;
            const int digit = c - '0';
            if (!seen_nonzero && digit == 0) {
                if (seen_point) --point;  // 0.00ddd
                continue;
            }
            seen_nonzero = true;
            if (!seen_point) ++point;
            if (count_ < kMaxDigits) {
                digits_[count_++] = static_cast<unsigned char>(digit);
            } else if (digit != 0) {
                truncated_ = true;
            }
        }
        if (p != end && (*p == 'e' || *p == 'E')) {
            ++p;
            bool negative = false;
            if (*p == '+' || *p == '-') negative = *p++ == '-';
            std::int64_t exponent = 0;
            for (; p != end && is_digit(*p); ++p) {
                if (exponent < 100000000) exponent = exponent * 10 + (*p - '0');
            }
            point += negative ? -exponent : exponent;
        }
        trim();
        if (count_ == 0) point = 0;
        point_ = point > 100000 ? 100000 : point < -100000 ? -100000 : static_cast<int>(point);
    }

    // The double nearest the value (magnitude bits), ties to even.
    std::uint64_t double_bits() noexcept {
        if (count_ == 0) return 0;
        if (point_ > 310) return kInfinityBits;  // >= 10^309
        if (point_ < -330) return 0;             // < 10^-330
        static constexpr int kStepForPoint[9] = {1, 3, 6, 9, 13, 16, 19, 23, 26};
        int e = 0;
        // Scale by powers of two into [1/2, 1): 2^kStepForPoint[n] < 10^n.
        while (point_ > 0) {
            const int n = point_ >= 9 ? 27 : kStepForPoint[point_];
            shift(-n);
            e += n;
        }
        while (point_ < 0 || (point_ == 0 && digits_[0] < 5)) {
            const int n = -point_ >= 9 ? 27 : kStepForPoint[-point_];
            shift(n);
            e -= n;
        }
        --e;              // value = 0.ddd * 2^(e+1), 0.ddd in [1/2, 1): d.ddd form is 2^e
        if (e < -1022) {  // subnormal: fewer mantissa bits
            shift(-(-1022 - e));
            e = -1022;
        }
        if (e > 1023) return kInfinityBits;
        shift(53);
        std::uint64_t m = rounded_integer();
        if (m == (std::uint64_t{1} << 53)) {
            m >>= 1;
            if (++e > 1023) return kInfinityBits;
        }
        if ((m >> 52) == 0) return m;  // subnormal (exponent field 0)
        return (static_cast<std::uint64_t>(e + 1023) << 52) | (m & ((std::uint64_t{1} << 52) - 1));
    }

private:
    static constexpr int kMaxDigits = 800;  // a double's halfway points need at most 767
    static constexpr int kMaxShift = 60;    // 9 << 60 + a carry still fits in 64 bits

    void trim() noexcept {
        while (count_ > 0 && digits_[count_ - 1] == 0) --count_;
        if (count_ == 0) point_ = 0;
    }

    // Multiplies (k > 0) or divides (k < 0) by 2^|k|.
    void shift(int k) noexcept {
        for (; k > kMaxShift; k -= kMaxShift) shift_left(kMaxShift);
        for (; k < -kMaxShift; k += kMaxShift) shift_right(kMaxShift);
        if (k > 0) shift_left(k);
        if (k < 0) shift_right(-k);
    }

    void shift_left(int k) noexcept {
        // The product's digits, last first, into a scratch buffer, then the leading ones back.
        unsigned char scratch[kMaxDigits + 20];
        int at = kMaxDigits + 20;
        std::uint64_t n = 0;
        for (int r = count_ - 1; r >= 0; --r) {
            n += static_cast<std::uint64_t>(digits_[r]) << k;
            const std::uint64_t quotient = n / 10;
            scratch[--at] = static_cast<unsigned char>(n - 10 * quotient);
            n = quotient;
        }
        while (n > 0) {
            const std::uint64_t quotient = n / 10;
            scratch[--at] = static_cast<unsigned char>(n - 10 * quotient);
            n = quotient;
        }
        const int length = kMaxDigits + 20 - at;
        point_ += length - count_;
        count_ = length < kMaxDigits ? length : kMaxDigits;
        for (int i = count_; i < length; ++i) truncated_ |= scratch[at + i] != 0;
        std::memcpy(digits_, scratch + at, static_cast<std::size_t>(count_));
        trim();
    }

    void shift_right(int k) noexcept {
        int r = 0, w = 0;
        std::uint64_t n = 0;
        for (; (n >> k) == 0; ++r) {  // enough leading digits for the first quotient digit
            if (r >= count_) {
                if (n == 0) {
                    count_ = 0;
                    point_ = 0;
                    return;
                }
                while ((n >> k) == 0) {
                    n *= 10;
                    ++r;
                }
                break;
            }
            n = n * 10 + digits_[r];
        }
        point_ -= r - 1;
        const std::uint64_t mask = (std::uint64_t{1} << k) - 1;
        for (; r < count_; ++r) {
            const std::uint64_t digit = n >> k;
            n &= mask;
            digits_[w++] = static_cast<unsigned char>(digit);
            n = n * 10 + digits_[r];
        }
        while (n > 0) {
            const std::uint64_t digit = n >> k;
            n &= mask;
            if (w < kMaxDigits) {
                digits_[w++] = static_cast<unsigned char>(digit);
            } else if (digit > 0) {
                truncated_ = true;
            }
            n *= 10;
        }
        count_ = w;
        trim();
    }

    // The integer part, rounded to nearest, ties to even (a truncated tail counts as above).
    std::uint64_t rounded_integer() const noexcept {
        if (point_ > 20) return ~std::uint64_t{0};
        std::uint64_t n = 0;
        int i = 0;
        for (; i < point_ && i < count_; ++i) n = n * 10 + digits_[i];
        for (; i < point_; ++i) n *= 10;
        if (point_ >= 0 && point_ < count_) {
            bool up;
            if (digits_[point_] == 5 && point_ + 1 == count_) {
                up = truncated_ || (point_ > 0 && (digits_[point_ - 1] & 1) != 0);
            } else {
                up = digits_[point_] >= 5;
            }
            n += up;
        }
        return n;
    }

    unsigned char digits_[kMaxDigits];  // each 0..9, no leading or trailing zeros
    int count_ = 0;
    int point_ = 0;  // value = 0.d1d2d3... * 10^point_
    bool truncated_ = false;
};

// ---- the value ----

// The double of a read text (magnitude bits); `text` and `text_end` for the exact fallback.
inline std::uint64_t double_bits_of(const decimal_text& d, const char* text,
                                    const char* text_end) noexcept {
    if (d.special != 0) return d.special;
    if (d.w == 0) return 0;
    if (!d.truncated) {
        const std::uint64_t bits = eisel_lemire(d.w, d.q);
        if (bits != kUndecided) return bits;
        if (d.q < 0 && d.q >= -27 && d.w % kPow5[-d.q] == 0) {
            const std::uint64_t m = d.w / kPow5[-d.q];  // value = m * 2^q exactly
            const int lz = leading_zeros(m);
            return round_to_double(m << lz, 0, 63 - lz + static_cast<int>(d.q), true);
        }
    } else {
        const std::uint64_t below = eisel_lemire(d.w, d.q);
        if (below != kUndecided && below == eisel_lemire(d.w + 1, d.q)) return below;
    }
    return exact_decimal(text, text_end).double_bits();
}

// float32 nearest the double with these magnitude bits, ties to even (C's (float) cast).
inline std::uint32_t float_bits_of(std::uint64_t magnitude) noexcept {
    if (magnitude >= kInfinityBits) return magnitude == kInfinityBits ? 0x7f800000u : 0x7fc00000u;
    const int biased = static_cast<int>(magnitude >> 52);
    if (biased == 0) return 0;  // a double subnormal is far below half the least float32 one
    const std::uint64_t m = (magnitude & ((std::uint64_t{1} << 52) - 1)) | (std::uint64_t{1} << 52);
    const int e = biased - 1023;
    if (e > 127) return 0x7f800000u;
    const int shift = 29 + (e < -126 ? -126 - e : 0);
    if (shift > 54) return 0;  // m < 2^53: under half the least subnormal
    std::uint64_t kept = m >> shift;
    const std::uint64_t rest = m & ((std::uint64_t{1} << shift) - 1);
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    kept += rest > half || (rest == half && (kept & 1) != 0);
    if (e < -126) return static_cast<std::uint32_t>(kept);  // 2^23: the least normal's bits
    // kept == 2^24 (rounded up) carries into the exponent field (into inf at the top).
    return (static_cast<std::uint32_t>(e + 127) << 23) +
           static_cast<std::uint32_t>(kept - (1u << 23));
}

// The number at p as the double json.loads + numpy's cast give (bits with the sign), or nullptr.
// `text`, if given, receives the number's text as read.
inline const char* read_double_bits(const char* p, const char* end, std::uint64_t* bits,
                                    const char** error_at, const char** expected,
                                    decimal_text* text = nullptr) noexcept {
    decimal_text local;
    decimal_text& d = text != nullptr ? *text : local;
    const char* next = read_number_text(p, end, &d, error_at, expected);
    if (next == nullptr) return nullptr;
    const std::uint64_t magnitude = double_bits_of(d, p, next);
    if (d.integer && magnitude == kInfinityBits) {  // float(int) raises OverflowError
        *error_at = p;
        *expected = "an integer below 2^1024 (Python's float(int) limit)";
        return nullptr;
    }
    *bits = magnitude | (static_cast<std::uint64_t>(d.negative) << 63);
    return next;
}

inline const char* read_float32(const char* p, const char* end, float* out, const char** error_at,
                                const char** expected) noexcept {
    std::uint64_t bits;
    const char* next = read_double_bits(p, end, &bits, error_at, expected);
    if (next == nullptr) return nullptr;
    const std::uint32_t f = float_bits_of(bits & ~(std::uint64_t{1} << 63)) |
                            static_cast<std::uint32_t>((bits >> 32) & 0x80000000u);
    std::memcpy(out, &f, 4);
    return next;
}

inline number_row failed(std::size_t count, const char* at, const char* expected) noexcept {
    number_row row;
    row.count = count;
    row.error_at = at;
    row.expected = expected;
    return row;
}

}  // namespace

const char* parse_one_float32(const char* p, const char* end, float* out, const char** error_at,
                              const char** expected) noexcept {
    return read_float32(p, end, out, error_at, expected);
}

namespace {

// The row loop of both row parsers: `read_value` reads one number at p into a T (the read_float32
// or read_double_bits signature).
template <typename T, typename ReadValue>
number_row parse_row_from(const char* p, const char* end, T* out, std::size_t capacity,
                          std::size_t count, ReadValue read_value) noexcept {
    p = skip_space(p, end);
    if (count == 0 && p != end && *p == ']') {
        number_row row;
        row.end = p + 1;
        return row;
    }
    for (;;) {
        T value;
        const char* error_at;
        const char* expected;
        const char* next = read_value(p, end, &value, &error_at, &expected);
        if (next == nullptr) {
            if (count == 0 && error_at == p && expected == kExpectNumber) {
                expected = "a number or ']'";
            }
            return failed(count, error_at, expected);
        }
        if (count < capacity) out[count] = value;
        ++count;
        p = skip_space(next, end);
        if (p == end) return failed(count, p, "',' or ']'");
        if (*p == ',') {
            p = skip_space(p + 1, end);
            continue;
        }
        if (*p != ']') return failed(count, p, "',' or ']'");
        number_row row;
        row.end = p + 1;
        row.count = count;
        return row;
    }
}

inline const char* read_double(const char* p, const char* end, double* out, const char** error_at,
                               const char** expected) noexcept {
    std::uint64_t bits;
    const char* next = read_double_bits(p, end, &bits, error_at, expected);
    if (next != nullptr) std::memcpy(out, &bits, 8);
    return next;
}

// A float row's number as the Python float a client makes of json.loads's value: the double, and
// for an integer text the same (float(int)), but only where the int is exactly that float, which
// every integer of at most 15 digits is. A longer one is refused: the openai client keeps an int
// that float() would change, and this row format has no int.
inline const char* read_client_float(const char* p, const char* end, double* out,
                                     const char** error_at, const char** expected) noexcept {
    constexpr std::uint64_t kExactIntegerBound = 1000000000000000;  // 10^15 < 2^53
    std::uint64_t bits;
    decimal_text d;
    const char* next = read_double_bits(p, end, &bits, error_at, expected, &d);
    if (next == nullptr) return nullptr;
    if (d.integer && (d.q != 0 || d.truncated || d.w >= kExactIntegerBound)) {
        *error_at = p;
        *expected = "an integer of at most 15 digits (in rows read as Python floats)";
        return nullptr;
    }
    std::memcpy(out, &bits, 8);
    return next;
}

}  // namespace

number_row parse_number_row_scalar_from(const char* p, const char* end, float* out,
                                        std::size_t capacity, std::size_t count) noexcept {
    return parse_row_from(p, end, out, capacity, count, read_float32);
}

number_row parse_number_row_double_scalar_from(const char* p, const char* end, double* out,
                                               std::size_t capacity, std::size_t count) noexcept {
    return parse_row_from(p, end, out, capacity, count, read_client_float);
}

number_row parse_number_row_double_scalar(const char* p, const char* end, double* out,
                                          std::size_t capacity) noexcept {
    return parse_number_row_double_scalar_from(p, end, out, capacity, 0);
}

number_row parse_number_row_double(const char* p, const char* end, double* out,
                                   std::size_t capacity) noexcept {
    return active_implementation().parse_number_row_double(p, end, out, capacity);
}

const char* parse_one_double(const char* p, const char* end, double* out, const char** error_at,
                             const char** expected) noexcept {
    return read_client_float(p, end, out, error_at, expected);
}

const char* parse_number(const char* p, const char* end, double* out) noexcept {
    const char* error_at;
    const char* expected;
    return read_double(p, end, out, &error_at, &expected);
}

number_row parse_number_row_scalar(const char* p, const char* end, float* out,
                                   std::size_t capacity) noexcept {
    return parse_number_row_scalar_from(p, end, out, capacity, 0);
}

number_row parse_number_row(const char* p, const char* end, float* out,
                            std::size_t capacity) noexcept {
    return active_implementation().parse_number_row(p, end, out, capacity);
}

}  // namespace detail

bool read_float_row_double(const char* text, std::size_t size, double* out,
                           std::size_t count) noexcept {
    if (size == 0 || text[0] != '[') return false;
    const detail::number_row row =
        detail::parse_number_row_double(text + 1, text + size, out, count);
    return row.error_at == nullptr && row.count == count && row.end == text + size;
}

}  // namespace tensorb64
