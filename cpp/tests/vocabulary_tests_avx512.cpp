// The avx512 level's vector vocabulary against its contract (vocabulary_checks.hpp), compiled with
// the level's flags (cpp/CMakeLists.txt); where the target does not build the level, a stub.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

#include "check.hpp"
#include "levels/avx512/vocabulary.hpp"

#if TENSORB64_COMPILES_AVX512
namespace tensorb64 {
namespace avx512 {
#include "vocabulary_checks.hpp"
}  // namespace avx512
}  // namespace tensorb64

// The failed comparisons, or -1 where this build has no avx512 level.
long vocabulary_checks_avx512() { return tensorb64::avx512::check_vocabulary("avx512"); }
#else
long vocabulary_checks_avx512() { return -1; }
#endif
