// The AVX2 number-row parser to float32 (the avx2 implementation's parse_number_row): the generic
// skeleton (levels/generic/number_rows.hpp) over the AVX2 vocabulary, four numbers a group. AVX2
// has no byte permute across 128-bit lanes and no masked byte load, which the avx512 level's own
// paths are built on; the skeleton's two layouts are all it takes.
//
// Compiled with the AVX2 flags (cpp/CMakeLists.txt); to nothing elsewhere.
#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_AVX2
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "common/fp_environment.hpp"
#include "json/number_parser.hpp"
#include "json/number_parser_pow10.hpp"
#include "levels/avx2/avx2.hpp"
#include "levels/avx2/vocabulary.hpp"

namespace tensorb64 {
namespace avx2 {
namespace {
#include "levels/generic/number_rows.hpp"
}  // namespace
}  // namespace avx2

detail::number_row parse_number_row_avx2(const char* p, const char* end, float* out,
                                         std::size_t capacity) noexcept {
    return avx2::parse_number_row_any_layout(p, end, out, capacity);
}

}  // namespace tensorb64

#endif
