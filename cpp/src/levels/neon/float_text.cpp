// The NEON level's float-text block writers: the generic writers (levels/generic/float_text_*.hpp)
// over the level's vocabulary, eight values a group (two q registers), with their generic texts
// and the scalar writer for the groups the lanes do not take. Compiled where NEON is baseline
// (little-endian AArch64); to nothing elsewhere.
#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_NEON
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "float_text/float_text.hpp"
#include "levels/neon/neon.hpp"
#include "levels/neon/vocabulary.hpp"

namespace tensorb64 {
namespace neon {
namespace {
// In this order: each uses what the ones before it define.
#include "levels/generic/float_text_shortest.hpp"

#include "levels/generic/float_text_repr.hpp"

#include "levels/generic/float_text_texts.hpp"

#include "levels/generic/float_text_writers.hpp"

// One group at a time (write_f32_groups says why).
struct neon_policy : generic_policy {
    static constexpr bool kInterleave = false;
};
using writers = block_writers<neon_policy>;
}  // namespace
}  // namespace neon

extern const float_text_writers float_text_writers_neon{
    neon::writers::f32, neon::writers::f64, neon::writers::orjson_f32, neon::writers::orjson_f64};

}  // namespace tensorb64

#endif
