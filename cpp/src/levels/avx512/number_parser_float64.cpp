// The AVX-512 number-row parser to float64 (the avx512 implementation's parse_number_row_double):
// rows of short numbers by the level's own short path (number_windows.hpp), whose quotients are
// the texts' own doubles (at most 14 digits: exact); rows of long numbers (json.dumps's 17-digit
// texts) by the generic skeleton (levels/generic/number_rows.hpp) over the AVX-512 vocabulary,
// eight numbers a group, each value the double of w / 10^f by Eisel-Lemire in integer lanes (the
// level's long path reads a number's first 16 bytes, enough for a float32 only).
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

detail::number_row parse_number_row_double_avx512(const char* p, const char* end, double* out,
                                                  std::size_t capacity) noexcept {
    return avx512::short_numbers(p, end)
               ? avx512::parse_short_row(p, end, out, capacity)
               : avx512::parse_row<false, 4, double, avx512::masked_read_any>(p, p, end, out,
                                                                              capacity, 0);
}

}  // namespace tensorb64

#endif
