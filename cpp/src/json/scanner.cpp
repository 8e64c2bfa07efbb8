// JSON's lexical pieces, as Python's json module reads them (see json_scanner.hpp).
//
// The long runs are the contents of strings (a base64 row is a whole string) and of number lists;
// both are searched 16 bytes at a time with SSE2 or NEON where the target has it (every x86-64 and
// little-endian AArch64 CPU: no flags needed), a byte at a time elsewhere.
#include "json/scanner.hpp"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define TENSORB64_JSON_SSE2 1
#elif (defined(__aarch64__) || defined(_M_ARM64)) && !defined(__AARCH64EB__)
#include <arm_neon.h>
#define TENSORB64_JSON_NEON 1
#endif

namespace tensorb64 {
namespace json {
namespace {

inline bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

inline bool is_hex(char c) noexcept {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

inline unsigned hex_value(char c) noexcept {
    if (is_digit(c)) return static_cast<unsigned>(c - '0');
    return static_cast<unsigned>((c | 0x20) - 'a' + 10);
}

inline bool is_special(unsigned char c) noexcept {
    return c == '"' || c == '\\' || c < 0x20 || c >= 0x80;
}

// The length of the UTF-8 sequence at `p` (its first byte non-ASCII), 0 if it is not well-formed.
// Surrogates (ED A0..BF xx) are allowed: json.loads decodes bytes with "surrogatepass".
std::size_t utf8_sequence(const char* p, const char* end) noexcept {
    const auto* u = reinterpret_cast<const unsigned char*>(p);
    const std::size_t left = static_cast<std::size_t>(end - p);
    const unsigned c = u[0];
    std::size_t n;
    unsigned low = 0x80, high = 0xbf;  // the second byte's range
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0) low = 0xa0;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0) low = 0x90;
        if (c == 0xf4) high = 0x8f;
    } else {
        return 0;
    }
    if (left < n || u[1] < low || u[1] > high) return 0;
    for (std::size_t i = 2; i < n; ++i) {
        if ((u[i] & 0xc0) != 0x80) return 0;
    }
    return n;
}

inline const char* fail(failure* f, const char* at, const char* expected) noexcept {
    f->at = at;
    f->expected = expected;
    return nullptr;
}

const char* scan_literal(const char* p, const char* end, const char* word, std::size_t length,
                         failure* f) noexcept {
    if (static_cast<std::size_t>(end - p) < length || std::memcmp(p, word, length) != 0) {
        return fail(f, p, "a value");
    }
    return p + length;
}

// A stack of one bit per open array (0) or object (1), for skip_value.
class nesting {
public:
    bool push(bool object) noexcept {
        if (depth_ == max_depth) return false;
        const std::uint64_t bit = std::uint64_t{1} << (depth_ % 64);
        if (object) {
            bits_[depth_ / 64] |= bit;
        } else {
            bits_[depth_ / 64] &= ~bit;
        }
        ++depth_;
        return true;
    }
    void pop() noexcept { --depth_; }
    bool empty() const noexcept { return depth_ == 0; }
    bool in_object() const noexcept {
        const std::size_t top = depth_ - 1;
        return (bits_[top / 64] >> (top % 64)) & 1u;
    }

private:
    std::uint64_t bits_[max_depth / 64] = {};
    std::size_t depth_ = 0;
};

}  // namespace

const char* find_string_special(const char* p, const char* end) noexcept {
#ifdef TENSORB64_JSON_SSE2
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        // Signed compare: bytes below 0x20 and bytes from 0x80 (negative) both count.
        const __m128i hit =
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                         _mm_cmplt_epi8(v, space));
        const unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(hit));
        if (mask != 0) {
            unsigned at = 0;
            while (!((mask >> at) & 1u)) ++at;
            return p + at;
        }
        p += 16;
    }
#elif defined(TENSORB64_JSON_NEON)
    const uint8x16_t quote = vdupq_n_u8('"'), backslash = vdupq_n_u8('\\');
    const int8x16_t space = vdupq_n_s8(0x20);
    while (end - p >= 16) {
        const uint8x16_t v = vld1q_u8(reinterpret_cast<const std::uint8_t*>(p));
        // Signed compare: bytes below 0x20 and bytes from 0x80 (negative) both count.
        const uint8x16_t hit = vorrq_u8(vorrq_u8(vceqq_u8(v, quote), vceqq_u8(v, backslash)),
                                        vcltq_s8(vreinterpretq_s8_u8(v), space));
        // Four bits a byte (a narrowing shift), the first set one's byte.
        const std::uint64_t mask =
            vget_lane_u64(vreinterpret_u64_u8(vshrn_n_u16(vreinterpretq_u16_u8(hit), 4)), 0);
        if (mask != 0) {
            unsigned at = 0;
            while (!((mask >> (4 * at)) & 1u)) ++at;
            return p + at;
        }
        p += 16;
    }
#endif
    while (p < end && !is_special(static_cast<unsigned char>(*p))) ++p;
    return p;
}

const char* scan_string(const char* p, const char* end, string_span* s, failure* f) noexcept {
    const char* const open = p;
    s->begin = ++p;
    s->escaped = false;
    for (;;) {
        p = find_string_special(p, end);
        if (p == end) return fail(f, open, "a closing '\"' for the string that starts here");
        const auto c = static_cast<unsigned char>(*p);
        if (c == '"') {
            s->end = p;
            return p + 1;
        }
        if (c == '\\') {
            s->escaped = true;
            if (end - p < 2)
                return fail(
                    f, p, "an escape ('\\\"', '\\\\', '\\/', 'b', 'f', 'n', 'r', 't' or 'uXXXX')");
            switch (p[1]) {
                case '"':
                case '\\':
                case '/':
                case 'b':
                case 'f':
                case 'n':
                case 'r':
                case 't': p += 2; break;
                case 'u':
                    if (end - p < 6 || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4]) ||
                        !is_hex(p[5])) {
                        return fail(f, p, "four hexadecimal digits after '\\u'");
                    }
                    p += 6;
                    break;
                default:
                    return fail(
                        f, p,
                        "an escape ('\\\"', '\\\\', '\\/', 'b', 'f', 'n', 'r', 't' or 'uXXXX')");
            }
        } else if (c < 0x20) {
            return fail(f, p, "no control character inside a string (escape it)");
        } else {
            const std::size_t n = utf8_sequence(p, end);
            if (n == 0) return fail(f, p, "UTF-8 text");
            p += n;
        }
    }
}

const char* scan_number(const char* p, const char* end, std::size_t max_integer_digits,
                        number_kind* kind, failure* f) noexcept {
    const char* const start = p;
    if (*p == 'N') {
        *kind = number_kind::non_finite;
        return scan_literal(p, end, "NaN", 3, f);
    }
    if (*p == 'I') {
        *kind = number_kind::non_finite;
        return scan_literal(p, end, "Infinity", 8, f);
    }
    if (*p == '-') {
        ++p;
        if (p < end && *p == 'I') {
            *kind = number_kind::non_finite;
            const char* q = scan_literal(p, end, "Infinity", 8, f);
            if (q == nullptr) f->at = start;
            return q;
        }
    }
    if (p == end || !is_digit(*p)) return fail(f, start, "a value");
    *kind = number_kind::integer;
    const char* const digits = p;
    if (*p == '0') {
        ++p;
    } else {
        while (p < end && is_digit(*p)) ++p;
    }
    const auto integer_digits = static_cast<std::size_t>(p - digits);
    if (p < end && *p == '.') {
        if (end - p < 2 || !is_digit(p[1]))
            return fail(f, p + 1, "a digit after the decimal point");
        p += 2;
        while (p < end && is_digit(*p)) ++p;
        *kind = number_kind::real;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        const char* e = p + 1;
        if (e < end && (*e == '+' || *e == '-')) ++e;
        // json's NUMBER_RE makes the exponent optional: "1e" is the number 1, then an 'e' that
        // is not a delimiter, which the caller refuses.
        if (e < end && is_digit(*e)) {
            p = e;
            while (p < end && is_digit(*p)) ++p;
            *kind = number_kind::real;
        }
    }
    if (*kind == number_kind::integer && max_integer_digits != 0 &&
        integer_digits > max_integer_digits) {
        return fail(f, start,
                    "an integer of no more digits than sys.get_int_max_str_digits() allows");
    }
    return p;
}

const char* skip_value(const char* p, const char* end, std::size_t max_integer_digits,
                       failure* f) noexcept {
    nesting stack;
    string_span s;
    number_kind kind;
value:
    if (p == end) return fail(f, p, "a value");
    switch (*p) {
        case '{':
            if (!stack.push(true)) return fail(f, p, "arrays and objects nested less deeply");
            p = skip_space(p + 1, end);
            if (p < end && *p == '}') {
                stack.pop();
                ++p;
                goto after_value;
            }
            goto member;
        case '[':
            if (!stack.push(false)) return fail(f, p, "arrays and objects nested less deeply");
            p = skip_space(p + 1, end);
            if (p < end && *p == ']') {
                stack.pop();
                ++p;
                goto after_value;
            }
            goto value;
        case '"': p = scan_string(p, end, &s, f); break;
        case 't': p = scan_literal(p, end, "true", 4, f); break;
        case 'f': p = scan_literal(p, end, "false", 5, f); break;
        case 'n': p = scan_literal(p, end, "null", 4, f); break;
        default:
            if (*p == '-' || is_digit(*p) || *p == 'N' || *p == 'I') {
                p = scan_number(p, end, max_integer_digits, &kind, f);
            } else {
                return fail(f, p, "a value");
            }
    }
    if (p == nullptr) return nullptr;
after_value:
    if (stack.empty()) return p;
    p = skip_space(p, end);
    if (p == end) return fail(f, p, stack.in_object() ? "',' or '}'" : "',' or ']'");
    if (*p == ',') {
        p = skip_space(p + 1, end);
        if (stack.in_object()) goto member;
        goto value;
    }
    if (*p == (stack.in_object() ? '}' : ']')) {
        stack.pop();
        ++p;
        goto after_value;
    }
    return fail(f, p, stack.in_object() ? "',' or '}'" : "',' or ']'");
member:  // at a key (whitespace skipped)
    if (p == end || *p != '"') return fail(f, p, "a property name enclosed in double quotes");
    p = scan_string(p, end, &s, f);
    if (p == nullptr) return nullptr;
    p = skip_space(p, end);
    if (p == end || *p != ':') return fail(f, p, "':' after the property name");
    p = skip_space(p + 1, end);
    goto value;
}

const char* skip_valid_string(const char* p, const char* end) noexcept {
    for (;;) {
        while (p < end && *p != '"' && *p != '\\') ++p;
        if (p >= end) return end;
        if (*p == '"') return p + 1;
        p += 2;  // an escape: the character after the backslash is never the closing quote
    }
}

const char* skip_valid_value(const char* p, const char* end) noexcept {
    if (p >= end) return end;
    if (*p == '"') return skip_valid_string(p + 1, end);
    if (*p != '[' && *p != '{') {  // a number or a literal: up to the delimiter after it
        while (p < end && *p != ',' && *p != ']' && *p != '}' && !is_space(*p)) ++p;
        return p;
    }
    std::size_t depth = 0;
    while (p < end) {
        const char c = *p;
        if (c == '"') {
            p = skip_valid_string(p + 1, end);
            continue;
        }
        ++p;
        if (c == '[' || c == '{') {
            ++depth;
        } else if ((c == ']' || c == '}') && --depth == 0) {
            return p;
        }
    }
    return end;
}

std::uint32_t unescaper::next() noexcept {
    const char c = *p_;
    if (c != '\\' || end_ - p_ < 2) {
        ++p_;
        return static_cast<unsigned char>(c);
    }
    const char e = p_[1];
    p_ += 2;
    switch (e) {
        case 'b': return '\b';
        case 'f': return '\f';
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case 'u': {
            std::uint32_t v = 0;
            for (int i = 0; i < 4 && p_ < end_; ++i) v = v << 4 | hex_value(*p_++);
            return v;
        }
        default: return static_cast<unsigned char>(e);  // '"', '\\', '/'
    }
}

bool string_equals(const string_span& s, const char* name, std::size_t length) noexcept {
    if (!s.escaped) {
        return static_cast<std::size_t>(s.end - s.begin) == length &&
               std::memcmp(s.begin, name, length) == 0;
    }
    unescaper chars(s.begin, s.end);
    for (std::size_t i = 0; i < length; ++i) {
        if (chars.done() || chars.next() != static_cast<unsigned char>(name[i])) return false;
    }
    return chars.done();
}

list_glance glance_list(const char* p, const char* end) noexcept {
    list_glance g;
#ifdef TENSORB64_JSON_SSE2
    const __m128i comma = _mm_set1_epi8(','), close = _mm_set1_epi8(']');
    const __m128i quote = _mm_set1_epi8('"'), brace = _mm_set1_epi8('{'),
                  bracket = _mm_set1_epi8('[');
    const __m128i space = _mm_set1_epi8(' ');
    // Commas are counted in byte lanes (each compare adds 1 where it matched), summed every 255
    // blocks before a lane can wrap: no branch per comma.
    __m128i lanes = _mm_setzero_si128(), above_space = _mm_setzero_si128();
    const auto add_lanes = [&] {
        const __m128i sums = _mm_sad_epu8(lanes, _mm_setzero_si128());
        g.commas += static_cast<std::size_t>(_mm_cvtsi128_si32(sums)) +
                    static_cast<std::size_t>(_mm_extract_epi16(sums, 4));
        lanes = _mm_setzero_si128();
    };
    for (unsigned blocks = 0; end - p >= 16; p += 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        const __m128i stop =
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, close), _mm_cmpeq_epi8(v, quote)),
                         _mm_or_si128(_mm_cmpeq_epi8(v, brace), _mm_cmpeq_epi8(v, bracket)));
        if (_mm_movemask_epi8(stop) != 0) break;  // finished byte by byte below
        lanes = _mm_sub_epi8(lanes, _mm_cmpeq_epi8(v, comma));
        above_space = _mm_or_si128(above_space, _mm_cmpgt_epi8(v, space));  // a value's byte
        if (++blocks == 255) {
            add_lanes();
            blocks = 0;
        }
    }
    add_lanes();
    if (_mm_movemask_epi8(above_space) != 0) g.blank = false;
#elif defined(TENSORB64_JSON_NEON)
    const uint8x16_t comma = vdupq_n_u8(','), close = vdupq_n_u8(']');
    const uint8x16_t quote = vdupq_n_u8('"'), brace = vdupq_n_u8('{'), bracket = vdupq_n_u8('[');
    const int8x16_t space = vdupq_n_s8(' ');
    // As the SSE2 loop: commas counted in byte lanes, summed every 255 blocks.
    uint8x16_t lanes = vdupq_n_u8(0), above_space = vdupq_n_u8(0);
    for (unsigned blocks = 0; end - p >= 16; p += 16) {
        const uint8x16_t v = vld1q_u8(reinterpret_cast<const std::uint8_t*>(p));
        const uint8x16_t stop = vorrq_u8(vorrq_u8(vceqq_u8(v, close), vceqq_u8(v, quote)),
                                         vorrq_u8(vceqq_u8(v, brace), vceqq_u8(v, bracket)));
        if (vmaxvq_u8(stop) != 0) break;  // finished byte by byte below
        lanes = vsubq_u8(lanes, vceqq_u8(v, comma));
        above_space = vorrq_u8(above_space, vcgtq_s8(vreinterpretq_s8_u8(v), space));
        if (++blocks == 255) {
            g.commas += vaddlvq_u8(lanes);
            lanes = vdupq_n_u8(0);
            blocks = 0;
        }
    }
    g.commas += vaddlvq_u8(lanes);
    if (vmaxvq_u8(above_space) != 0) g.blank = false;
#endif
    for (; p < end; ++p) {
        const char c = *p;
        if (c == ']') {
            g.close = p;
            return g;
        }
        if (c == '"' || c == '{' || c == '[') {
            g.nested = true;
            g.close = nullptr;
            return g;
        }
        if (c == ',') ++g.commas;
        if (!is_space(c)) g.blank = false;
    }
    return g;
}

}  // namespace json
}  // namespace tensorb64
