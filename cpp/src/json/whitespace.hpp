// JSON's whitespace (json's WHITESPACE: space, tab, line feed, carriage return): the one definition
// the scanner and the number parser both read by. Internal linkage, as every header under cpp/src
// (see common/host.hpp).
#pragma once

namespace tensorb64 {
namespace json {
namespace {

inline bool is_space(char c) noexcept { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

inline const char* skip_space(const char* p, const char* end) noexcept {
    while (p < end && is_space(*p)) ++p;
    return p;
}

}  // namespace
}  // namespace json
}  // namespace tensorb64
