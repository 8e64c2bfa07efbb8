// The AVX2 level's float-text block writers: the generic writers (levels/generic/float_text_*.hpp)
// over the level's vocabulary, eight values a group, with their generic texts and the scalar
// writer for the groups the lanes do not take. Compiled where the build gives levels/avx2/ its
// flags (x86-64: cpp/CMakeLists.txt); to nothing elsewhere.
#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_AVX2
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "float_text/float_text.hpp"
#include "levels/avx2/avx2.hpp"
#include "levels/avx2/vocabulary.hpp"

namespace tensorb64 {
namespace avx2 {
namespace {
// In this order: each uses what the ones before it define.
#include "levels/generic/float_text_shortest.hpp"

#include "levels/generic/float_text_repr.hpp"

#include "levels/generic/float_text_texts.hpp"

#include "levels/generic/float_text_writers.hpp"

using writers = block_writers<generic_policy>;
}  // namespace
}  // namespace avx2

extern const float_text_writers float_text_writers_avx2{
    avx2::writers::f32, avx2::writers::f64, avx2::writers::orjson_f32, avx2::writers::orjson_f64};

}  // namespace tensorb64

#endif
