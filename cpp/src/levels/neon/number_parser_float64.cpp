// The NEON number-row parser to float64 (the neon implementation's parse_number_row_double): the
// generic skeleton (levels/generic/number_rows.hpp) over the NEON vocabulary, four numbers a group,
// each text64 four q registers (its 16-byte pieces one number each in the short layout, two halves
// one number each in the other).
//
// Compiled on little-endian AArch64 (no flags needed); to nothing elsewhere.
#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_NEON
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "common/fp_environment.hpp"
#include "json/number_parser.hpp"
#include "json/number_parser_pow10.hpp"
#include "levels/neon/neon.hpp"
#include "levels/neon/vocabulary.hpp"

namespace tensorb64 {
namespace neon {
namespace {
#include "levels/generic/number_rows.hpp"
}  // namespace
}  // namespace neon

detail::number_row parse_number_row_double_neon(const char* p, const char* end, double* out,
                                                std::size_t capacity) noexcept {
    return neon::parse_number_row_any_layout(p, end, out, capacity);
}

}  // namespace tensorb64

#endif
