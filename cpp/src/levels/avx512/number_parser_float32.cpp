// The AVX-512 number-row parser to float32 (the avx512 implementation's parse_number_row): the
// level's own window paths (number_windows.hpp: eight numbers at a time from windows gathered by
// vpermb) in the layout the row's first 64 bytes show, handing what they leave to the generic
// skeleton (levels/generic/number_rows.hpp) over the AVX-512 vocabulary, eight numbers a group.
//
// Compiled where the build gives levels/avx512/ its flags (x86-64: cpp/CMakeLists.txt); to nothing
// elsewhere.
#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_AVX512
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "common/fp_environment.hpp"
#include "json/number_parser.hpp"
#include "json/number_parser_pow10.hpp"
#include "levels/avx512/avx512.hpp"
#include "levels/avx512/vocabulary.hpp"

namespace tensorb64 {
namespace avx512 {
namespace {
#include "levels/generic/number_rows.hpp"
// (After the skeleton, whose parse_row the level's own paths hand rows to.)
#include "levels/avx512/number_windows.hpp"
}  // namespace
}  // namespace avx512

detail::number_row parse_number_row_avx512(const char* p, const char* end, float* out,
                                           std::size_t capacity) noexcept {
    return avx512::short_numbers(p, end) ? avx512::parse_short_row(p, end, out, capacity)
                                         : avx512::parse_long_row(p, end, out, capacity);
}

}  // namespace tensorb64

#endif
